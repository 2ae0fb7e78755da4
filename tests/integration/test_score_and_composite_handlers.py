"""The scorer and Composite handlers against moto, with the scripted judge (JUDGE=scripted)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, CASES, TABLE, all_scores, dimension_score, load_event, put_dataset


@pytest.fixture
def run(aws, lambda_context):
    """A prepared run: items.json and rubric.json in S3, the run record in DynamoDB."""
    from handlers.prepare import handler

    put_dataset(aws.s3, CASES)
    return handler(load_event("prepare.json", execution_name="run-fixture"), lambda_context)


def _emf_records(captured: str) -> list[dict]:
    return [json.loads(line) for line in captured.splitlines() if line.startswith("{") and '"_aws"' in line]


def _values(emf: dict, name: str) -> list[float]:
    """An EMF metric value is a number or a list of numbers."""
    value = emf[name]
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("dimension", ["relevance", "factual_accuracy", "consistency", "fluency", "safety"])
def test_score_dimension_returns_a_valid_dimension_score(run, lambda_context, monkeypatch, capsys, dimension):
    import handlers
    from fmquality.domain.scores import DimensionScore
    from handlers.score_dimension import handler

    monkeypatch.setenv("DIMENSION", dimension)
    out = handler(load_event("score_dimension.json"), lambda_context)

    score = DimensionScore.model_validate(out)
    assert score.dimension == dimension
    # Scored, or (for an answer with nothing of the kind) not applicable with the reason: never a guess.
    assert score.status == "scored" or (score.status == "not_applicable" and score.unscored_reason)
    judge = handlers.judge_for("scripted", None)
    asked = [d for _, d in judge.calls]
    assert score.judge_calls == asked.count(dimension)
    # Judge metrics go out as EMF, without dimensions, so one alarm covers every scorer.
    records = _emf_records(capsys.readouterr().out)
    assert records, "no EMF record written"
    emf = records[-1]
    directive = emf["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "MangaAssist/Evaluation"
    assert directive["Dimensions"] == [[]]
    assert {m["Name"] for m in directive["Metrics"]} >= {"JudgeCalls", "JudgeInputTokens", "JudgeOutputTokens",
                                                         "JudgeCachedVerdicts"}
    assert _values(emf, "JudgeCalls") == [score.judge_calls]
    assert _values(emf, "JudgeCachedVerdicts") == [score.usage.cached_verdicts]


def test_the_scripted_judge_does_not_override_the_checks(run, lambda_context, monkeypatch):
    """An answer that contradicts the catalog price loses the checked sub-score even though the
    scripted judge agrees with full marks."""
    from handlers.score_dimension import handler

    monkeypatch.setenv("DIMENSION", "factual_accuracy")
    wrong_price = dict(CASES[1], response="Uzumaki by Junji Ito is $9.99 and it is in stock.")
    out = handler(load_event("score_dimension.json", item=wrong_price), lambda_context)
    assert out["sub_scores"]["price_accuracy"] < 1.0
    assert any(f["rule"] == "price_contradiction" for f in out["hard_failures"])


class ThrottledJudge:
    name = "throttled"
    model_id = "throttled-v1"

    def __init__(self):
        self.calls = 0

    def judge(self, request, rubric):
        from fmquality.judges.base import JudgeOutcome

        self.calls += 1
        return JudgeOutcome(error="ThrottlingException: rate exceeded", throttled=True, calls=1)


def test_judge_throttling_propagates_as_judge_throttled(run, lambda_context, monkeypatch, capsys):
    import handlers.score_dimension as scorer
    from fmquality.domain.errors import JudgeThrottled

    judge = ThrottledJudge()
    monkeypatch.setattr(scorer, "judge_for", lambda name, model_id: judge)
    monkeypatch.setenv("DIMENSION", "fluency")

    with pytest.raises(JudgeThrottled) as caught:
        scorer.handler(load_event("score_dimension.json"), lambda_context)
    assert type(caught.value).__name__ == "JudgeThrottled"  # the name the state machine retries on
    assert judge.calls == 1
    emf = _emf_records(capsys.readouterr().out)[-1]
    assert _values(emf, "JudgeThrottles") == [1]


def test_a_malformed_score_event_names_the_field(run, lambda_context):
    from handlers.score_dimension import handler

    event = load_event("score_dimension.json")
    event["item"]["intent"] = "smalltalk"
    with pytest.raises(ValidationError) as caught:
        handler(event, lambda_context)
    assert [e["loc"] for e in caught.value.errors()] == [("item", "intent")]


def test_an_unknown_dimension_in_the_environment_is_named(run, lambda_context, monkeypatch):
    from handlers.score_dimension import handler

    monkeypatch.setenv("DIMENSION", "humour")
    with pytest.raises(ValidationError, match="DIMENSION"):
        handler(load_event("score_dimension.json"), lambda_context)


def test_a_dimension_of_another_profile_is_refused_naming_the_run_profile(run, lambda_context, monkeypatch):
    """DIMENSION is checked against the run rubric's profile, not a fixed list."""
    from handlers.score_dimension import handler

    monkeypatch.setenv("DIMENSION", "tool_usage")  # a tool-use dimension; the run is MangaAssist's
    with pytest.raises(ValidationError, match="not a dimension of profile mangaassist") as caught:
        handler(load_event("score_dimension.json"), lambda_context)
    assert caught.value.errors()[0]["loc"] == ("DIMENSION",)


def test_composite_refuses_scores_of_another_profile(run, lambda_context):
    from handlers.composite import handler

    scores = all_scores(1.0)
    scores[0] = {**dimension_score("relevance"), "dimension": "tool_usage", "sub_scores": {"expected_tools": 1.0}}
    with pytest.raises(ValidationError, match="one of each of") as caught:
        handler(load_event("composite.json", scores=scores), lambda_context)
    assert caught.value.errors()[0]["loc"] == ("scores",)


def _results(aws, run_id="run-fixture"):
    from fmquality.adapters.dynamodb import EvaluationTable

    return EvaluationTable(TABLE, aws.ddb).results_for_run(run_id)


def test_composite_writes_one_result(run, aws, lambda_context):
    from handlers.composite import handler

    scores = all_scores(1.0)
    scores.reverse()  # the Parallel's order is not guaranteed
    out = handler(load_event("composite.json", scores=scores), lambda_context)

    assert out == {"test_id": "faq-returns-window", "arm": "candidate", "status": "scored", "passed": True,
                   "composite_score": 1.0}
    [stored] = _results(aws)
    assert stored.test_id == "faq-returns-window" and stored.run_id == "run-fixture"
    assert set(stored.dimension_scores) == {"relevance", "factual_accuracy", "consistency", "fluency", "safety"}
    assert stored.judge_usage.input_tokens == len(stored.dimension_scores) * 900
    raw = aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": "RUN#run-fixture"}, "sk": {"S": "RESULT#faq-returns-window"}})["Item"]
    assert raw["status"]["S"] == "scored" and raw["passed"]["BOOL"] is True and raw["intent"]["S"] == "faq"


def test_composite_fails_a_weak_item_and_rescoring_overwrites(run, aws, lambda_context):
    from handlers.composite import handler

    weak = handler(load_event("composite.json", scores=all_scores(0.5)), lambda_context)
    assert weak["passed"] is False and weak["composite_score"] == pytest.approx(0.5)
    again = handler(load_event("composite.json", scores=all_scores(1.0)), lambda_context)
    assert again["passed"] is True

    [stored] = _results(aws)  # the same item twice leaves one result: the latest
    assert stored.passed is True


def test_composite_records_unscored_dimensions_as_unscored(run, aws, lambda_context):
    from handlers.composite import handler

    scores = all_scores(1.0)
    scores[0] = {"dimension": "relevance", "status": "unscored", "unscored_reason": "judge reply did not validate"}
    out = handler(load_event("composite.json", scores=scores), lambda_context)
    assert out["status"] == "unscored" and out["passed"] is False and out["composite_score"] is None


def test_composite_error_mode_records_an_explicit_error(run, aws, lambda_context):
    from handlers.composite import handler

    out = handler(load_event("composite_error.json"), lambda_context)
    assert out == {"test_id": "faq-returns-window", "arm": "candidate", "status": "error", "passed": False,
                   "composite_score": None}
    [stored] = _results(aws)
    assert stored.status == "error"
    # The error name and Lambda's message, not its JSON wrapper.
    assert stored.error == "JudgeThrottled: fluency: ThrottlingException: Too many requests"
    assert stored.intent == "faq" and stored.tags == ["policy", "regression"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda e: e["scores"].pop(), "scores"),
        (lambda e: e.pop("run_id"), "run_id"),
        (lambda e: e["scores"][0].update(score=1.7), "scores.0.score"),
    ],
)
def test_a_malformed_composite_event_names_the_field(run, lambda_context, mutate, field):
    from handlers.composite import handler

    event = load_event("composite.json")
    mutate(event)
    with pytest.raises(ValidationError) as caught:
        handler(event, lambda_context)
    assert field in {".".join(map(str, e["loc"])) or "<model>" for e in caught.value.errors()}


def test_composite_refuses_two_scores_of_one_dimension(run, lambda_context):
    from handlers.composite import handler

    scores = all_scores(1.0)
    scores[1] = dimension_score("relevance")
    with pytest.raises(ValidationError, match="one of each"):
        handler(load_event("composite.json", scores=scores), lambda_context)


def test_handlers_read_the_rubric_prepare_wrote(run, aws, lambda_context):
    """A rubric key that does not exist is an error, never a silent fall-back to another rubric."""
    from fmquality.domain.errors import S3ObjectNotFound
    from handlers.composite import handler

    with pytest.raises(S3ObjectNotFound, match="runs/other/rubric.json"):
        handler(load_event("composite.json", rubric_key="runs/other/rubric.json"), lambda_context)
    assert BUCKET == run["bucket"]


def _generation(**extra):
    from fmquality.domain.results import Generation

    return Generation(target_id="mangaassist-prompt", target_kind="bedrock", target_version="7",
                      response="Unopened items can be returned within 15 days of delivery.", latency_ms=812.0,
                      usage={"input_tokens": 420, "output_tokens": 31}, cost_usd=0.0009, **extra).model_dump(mode="json")


def test_composite_records_the_control_arm_under_its_own_key_with_the_generation(run, aws, lambda_context):
    from handlers.composite import handler

    generation = _generation()
    item = {**load_event("composite.json")["item"], "response": generation["response"]}
    out = handler(load_event("composite.json", arm="control", generation=generation, item=item,
                             scores=all_scores(1.0)), lambda_context)
    assert out["arm"] == "control" and out["status"] == "scored"

    assert _results(aws) == []  # the candidate arm holds nothing
    from fmquality.adapters.dynamodb import EvaluationTable

    [control] = EvaluationTable(TABLE, aws.ddb).results_for_run("run-fixture", arm="control")
    assert control.arm == "control" and control.response == generation["response"]
    assert control.generation.target_version == "7" and control.generation.usage.input_tokens == 420
    raw = aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": "RUN#run-fixture"},
                                                  "sk": {"S": "CONTROL#faq-returns-window"}})["Item"]
    assert raw["arm"]["S"] == "control"


def test_a_failed_generation_is_an_error_record_that_keeps_the_generation(run, aws, lambda_context):
    from handlers.composite import handler

    generation = _generation(error="ThrottlingException: rate exceeded", attempts=4) | {"response": None}
    item = {**load_event("composite_error.json")["item"], "response": None}
    error = {"Error": "GenerationFailed", "Cause": "bedrock target mangaassist-prompt gave no answer after 4 attempt(s)"}
    out = handler(load_event("composite_error.json", generation=generation, item=item, error=error), lambda_context)
    assert out["status"] == "error" and out["composite_score"] is None

    [stored] = _results(aws)
    assert stored.status == "error" and stored.passed is False and stored.dimension_scores == {}
    assert stored.error.startswith("GenerationFailed: bedrock target mangaassist-prompt gave no answer")
    assert stored.response is None and stored.generation.error == "ThrottlingException: rate exceeded"
    assert stored.generation.attempts == 4


def test_an_unreadable_generation_does_not_stop_the_error_record(run, aws, lambda_context):
    from handlers.composite import handler

    handler(load_event("composite_error.json", generation={"target_id": 7}), lambda_context)
    [stored] = _results(aws)
    assert stored.status == "error" and stored.generation is None


class LongTraceJudge:
    """The scripted judge's verdicts with a prompt and raw reply far past what a state carries."""

    name = "scripted"
    model_id = None
    prompt = "プ" * 40_000 + "(end of prompt)"
    raw = '{"verdict": "' + "ロ" * 30_000 + '"}'

    def __init__(self):
        from fmquality.judges.scripted import ScriptedJudge

        self._inner = ScriptedJudge()

    def judge(self, request, rubric):
        return self._inner.judge(request, rubric).model_copy(update={"prompt": self.prompt, "raw": self.raw})

    def judge_combined(self, request, rubric):
        return self._inner.judge_combined(request, rubric).model_copy(update={"prompt": self.prompt, "raw": self.raw})


def test_a_scorer_stores_a_cut_score_whole_and_its_output_names_it(run, aws, lambda_context, monkeypatch):
    """Issue 31 item 5: the judge's prompt and reply are stored, not passed. The output (the Parallel's
    branch) is within its budget with the reference; the object holds the whole score."""
    import handlers.score_dimension as scorer
    from fmquality.domain.payload import DIMENSION_BYTES, json_bytes
    from fmquality.domain.scores import DimensionScore

    monkeypatch.setattr(scorer, "judge_for", lambda name, model_id: LongTraceJudge())
    monkeypatch.setenv("DIMENSION", "relevance")
    event = load_event("score_dimension.json", arm="control")
    out = scorer.handler(event, lambda_context)
    assert json_bytes(out) <= DIMENSION_BYTES
    key = f"runs/{event['run_id']}/judge/control/{event['item']['test_id']}/relevance.json"
    assert out["judge_trace_uri"] == f"s3://{BUCKET}/{key}"
    assert len(out["judge_prompt"]) < len(LongTraceJudge.prompt)
    stored = DimensionScore.model_validate_json(aws.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert (stored.judge_prompt, stored.judge_raw) == (LongTraceJudge.prompt, LongTraceJudge.raw)
    assert stored.judge_trace_uri is None and (stored.score, stored.sub_scores) == (out["score"], out["sub_scores"])


def test_composite_keeps_the_reference_in_the_stored_result(run, aws, lambda_context, monkeypatch):
    import handlers.score_dimension as scorer
    from fmquality.adapters.dynamodb import EvaluationTable
    from handlers.composite import handler as composite

    monkeypatch.setattr(scorer, "judge_for", lambda name, model_id: LongTraceJudge())
    event = load_event("score_dimension.json")
    scores = []
    for dimension in ("relevance", "factual_accuracy", "consistency", "fluency", "safety"):
        monkeypatch.setenv("DIMENSION", dimension)
        scores.append(scorer.handler(event, lambda_context))
    composite({**event, "scores": scores}, lambda_context)
    (result,) = EvaluationTable(TABLE, aws.ddb).results_for_run(event["run_id"])
    uris = {d: s.judge_trace_uri for d, s in result.dimension_scores.items() if s.judge_prompt}
    assert uris and all(uri == f"s3://{BUCKET}/runs/{event['run_id']}/judge/candidate/{event['item']['test_id']}/{d}.json"
                        for d, uri in uris.items())
