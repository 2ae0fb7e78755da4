"""The state machine's payload budget (domain.payload): a dimension score as a state carries it is
bounded whatever its judge trace, with its verdict unchanged; a rubric whose answers could not fit a
state beside its profile's scores is refused; a large case travels as a stub naming its file."""

from __future__ import annotations

import pytest
import yaml

from fmquality.config.rubric import default_rubric_path, load_rubric, parse_rubric
from fmquality.domain.payload import (DIMENSION_BYTES, INLINE_CASE_BYTES, OVERHEAD_BYTES, STATE_LIMIT_BYTES,
                                      for_state, json_bytes, max_response_chars)
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.engines.outputs import FolderStorage
from fmquality.run import layout


def test_a_score_with_the_longest_trace_and_evidence_is_cut_to_its_budget_verdict_unchanged():
    score = DimensionScore(
        dimension="factual_accuracy", status="scored", score=0.42, sub_scores={"fact_coverage": 0.42},
        evidence=["返品は十五日以内です。" * 400] * 60, judge_prompt="プ" * 8_000, judge_raw="ロ" * 8_000,
        hard_failures=[HardFailure(rule="policy_contradiction", dimension="factual_accuracy", detail="詳細" * 2_000)])
    assert json_bytes(score.model_dump(mode="json")) > 10 * DIMENSION_BYTES
    cut = for_state(score)
    assert json_bytes(cut.model_dump(mode="json")) <= DIMENSION_BYTES
    assert (cut.status, cut.score, cut.sub_scores) == (score.status, score.score, score.sub_scores)
    assert [h.rule for h in cut.hard_failures] == ["policy_contradiction"]
    small = DimensionScore(dimension="fluency", status="scored", score=1.0, judge_prompt="short", judge_raw="raw")
    assert for_state(small) == small  # nothing to cut: the state carries the score as it is


def test_the_answer_limit_is_what_a_state_leaves_beside_the_scores():
    dims = len(load_rubric().dimensions)
    most = max_response_chars(dims)
    worst = INLINE_CASE_BYTES + OVERHEAD_BYTES + dims * DIMENSION_BYTES + most * 4
    assert worst <= STATE_LIMIT_BYTES < worst + 4 + DIMENSION_BYTES
    assert load_rubric().limits.max_response_chars <= most


def test_a_rubric_accepting_answers_a_state_cannot_carry_is_refused(tmp_path):
    data = yaml.safe_load(default_rubric_path().read_text(encoding="utf-8"))
    data["limits"]["max_response_chars"] = max_response_chars(len(load_rubric().dimensions)) + 1
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(Exception, match="max_response_chars"):
        parse_rubric(path.read_bytes(), str(path))


def test_a_large_case_is_written_apart_and_its_item_is_a_stub(tmp_path):
    storage = FolderStorage(tmp_path)
    small = {"test_id": "s", "intent": "faq", "query": "q?", "response": "a."}
    large = {"test_id": "l", "intent": "faq", "locale": "ja-JP", "query": "q?", "tags": ["policy"],
             "retrieved_chunks": ["返品" * 10_000], "response": None}
    items = layout.cases_by_reference(storage, "r1", [{"arm": "candidate", "case": small},
                                                      {"arm": "candidate", "case": large}], INLINE_CASE_BYTES)
    assert items[0]["case"] == small
    stub = items[1]["case"]
    assert layout.is_case_stub(stub) and json_bytes(stub) < 512
    assert stub == {"test_id": "l", "intent": "faq", "locale": "ja-JP", "tags": ["policy"],
                    "case_ref": "runs/r1/cases/1.json"}
    assert layout.read_case(storage, stub["case_ref"]) == large


# ---- prompts and raw replies are stored, not passed (issue 31 item 5) ---------------------------------

def _long_trace_score(dimension: str = "factual_accuracy") -> DimensionScore:
    return DimensionScore(dimension=dimension, status="scored", score=0.5, sub_scores={"fact_coverage": 0.5},
                          evidence=["根拠"], judge_prompt="プ" + "ロンプト" * 30_000 + "末",
                          judge_raw='{"verdict": "' + "理由" * 20_000 + '"}')


def test_a_cut_score_is_stored_whole_first_and_its_state_copy_names_it(monkeypatch):
    """On S3 (moto): the score whose prompt passes the cut is written whole at
    runs/<run>/judge/<arm>/<test_id>/<dimension>.json; the state's copy carries the cut text, the
    reference and stays within its budget; a score that fits writes nothing and is returned as it is."""
    import boto3
    from moto import mock_aws

    from fmquality.adapters.s3 import BucketStorage, S3Store
    from fmquality.domain.payload import STATE_TRACE_CHARS

    score = _long_trace_score()
    assert len(score.judge_prompt) > STATE_TRACE_CHARS and json_bytes(score.model_dump(mode="json")) > DIMENSION_BYTES
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="data")
        storage = BucketStorage(S3Store(s3), "data")
        cut = layout.score_for_state(score, storage, "data", "run-1", "control", "ja-faq/07 large")
        key = "runs/run-1/judge/control/ja-faq%2F07%20large/factual_accuracy.json"
        assert layout.judge_trace_key("run-1", "control", "ja-faq/07 large", "factual_accuracy") == key
        assert cut.judge_trace_uri == f"s3://data/{key}"
        assert json_bytes(cut.model_dump(mode="json")) <= DIMENSION_BYTES
        assert len(cut.judge_prompt) <= STATE_TRACE_CHARS and cut.judge_prompt.startswith("プロンプト")
        assert (cut.status, cut.score, cut.sub_scores) == (score.status, score.score, score.sub_scores)
        stored = s3.get_object(Bucket="data", Key=key)
        assert stored["ContentType"] == "application/json"
        whole = layout.read_judge_trace(storage, key)
        assert whole == score  # the whole score: prompt and raw reply uncut, no reference to itself
        assert (whole.judge_prompt, whole.judge_raw) == (score.judge_prompt, score.judge_raw)

        small = DimensionScore(dimension="fluency", status="scored", score=1.0, judge_prompt="p", judge_raw="r")
        assert layout.score_for_state(small, storage, "data", "run-1", "candidate", "t") is small
        listed = s3.list_objects_v2(Bucket="data", Prefix="runs/run-1/")["Contents"]
        assert [o["Key"] for o in listed] == [key]


def test_the_reference_is_counted_in_the_state_budget():
    """A score cut just to its budget still fits once the reference is added to it."""
    uri = "s3://" + "b" * 63 + "/runs/" + "r" * 80 + "/judge/candidate/" + "t" * 200 + "/factual_accuracy.json"
    for size in range(DIMENSION_BYTES // 3 - 200, DIMENSION_BYTES // 3 + 400, 37):
        score = DimensionScore(dimension="factual_accuracy", status="scored", score=0.5, evidence=["e" * 280] * 20,
                               judge_prompt="プ" * size, judge_raw="ロ" * 1_400)
        cut = for_state(score, trace_uri=uri)
        assert json_bytes(cut.model_dump(mode="json")) <= DIMENSION_BYTES
        assert (cut is score) or cut.judge_trace_uri == uri


def test_an_out_folder_loses_an_earlier_runs_judge_traces_and_nothing_else(tmp_path):
    from fmquality.engines.outputs import clear_run_outputs

    storage = FolderStorage(tmp_path)
    storage.write_bytes("judge/candidate/t1/relevance.json", b"{}", "application/json")
    storage.write_bytes("judge/control/t%2F2/fluency.json", b"{}", "application/json")
    (tmp_path / "judge" / "notes.txt").write_text("mine", encoding="utf-8")
    clear_run_outputs(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["judge", "judge/notes.txt"]
    (tmp_path / "judge" / "notes.txt").unlink()
    storage.write_bytes("judge/candidate/t1/relevance.json", b"{}", "application/json")
    clear_run_outputs(tmp_path)
    assert not (tmp_path / "judge").exists()
