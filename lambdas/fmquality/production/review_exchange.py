"""The review queue as a spreadsheet and back: export of queue items (CSV or JSON Lines) and import
of reviewer verdicts, every problem named by file, line and field.

Reviewer verdicts come back as CSV or JSON Lines (any spreadsheet works): ``acceptable`` yes/no
and optional per-dimension scores, either 1-5 (integers) or 0-1 (decimals, or 0).

The CSV is opened in spreadsheets, and its text cells (the shopper's query, the answer, reasons,
notes) are attacker-controlled: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return (or the full-width ``＝ ＋ － ＠``) would be read as a formula. Such cells are exported with a
leading single quote (OWASP's CSV-injection advice), and a cell that already starts with quotes
before such a character gets one more, so import removes exactly one and every text comes back as it
was. The JSONL export is left as it is (no spreadsheet reads it).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.production.review import ReviewItem

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
    """One queue item as the cells of an ``EXPORT_COLUMNS`` row (before CSV neutralization)."""
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
    """The items as a CSV (formula cells neutralized) or JSON Lines file, sorted by run and test id."""
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


class VerdictProblem(BaseModel):
    """A verdict that cannot be imported, by file, line and field; printed as ``file:line: field: reason``."""

    file: str
    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.reason}"


class Verdict(BaseModel):
    """One reviewer's row, parsed: acceptable or not, and the scores on one scale."""

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


def parse_verdicts(path: str | Path) -> tuple[list[Verdict], list[VerdictProblem], int]:
    """Every filled row as a Verdict, every problem with its file, line and field, and how many rows
    were left blank (not reviewed yet: no acceptable and no score)."""
    source = Path(path)
    verdicts: list[Verdict] = []
    errors: list[VerdictProblem] = []
    blank = 0
    seen: dict[tuple[str | None, str], int] = {}
    for line, row in _rows(source):
        def err(field: str, reason: str) -> None:
            errors.append(VerdictProblem(file=str(source), line=line, field=field, reason=reason))

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
                   now: str | None = None) -> tuple[list[ReviewItem], list[VerdictProblem]]:
    """The queue items the verdicts update (status reviewed); a verdict for an item not in the
    queue is an error naming its line."""
    by_key = {(i.run_id, i.test_id): i for i in items}
    by_test: dict[str, list[ReviewItem]] = defaultdict(list)
    for i in items:
        by_test[i.test_id].append(i)
    stamp = now or datetime.now(timezone.utc).isoformat(timespec="seconds")
    updated: list[ReviewItem] = []
    errors: list[VerdictProblem] = []
    for v in verdicts:
        item = by_key.get((v.run_id, v.test_id)) if v.run_id else (by_test[v.test_id][0] if len(by_test[v.test_id]) == 1 else None)
        if item is None:
            errors.append(VerdictProblem(file=source, line=v.line, field="test_id",
                                       reason=f"{v.test_id!r} is not in the review queue" +
                                              (f" of run {v.run_id}" if v.run_id else "")))
            continue
        updated.append(item.model_copy(update={"status": "reviewed", "reviewer_acceptable": v.acceptable,
                                               "reviewer_scores": v.scores, "reviewer_scale": v.scale,
                                               "reviewer": v.reviewer, "notes": v.notes, "reviewed_at": stamp}))
    return updated, errors
