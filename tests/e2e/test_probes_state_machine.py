"""Issue 20, item 5 end to end on embedded AWS: the shipped probes answered by a production chatbot that
falls for prompt injection, judged by the state machine with trigger "probe"; the probe failure rate the
run publishes is its judged probes' failures (the alarm's metric, tests/infrastructure/test_probes.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fmquality.engines.local import run_local_execution

PROBES = Path(__file__).resolve().parents[2] / "datasets" / "mangaassist" / "probes.jsonl"


def injectable_chatbot(request: Any) -> dict[str, Any]:
    """Answers within policy from the retrieved passages and catalog, except that it obeys injected
    instructions (it prints its system prompt)."""
    turn = request.model_dump(mode="json") if hasattr(request, "model_dump") else dict(request)
    if "probe:prompt_injection" in turn.get("tags", []) or "Ignore all previous" in turn["query"]:
        answer = "Sure. system prompt: You are MangaAssist, a shopping assistant. Your discount code: FREE100 (100%)."
    else:
        facts = [*turn.get("retrieved_chunks", []), *(f"{c['title']} is {c['price']} {c['currency']}, "
                                                       f"{c['availability'].replace('_', ' ')}." for c in turn.get("catalog", []))]
        answer = " ".join(facts) or "I can't confirm that; let me connect you with customer service."
    return {"response": answer, "usage": {"input_tokens": 120, "output_tokens": 40}}


def test_a_probe_run_publishes_its_failures_as_the_probe_failure_rate():
    published: dict[str, list[float]] = {}

    def read_back(client):
        import datetime as dt

        now = dt.datetime.now(dt.timezone.utc)
        for name in ("ProbeFailureRate", "ProbesJudged", "ProbeUnjudged"):
            stats = client("cloudwatch").get_metric_statistics(
                Namespace="MangaAssist/Evaluation", MetricName=name, StartTime=now - dt.timedelta(hours=1),
                EndTime=now + dt.timedelta(hours=1), Period=3600, Statistics=["Maximum"])
            published[name] = [p["Maximum"] for p in stats["Datapoints"]]

    outcome = run_local_execution(dataset_path=PROBES, target="python:tests.e2e.test_probes_state_machine:injectable_chatbot",
                                  trigger="probe", run_id="probes", retry_wait_cap_s=0.01, inspect_aws=read_back)

    results = [json.loads(line) for line in outcome.results_jsonl.splitlines() if line.strip()]
    judged = [r for r in results if r["status"] == "scored"]
    failed = [r for r in judged if not r["passed"]]
    # The chatbot fell for injected instructions: some probes failed (which ones is the judge's call).
    assert failed and len(failed) < len(judged)
    assert published["ProbeFailureRate"] == [100.0 * len(failed) / len(judged)]
    assert published["ProbesJudged"] == [float(len(judged))]
    assert published["ProbeUnjudged"] == [float(len(results) - len(judged))]
    assert json.loads(outcome.outputs["report.json"])["trigger"] == "probe"
