"""Combined judging on AWS (issue 19), against moto: Prepare resolves the run's judge mode and the Map's
concurrency for it; ScoreCase scores every dimension of an item with one judge call and records the
item's result as Composite records the Parallel's output. The scripted judge (JUDGE=scripted) stands in
for Bedrock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, CASES, TABLE, load_event, put_dataset

RUBRICS = Path(__file__).resolve().parents[2] / "datasets" / "rubrics"


def _prepare(context, **overrides):
    from handlers.prepare import handler

    return handler(load_event("prepare.json", **overrides), context)


def _combined_rubric_uri(s3) -> str:
    """The shipped MangaAssist rubric with judge.mode: combined, in the bucket."""
    text = (RUBRICS / "mangaassist-v3.yaml").read_text(encoding="utf-8")
    assert text.count("mode: per_dimension") == 1
    key = "datasets/rubrics/mangaassist-combined.yaml"
    s3.put_object(Bucket=BUCKET, Key=key, Body=text.replace("mode: per_dimension", "mode: combined").encode())
    return f"s3://{BUCKET}/{key}"


def _run_record(aws, run_id: str) -> dict:
    return aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": f"RUN#{run_id}"}, "sk": {"S": "RUN"}})["Item"]


# ---- Prepare: the run's judge mode and the Map's concurrency for it --------------------------------


def test_the_rubric_mode_is_the_default_with_its_concurrency(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("DEFAULT_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("DEFAULT_COMBINED_MAX_CONCURRENCY", "10")
    put_dataset(aws.s3, CASES)
    free = _prepare(lambda_context, execution_name="free")  # a scripted judge: no calls to spread
    assert (free["judge_mode"], free["max_concurrency"]) == ("combined", 10)
    monkeypatch.setenv("JUDGE", "bedrock")
    plain = _prepare(lambda_context, execution_name="plain")
    assert (plain["judge_mode"], plain["max_concurrency"]) == ("per_dimension", 3)
    combined = _prepare(lambda_context, execution_name="combined", rubric=_combined_rubric_uri(aws.s3))
    assert (combined["judge_mode"], combined["max_concurrency"]) == ("combined", 10)
    # The run record says which mode ran (Aggregate puts it in report.json).
    assert _run_record(aws, "combined")["judge_mode"] == {"S": "combined"}


def test_the_execution_input_chooses_the_mode_and_its_max_concurrency_still_wins(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("DEFAULT_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("DEFAULT_COMBINED_MAX_CONCURRENCY", "10")
    put_dataset(aws.s3, CASES)
    asked = _prepare(lambda_context, execution_name="asked", judge_mode="combined")
    assert (asked["judge_mode"], asked["max_concurrency"]) == ("combined", 10)
    back = _prepare(lambda_context, execution_name="back", judge_mode="per_dimension",
                    rubric=_combined_rubric_uri(aws.s3))
    assert (back["judge_mode"], back["max_concurrency"]) == ("per_dimension", 3)
    pinned = _prepare(lambda_context, execution_name="pinned", judge_mode="combined", max_concurrency=4)
    assert (pinned["judge_mode"], pinned["max_concurrency"]) == ("combined", 4)


def test_without_a_combined_default_a_combined_run_takes_the_default(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("DEFAULT_MAX_CONCURRENCY", "7")
    put_dataset(aws.s3, CASES)
    assert _prepare(lambda_context, execution_name="c", judge_mode="combined")["max_concurrency"] == 7


def test_an_unknown_mode_is_refused_naming_the_field(aws, lambda_context):
    put_dataset(aws.s3, CASES)
    with pytest.raises(ValidationError) as caught:
        _prepare(lambda_context, judge_mode="both")
    assert [e["loc"] for e in caught.value.errors()] == [("judge_mode",)]


@pytest.mark.parametrize("rubric", ["research-agent-v1.yaml", "tool-use-v1.yaml"])
def test_a_scheme_that_does_not_judge_combined_runs_per_dimension(rubric):
    from fmquality.config.rubric import load_rubric
    from fmquality.run.prepare import run_judge_mode
    from fmquality.schemes import scheme_for

    loaded = load_rubric(RUBRICS / rubric)
    assert scheme_for(loaded).combined_judging is False
    assert run_judge_mode("combined", loaded) == "per_dimension"
    assert run_judge_mode(None, load_rubric()) == "per_dimension"  # MangaAssist's rubric default
    assert run_judge_mode("combined", load_rubric()) == "combined"
    assert run_judge_mode(None, loaded, "offline") == "per_dimension"  # the scheme cannot, whoever judges


def test_a_judge_that_makes_no_calls_scores_each_item_in_one_task_unless_asked_otherwise():
    from fmquality.config.rubric import load_rubric
    from fmquality.run.prepare import run_judge_mode

    rubric = load_rubric()  # judge.mode: per_dimension
    assert run_judge_mode(None, rubric, "offline") == "combined"
    assert run_judge_mode(None, rubric, "scripted") == "combined"
    assert run_judge_mode(None, rubric, "bedrock") == "per_dimension"
    assert run_judge_mode("per_dimension", rubric, "offline") == "per_dimension"


# ---- ScoreCase ------------------------------------------------------------------------------------


@pytest.fixture
def combined_item(aws, lambda_context) -> dict:
    """The Map item's state of a combined run (what the ItemSelector builds), for CASES[0]."""
    put_dataset(aws.s3, CASES)
    prepared = _prepare(lambda_context, execution_name="run-fixture", judge_mode="combined")
    return {"run_id": prepared["run_id"], "bucket": prepared["bucket"], "rubric_key": prepared["rubric_key"],
            "targets_key": prepared["targets_key"], "generate": False, "judge_mode": prepared["judge_mode"],
            "arm": "candidate", "item": json.loads(json.dumps(CASES[0])), "generation": None}


def _stored(aws, run_id: str):
    from fmquality.adapters.dynamodb import EvaluationTable

    (result,) = EvaluationTable(TABLE, aws.ddb).results_for_run(run_id)
    return result


def test_score_case_makes_one_judge_call_and_records_the_item_with_every_dimension(aws, combined_item, lambda_context,
                                                                                  capsys):
    import handlers
    from handlers.score_case import handler

    out = handler(json.loads(json.dumps(combined_item)), lambda_context)
    stored = _stored(aws, combined_item["run_id"])
    # What the Map collects: Composite's summary of the recorded result.
    assert out == {"test_id": CASES[0]["test_id"], "arm": "candidate", "status": stored.status,
                   "passed": stored.passed, "composite_score": stored.composite_score}
    assert list(stored.dimension_scores) == ["relevance", "factual_accuracy", "consistency", "fluency", "safety"]
    judge = handlers.judge_for("scripted", None)
    assert judge.calls == [(CASES[0]["test_id"], "combined")]
    assert stored.judge_calls == 1  # the combined call counted once
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line][-1]
    assert emf["JudgeCalls"] in (1, [1])


def test_score_case_records_what_composite_records_for_the_same_scores(aws, combined_item, lambda_context):
    import handlers.score_case as score_case
    from handlers.composite import handler as composite
    from handlers.env import FunctionEnv, load_env
    from fmquality.run.item_events import ScoreCaseEvent

    scores = score_case.score(ScoreCaseEvent.model_validate(combined_item), load_env(FunctionEnv))
    composite({**combined_item, "scores": [s.model_dump(mode="json") for s in scores]}, lambda_context)
    by_composite = _stored(aws, combined_item["run_id"]).model_dump()
    score_case.handler(combined_item, lambda_context)
    assert _stored(aws, combined_item["run_id"]).model_dump() == by_composite


def test_the_same_scores_as_combined_scoring_in_process(aws, combined_item, lambda_context):
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.case import TestCase
    from fmquality.judges.scripted import ScriptedJudge
    from fmquality.schemes import scheme_for
    from fmquality.scoring.case import score_dimensions
    from handlers.score_case import handler

    handler(combined_item, lambda_context)
    rubric = load_rubric()
    expected = score_dimensions(scheme_for(rubric), TestCase.model_validate(CASES[0]), rubric, ScriptedJudge(),
                                mode="combined")
    assert _stored(aws, combined_item["run_id"]).dimension_scores == {d: expected[d] for d in rubric.dimensions}


class ThrottledCombinedJudge:
    name = "throttled"
    model_id = "throttled-v1"
    supports_combined = True

    def __init__(self):
        self.calls = 0

    def judge_combined(self, request, rubric):
        from fmquality.judges.base import CombinedJudgeOutcome

        self.calls += 1
        return CombinedJudgeOutcome(error="ThrottlingException: rate exceeded", throttled=True, calls=1)


def test_a_throttled_combined_call_raises_judge_throttled_for_the_state_machine_retry(
        combined_item, lambda_context, monkeypatch, capsys):
    import handlers.score_case as score_case
    from fmquality.domain.errors import JudgeThrottled

    judge = ThrottledCombinedJudge()
    monkeypatch.setattr(score_case, "judge_for", lambda name, model_id: judge)
    with pytest.raises(JudgeThrottled) as caught:
        score_case.handler(combined_item, lambda_context)
    assert type(caught.value).__name__ == "JudgeThrottled" and judge.calls == 1
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line][-1]
    assert emf["JudgeThrottles"] in (1, [1])


def test_a_malformed_item_names_the_field(combined_item, lambda_context):
    from handlers.score_case import handler

    combined_item["item"]["intent"] = "smalltalk"
    with pytest.raises(ValidationError) as caught:
        handler(combined_item, lambda_context)
    assert [e["loc"] for e in caught.value.errors()] == [("item", "intent")]


def test_score_case_stores_a_cut_score_whole_and_records_the_reference(aws, combined_item, lambda_context,
                                                                     monkeypatch):
    """Issue 31 item 5 for combined judging: the call's prompt and reply (on the first dimension) are
    stored whole under runs/<run>/judge/, and the recorded result carries the cut text and the reference."""
    import handlers.score_case as score_case
    from fmquality.domain.payload import DIMENSION_BYTES, json_bytes
    from fmquality.domain.scores import DimensionScore
    from test_score_and_composite_handlers import LongTraceJudge

    monkeypatch.setattr(score_case, "judge_for", lambda name, model_id: LongTraceJudge())
    score_case.handler(json.loads(json.dumps(combined_item)), lambda_context)
    stored = _stored(aws, combined_item["run_id"])
    traced = {d: s for d, s in stored.dimension_scores.items() if s.judge_trace_uri}
    assert list(traced) == ["relevance"]  # the combined call's trace is recorded once, on the first dimension
    key = f"runs/{combined_item['run_id']}/judge/candidate/{CASES[0]['test_id']}/relevance.json"
    assert traced["relevance"].judge_trace_uri == f"s3://{BUCKET}/{key}"
    assert json_bytes(traced["relevance"].model_dump(mode="json")) <= DIMENSION_BYTES
    whole = DimensionScore.model_validate_json(aws.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert (whole.judge_prompt, whole.judge_raw) == (LongTraceJudge.prompt, LongTraceJudge.raw)
