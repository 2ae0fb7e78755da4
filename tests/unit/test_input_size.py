"""Issue 17, item 9: cost linear in the input. Past the rubric's size limits a case is a named error
record; below them the readings that were quadratic (sentence of a position, mentions of a sentence,
sentence ends before an amount, overlapping dates) give what the plain scans gave. Time itself is
measured by `python -m bench size`, not here."""

from __future__ import annotations

import random

import pytest

from fmquality.claims.reading import Reading
from fmquality.domain.errors import CaseTooLarge
from fmquality.run.evaluate import evaluate_case, score_one_dimension
from fmquality.judges.offline import OfflineJudge
from fmquality.domain.case import TestCase
from fmquality.claims.money import role_of
from fmquality.config.rubric import load_rubric
from fmquality.language.numbers import extract_prices, find_dates
from fmquality.language.text import normalize, segment_spans

CATALOG = [{"asin": "B0HRUZMK01", "title": "Uzumaki", "price": 22.99, "availability": "in_stock"},
           {"asin": "B0HRGYOJI1", "title": "Gyo", "price": 14.99, "availability": "out_of_stock"}]
SENTENCES = ["Uzumaki is $22.99 and in stock.", "Gyo costs $14.99, but it is sold out!", "Shipping is free over $35.",
             "Delivery by May 12 or 5月14日.", "  ", "Vol. 2 ships 2024-06-01.\n", "1. Uzumaki\n", "よつばと! は人気です。"]


def long_text(n: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(SENTENCES) for _ in range(n))


def limited(max_response: int = 50, max_evidence: int = 10_000):
    rubric = load_rubric()
    return rubric.model_copy(update={"limits": rubric.limits.model_copy(
        update={"max_response_chars": max_response, "max_evidence_chars": max_evidence})})


def test_an_answer_past_the_limit_is_a_named_error_record_not_a_score():
    case = TestCase(test_id="long", intent="faq", query="Returns?", response="x " * 40)
    result = evaluate_case(case, limited(), OfflineJudge())
    assert result.status == "error" and result.composite_score is None and not result.passed
    assert "80 characters" in result.error and "limits.max_response_chars (50)" in result.error


def test_evidence_past_the_limit_is_named_and_the_scorer_lambda_path_raises():
    case = TestCase(test_id="kb", intent="faq", query="Returns?", response="Within 30 days.",
                    retrieved_chunks=["Returns within 30 days. " * 500])
    rubric = limited(max_response=1_000)
    assert "limits.max_evidence_chars (10,000)" in evaluate_case(case, rubric, OfflineJudge()).error
    with pytest.raises(CaseTooLarge, match="max_evidence_chars"):
        score_one_dimension("relevance", case, rubric, OfflineJudge())


def test_the_shipped_limits_let_every_shipped_answer_through():
    from fmquality.run.dataset import load_dataset

    rubric = load_rubric()
    cases = load_dataset("datasets/mangaassist/golden.jsonl").cases
    assert max(len(c.response or "") for c in cases) < rubric.limits.max_response_chars


def test_sentence_and_mention_lookups_match_a_plain_scan():
    text = long_text(300)
    case = TestCase(test_id="t", intent="product_question", query="q", response=text, catalog=CATALOG)
    reading = Reading(case)
    for pos in range(0, len(reading.norm), 7):
        plain = next((i for i, (s, e) in enumerate(reading.spans) if s <= pos < e), len(reading.spans) - 1)
        assert reading.sentence_of(pos) == plain
    for index, (start, end) in enumerate(reading.spans):
        assert reading.mentions_in(index) == [m for m in reading.mentions if start <= m.start < end]


def test_segment_spans_still_keep_titles_abbreviations_and_list_markers():
    text = "See Vol. 2 now. よつばと!（Yotsuba&!）is fun! 1. Uzumaki. The end"
    norm = normalize(text)
    assert [norm[s:e].strip() for s, e in segment_spans(text)] == [
        "see vol. 2 now.", "よつばと!(yotsuba&!)is fun!", "1. uzumaki.", "the end"]


def test_an_amounts_role_reads_only_its_own_sentence():
    text = long_text(200) + " The total is $37.98."
    norm = normalize(text)
    last = extract_prices(text)[-1]
    assert role_of(norm, last, set()) == "total"
    assert role_of(normalize("Free shipping. $12.99"), extract_prices("Free shipping. $12.99")[0], set()) == "unit"


def test_overlapping_date_patterns_give_one_date_each():
    dates = find_dates("Delivered 2024-05-12, then May 14-16; 5月20日〜22日.")
    assert [(d.month, d.day) for d in dates] == [(5, 12), (5, 14), (5, 16), (5, 20), (5, 22)]


def test_a_run_on_text_is_read_in_bounded_sentences_that_lose_nothing():
    from fmquality.language.text import MAX_SENTENCE_CHARS, split_sentences

    text = "Berserk volume one costs twelve dollars, ships fast and is in stock " * 100
    spans = segment_spans(text)
    norm = normalize(text)
    assert len(spans) > 1 and all(e - s <= MAX_SENTENCE_CHARS for s, e in spans)
    assert "".join(norm[s:e] for s, e in spans).strip() == norm.strip()
    assert all(len(s) <= MAX_SENTENCE_CHARS for s in split_sentences(text))
    assert " ".join(split_sentences(text)).split() == text.split()


def test_claims_are_compared_with_a_bounded_number_of_others():
    from fmquality.language.alignment import COMPARED_CLAIMS, comparable_pairs, read_units

    units = read_units(" ".join(f"Berserk Vol. {n} is in stock." for n in range(3 * COMPARED_CLAIMS)))
    pairs = comparable_pairs(units, units, lambda u: frozenset({"berserk"}), same_text=True)
    n = len(units)
    assert len(pairs) == sum(min(COMPARED_CLAIMS, n - 1 - i) for i in range(n))
    few = units[:10]
    assert len(comparable_pairs(few, few, lambda u: frozenset({"berserk"}), same_text=True)) == 45  # all pairs
