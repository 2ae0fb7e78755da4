"""Issue 20, item 4 on AWS (moto): an execution input with ``"replay": {"from", "to"}`` makes Prepare build
the run's items from the captured turns of that window in the data bucket (tagged ``replay``, so targets
are told), state the estimated cost and refuse it above REPLAY_BUDGET_USD unless approved; Aggregate
writes the per-turn diff and queues the regressed turns for review."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, TABLE, load_event, read_json, read_text

DAY = "2026-11-23"
WINDOW = {"from": f"{DAY}T10:00:00Z", "to": f"{DAY}T11:00:00Z"}
PRICED_JUDGE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def _turn(turn_id: str, at: str, intent: str = "faq", locale: str = "en-US", query: str = "What is the return window?",
          response: str = "You can return unopened manga within 30 days.") -> dict:
    return {"turn_id": turn_id, "timestamp": at, "locale": locale, "intent": intent, "query": query,
            "response": response, "retrieved_chunks": ["Returns: unopened items within 30 days of delivery."],
            "model_id": "prod-model", "prompt_version": "v7", "latency_ms": 300.0}


TURNS = [
    _turn("t-early", f"{DAY}T09:59:59+00:00"),  # before the window
    _turn("t-1", f"{DAY}T10:05:00+00:00"),
    _turn("t-2", f"{DAY}T10:30:00+00:00", intent="product_question", query="Is One Piece vol. 1 in stock?",
          response="Yes, One Piece vol. 1 is in stock."),
    _turn("t-3", f"{DAY}T10:59:59+00:00", locale="ja-JP", query="返品できますか？", response="未開封なら30日以内に返品できます。"),
    _turn("t-late", f"{DAY}T11:00:00+00:00"),  # the window's end is exclusive
]


def _put_turns(s3, turns=TURNS, day: str = DAY) -> None:
    body = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns)
    s3.put_object(Bucket=BUCKET, Key=f"production/turns/dt={day}/fmq-turns-1-{day}.jsonl", Body=body.encode("utf-8"))


def _replay_event(**overrides) -> dict:
    event = load_event("prepare.json", execution_name=overrides.pop("execution_name", "replay-1"),
                       replay=overrides.pop("replay", WINDOW), target="lambda:candidate-bot", control="recorded",
                       **overrides)
    del event["dataset"], event["trigger"]  # a replay input names no dataset; its trigger defaults to "replay"
    return event


def _prepare(event, context):
    from handlers.prepare import handler

    return handler(event, context)


def _run_record(aws, run_id: str) -> dict:
    from fmquality.adapters.dynamodb import EvaluationTable

    return EvaluationTable(TABLE, aws.ddb).get_run(run_id)


def test_a_replay_builds_its_items_from_the_window_of_captured_turns(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    _put_turns(aws.s3)
    _put_turns(aws.s3, [_turn("t-next-day", "2026-11-24T10:10:00+00:00")], day="2026-11-24")

    out = _prepare(_replay_event(), lambda_context)

    items = read_json(aws.s3, out["items_key"])
    # Every turn of [from, to), each answered by both arms; nothing outside the window.
    assert sorted({i["case"]["test_id"] for i in items}) == ["t-1", "t-2", "t-3"]
    assert sorted(i["arm"] for i in items) == sorted(["candidate", "control"] * 3)
    # Every case is a replay (targets.base.request_for tells the chatbot), converted as the sample does.
    assert all("replay" in i["case"]["tags"] and "production" in i["case"]["tags"] for i in items)
    assert out["generate"] is True and out["trigger"] == "replay"
    # The estimated cost is stated in Prepare's output and on the run record (a scripted judge: $0).
    assert out["replay"]["turns"] == 3 and out["replay"]["estimated_cost_usd"] == 0.0
    run = _run_record(aws, out["run_id"])
    recorded = json.loads(run["replay"])
    assert recorded["from"] == WINDOW["from"] and recorded["budget_usd"] == 5.0
    assert run["dataset"].startswith(f"s3://{BUCKET}/production/turns/") and run["case_count"] == 3
    # The replayed cases are kept beside the run, and the run records their hash.
    kept = read_text(aws.s3, f"runs/{out['run_id']}/replay-cases.jsonl").splitlines()
    assert [json.loads(line)["test_id"] for line in kept] == ["t-1", "t-2", "t-3"]
    assert len(run["dataset_sha256"]) == 64


def test_a_replay_filter_selects_among_the_window_turns(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    _put_turns(aws.s3)
    out = _prepare(_replay_event(replay={**WINDOW, "filter": {"locales": ["ja-JP"]}}), lambda_context)
    assert {i["case"]["test_id"] for i in read_json(aws.s3, out["items_key"])} == {"t-3"}


def test_a_replay_above_the_budget_is_refused_naming_the_figure_unless_approved(aws, lambda_context, monkeypatch):
    from fmquality.domain.errors import DatasetRejected

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    monkeypatch.setenv("JUDGE", "bedrock")
    monkeypatch.setenv("JUDGE_MODEL_ID", PRICED_JUDGE)
    monkeypatch.setenv("REPLAY_BUDGET_USD", "0.0001")
    _put_turns(aws.s3)

    with pytest.raises(DatasetRejected) as refused:
        _prepare(_replay_event(execution_name="over-budget"), lambda_context)
    message = str(refused.value)
    assert "above the replay budget $0.00" in message and "approve_cost" in message and "3 turn(s)" in message
    figure = float(message.split("estimated cost $")[1].split(" ")[0])
    assert figure > 0.0001
    # Refused before anything was written or registered.
    assert "Contents" not in aws.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/over-budget/")
    assert _run_record(aws, "over-budget") is None

    approved = _prepare(_replay_event(execution_name="approved", approve_cost=True), lambda_context)
    assert approved["replay"]["estimated_cost_usd"] == figure
    assert json.loads(_run_record(aws, "approved")["replay"])["approved_over_budget"] is True


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"replay": {"from": "yesterday", "to": WINDOW["to"]}}, "replay.from"),
        ({"replay": {"from": WINDOW["to"], "to": WINDOW["from"]}}, "is not after"),
        ({"control": None}, "needs a target (the candidate) and a control"),
        ({"dataset": "s3://fmq-data-test/datasets/x.jsonl"}, "not both"),
    ],
)
def test_a_malformed_replay_input_names_what_is_wrong(aws, lambda_context, change, message):
    event = _replay_event()
    event.update(change)
    if change.get("control", "") is None:
        del event["control"]
    with pytest.raises(ValidationError) as caught:
        _prepare(event, lambda_context)
    assert message in str(caught.value)


def test_a_window_without_captured_turns_is_rejected(aws, lambda_context, monkeypatch):
    from fmquality.domain.errors import DatasetRejected

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    _put_turns(aws.s3)
    with pytest.raises(DatasetRejected, match=r"no captured turn in \[2026-11-20T10:00:00Z"):
        _prepare(_replay_event(replay={"from": "2026-11-20T10:00:00Z", "to": "2026-11-20T11:00:00Z"}), lambda_context)


def test_aggregate_of_a_replay_writes_the_diff_and_queues_the_regressed_turns(aws, lambda_context, monkeypatch):
    """Prepare a replay, record each arm's results (the control passes every turn, the candidate fails
    the FAQ turn), aggregate: the diff names that turn and its stratum, and it is queued for review."""
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.adapters.review_queue import DynamoReviewQueue
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.case import TestCase
    from fmquality.domain.scores import DimensionScore
    from fmquality.schemes.mangaassist import DIMENSIONS
    from fmquality.scoring.composite import combine
    from handlers.aggregate import handler as aggregate

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    _put_turns(aws.s3)
    out = _prepare(_replay_event(execution_name="replay-agg"), lambda_context)
    rubric, table = load_rubric(), EvaluationTable(TABLE, aws.ddb)
    for item in read_json(aws.s3, out["items_key"]):
        case = TestCase.model_validate(item["case"])
        bad = item["arm"] == "candidate" and case.test_id == "t-1"
        scores = {d: DimensionScore(dimension=d, status="scored", score=0.1 if bad else 0.95)
                  for d in DIMENSIONS}
        result = combine(case, rubric, scores, run_id=out["run_id"]).model_copy(update={"arm": item["arm"]})
        table.put_result(out["run_id"], result)

    aggregated = aggregate({**{k: out[k] for k in ("run_id", "bucket", "rubric_key", "items_key", "targets_key",
                                                   "dataset_id", "baseline_run_id", "trigger")}}, lambda_context)

    rows = [json.loads(line) for line in read_text(aws.s3, "runs/replay-agg/replay-diff.jsonl").splitlines()]
    assert [(r["test_id"], r["change"]) for r in rows] == [("t-1", "regression")]
    summary = read_json(aws.s3, "runs/replay-agg/replay-summary.json")
    assert summary["strata"]["faq|en-US"]["regression"] == 1 and summary["queued_for_review"] == 1
    assert summary["window"] == WINDOW
    queued = DynamoReviewQueue(TABLE, aws.ddb).items("replay-agg")
    assert [(q.test_id, q.reason) for q in queued] == [("t-1", "failing")]
    report = read_json(aws.s3, aggregated["report_key"])
    assert report["review_queue"]["test_ids"] == ["t-1"]
