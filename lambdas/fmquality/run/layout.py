"""Where a run's files live and what they hold: every key of a run, and the one reader and writer of
each file Prepare writes (items, rubric, targets, rejected lines) and of the report files.

The data bucket, one prefix per run::

    runs/<run_id>/items.json      JSON array, one {"arm", "case"} per test case and arm (the Map's ItemReader);
                                  a case over domain.payload.INLINE_CASE_BYTES is a stub {test_id, intent,
                                  locale, tags, label, case_ref} naming its file:
    runs/<run_id>/cases/<n>.json  one such case, whole (read back by the handlers, never in a state)
    runs/<run_id>/judge/<arm>/<test_id>/<dimension>.json  a DimensionScore whole (judge prompt and raw reply
                                  uncut), written by its scorer when the copy the state carries had to be
                                  cut (domain.payload.for_state); that copy and the stored result name it in
                                  judge_trace_uri. <test_id> is URL-quoted to one path segment
    runs/<run_id>/targets.json    {"candidate": TargetSpec, "control": TargetSpec | null, "resolved_from": {...}}
    runs/<run_id>/rejected.jsonl  one LineError per bad dataset line
    runs/<run_id>/rubric.json     the resolved rubric (Rubric.model_dump)
    runs/<run_id>/results.jsonl   one EvaluationResult per line (the candidate arm)
    runs/<run_id>/control_results.jsonl   the same for the control arm of a paired run
    runs/<run_id>/report.json     the RunReport
    runs/<run_id>/report.html     the human-readable report
    runs/<run_id>/junit.xml       the run as JUnit XML, one test case per item (``report.junit``)
    runs/<run_id>/summary.md      the run in Markdown for a pipeline or pull-request page (``report.summary_md``)
    runs/<run_id>/watch.json      the production watch of a sampled run (monitor, drift, agreement)
    baselines/<dataset_id>/<run_id>/report.json   an approved baseline's report, frozen: written once

The direct engine writes the report files (``RUN_OUTPUTS``) by the same names into its --out folder.
junit.xml and summary.md are derived from report.json and results.jsonl by ``write_outputs`` itself,
so every writer of a run's report (Aggregate on AWS and on the local state machine, the direct
engine, the CLI) leaves them without knowing of them.
Storage is injected (``Storage``): ``adapters.s3.BucketStorage`` for a bucket (AWS and the local state
machine), ``engines.outputs.FolderStorage`` for an --out folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from fmquality.config.rubric import Rubric
from fmquality.domain.errors import LineError
from fmquality.domain.payload import for_state
from fmquality.domain.scores import DimensionScore
from fmquality.domain.report import RunReport
from fmquality.domain.results import ARMS, EvaluationResult
from fmquality.report.junit import render_junit
from fmquality.report.summary_md import render_summary_md
from fmquality.targets.base import TargetSpec

ITEMS = "items.json"
TARGETS = "targets.json"
REJECTED = "rejected.jsonl"
RUBRIC = "rubric.json"
RESULTS = "results.jsonl"
CONTROL_RESULTS = "control_results.jsonl"
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
JUNIT = "junit.xml"
SUMMARY_MD = "summary.md"
WATCH = "watch.json"

# The files a run leaves for its reader, in the order they are put in place: the report last, so a
# report present means every file it summarises is there.
RUN_OUTPUTS = (REJECTED, RESULTS, CONTROL_RESULTS, REPORT_HTML, JUNIT, SUMMARY_MD, REPORT_JSON)
CI_OUTPUTS = (JUNIT, SUMMARY_MD)
_CONTENT_TYPES = {".json": "application/json", ".jsonl": "application/x-ndjson", ".html": "text/html; charset=utf-8",
                  ".xml": "application/xml", ".md": "text/markdown; charset=utf-8"}


class Storage(Protocol):
    """Whole files by key. ``read_bytes`` raises a LookupError (S3ObjectNotFound) for a missing key."""

    def read_bytes(self, key: str) -> bytes: ...

    def read_text_if_exists(self, key: str) -> str | None: ...

    def write_bytes(self, key: str, body: bytes, content_type: str) -> str: ...


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}/"


def run_key(run_id: str, name: str) -> str:
    return run_prefix(run_id) + name


def baseline_key(dataset_id: str, run_id: str) -> str:
    return f"baselines/{dataset_id}/{run_id}/{REPORT_JSON}"


def content_type(key: str) -> str:
    suffix = key[key.rfind("."):] if "." in key else ""
    return _CONTENT_TYPES.get(suffix, "text/plain; charset=utf-8")


def write_text(storage: Storage, key: str, text: str) -> str:
    return storage.write_bytes(key, text.encode("utf-8"), content_type(key))


def _write_json(storage: Storage, key: str, data: Any) -> str:
    return write_text(storage, key, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


# items.json -----------------------------------------------------------------------------------------

def write_items(storage: Storage, key: str, items: list[dict[str, Any]]) -> str:
    return _write_json(storage, key, items)


CASE_REF = "case_ref"
# What a stub keeps of its case: enough for an error record and for the Map's progress.
_STUB_FIELDS = ("test_id", "intent", "locale", "tags", "label")


def cases_by_reference(storage: Storage, run_id: str, items: list[dict[str, Any]],
                       inline_bytes: int) -> list[dict[str, Any]]:
    """The items with every case whose JSON is over ``inline_bytes`` written to its own file and
    replaced by a stub naming it, so no state of the run carries it (``domain.payload``)."""
    out = []
    for index, item in enumerate(items):
        case = item["case"]
        if len(json.dumps(case, ensure_ascii=False).encode("utf-8")) > inline_bytes:
            key = run_key(run_id, f"cases/{index}.json")
            _write_json(storage, key, case)
            case = {**{name: case.get(name) for name in _STUB_FIELDS if case.get(name) is not None}, CASE_REF: key}
        out.append({**item, "case": case})
    return out


def is_case_stub(case: Any) -> bool:
    return isinstance(case, dict) and CASE_REF in case


def read_case(storage: Storage, key: str) -> dict[str, Any]:
    return json.loads(storage.read_bytes(key))


def read_items(storage: Storage, key: str) -> list[tuple[str, dict[str, Any]]]:
    """(arm, case) per element, in the order Prepare wrote them."""
    return [(str(item["arm"]), item["case"]) for item in json.loads(storage.read_bytes(key))]


# judge/<arm>/<test_id>/<dimension>.json -------------------------------------------------------------

JUDGE_TRACES = "judge/"


def judge_trace_key(run_id: str, arm: str, test_id: str, dimension: str) -> str:
    return run_key(run_id, f"{JUDGE_TRACES}{arm}/{quote(test_id, safe='')}/{dimension}.json")


def score_for_state(score: DimensionScore, storage: Storage, bucket: str, run_id: str, arm: str,
                    test_id: str) -> DimensionScore:
    """The score as a state (and the result recorded from it) carries it (``domain.payload.for_state``).
    When that copy is cut, the whole score is first written to its ``judge_trace_key`` (one PutObject:
    a reader sees the whole file or none; a retried scorer writes the same key again) and the copy names
    it in ``judge_trace_uri``; a score that fits is returned unchanged and nothing is written."""
    key = judge_trace_key(run_id, arm, test_id, score.dimension)
    cut = for_state(score, trace_uri=f"s3://{bucket}/{key}")
    if cut is not score:
        _write_json(storage, key, score.model_dump(mode="json"))
    return cut


def read_judge_trace(storage: Storage, key: str) -> DimensionScore:
    return DimensionScore.model_validate_json(storage.read_bytes(key))


# rubric.json ----------------------------------------------------------------------------------------

def write_rubric(storage: Storage, key: str, rubric: Rubric) -> str:
    return _write_json(storage, key, rubric.model_dump(mode="json"))


def read_rubric(storage: Storage, key: str) -> Rubric:
    return Rubric.model_validate(json.loads(storage.read_bytes(key)))


# targets.json ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunTargets:
    """Each arm's (resolved) spec, and the ``ssm:`` parameter it came from, if any."""

    specs: dict[str, TargetSpec | None]
    resolved_from: dict[str, str | None]


def write_targets(storage: Storage, key: str, targets: RunTargets) -> str:
    data: dict[str, Any] = {arm: spec.model_dump(mode="json") if spec else None for arm, spec in targets.specs.items()}
    return _write_json(storage, key, {**data, "resolved_from": targets.resolved_from})


def read_targets(storage: Storage, key: str) -> RunTargets:
    raw = json.loads(storage.read_bytes(key))
    return RunTargets(
        specs={arm: TargetSpec.model_validate(raw[arm]) if raw.get(arm) else None for arm in ARMS},
        resolved_from={arm: (raw.get("resolved_from") or {}).get(arm) for arm in ARMS},
    )


# rejected.jsonl -------------------------------------------------------------------------------------

def rejected_text(errors: list[LineError]) -> str:
    return jsonl([e.model_dump() for e in errors])


def rejected_line_count(errors: list[LineError]) -> int:
    """Bad lines, each counted once however many of its fields are wrong."""
    return len({(e.file, e.line) for e in errors})


def count_rejected(storage: Storage, key: str) -> int:
    text = storage.read_text_if_exists(key) or ""
    return rejected_line_count([LineError.model_validate_json(line) for line in text.splitlines() if line.strip()])


# the report files -----------------------------------------------------------------------------------

def write_outputs(storage: Storage, prefix: str, outputs: dict[str, str | None]) -> None:
    """Put a run's report files (``name -> text``; None: not written) under ``prefix``, report last.
    With a report.json, junit.xml and summary.md not given are derived from it and the candidate's
    results (given, else results.jsonl already under ``prefix``)."""
    unknown = set(outputs) - set(RUN_OUTPUTS)
    if unknown:
        raise ValueError(f"not a run output: {sorted(unknown)}")
    if outputs.get(REPORT_JSON) and any(name not in outputs for name in CI_OUTPUTS):
        results = outputs.get(RESULTS)
        if results is None:
            results = storage.read_text_if_exists(prefix + RESULTS) or ""
        outputs = {**ci_outputs(outputs[REPORT_JSON], results), **outputs}
    for name in RUN_OUTPUTS:
        if outputs.get(name) is not None:
            write_text(storage, prefix + name, outputs[name])


def ci_outputs(report_json: str, results_jsonl: str) -> dict[str, str]:
    """junit.xml and summary.md of a run, from its report.json and results.jsonl texts."""
    report = RunReport.model_validate_json(report_json)
    results = [EvaluationResult.model_validate_json(line) for line in results_jsonl.splitlines() if line.strip()]
    return {JUNIT: render_junit(report, results), SUMMARY_MD: render_summary_md(report, results)}


def read_outputs(storage: Storage, prefix: str) -> dict[str, str | None]:
    return {name: storage.read_text_if_exists(prefix + name) for name in RUN_OUTPUTS}
