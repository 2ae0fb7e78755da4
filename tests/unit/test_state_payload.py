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
