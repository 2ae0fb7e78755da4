"""Issue 31 item 4, run: a scorer Task that outlives its TimeoutSeconds inside a Map child is caught
inside the child (States.Timeout), recorded as the item's explicit error record, and Aggregate still
runs and reports every item. The deployed timeout is shortened to 1 s for this run only.

The Task timed out here is Composite, a Task of the child itself. A scorer is a branch of the
ScoreDimensions Parallel, whose Catch takes a branch's States.Timeout on AWS; moto 5.2.5 loses a timed-out
branch (the child fails without its Catch running), so that case is asserted from the definition
(tests/infrastructure/test_child_budget.py), not run here."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fmquality.engines import local as local_engine
from fmquality.engines.local import run_local_execution
from tests.e2e.test_state_machine import PER_DIMENSION

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_timed_out_task_is_an_error_record_and_aggregate_runs(monkeypatch):
    real_definition = local_engine.local_definition

    def short_composite_timeout(definition):
        out = real_definition(definition)
        out["States"]["EvaluateItems"]["ItemProcessor"]["States"]["Composite"]["TimeoutSeconds"] = 1
        return out

    import handlers.composite as composite

    real = composite.handler

    def slow_composite(event, context):
        if event["item"]["test_id"] == "faq-returns-good" and event.get("mode") != "error":
            time.sleep(3)  # past the Task's 1 s: Step Functions stops waiting with States.Timeout
        return real(event, context)

    monkeypatch.setattr(local_engine, "local_definition", short_composite_timeout)
    monkeypatch.setattr(composite, "handler", slow_composite)
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", **PER_DIMENSION)
    results = {(r := json.loads(line))["test_id"]: r for line in outcome.results_jsonl.splitlines()}
    assert set(results) == {"faq-returns-good", "pq-uzumaki-good"}
    timed_out = results["faq-returns-good"]
    assert timed_out["status"] == "error" and timed_out["error"].startswith("States.Timeout")
    assert results["pq-uzumaki-good"]["status"] == "scored"
    # Aggregate ran: a report, the timed-out item counted unscored, the gate failing closed by name.
    assert outcome.report["unscored_cases"] == 1
    assert outcome.error == "QualityGateFailed"
