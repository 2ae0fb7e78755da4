"""Human review of sampled runs, and the judge's agreement with the reviewers.

Which items go to the queue (``select_for_review``): every failing item; every low-confidence verdict
(a dimension confidence below ``confidence_below``, or a composite within ``composite_margin`` of
its threshold); and a seeded random ``passing_share`` of the other passing items, so agreement is
also measured where the judge is sure. Each queue item is ``pending`` until a verdict is imported,
then ``reviewed``.

Where the queue lives: in AWS, the evaluation table (pk ``REVIEW#<run_id>``, sk ``ITEM#<test_id>``):
the single-table design already keys everything of a run by run id, the queue is read one run at a
time (one Query), it inherits the table's encryption, backups and on-demand capacity, and no new
table or IAM surface is needed. Locally, ``review.jsonl`` in the run folder.

Reviewer verdicts come back as CSV or JSON Lines (any spreadsheet works): ``acceptable`` yes/no
and optional per-dimension scores, either 1-5 (integers) or 0-1 (decimals, or 0).

The CSV is opened in spreadsheets, and its text cells (the shopper's query, the answer, reasons,
notes) are attacker-controlled: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return (or the full-width ``＝ ＋ － ＠``) would be read as a formula. Such cells are exported with a
leading single quote (OWASP's CSV-injection advice), and a cell that already starts with quotes
before such a character gets one more, so import removes exactly one and every text comes back as it
was. The JSONL export is left as it is (no spreadsheet reads it). Agreement:
Cohen's kappa of the judge's pass/fail with ``acceptable`` (``calibration.cohen_kappa``), and a
quadratic-weighted kappa per dimension on scores binned to five levels; overall, per intent, per locale.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from fmquality.run.calibrate import cohen_kappa
from fmquality.domain.scores import DIMENSIONS
from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import Kappa
from fmquality.config.watch import ReviewSettings

REVIEW_PK_PREFIX = "REVIEW#"
REVIEW_SK_PREFIX = "ITEM#"
LOCAL_QUEUE_FILE = "review.jsonl"
LEVELS = 5

Reason = Literal["failing", "low_confidence", "near_threshold", "random_pass"]


class ReviewItem(BaseModel):
    run_id: str
    test_id: str
    intent: str
    locale: str
    reason: Reason
    status: Literal["pending", "reviewed"] = "pending"
    judge_passed: bool
    judge_composite: float | None = None
    threshold: float | None = None
    judge_scores: dict[str, float | None] = Field(default_factory=dict)
    judge_reasons: list[str] = Field(default_factory=list)
    query: str | None = None
    response: str | None = None
    reviewer_acceptable: bool | None = None
    reviewer_scores: dict[str, float] = Field(default_factory=dict)  # as given: 1-5 or 0-1
    reviewer_scale: Literal["1-5", "0-1"] | None = None
    reviewer: str | None = None
    notes: str | None = None
    reviewed_at: str | None = None


def _min_confidence(result: EvaluationResult) -> float | None:
    values = [d.confidence for d in result.dimension_scores.values() if d.confidence is not None]
    return min(values) if values else None


def select_for_review(results: Sequence[EvaluationResult], settings: ReviewSettings | None = None,
                      run_id: str | None = None) -> list[ReviewItem]:
    settings = settings or ReviewSettings()
    items: list[ReviewItem] = []
    rest: list[EvaluationResult] = []
    for r in sorted(results, key=lambda x: x.test_id):
        confidence = _min_confidence(r)
        if not r.passed:
            reason: Reason | None = "failing"
        elif confidence is not None and confidence < settings.confidence_below:
            reason = "low_confidence"
        elif r.composite_score is not None and abs(r.composite_score - r.threshold) <= settings.composite_margin:
            reason = "near_threshold"
        else:
            reason = None
        if reason is None:
            rest.append(r)
        else:
            items.append(_item(r, reason, run_id))
    if rest and settings.passing_share > 0:
        k = max(1, round(settings.passing_share * len(rest)))
        rng = random.Random(f"{settings.seed}|{run_id or ''}")
        items.extend(_item(r, "random_pass", run_id) for r in sorted(rng.sample(rest, min(k, len(rest))),
                                                                     key=lambda x: x.test_id))
    return items


def _item(r: EvaluationResult, reason: Reason, run_id: str | None) -> ReviewItem:
    return ReviewItem(
        run_id=run_id or r.run_id or "", test_id=r.test_id, intent=r.intent, locale=r.locale, reason=reason,
        judge_passed=r.passed, judge_composite=r.composite_score, threshold=r.threshold,
        judge_scores={d: (r.dimension_scores[d].score if d in r.dimension_scores else None) for d in DIMENSIONS},
        judge_reasons=r.failure_reasons[:5], query=r.query, response=r.response)


# --------------------------------------------------------------------------------------------------
# Queues
# --------------------------------------------------------------------------------------------------


class LocalReviewQueue:
    """``review.jsonl`` in a run folder."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCAL_QUEUE_FILE

    def exists(self) -> bool:
        return self.path.is_file()

    def items(self, run_id: str | None = None) -> list[ReviewItem]:
        if not self.path.is_file():
            return []
        out = [ReviewItem.model_validate_json(line) for line in self.path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
        return [i for i in out if run_id is None or i.run_id == run_id]

    def add(self, items: Iterable[ReviewItem]) -> int:
        """New items only: an item already queued (maybe reviewed) is kept as it is."""
        current = {(i.run_id, i.test_id): i for i in self.items()}
        added = 0
        for item in items:
            if (item.run_id, item.test_id) not in current:
                current[(item.run_id, item.test_id)] = item
                added += 1
        self._write(current.values())
        return added

    def update(self, items: Iterable[ReviewItem]) -> None:
        current = {(i.run_id, i.test_id): i for i in self.items()}
        for item in items:
            current[(item.run_id, item.test_id)] = item
        self._write(current.values())

    def _write(self, items: Iterable[ReviewItem]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(items, key=lambda i: (i.run_id, i.test_id))
        self.path.write_text("".join(i.model_dump_json() + "\n" for i in rows), encoding="utf-8")


class DynamoReviewQueue:
    """The queue in the evaluation table: pk REVIEW#<run_id>, sk ITEM#<test_id>, ``status`` and the
    item as JSON in ``payload``."""

    def __init__(self, table_name: str, boto3_client: Any = None) -> None:
        if boto3_client is None:
            import boto3

            boto3_client = boto3.client("dynamodb")
        self.table_name = table_name
        self._ddb = boto3_client

    def _key(self, run_id: str, test_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"{REVIEW_PK_PREFIX}{run_id}"}, "sk": {"S": f"{REVIEW_SK_PREFIX}{test_id}"}}

    def _row(self, item: ReviewItem) -> dict[str, Any]:
        return {**self._key(item.run_id, item.test_id), "status": {"S": item.status},
                "reason": {"S": item.reason}, "payload": {"S": item.model_dump_json()}}

    def add(self, items: Iterable[ReviewItem]) -> int:
        """Conditional puts: a re-delivered event never resets an item a person already reviewed."""
        added = 0
        for item in items:
            try:
                self._ddb.put_item(TableName=self.table_name, Item=self._row(item),
                                   ConditionExpression="attribute_not_exists(pk)")
                added += 1
            except self._ddb.exceptions.ConditionalCheckFailedException:
                continue
        return added

    def update(self, items: Iterable[ReviewItem]) -> None:
        for item in items:
            self._ddb.put_item(TableName=self.table_name, Item=self._row(item))

    def items(self, run_id: str | None = None) -> list[ReviewItem]:
        if run_id is None:
            raise ValueError("the DynamoDB queue is read one run at a time: give the run id")
        out: list[ReviewItem] = []
        paginator = self._ddb.get_paginator("query")
        for page in paginator.paginate(TableName=self.table_name,
                                       KeyConditionExpression="pk = :pk AND begins_with(sk, :sk)",
                                       ExpressionAttributeValues={":pk": {"S": f"{REVIEW_PK_PREFIX}{run_id}"},
                                                                  ":sk": {"S": REVIEW_SK_PREFIX}},
                                       ConsistentRead=True):
            out.extend(ReviewItem.model_validate_json(row["payload"]["S"]) for row in page["Items"])
        return out


# --------------------------------------------------------------------------------------------------
# Export / import
# --------------------------------------------------------------------------------------------------

EXPORT_COLUMNS = (["run_id", "test_id", "intent", "locale", "reason", "status", "judge_passed", "judge_composite",
                   "threshold"] + [f"judge_{d}" for d in DIMENSIONS] + ["judge_reasons", "query", "response",
                   "acceptable"] + list(DIMENSIONS) + ["reviewer", "notes"])
_YES = {"yes", "y", "true", "1", "ok", "acceptable", "はい"}
_NO = {"no", "n", "false", "0", "defective", "いいえ"}


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def export_row(item: ReviewItem) -> dict[str, str]:
    row = {"run_id": item.run_id, "test_id": item.test_id, "intent": item.intent, "locale": item.locale,
           "reason": item.reason, "status": item.status, "judge_passed": _fmt(item.judge_passed),
           "judge_composite": _fmt(item.judge_composite), "threshold": _fmt(item.threshold),
           "judge_reasons": " | ".join(item.judge_reasons), "query": item.query or "",
           "response": item.response or "", "acceptable": _fmt(item.reviewer_acceptable),
           "reviewer": item.reviewer or "", "notes": item.notes or ""}
    for d in DIMENSIONS:
        row[f"judge_{d}"] = _fmt(item.judge_scores.get(d))
        value = item.reviewer_scores.get(d)
        row[d] = "" if value is None else (str(int(value)) if item.reviewer_scale == "1-5" else _fmt(float(value)))
    return row


# Text columns a spreadsheet shows as cells (the others are numbers, yes/no or fixed vocabularies).
SPREADSHEET_TEXT_COLUMNS = ("run_id", "test_id", "judge_reasons", "query", "response", "reviewer", "notes")
# A cell starting with one of these is a formula to Excel, LibreOffice or Google Sheets (OWASP), with
# the full-width and small forms of = + - @.
FORMULA_TRIGGERS = frozenset("=+-@\t\r＝＋－＠﹦﹢﹣﹫")


def _starts_formula(text: str) -> bool:
    head = text.lstrip("'")[:1]
    return bool(head) and head in FORMULA_TRIGGERS


def neutralize_cell(text: str) -> str:
    """``'`` + text when the text (after any leading quotes) starts with a formula trigger."""
    return "'" + text if _starts_formula(text) else text


def restore_cell(text: str) -> str:
    """The inverse of ``neutralize_cell``: one leading quote removed where export added it."""
    return text[1:] if text.startswith("'") and _starts_formula(text) else text


def export_text(items: Sequence[ReviewItem], fmt: Literal["csv", "jsonl"]) -> str:
    rows = [export_row(i) for i in sorted(items, key=lambda i: (i.run_id, i.test_id))]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    rows = [{k: neutralize_cell(v) if k in SPREADSHEET_TEXT_COLUMNS else v for k, v in r.items()} for r in rows]
    buffer = io.StringIO()
    # CRLF (RFC 4180): the writer then quotes any cell holding a CR or LF; with "\n" alone a bare CR
    # inside an answer was written unquoted and split the row.
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class ImportError_(BaseModel):
    file: str
    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.reason}"


class Verdict(BaseModel):
    line: int
    run_id: str | None
    test_id: str
    acceptable: bool
    scores: dict[str, float] = Field(default_factory=dict)
    scale: Literal["1-5", "0-1"] | None = None
    reviewer: str | None = None
    notes: str | None = None


def parse_score(raw: str) -> tuple[float, str]:
    """"1".."5" (integers) -> the 1-5 scale; a decimal in [0, 1] or "0" -> the 0-1 scale."""
    text = raw.strip()
    if text.isdigit():
        value = int(text)
        if 1 <= value <= 5:
            return float(value), "1-5"
        if value == 0:
            return 0.0, "0-1"
        raise ValueError(f"{text!r}: an integer score is 1-5")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number (1-5, or 0-1 with a decimal point)") from None
    if 0.0 <= value <= 1.0:
        return value, "0-1"
    raise ValueError(f"{text!r}: a decimal score is between 0 and 1")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    # Bytes decoded as they are: no newline translation, so a CR inside a quoted cell survives.
    text = path.read_bytes().decode("utf-8-sig")
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson") or text.lstrip().startswith("{"):
        out = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    data = {"__error__": f"not valid JSON: {exc.msg}"}
                out.append((number, data if isinstance(data, dict) else {"__error__": "not a JSON object"}))
        return out
    return csv_rows(text)


def csv_rows(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of an exported CSV, text cells restored (``restore_cell``) to what was exported."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    # The header is line 1; a field with embedded newlines makes reader.line_num the row's last line.
    return [(reader.line_num, {k: restore_cell(v) if k in SPREADSHEET_TEXT_COLUMNS and isinstance(v, str) else v
                               for k, v in row.items()}) for row in reader]


def parse_verdicts(path: str | Path) -> tuple[list[Verdict], list[ImportError_], int]:
    """Every filled row as a Verdict, every problem with its file, line and field, and how many rows
    were left blank (not reviewed yet: no acceptable and no score)."""
    source = Path(path)
    verdicts: list[Verdict] = []
    errors: list[ImportError_] = []
    blank = 0
    seen: dict[tuple[str | None, str], int] = {}
    for line, row in _rows(source):
        def err(field: str, reason: str) -> None:
            errors.append(ImportError_(file=str(source), line=line, field=field, reason=reason))

        if "__error__" in row:
            err("<line>", row["__error__"])
            continue
        value = {k: ("" if v is None else str(v)).strip() for k, v in row.items() if k is not None}
        test_id = value.get("test_id", "")
        raw_ok = value.get("acceptable", "").lower()
        scores_raw = {d: value.get(d, "") for d in DIMENSIONS if value.get(d, "")}
        if not test_id:
            err("test_id", "missing")
            continue
        if not raw_ok and not scores_raw:
            blank += 1
            continue
        ok_errors = len(errors)
        if raw_ok in _YES:
            acceptable = True
        elif raw_ok in _NO:
            acceptable = False
        else:
            err("acceptable", f"expected yes or no, got {value.get('acceptable', '')!r}" if raw_ok else
                "missing (yes or no) while scores are given")
            acceptable = False
        scores: dict[str, float] = {}
        scales = set()
        for d, raw in scores_raw.items():
            try:
                scores[d], scale = parse_score(raw)
                scales.add(scale)
            except ValueError as exc:
                err(d, str(exc))
        if len(scales) > 1:
            err(",".join(sorted(scores_raw)), "mixes the 1-5 and 0-1 scales in one row")
        key = (value.get("run_id") or None, test_id)
        if key in seen:
            err("test_id", f"{test_id!r} already given on line {seen[key]}")
        seen[key] = line
        if len(errors) == ok_errors:
            verdicts.append(Verdict(line=line, run_id=value.get("run_id") or None, test_id=test_id,
                                    acceptable=acceptable, scores=scores,
                                    scale=next(iter(scales)) if len(scales) == 1 else None,
                                    reviewer=value.get("reviewer") or None,
                                    notes=_exact_text(row.get("notes"))))
    return verdicts, errors, blank


def _exact_text(raw: Any) -> str | None:
    """A free-text cell as the reviewer wrote it (no trimming: a note starting with a tab or "=" comes
    back as written); a blank cell is no text."""
    return raw if isinstance(raw, str) and raw.strip() else None


def apply_verdicts(items: Sequence[ReviewItem], verdicts: Sequence[Verdict], source: str,
                   now: str | None = None) -> tuple[list[ReviewItem], list[ImportError_]]:
    """The queue items the verdicts update (status reviewed); a verdict for an item not in the
    queue is an error naming its line."""
    by_key = {(i.run_id, i.test_id): i for i in items}
    by_test: dict[str, list[ReviewItem]] = defaultdict(list)
    for i in items:
        by_test[i.test_id].append(i)
    stamp = now or datetime.now(timezone.utc).isoformat(timespec="seconds")
    updated: list[ReviewItem] = []
    errors: list[ImportError_] = []
    for v in verdicts:
        item = by_key.get((v.run_id, v.test_id)) if v.run_id else (by_test[v.test_id][0] if len(by_test[v.test_id]) == 1 else None)
        if item is None:
            errors.append(ImportError_(file=source, line=v.line, field="test_id",
                                       reason=f"{v.test_id!r} is not in the review queue" +
                                              (f" of run {v.run_id}" if v.run_id else "")))
            continue
        updated.append(item.model_copy(update={"status": "reviewed", "reviewer_acceptable": v.acceptable,
                                               "reviewer_scores": v.scores, "reviewer_scale": v.scale,
                                               "reviewer": v.reviewer, "notes": v.notes, "reviewed_at": stamp}))
    return updated, errors


# --------------------------------------------------------------------------------------------------
# Agreement
# --------------------------------------------------------------------------------------------------


def level(score: float, scale: str = "0-1") -> int:
    """Five levels: a 1-5 score is its own level; a 0-1 score is binned [0, .2) .. [.8, 1]."""
    if scale == "1-5":
        return int(min(5, max(1, round(score))))
    return min(LEVELS, int(score * LEVELS) + 1)


class WeightedKappa(BaseModel):
    n: int
    value: float | None
    undefined_reason: str | None = None


def quadratic_weighted_kappa(pairs: Iterable[tuple[int, int]], levels: int = LEVELS) -> WeightedKappa:
    """1 - sum(w O) / sum(w E), w_ij = (i - j)^2 / (levels - 1)^2, E from the marginals."""
    data = list(pairs)
    n = len(data)
    if n < 2:
        return WeightedKappa(n=n, value=None, undefined_reason=f"{n} pair(s): kappa needs at least 2")
    observed = [[0] * levels for _ in range(levels)]
    for a, b in data:
        observed[a - 1][b - 1] += 1
    row = [sum(r) for r in observed]
    col = [sum(observed[i][j] for i in range(levels)) for j in range(levels)]
    num = den = 0.0
    for i in range(levels):
        for j in range(levels):
            w = (i - j) ** 2 / (levels - 1) ** 2
            num += w * observed[i][j]
            den += w * row[i] * col[j] / n
    if den == 0:
        return WeightedKappa(n=n, value=None, undefined_reason="both sides give one and the same level")
    return WeightedKappa(n=n, value=round(1 - num / den, 4))


class AgreementSubset(BaseModel):
    subset: str  # "all", "intent:faq", "locale:ja-JP"
    reviewed: int
    pass_fail: Kappa
    dimensions: dict[str, WeightedKappa] = Field(default_factory=dict)


class JudgeAgreement(BaseModel):
    reviewed: int
    pending: int
    subsets: list[AgreementSubset] = Field(default_factory=list)

    def subset(self, name: str) -> AgreementSubset | None:
        return next((s for s in self.subsets if s.subset == name), None)


def _subset(name: str, items: list[ReviewItem]) -> AgreementSubset:
    dims: dict[str, WeightedKappa] = {}
    for d in DIMENSIONS:
        pairs = [(level(i.judge_scores[d]), level(i.reviewer_scores[d], i.reviewer_scale or "0-1"))
                 for i in items if i.judge_scores.get(d) is not None and d in i.reviewer_scores]
        if pairs:
            dims[d] = quadratic_weighted_kappa(pairs)
    return AgreementSubset(subset=name, reviewed=len(items),
                           pass_fail=cohen_kappa((i.judge_passed, bool(i.reviewer_acceptable)) for i in items),
                           dimensions=dims)


def judge_agreement(items: Sequence[ReviewItem]) -> JudgeAgreement:
    reviewed = [i for i in items if i.status == "reviewed" and i.reviewer_acceptable is not None]
    subsets = [_subset("all", reviewed)]
    for attr in ("intent", "locale"):
        groups: dict[str, list[ReviewItem]] = defaultdict(list)
        for i in reviewed:
            groups[getattr(i, attr)].append(i)
        subsets.extend(_subset(f"{attr}:{k}", v) for k, v in sorted(groups.items()))
    return JudgeAgreement(reviewed=len(reviewed), pending=len(items) - len(reviewed), subsets=subsets)


def agreement_metric_data(agreement: JudgeAgreement, min_reviewed: int = 2,
                          timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """JudgeAgreementKappa (pass/fail) overall (no dimension), per Intent and per Locale;
    JudgeAgreementKappa_<dimension> (quadratic-weighted) likewise. Undefined kappas and subsets with
    fewer than ``min_reviewed`` reviewed items are not published (no data is not a kappa of 0)."""
    when = timestamp or datetime.now(timezone.utc)
    data: list[dict[str, Any]] = []
    for s in agreement.subsets:
        if s.reviewed < min_reviewed:
            continue
        dims = [] if s.subset == "all" else [{"Name": s.subset.split(":", 1)[0].capitalize(),
                                             "Value": s.subset.split(":", 1)[1]}]
        if s.pass_fail.value is not None:
            data.append({"MetricName": "JudgeAgreementKappa", "Dimensions": dims, "Value": s.pass_fail.value,
                         "Unit": "None", "Timestamp": when})
        for d, k in s.dimensions.items():
            if k.value is not None:
                data.append({"MetricName": f"JudgeAgreementKappa_{d}", "Dimensions": dims, "Value": k.value,
                             "Unit": "None", "Timestamp": when})
    return data
