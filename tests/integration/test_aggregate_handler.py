"""Aggregate against moto: report files, the run record, metrics, the EvaluationCompleted event,
items without a result, the baseline comparison, and the table's three reads."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, CASES, DATASET_ID, TABLE, all_scores, load_event, put_dataset, read_json, read_text

NAMESPACE = "MangaAssist/Evaluation"


def _prepare(aws, context, run_id, **extra):
    from handlers.prepare import handler

    put_dataset(aws.s3, CASES)
    return handler(load_event("prepare.json", execution_name=run_id, **extra), context)


def _score(context, prepared, case, score=1.0, arm="candidate", generation=None):
    from handlers.composite import handler

    return handler(load_event("composite.json", run_id=prepared["run_id"], rubric_key=prepared["rubric_key"],
                              item=case, scores=all_scores(score), arm=arm, generation=generation), context)


def _aggregate(context, prepared, **extra):
    from handlers.aggregate import handler

    event = load_event("aggregate.json", run_id=prepared["run_id"], rubric_key=prepared["rubric_key"],
                       items_key=prepared["items_key"], targets_key=prepared["targets_key"],
                       dataset_id=prepared["dataset_id"],
                       baseline_run_id=prepared["baseline_run_id"], trigger=prepared["trigger"])
    event.update(extra)
    return handler(event, context)


def _table(aws):
    from fmquality.adapters.dynamodb import EvaluationTable

    return EvaluationTable(TABLE, aws.ddb)


def _sent_events(aws) -> list[dict]:
    messages = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def _metric_values(aws, name: str, dimensions: list[dict] | None = None, stat: str = "Average") -> list[float]:
    now = datetime.now(timezone.utc)
    response = aws.cloudwatch.get_metric_data(
        MetricDataQueries=[{
            "Id": "m1",
            "MetricStat": {"Metric": {"Namespace": NAMESPACE, "MetricName": name, "Dimensions": dimensions or []},
                           "Period": 60, "Stat": stat},
        }],
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(hours=1),
    )
    return response["MetricDataResults"][0]["Values"]


def test_aggregate_of_a_passing_run(aws, lambda_context):
    from fmquality.domain.results import EvaluationResult
    from fmquality.domain.report import RunReport

    prepared = _prepare(aws, lambda_context, "run-pass")
    for case in CASES:
        _score(lambda_context, prepared, case)
    out = _aggregate(lambda_context, prepared)

    assert out["gate_passed"] is True and out["summary"] == "passed"
    assert out["total_cases"] == len(CASES) and out["unscored_cases"] == 0 and out["pass_rate"] == 1.0
    report = RunReport.model_validate(read_json(aws.s3, out["report_key"]))
    assert out["report_key"] == "runs/run-pass/report.json"
    assert report.engine == "stepfunctions" and report.judge == "scripted" and report.gate.passed
    assert report.execution == {"arn": load_event("aggregate.json")["execution_arn"]}
    results = [EvaluationResult.model_validate_json(line)
               for line in read_text(aws.s3, "runs/run-pass/results.jsonl").splitlines()]
    assert sorted(r.test_id for r in results) == sorted(c["test_id"] for c in CASES)
    html = read_text(aws.s3, "runs/run-pass/report.html")
    assert "<html" in html.lower() and "run-pass" in html
    head = aws.s3.head_object(Bucket=BUCKET, Key="runs/run-pass/report.html")
    assert head["ContentType"].startswith("text/html")

    run = _table(aws).get_run("run-pass")
    assert run["status"] == "SUCCEEDED" and run["gate_passed"] is True
    assert run["pass_rate"] == 1.0 and run["report_key"] == out["report_key"]

    [event] = _sent_events(aws)
    assert event["source"] == "fmquality" and event["detail-type"] == "EvaluationCompleted"
    assert event["detail"] == {"run_id": "run-pass", "dataset_id": DATASET_ID, "gate_passed": True, "pass_rate": 1.0,
                               "report_uri": f"s3://{BUCKET}/runs/run-pass/report.json", "reasons": []}


def test_aggregate_records_items_without_a_result_and_fails_the_gate(aws, lambda_context):
    from fmquality.domain.report import RunReport

    prepared = _prepare(aws, lambda_context, "run-missing")
    _score(lambda_context, prepared, CASES[0])
    _score(lambda_context, prepared, CASES[1])  # order-eta never got a result
    out = _aggregate(lambda_context, prepared)

    assert out["gate_passed"] is False
    assert out["unscored_cases"] == 1 and out["total_cases"] == len(CASES)
    assert "\n" not in out["summary"] and "rule(s) broken" in out["summary"]
    assert "order_tracking" in out["summary"]
    missing = {r.test_id: r for r in _table(aws).results_for_run("run-missing")}["order-eta"]
    assert missing.status == "error" and missing.error == "no result recorded" and not missing.passed
    lines = [json.loads(line) for line in read_text(aws.s3, "runs/run-missing/results.jsonl").splitlines()]
    assert {row["test_id"]: row["status"] for row in lines}["order-eta"] == "error"
    report = RunReport.model_validate(read_json(aws.s3, out["report_key"]))
    assert report.error_cases == 1 and report.gate.reasons
    run = _table(aws).get_run("run-missing")
    assert run["status"] == "GATE_FAILED" and run["gate_passed"] is False
    [event] = _sent_events(aws)
    assert event["detail"]["gate_passed"] is False and event["detail"]["reasons"] == report.gate.reasons


def test_aggregate_publishes_metrics_per_intent_and_per_run(aws, lambda_context):
    prepared = _prepare(aws, lambda_context, "run-metrics")
    _score(lambda_context, prepared, CASES[0], 1.0)   # faq
    _score(lambda_context, prepared, CASES[1], 0.5)   # product_question, below its threshold
    out = _aggregate(lambda_context, prepared)        # order_tracking: no result

    listed = aws.cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"]
    by_name: dict[str, list] = {}
    for metric in listed:
        by_name.setdefault(metric["MetricName"], []).append(
            {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])})
    for name in ("QualityGateResult", "DimensionScore_relevance", "DimensionScore_factual_accuracy",
                 "DimensionScore_consistency", "DimensionScore_fluency"):
        assert all(list(d) == ["Intent"] for d in by_name[name]), name
    for name in ("UnscoredCases", "BatchAvg_relevance", "BatchAvg_factual_accuracy",
                 "BatchAvg_consistency", "BatchAvg_fluency"):
        assert by_name[name] == [{}], name  # per run: no dimensions
    # The run's size and latency, and the pass rate, overall and per locale (every case is en-US).
    locales = {d.get("Locale") for name in ("BatchPassRate", "BatchTotalCases", "EvaluationLatency") for d in by_name[name]}
    assert locales == {None, "en-US"}
    en_us = [{"Name": "Locale", "Value": "en-US"}]
    assert _metric_values(aws, "BatchTotalCases", en_us, stat="Sum") == [len(CASES)]
    latencies = _metric_values(aws, "EvaluationLatency", en_us, stat="Maximum")
    assert latencies and latencies[0] >= 0.0
    # No composite for an intent whose only item has no score: no data rather than a made-up 0.
    assert {d["Intent"] for d in by_name["CompositeScore"] if "Intent" in d} == {"faq", "product_question"}
    assert {d["Intent"] for d in by_name["QualityGateResult"]} == {"faq", "product_question", "order_tracking"}

    intent = lambda name: [{"Name": "Intent", "Value": name}]  # noqa: E731
    assert _metric_values(aws, "CompositeScore", intent("faq")) == [pytest.approx(1.0)]
    assert _metric_values(aws, "CompositeScore", intent("product_question")) == [pytest.approx(0.5)]
    assert _metric_values(aws, "DimensionScore_fluency", intent("product_question")) == [pytest.approx(0.5)]
    assert _metric_values(aws, "QualityGateResult", intent("faq")) == [1.0]
    assert _metric_values(aws, "QualityGateResult", intent("product_question")) == [0.0]
    assert _metric_values(aws, "QualityGateResult", intent("order_tracking")) == [0.0]
    assert _metric_values(aws, "BatchPassRate") == [pytest.approx(out["pass_rate"], abs=1e-4)]
    assert _metric_values(aws, "BatchAvg_relevance") == [pytest.approx(0.75)]
    assert _metric_values(aws, "UnscoredCases") == [1.0]


def test_a_retried_aggregate_publishes_the_run_metrics_once(aws, lambda_context):
    prepared = _prepare(aws, lambda_context, "run-twice")
    _score(lambda_context, prepared, CASES[0], 1.0)
    first = _aggregate(lambda_context, prepared)
    second = _aggregate(lambda_context, prepared)
    assert first == second
    assert _metric_values(aws, "BatchPassRate", [{"Name": "Locale", "Value": "en-US"}], stat="SampleCount") == [1.0]
    assert _metric_values(aws, "CompositeScore", [{"Name": "Intent", "Value": "faq"}], stat="SampleCount") == [1.0]


def test_aggregate_compares_with_the_baseline(aws, lambda_context):
    from fmquality.domain.report import RunReport

    first = _prepare(aws, lambda_context, "run-base")
    for case in CASES:
        _score(lambda_context, first, case)
    base = _aggregate(lambda_context, first)
    _table(aws).approve_baseline(DATASET_ID, "run-base", base["report_key"])

    second = _prepare(aws, lambda_context, "run-cand", baseline="auto")
    assert second["baseline_run_id"] == "run-base"
    _score(lambda_context, second, CASES[0])
    _score(lambda_context, second, CASES[1], 0.85)  # still above product_question's 0.80, but lower
    _score(lambda_context, second, CASES[2])
    out = _aggregate(lambda_context, second)

    report = RunReport.model_validate(read_json(aws.s3, out["report_key"]))
    assert report.baseline_run_id == "run-base"
    assert any(f.subset == "intent:product_question" for f in report.regression_flags)
    assert out["gate_passed"] is False and "baseline" in out["summary"]


def test_the_three_reads_of_the_table(aws, lambda_context):
    """Every result of a run (paginated), the runs of a dataset over time, the approved baseline."""
    from fmquality.scoring.composite import error_result
    from fmquality.config.rubric import load_rubric

    table = _table(aws)
    rubric = load_rubric()
    start = datetime(2025, 1, 6, tzinfo=timezone.utc)
    for week in range(3):
        table.register_run(f"weekly-{week}", DATASET_ID, started_at=(start + timedelta(weeks=week)).isoformat())
    table.register_run("other-dataset-run", "datasets/other", started_at=start.isoformat())
    for n in range(7):
        table.put_result("weekly-2", error_result({"test_id": f"case-{n}", "intent": "faq"}, rubric, "x", run_id="weekly-2"))
    table.put_result("weekly-1", error_result({"test_id": "case-0", "intent": "faq"}, rubric, "x", run_id="weekly-1"))

    queries = []
    aws.ddb.meta.events.register("after-call.dynamodb.Query", lambda **kw: queries.append(1))
    results = table.results_for_run("weekly-2", page_size=3)
    assert sorted(r.test_id for r in results) == [f"case-{n}" for n in range(7)]
    assert len(queries) >= 3  # really read across pages
    assert all(r.run_id == "weekly-2" for r in results)

    runs = table.runs_for_dataset(DATASET_ID)
    assert [r["run_id"] for r in runs] == ["weekly-2", "weekly-1", "weekly-0"]
    assert [r["run_id"] for r in table.runs_for_dataset(DATASET_ID, newest_first=False, limit=2)] == ["weekly-0", "weekly-1"]

    assert table.get_baseline(DATASET_ID) is None
    table.approve_baseline(DATASET_ID, "weekly-0", "runs/weekly-0/report.json")
    table.approve_baseline(DATASET_ID, "weekly-1", "runs/weekly-1/report.json")
    baseline = table.get_baseline(DATASET_ID)
    assert baseline["run_id"] == "weekly-1" and baseline["report_key"] == "runs/weekly-1/report.json"
    assert datetime.fromisoformat(baseline["approved_at"])


def test_floats_are_stored_as_numbers_and_read_back(aws):
    table = _table(aws)
    table.register_run("r1", DATASET_ID)
    table.complete_run("r1", pass_rate=0.85, gate_passed=True, status="SUCCEEDED")
    raw = aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": "RUN#r1"}, "sk": {"S": "RUN"}})["Item"]
    assert raw["pass_rate"] == {"N": "0.85"}
    assert table.get_run("r1")["pass_rate"] == 0.85


def test_completing_an_unregistered_run_is_refused(aws):
    table = _table(aws)
    with pytest.raises(aws.ddb.exceptions.ConditionalCheckFailedException):
        table.complete_run("never-registered", status="SUCCEEDED")


def test_a_malformed_aggregate_event_names_the_field(aws, lambda_context):
    from handlers.aggregate import handler

    event = load_event("aggregate.json")
    del event["items_key"]
    with pytest.raises(ValidationError) as caught:
        handler(event, lambda_context)
    assert [e["loc"] for e in caught.value.errors()] == [("items_key",)]


def _generation(target_id, kind="python", version=None, latency_ms=100.0, tokens=(100, 20), cost=None, error=None):
    from fmquality.domain.results import Generation

    return Generation(target_id=target_id, target_kind=kind, target_version=version, latency_ms=latency_ms,
                      response=None if error else "answer", usage={"input_tokens": tokens[0], "output_tokens": tokens[1]},
                      cost_usd=cost, error=error).model_dump(mode="json")


def test_aggregate_of_a_paired_run_reads_both_arms(aws, lambda_context, monkeypatch):
    import fmquality.run.aggregate as aggregate
    from fmquality.domain.results import EvaluationResult
    from fmquality.domain.report import RunReport

    seen = {}
    real_build_report = aggregate.build_report

    def spy(results, rubric, **kwargs):
        seen["results"], seen["kwargs"] = results, kwargs
        return real_build_report(results, rubric, **kwargs)

    monkeypatch.setattr(aggregate, "build_report", spy)
    prepared = _prepare(aws, lambda_context, "run-paired", target="bedrock:s3://bundles/assist.yaml",
                        control={"spec": "lambda:mangaassist-chat", "timeout_s": 10})
    assert prepared["item_count"] == 2 * len(CASES) and prepared["generate"] is True
    latencies = {"faq-returns-window": 100.0, "pq-uzumaki-price": 300.0, "order-eta": 200.0}
    for case in CASES:
        _score(lambda_context, prepared, case, 1.0,
               generation=_generation("assist", "bedrock", "7", latencies[case["test_id"]], cost=0.001))
    # The control answered two cases; the third never got a result (its child execution failed).
    for case in CASES[:2]:
        _score(lambda_context, prepared, case, 0.95, arm="control",
               generation=_generation("arn:aws:lambda:us-east-1:1:function:mangaassist-chat", "lambda", "12"))
    out = _aggregate(lambda_context, prepared)

    assert out["total_cases"] == len(CASES) and out["control_cases"] == len(CASES)
    # build_report got each arm apart, and who answered them.
    assert [r.arm for r in seen["results"]] == ["candidate"] * len(CASES)
    control = seen["kwargs"]["control_results"]
    assert [r.arm for r in control] == ["control"] * len(CASES)
    assert seen["kwargs"]["target"] == {"kind": "bedrock", "ref": "s3://bundles/assist.yaml",
                                        "spec": "bedrock:s3://bundles/assist.yaml", "id": "assist", "version": "7"}
    assert seen["kwargs"]["control_target"]["id"].endswith(":mangaassist-chat")
    assert seen["kwargs"]["control_target"]["version"] == "12"
    assert seen["kwargs"]["control_target"]["timeout_s"] == 10

    # The missing control item is an explicit error record, under the control's key.
    [missing] = [r for r in _table(aws).results_for_run("run-paired", arm="control") if r.test_id == "order-eta"]
    assert missing.status == "error" and missing.error == "no result recorded" and missing.arm == "control"
    assert missing.response is None  # the control was to answer; the recorded answer is not its answer
    assert len(_table(aws).results_for_run("run-paired")) == len(CASES)

    lines = [EvaluationResult.model_validate_json(x)
             for x in read_text(aws.s3, "runs/run-paired/control_results.jsonl").splitlines()]
    assert sorted((r.test_id, r.status) for r in lines) == [
        ("faq-returns-window", "scored"), ("order-eta", "error"), ("pq-uzumaki-price", "scored")]
    report = RunReport.model_validate(read_json(aws.s3, out["report_key"]))
    summary = report.generation_summary
    assert summary["candidate"]["generated"] == 3 and summary["candidate"]["errors"] == 0
    assert summary["candidate"]["latency_ms"] == {"mean": 200.0, "p95": 300.0}
    assert summary["candidate"]["input_tokens"] == 300 and summary["candidate"]["cost_usd"] == pytest.approx(0.003)
    assert summary["control"]["generated"] == 2 and summary["control"]["without_generation"] == 1
    assert report.target["spec"] == "bedrock:s3://bundles/assist.yaml"


def test_aggregate_names_the_ssm_parameter_a_target_came_from(aws, lambda_context):
    from fmquality.domain.report import RunReport

    prepared = _prepare(aws, lambda_context, "run-ssm", target="lambda:chatbot")
    # As Prepare writes it for target "ssm:/mangaassist/production-target".
    targets = read_json(aws.s3, prepared["targets_key"])
    targets["resolved_from"] = {"candidate": "ssm:/mangaassist/production-target", "control": None}
    aws.s3.put_object(Bucket=BUCKET, Key=prepared["targets_key"], Body=json.dumps(targets).encode())
    for case in CASES:
        _score(lambda_context, prepared, case, generation=_generation("chatbot", "lambda", "3"))
    report = RunReport.model_validate(read_json(aws.s3, _aggregate(lambda_context, prepared)["report_key"]))
    assert report.target == {"kind": "lambda", "ref": "chatbot", "spec": "lambda:chatbot", "id": "chatbot",
                             "version": "3", "resolved_from": "ssm:/mangaassist/production-target"}


def test_aggregate_counts_failed_generations_as_errors_not_scores(aws, lambda_context, monkeypatch):
    from handlers.composite import handler

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,python")  # the python stand-in chatbot, as locally
    prepared = _prepare(aws, lambda_context, "run-gen-fail", target="python:chatbot:answer")
    _score(lambda_context, prepared, CASES[0], generation=_generation("chatbot:answer"))
    for case in CASES[1:]:
        handler(load_event("composite_error.json", run_id="run-gen-fail", rubric_key=prepared["rubric_key"],
                           item={**case, "response": None},
                           generation=_generation("chatbot:answer", latency_ms=None, error="timed out"),
                           error={"Error": "GenerationFailed", "Cause": "python target chatbot:answer: timed out"}),
                lambda_context)
    out = _aggregate(lambda_context, prepared)
    assert out["unscored_cases"] == 2 and out["gate_passed"] is False
    report = read_json(aws.s3, out["report_key"])
    assert report["error_cases"] == 2
    assert report["generation_summary"]["candidate"] == {
        "items": 3, "generated": 1, "errors": 2, "without_generation": 0, "attempts": 3,
        "latency_ms": {"mean": 100.0, "p95": 100.0}, "input_tokens": 300, "output_tokens": 60, "cost_usd": None}
    assert read_text_if_exists(aws, "runs/run-gen-fail/control_results.jsonl") is None


def read_text_if_exists(aws, key):
    from fmquality.adapters.s3 import S3Store

    return S3Store(aws.s3).read_text_if_exists(BUCKET, key)
