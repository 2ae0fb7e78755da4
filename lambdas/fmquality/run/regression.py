"""Incidents become tests: a captured turn, or a run's item, turned into a labelled, redacted case
tagged ``regression`` and appended to a dataset file (seed 004's post-mortem step in one command).

The case keeps the answer of the incident as its recorded ``response``, labelled defective with what
went wrong, and what a good answer does as its ``reference_response`` (and ``expected_behavior`` when
given). Run against a target (``--target``), the recorded answer is replaced by the new version's and
the gate's ``fail_on_regression_tag`` fails the run if the incident comes back; run on the recorded
answers it fails by design (the incident's answer is the defect).

Every case is redacted (the same redaction as the capture stream: ids as keyed tokens, personal data
replaced) and validated as a dataset line before it is written; the file is rewritten whole through a
temporary file, so an interrupted command leaves it as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fmquality.domain.case import ExpectedBehavior, TestCase
from fmquality.domain.errors import DatasetError
from fmquality.files import write_atomically
from fmquality.production.capture import TurnRecord, parse_turn_lines, redact_record
from fmquality.production.redact import Redactor
from fmquality.production.sample import turn_to_case

REGRESSION_TAG = "regression"


def find_turn(turns_root: Path, turn_id: str) -> TurnRecord:
    """The captured turn with ``turn_id`` (as captured or as stored: its keyed token), from the local
    turn store's files (``<root>/production/turns/dt=*/*.jsonl``)."""
    for path in sorted(turns_root.glob("production/turns/dt=*/*.jsonl")):
        turns, _problems = parse_turn_lines(path.read_bytes().splitlines(), str(path))
        for turn in turns:
            if turn.turn_id == turn_id:
                return turn
    raise DatasetError(f"no captured turn {turn_id!r} under {turns_root}/production/turns")


def case_from_turn(turn: TurnRecord, redactor: Redactor) -> dict[str, Any]:
    return turn_to_case(redact_record(turn, redactor))


def case_from_run(run_dir: Path, test_id: str) -> dict[str, Any]:
    """A run's item as a dataset line: the dataset's own case (its catalog, knowledge and page) with the
    answer the run scored. The run folder holds results.jsonl and report.json (which names the dataset)."""
    result = next((json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip() and json.loads(line).get("test_id") == test_id), None)
    if result is None:
        raise DatasetError(f"{run_dir}/results.jsonl has no item {test_id!r}")
    dataset = json.loads((run_dir / "report.json").read_text(encoding="utf-8")).get("dataset")
    case = _dataset_line(Path(dataset), test_id) if dataset and Path(dataset).is_file() else None
    if case is None:  # the dataset is not on this machine: what the result itself holds
        case = {"test_id": test_id, "intent": result["intent"], "locale": result.get("locale", "en-US"),
                "query": result.get("query") or ""}
    case["response"] = result.get("response") or case.get("response")
    return case


def _dataset_line(path: Path, test_id: str) -> dict[str, Any] | None:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line).get("test_id") == test_id:
            return json.loads(line)
    return None


def regression_case(case: dict[str, Any], expect: str, incident: str, redactor: Redactor,
                    behavior: ExpectedBehavior | None = None) -> dict[str, Any]:
    """The incident's case labelled and tagged (see the module's docstring), redacted, and validated."""
    stored = redact_record(_as_turn(case), redactor)
    out = {**case, "query": stored.query, "response": stored.response,
           "conversation_history": [m.model_dump() for m in stored.conversation_history],
           "page_context": stored.page_context.model_dump(exclude_none=True)}
    out["test_id"] = f"regression-{incident}"
    out["tags"] = sorted({*(case.get("tags") or []), REGRESSION_TAG, f"incident:{incident}"})
    out["label"] = {"acceptable": False, "defect": f"incident {incident}: the answer should have: {expect}"}
    out["reference_response"] = expect
    if behavior is not None:
        out["expected_behavior"] = behavior
    TestCase.model_validate(out)  # a line the dataset loader would refuse is never written
    return out


def _as_turn(case: dict[str, Any]) -> TurnRecord:
    """The case as a turn, so the stream's redaction applies to it unchanged."""
    return TurnRecord.model_validate({
        "turn_id": case["test_id"], "timestamp": "2000-01-01T00:00:00+00:00", "locale": case.get("locale", "en-US"),
        "intent": case["intent"], "query": case["query"], "response": case.get("response") or "",
        "conversation_history": case.get("conversation_history") or [], "page_context": case.get("page_context") or {},
        "catalog": case.get("catalog") or [], "retrieved_chunks": case.get("retrieved_chunks") or [],
        "model_id": "regression", "prompt_version": "regression", "latency_ms": 0})


def append_case(dataset: Path, case: dict[str, Any]) -> None:
    """Append one line to ``dataset`` atomically; a case whose test_id the file holds already is refused."""
    existing = dataset.read_text(encoding="utf-8") if dataset.exists() else ""
    ids = {json.loads(line).get("test_id") for line in existing.splitlines() if line.strip()}
    if case["test_id"] in ids:
        raise DatasetError(f"{dataset} already holds {case['test_id']!r}")
    text = existing + ("" if not existing or existing.endswith("\n") else "\n") + json.dumps(case, ensure_ascii=False) + "\n"
    write_atomically(dataset, text)
