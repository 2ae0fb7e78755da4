"""The real ASL, end to end, on the local engine: gate outcomes, retries, error records, idempotence,
baselines and the metrics the alarms watch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED
from fmquality.cli.main import main
from fmquality.domain.errors import JudgeThrottled
from fmquality.engines import local as local_engine
from fmquality.engines.inprocess import FakeContext
from fmquality.engines.local import TABLE_NAME, run_local_execution
from fmquality.engines.moto_hooks import check_moto_compatibility

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
GOLDEN = REPO / "datasets" / "mangaassist" / "golden.jsonl"
CATALOG = REPO / "datasets" / "mangaassist" / "catalog.json"
FAST = {"retry_wait_cap_s": 0.01}
# One scorer task per dimension, as a judge that calls a model runs (a judge that makes no calls
# defaults to one ScoreCase task per item).
PER_DIMENSION = {**FAST, "judge_mode": "per_dimension"}


def _results(outcome) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (outcome.results_jsonl or "").splitlines()]
    by_id = {r["test_id"]: r for r in rows}
    assert len(by_id) == len(rows), "a test case has more than one result"
    return by_id


def _replace_handler(monkeypatch, module: str, replacement) -> None:
    """Put ``replacement(event, dimension, real)`` in place of ``handlers.<module>.handler`` for the
    test (the engine looks the handler up on every invocation); ``real(event)`` runs the real one."""
    import importlib

    from fmquality.config.environment import function_environment

    handlers_module = importlib.import_module(f"handlers.{module}")
    real = handlers_module.handler
    # The scorers share one handler: DIMENSION, in the invoked function's environment, says which.
    monkeypatch.setattr(handlers_module, "handler",
                        lambda event, context: replacement(event, function_environment().get("DIMENSION"),
                                                           lambda e: real(e, FakeContext("real"))))


def test_moto_hooks_still_fit_the_pinned_moto():
    check_moto_compatibility()  # raises MotoHookError naming what moved


def test_the_local_engine_leaves_out_moto_batch_integration_and_a_batch_task_says_so():
    # A fresh interpreter: in this one another test may already have imported moto's own module.
    probe = (
        "import sys\n"
        "from fmquality.engines.moto_hooks import batch_tasks_left_out, check_moto_compatibility, _BATCH_TASKS\n"
        "from fmquality.domain.errors import MotoHookError\n"
        "batch_tasks_left_out()\n"
        "check_moto_compatibility()\n"
        "import moto.stepfunctions.parser.models\n"
        "try:\n"
        "    sys.modules[_BATCH_TASKS].StateTaskServiceBatch()\n"
        "except MotoHookError as exc:\n"
        "    print('refused:', 'Batch' in str(exc))\n"
        "print('ec2 loaded:', 'moto.ec2' in sys.modules)\n")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert shown.split("\n")[:2] == ["refused: True", "ec2 loaded: False"]


def test_good_dataset_passes_and_lands_in_dynamodb_and_s3(tmp_path):
    stored: dict[str, Any] = {}

    def inspect(client):
        ddb = client("dynamodb")
        stored["results"] = ddb.query(
            TableName=TABLE_NAME, KeyConditionExpression="pk = :pk AND begins_with(sk, :r)",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{stored['run_id']}"}, ":r": {"S": "RESULT#"}},
        )["Items"] if "run_id" in stored else []
        stored["keys"] = [o["Key"] for o in client("s3").list_objects_v2(Bucket=local_engine.BUCKET_NAME)["Contents"]]

    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", run_id="good-run", inspect_aws=inspect,
                                  **PER_DIMENSION)
    assert outcome.status == "SUCCEEDED" and outcome.error is None
    assert outcome.run_id == "good-run"
    assert set(_results(outcome)) == {"faq-returns-good", "pq-uzumaki-good"}
    assert outcome.report["gate"]["passed"] is True and "<svg" in outcome.report_html
    assert outcome.report["engine"] == "stepfunctions-local" and "engine stepfunctions-local" in outcome.report_html
    assert {"runs/good-run/report.json", "runs/good-run/report.html", "runs/good-run/results.jsonl",
            "runs/good-run/items.json"} <= set(stored["keys"])
    # every Lambda role ran, through the real handlers
    assert {"prepare", "relevance", "factual_accuracy", "consistency", "fluency", "composite",
            "aggregate"} <= set(outcome.lambda_calls)


def test_a_judge_that_makes_no_calls_scores_each_item_in_one_task_with_the_same_results():
    per_dimension = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", run_id="fanned", **PER_DIMENSION)
    default = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", run_id="one-task", **FAST)
    assert default.report["judge_mode"] == "combined" and per_dimension.report["judge_mode"] == "per_dimension"
    assert "score_case" in default.lambda_calls and "relevance" not in default.lambda_calls
    same = ("passed", "composite_score", "failure_reasons")
    assert {t: [r[k] for k in same] for t, r in _results(default).items()} == \
        {t: [r[k] for k in same] for t, r in _results(per_dimension).items()}


def test_cli_writes_outputs_and_records_the_execution(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--dataset", str(FIXTURES / "cli_good.jsonl"), "--out", str(out), "--quiet"]) == EXIT_PASSED
    report = json.loads((out / "report.json").read_text())
    assert report["engine"] == "stepfunctions-local"
    assert report["execution"]["status"] == "SUCCEEDED" and report["execution"]["arn"].startswith("arn:aws:states:")
    assert (out / "results.jsonl").read_text().count("\n") == 2 and (out / "report.html").exists()


def test_regressed_dataset_fails_with_quality_gate_failed_naming_the_rule(tmp_path):
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_regressed.jsonl", **FAST)
    assert outcome.status == "FAILED" and outcome.error == "QualityGateFailed"
    assert outcome.failed_state == "GateFailed"
    assert "hard failures: faq-returns-stale" in outcome.cause
    assert "regression item faq-returns-stale failed" in outcome.cause
    out = tmp_path / "out"
    code = main(["run", "--dataset", str(FIXTURES / "cli_regressed.jsonl"), "--out", str(out), "--quiet"])
    assert code == EXIT_GATE_FAILED
    assert json.loads((out / "report.json").read_text())["execution"]["error"] == "QualityGateFailed"


def test_judge_throttling_twice_is_retried_by_the_asl_and_the_item_is_scored(monkeypatch):
    attempts: dict[str, int] = {}

    def flaky_relevance(event, dimension, real):
        test_id = event["item"]["test_id"]
        if dimension == "relevance":
            attempts[test_id] = attempts.get(test_id, 0) + 1
            if test_id == "pq-uzumaki-good" and attempts[test_id] <= 2:
                raise JudgeThrottled("relevance: judge failed after 5 attempts: ThrottlingException")
        return real(event)

    _replace_handler(monkeypatch, "score_dimension", flaky_relevance)
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", **PER_DIMENSION)
    assert attempts["pq-uzumaki-good"] == 3 and attempts["faq-returns-good"] == 1
    result = _results(outcome)["pq-uzumaki-good"]
    assert result["status"] == "scored" and result["dimension_scores"]["relevance"]["status"] == "scored"
    assert outcome.status == "SUCCEEDED"


def test_a_scorer_that_always_fails_gives_an_error_record_and_the_gate_fails_closed(monkeypatch):
    def broken_fluency(event, dimension, real):
        if dimension == "fluency" and event["item"]["test_id"] == "faq-returns-good":
            raise RuntimeError("fluency scorer crashed")
        return real(event)

    _replace_handler(monkeypatch, "score_dimension", broken_fluency)
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", **PER_DIMENSION)
    results = _results(outcome)
    assert set(results) == {"faq-returns-good", "pq-uzumaki-good"}  # nothing lost
    errored = results["faq-returns-good"]
    assert errored["status"] == "error" and errored["composite_score"] is None
    assert "fluency scorer crashed" in errored["error"]
    assert results["pq-uzumaki-good"]["status"] == "scored"
    assert outcome.report["unscored_cases"] == 1
    assert outcome.error == "QualityGateFailed" and "failing closed" in outcome.cause


def test_invalid_lines_reject_the_run_before_any_execution(tmp_path, monkeypatch, capsys):
    def no_execution(**_kwargs):
        raise AssertionError("an execution was started for a rejected dataset")

    monkeypatch.setattr(local_engine, "run_local_execution", no_execution)
    out = tmp_path / "out"
    assert main(["run", "--dataset", str(FIXTURES / "cli_invalid.jsonl"), "--out", str(out), "--quiet"]) == EXIT_BAD_INPUT
    assert "cli_invalid.jsonl:2: intent:" in capsys.readouterr().err


def test_skip_invalid_puts_bad_lines_in_the_rejected_file_and_runs_the_rest(tmp_path):
    out = tmp_path / "out"
    code = main(["run", "--dataset", str(FIXTURES / "cli_invalid.jsonl"), "--out", str(out), "--quiet", "--skip-invalid"])
    assert code in (EXIT_PASSED, EXIT_GATE_FAILED)
    rejected = [json.loads(x) for x in (out / "rejected.jsonl").read_text().splitlines()]
    assert sorted(r["line"] for r in rejected) == [2, 3]
    results = [json.loads(x)["test_id"] for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(results) == ["faq-returns-good", "pq-2"]


@pytest.mark.parametrize(("recorder", "options"), [("composite", PER_DIMENSION), ("score_case", FAST)])
def test_an_item_run_twice_by_a_retry_leaves_one_result(monkeypatch, recorder, options):
    """Composite (or ScoreCase, which records a combined item itself) writes its result, then the
    invocation fails as a Lambda service error: the ASL's Retry runs it again for the same item. The
    result is keyed, so it is replaced, not added."""
    service_error = type("Lambda.ServiceException", (Exception,), {})
    calls: dict[str, int] = {}
    stored: dict[str, int] = {}

    def record_then_fail(event, _dimension, real):
        result = real(event)
        test_id = event["item"]["test_id"]
        calls[test_id] = calls.get(test_id, 0) + 1
        if calls[test_id] == 1:
            raise service_error("connection reset after the write")
        return result

    def count_results(client):
        stored["n"] = client("dynamodb").query(
            TableName=TABLE_NAME, KeyConditionExpression="pk = :pk AND begins_with(sk, :r)",
            ExpressionAttributeValues={":pk": {"S": "RUN#twice"}, ":r": {"S": "RESULT#"}}, Select="COUNT",
        )["Count"]

    _replace_handler(monkeypatch, recorder, record_then_fail)
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", run_id="twice",
                                  inspect_aws=count_results, **options)
    assert calls == {"faq-returns-good": 2, "pq-uzumaki-good": 2}
    assert stored["n"] == 2 and len(_results(outcome)) == 2
    assert outcome.report["total_cases"] == 2 and outcome.status == "SUCCEEDED"


def test_baseline_then_regressed_candidate_flags_the_subset(tmp_path):
    base = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", run_id="baseline-1", **FAST)
    assert base.status == "SUCCEEDED"
    candidate_path = tmp_path / "cli_good.jsonl"  # same dataset id, worse answers
    candidate_path.write_text((FIXTURES / "cli_regressed.jsonl").read_text())
    cand = run_local_execution(dataset_path=candidate_path, baseline_report=base.report, run_id="cand-1", **FAST)
    assert cand.error == "QualityGateFailed"
    subsets = {f["subset"] for f in cand.report["regression_flags"]}
    assert "intent:faq" in subsets and "tag:policy" in subsets
    assert cand.report["baseline_run_id"] == "baseline-1"
    assert any(r.startswith("intent:faq mean fell") for r in cand.report["gate"]["reasons"])


def _alarm_metrics(template: dict[str, Any]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    wanted = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        props = resource["Properties"]
        if props.get("Namespace") != "MangaAssist/Evaluation":
            continue
        dims = tuple(sorted((d["Name"], d["Value"]) for d in props.get("Dimensions", [])))
        wanted.add((props["MetricName"], dims))
    return wanted


# Emitted by the scorers and the Generate function as EMF log lines (CloudWatch turns them into metrics
# from the logs); moto does not, so only the metrics the Aggregate step publishes with PutMetricData are
# read back.
EMF_METRICS = {"JudgeThrottles", "JudgeCalls", "JudgeInputTokens", "JudgeOutputTokens", "JudgeCachedVerdicts",
               "GenerationLatencyMs", "GenerationErrors", "GenerationInputTokens", "GenerationOutputTokens"}


# Published by probe runs only (trigger "probe"): tests/integration/test_probes_aws.py and
# tests/infrastructure/test_probes.py check the name the alarm watches is the one Aggregate publishes.
PROBE_RUN_METRICS = {"ProbeFailureRate"}


def test_published_metrics_are_the_ones_the_alarms_watch(evaluation_template, tmp_path):
    alarm_metrics = {m for m in _alarm_metrics(evaluation_template) if m[0] not in EMF_METRICS | PROBE_RUN_METRICS}
    assert any(dims for _name, dims in alarm_metrics), "expected per-intent alarms in the template"
    # a dataset with the intents the alarms name
    intents = {value for _name, dims in alarm_metrics for key, value in dims if key == "Intent"}
    rows = [json.loads(x) for x in GOLDEN.read_text(encoding="utf-8").splitlines()]
    picked = [r for intent in sorted(intents)
              for r in [r for r in rows if r["intent"] == intent and r["label"]["acceptable"]][:3]]
    dataset = tmp_path / "alarm-intents.jsonl"
    dataset.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in picked), encoding="utf-8")
    found: dict[tuple, list[float]] = {}

    def read_back(client):
        cloudwatch = client("cloudwatch")
        import datetime as dt

        now = dt.datetime.now(dt.timezone.utc)
        for i, (name, dims) in enumerate(sorted(alarm_metrics)):
            data = cloudwatch.get_metric_data(
                MetricDataQueries=[{"Id": f"m{i}", "MetricStat": {
                    "Metric": {"Namespace": "MangaAssist/Evaluation", "MetricName": name,
                               "Dimensions": [{"Name": k, "Value": v} for k, v in dims]},
                    "Period": 60, "Stat": "Average"}}],
                StartTime=now - dt.timedelta(hours=1), EndTime=now + dt.timedelta(hours=1),
            )["MetricDataResults"][0]["Values"]
            found[(name, dims)] = data

    run = run_local_execution(dataset_path=dataset, catalog_path=CATALOG, inspect_aws=read_back, **FAST)
    # A dimension that applies to none of an intent's answers (consistency of one-claim answers) has
    # no score to publish; every other alarmed metric must be there.
    results = [json.loads(line) for line in run.results_jsonl.splitlines() if line.strip()]
    scored = {(f"DimensionScore_{d}", (("Intent", r["intent"]),)) for r in results
              for d, s in r["dimension_scores"].items() if s["status"] == "scored"}
    missing = sorted(m for m, values in found.items()
                     if not values and (not m[0].startswith("DimensionScore_") or m in scored))
    assert not missing, f"alarmed metrics never published: {missing}"
    unexpected = sorted(m for m, values in found.items() if values and m[0].startswith("DimensionScore_")
                        and m not in scored)
    assert not unexpected, f"scores published for dimensions that did not apply: {unexpected}"
    for (name, _dims), values in found.items():
        if name.startswith("DimensionScore_"):
            assert all(0.0 <= v <= 1.0 for v in values), name
    # the picked cases are acceptable answers: all pass, none is unscored
    by_name = {name: values for (name, _dims), values in found.items()}
    # moto matches a query without dimensions to the per-Locale series too, and the two may fall in
    # neighbouring minutes: every value must be 1.0, however many periods they span.
    assert by_name["BatchPassRate"] and set(by_name["BatchPassRate"]) == {1.0}
    assert by_name["UnscoredCases"] == [0.0]


@pytest.mark.slow
def test_both_engines_give_the_same_item_results_on_the_golden_dataset(tmp_path):
    direct_out, local_out = tmp_path / "direct", tmp_path / "local"
    common = ["--dataset", str(GOLDEN), "--catalog", str(CATALOG), "--quiet"]
    main(["run", *common, "--engine", "direct", "--out", str(direct_out)])
    main(["run", *common, "--out", str(local_out)])

    def items(out):
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
        return {r["test_id"]: (r["status"], r["passed"], r["composite_score"], r["failure_reasons"],
                               {d: s["sub_scores"] for d, s in r["dimension_scores"].items()}) for r in rows}

    direct, local = items(direct_out), items(local_out)
    assert len(direct) == sum(1 for _ in GOLDEN.open(encoding="utf-8"))
    assert direct == local


def test_the_verdict_cache_outlives_a_state_machine_run(tmp_path, monkeypatch):
    """Issue 17: like the direct engine, a second run of unchanged items asks the judge only what the
    cache cannot answer (the offline judge abstains on some sub-scores, so a few calls remain)."""
    from fmquality.run.dataset import load_dataset
    from fmquality.run.evaluate import evaluate_cases
    from fmquality.judges import factory
    from fmquality.judges.cache import CachingJudge, LocalVerdictStore
    from fmquality.judges.offline import OfflineJudge
    from fmquality.config.rubric import load_rubric

    calls = {"n": 0}

    class CountingJudge(OfflineJudge):  # stands in for Bedrock: the handlers cache only that judge
        model_id = "stand-in-model"

        def judge(self, request, rubric):
            calls["n"] += 1
            return super().judge(request, rubric)

    dataset = FIXTURES / "cli_good.jsonl"
    direct = CachingJudge(CountingJudge(), LocalVerdictStore(tmp_path / "direct"))
    cases, rubric = load_dataset(dataset).cases, load_rubric()
    evaluate_cases(cases, rubric, direct)
    calls["n"] = 0
    evaluate_cases(cases, rubric, direct)
    direct_rerun = calls["n"]

    real = factory.make_judge
    monkeypatch.setattr(factory, "make_judge",
                        lambda name, *a, **k: CountingJudge() if name == "bedrock" else real(name, *a, **k))
    cache = tmp_path / "verdicts"
    calls["n"] = 0
    first = run_local_execution(dataset_path=dataset, judge="bedrock", verdict_cache_dir=cache, **FAST)
    asked = calls["n"]
    calls["n"] = 0
    second = run_local_execution(dataset_path=dataset, judge="bedrock", verdict_cache_dir=cache, **FAST)
    assert first.status == second.status == "SUCCEEDED"
    assert calls["n"] == direct_rerun < asked

    def scores(outcome):
        return {(r := json.loads(line))["test_id"]: r["composite_score"] for line in outcome.results_jsonl.splitlines()}

    assert scores(second) == scores(first)


def test_a_local_run_names_the_users_own_files_not_the_embedded_bucket(tmp_path):
    """Issue 32.5: summary.md, report.json and rejected.jsonl of a local state-machine run named the
    embedded bucket's copy (s3://fmquality-local-data/...) instead of the file the user gave."""
    dataset = tmp_path / "my set.jsonl"  # a space: the name is written as given, JSON-escaped where JSON
    dataset.write_text((FIXTURES / "cli_invalid.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    outcome = run_local_execution(dataset_path=dataset, skip_invalid=True, **PER_DIMENSION)
    assert outcome.status == "SUCCEEDED"
    for name in ("report.json", "summary.md", "rejected.jsonl"):
        text = outcome.outputs[name]
        assert "fmquality-local-data" not in text, name
    assert json.loads(outcome.outputs["report.json"])["dataset"] == str(dataset)
    assert str(dataset) in outcome.outputs["summary.md"]
    rejected = [json.loads(line) for line in outcome.outputs["rejected.jsonl"].splitlines()]
    assert rejected and all(line["file"] == str(dataset) for line in rejected)


@pytest.mark.parametrize("mode", ["combined", "per_dimension"])
def test_the_progress_counts_every_item_in_either_judge_mode(mode):
    """Issue 32.5: the progress line stayed at 0/N for a whole run judged in one call per item (ScoreCase
    ends its item's branch; only Composite was counted)."""
    seen: list[tuple[int, int]] = []
    outcome = run_local_execution(dataset_path=FIXTURES / "cli_good.jsonl", judge_mode=mode,
                                  on_progress=lambda done, total: seen.append((done, total)), **FAST)
    assert outcome.status == "SUCCEEDED"
    total = len((FIXTURES / "cli_good.jsonl").read_text(encoding="utf-8").splitlines())
    assert seen[-1] == (total, total) and [d for d, _ in seen] == sorted(d for d, _ in seen)
