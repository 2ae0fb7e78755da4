"""Factual accuracy checks: facts, prices, stock, policy numbers, attributes, unsupported claims."""

from __future__ import annotations

import pytest

from fmquality.dimensions import factual_accuracy as fa
from fmquality.evaluate import score_one_dimension
from fmquality.judges.offline import OfflineJudge
from fmquality.models import TestCase

CATALOG = [
    {"asin": "B0HRUZMK01", "title": "Uzumaki", "title_ja": "うずまき", "price": 22.99, "currency": "USD",
     "availability": "in_stock", "author": "Junji Ito", "genre": "horror"},
    {"asin": "B0HRGYOJI1", "title": "Gyo", "title_ja": "ギョ", "price": 14.99, "currency": "USD",
     "availability": "out_of_stock", "author": "Junji Ito", "genre": "horror"},
    {"asin": "B0SNBRSRK1", "title": "Berserk Vol. 1", "title_ja": "ベルセルク 1", "price": 1200, "currency": "JPY",
     "availability": "in_stock", "author": "Kentaro Miura", "genre": "seinen", "volumes": 42},
    {"asin": "B0SNMNSTR1", "title": "Monster", "price": 19.99, "currency": "USD", "availability": "in_stock",
     "author": "Naoki Urasawa", "genre": "thriller"},
]
RETURN_POLICY = ["Returns: unread manga can be returned within 15 days of delivery for a full refund. "
                 "Refunds are issued within 5-7 business days."]


def make_case(**fields) -> TestCase:
    data = {"test_id": "fa-1", "intent": "product_question", "query": "Tell me about it", "catalog": CATALOG}
    data.update(fields)
    return TestCase.model_validate(data)


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


# --- incident 2: the stale return window ---------------------------------------------------------

def test_stale_thirty_day_window_is_a_policy_contradiction(rubric):
    case = make_case(intent="return_request", query="How long do I have to return a book?", catalog=[],
                     retrieved_chunks=RETURN_POLICY, expected_facts=["returns accepted within 15 days of delivery"],
                     response="You can return it within 30 days of delivery for a full refund.")
    report = fa.check(case, rubric)
    assert report.sub_scores["policy_accuracy"].score == 0.0
    assert "policy_contradiction" in rules(report)
    assert report.sub_scores["fact_coverage"].score == 0.0  # "30 days" never covers "15 days"


def test_correct_fifteen_day_window_passes(rubric):
    case = make_case(intent="return_request", query="How long do I have to return a book?", catalog=[],
                     retrieved_chunks=RETURN_POLICY, expected_facts=["returns accepted within 15 days of delivery"],
                     response="You can return unread manga within 15 days of delivery; refunds take 5 business days.")
    report = fa.check(case, rubric)
    assert report.sub_scores["policy_accuracy"].score == 1.0
    assert report.sub_scores["fact_coverage"].score == 1.0
    assert not report.hard_failures


def test_japanese_stale_policy_number_is_caught(rubric):
    case = make_case(locale="ja-JP", intent="return_request", query="返品できますか？", catalog=[],
                     retrieved_chunks=["未読の商品はお届けから15日以内であれば返品できます。"],
                     response="お届けから30日以内であれば返品できます。")
    report = fa.check(case, rubric)
    assert report.sub_scores["policy_accuracy"].score == 0.0 and "policy_contradiction" in rules(report)


def test_japanese_dates_are_not_policy_days(rubric):
    case = make_case(locale="ja-JP", intent="faq", query="いつ届きますか？", catalog=[],
                     retrieved_chunks=["通常3日以内に発送します。"], response="5月12日に発送し、3日以内に届きます。")
    report = fa.check(case, rubric)
    assert report.sub_scores["policy_accuracy"].score == 1.0


# --- fact coverage ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("response", "covered"),
    [
        ("Returns are accepted for fifteen days after delivery.", True),
        ("Returns are accepted for 15 days after delivery.", True),
        ("Returns are accepted for 30 days after delivery.", False),
        ("We ship within 15 days.", False),  # the number alone is not the fact
    ],
)
def test_fact_numbers_must_match_exactly_and_words_may_be_paraphrased(response, covered):
    assert fa.fact_is_covered("Returns accepted within 15 days of delivery", response)[0] is covered


def test_japanese_fact_coverage_uses_the_segmenter(rubric):
    case = make_case(locale="ja-JP", intent="faq", query="返品期限は？", catalog=[],
                     expected_facts=["返品は商品到着後15日以内"], response="商品の到着後15日以内なら返品を受け付けています。")
    assert fa.check(case, rubric).sub_scores["fact_coverage"].score == 1.0
    wrong_number = case.model_copy(update={"response": "商品の到着後30日以内なら返品を受け付けています。"})
    assert fa.check(wrong_number, rubric).sub_scores["fact_coverage"].score == 0.0


# --- prices ----------------------------------------------------------------------------------------

def test_usd_price_match_and_mismatch(rubric):
    right = fa.check(make_case(response="Uzumaki is $22.99 and Gyo is $14.99."), rubric)
    assert right.sub_scores["price_accuracy"].score == 1.0 and not right.hard_failures
    wrong = fa.check(make_case(response="Uzumaki is $22.99 and Gyo is $9.99."), rubric)
    assert wrong.sub_scores["price_accuracy"].score == pytest.approx(0.5)
    assert rules(wrong) == ["price_contradiction"] and "Gyo" in wrong.hard_failures[0].detail


@pytest.mark.parametrize("stated", ["¥1,200", "1,200円", "￥１，２００"])
def test_jpy_price_matches(rubric, stated):
    report = fa.check(make_case(locale="ja-JP", query="ベルセルクはいくら？", response=f"ベルセルク 1巻は{stated}です。"), rubric)
    assert report.sub_scores["price_accuracy"].score == 1.0 and not report.hard_failures


@pytest.mark.parametrize("stated", ["¥1,500", "1,500円"])
def test_jpy_price_mismatch_is_a_hard_failure(rubric, stated):
    report = fa.check(make_case(locale="ja-JP", query="ベルセルクはいくら？", response=f"ベルセルク 1巻は{stated}です。"), rubric)
    assert report.sub_scores["price_accuracy"].score == 0.0 and rules(report) == ["price_contradiction"]


def test_price_in_another_currency_is_not_converted(rubric):
    report = fa.check(make_case(response="Uzumaki costs about ¥3,400 in Japan."), rubric)
    assert "price_accuracy" in report.not_applicable and not report.hard_failures


def test_threshold_amounts_are_not_product_prices(rubric):
    report = fa.check(make_case(response="Uzumaki is $22.99, and orders over $35 ship free."), rubric)
    assert report.sub_scores["price_accuracy"].score == 1.0


def test_price_on_a_product_card_line(rubric):
    response = "1. **Uzumaki**\n   Price: $22.99\n2. **Gyo**\n   Price: $10.00"
    report = fa.check(make_case(intent="recommendation", response=response), rubric)
    assert rules(report) == ["price_contradiction"] and "Gyo" in report.hard_failures[0].detail


# --- availability -----------------------------------------------------------------------------------

def test_out_of_stock_contradiction(rubric):
    report = fa.check(make_case(response="Gyo is in stock and ships today."), rubric)
    assert report.sub_scores["availability_accuracy"].score == 0.0
    assert "availability_contradiction" in rules(report)
    right = fa.check(make_case(response="Gyo is sold out right now, but Uzumaki is in stock."), rubric)
    assert right.sub_scores["availability_accuracy"].score == 1.0 and not right.hard_failures


def test_japanese_out_of_stock_statement(rubric):
    wrong = fa.check(make_case(locale="ja-JP", response="ベルセルク 1巻は在庫切れです。"), rubric)
    assert "availability_contradiction" in rules(wrong)


# --- attributes, hallucinations ---------------------------------------------------------------------

def test_wrong_author_lowers_attribute_accuracy(rubric):
    wrong = fa.check(make_case(response="Berserk Vol. 1 by Naoki Urasawa is a dark fantasy classic."), rubric)
    right = fa.check(make_case(response="Berserk Vol. 1 by Kentaro Miura is a dark fantasy classic."), rubric)
    assert wrong.sub_scores["attribute_accuracy"].score == 0.0
    assert right.sub_scores["attribute_accuracy"].score == 1.0


def test_volume_count_checked_when_catalog_has_it(rubric):
    wrong = fa.check(make_case(response="Berserk Vol. 1 starts a series of 30 volumes."), rubric)
    assert wrong.sub_scores["attribute_accuracy"].score == 0.0


def test_unknown_asin_and_title_are_hallucinations(rubric):
    made_up = fa.check(make_case(intent="recommendation",
                                 response="Try **Spiral Nightmares** ($12.99) or B0ZZZZZZZ9."), rubric)
    grounded = fa.check(make_case(intent="recommendation", response="Try **Uzumaki** ($22.99)."), rubric)
    assert made_up.sub_scores["no_hallucination"].score < 0.5
    assert grounded.sub_scores["no_hallucination"].score == 1.0


def test_order_eta_must_match_page_context(rubric):
    order = {"order": {"order_id": "112-1234567-7654321", "status": "shipped", "eta": "2025-05-14"}}
    right = make_case(intent="order_tracking", query="When will it arrive?", catalog=[], page_context=order,
                      response="Your order has shipped and should arrive on May 14.")
    wrong = right.model_copy(update={"response": "Your order has shipped and should arrive on May 20."})
    assert fa.check(right, rubric).sub_scores["no_hallucination"].score == 1.0
    assert fa.check(wrong, rubric).sub_scores["no_hallucination"].score < 1.0
    delivered = right.model_copy(update={"response": "Your order has been delivered."})
    assert fa.check(delivered, rubric).sub_scores["no_hallucination"].score < 1.0


def test_no_evidence_asks_the_judge_and_offline_uses_the_reference(rubric):
    case = make_case(intent="faq", query="How long is shipping?", catalog=[], reference_response="Standard shipping takes 3 days.",
                     response="Standard shipping takes 3 days.")
    report = fa.check(case, rubric)
    assert report.needs_judge == ["no_hallucination"]
    agrees = fa.offline_verdict(case, rubric, ["no_hallucination"]).sub_scores["no_hallucination"]
    invents = fa.offline_verdict(case.model_copy(update={"response": "Shipping takes 9 days and costs 20% extra."}),
                                 rubric, ["no_hallucination"]).sub_scores["no_hallucination"]
    assert agrees > 0.8 > invents


def test_offline_verdict_without_reference_is_low_confidence_and_not_constant(rubric):
    case = make_case(intent="chitchat", query="Hi!", catalog=[], response="Hello! Happy to help you find manga.")
    vague = fa.offline_verdict(case, rubric, ["no_hallucination"])
    specific = fa.offline_verdict(case.model_copy(update={"response": "We have 40% off for 3 days and 2 weeks of free shipping."}),
                                  rubric, ["no_hallucination"])
    assert vague.confidence <= 0.5
    assert vague.sub_scores["no_hallucination"] > specific.sub_scores["no_hallucination"]


def test_not_applicable_sub_scores_are_skipped(rubric):
    case = make_case(intent="chitchat", query="Do you like manga?", response="I love helping people find manga!")
    report = fa.check(case, rubric)
    for name in ("fact_coverage", "price_accuracy", "availability_accuracy", "policy_accuracy", "attribute_accuracy"):
        assert name in report.not_applicable
    score = score_one_dimension("factual_accuracy", case, rubric, OfflineJudge())
    assert set(score.sub_scores) == {"no_hallucination"}


def test_end_to_end_with_offline_judge(rubric):
    good = make_case(intent="return_request", query="Can I return this?", catalog=[], retrieved_chunks=RETURN_POLICY,
                     response="Yes, unread manga can be returned within 15 days of delivery for a full refund.")
    stale = good.model_copy(update={"response": "Yes, manga can be returned within 30 days of delivery for a full refund."})
    good_score = score_one_dimension("factual_accuracy", good, rubric, OfflineJudge())
    stale_score = score_one_dimension("factual_accuracy", stale, rubric, OfflineJudge())
    assert good_score.status == "scored" and not good_score.hard_failures
    assert [f.rule for f in stale_score.hard_failures] == ["policy_contradiction"]
    assert stale_score.score < good_score.score


def test_possessive_author_is_checked(rubric):
    wrong = fa.check(make_case(response="Kentaro Miura's Monster is a slow-burn thriller."), rubric)
    assert wrong.sub_scores["attribute_accuracy"].score == 0.0


def test_fact_words_scattered_over_sentences_do_not_cover_it():
    fact = "charged when the item ships"
    assert fa.fact_is_covered(fact, "You are charged when the item ships.")[0]
    # Over the whole answer 2 of 3 words are present; no single sentence has more than 1.
    assert not fa.fact_is_covered(fact, "You are charged immediately. You can cancel before it ships.")[0]


def test_the_offline_judge_has_no_number_for_a_sub_score_without_evidence(rubric):
    """Asked directly about prices of a case that states none, the offline judge fails: the
    dimension would be unscored with the reason, never given a middle score."""
    from fmquality.judges.base import JudgeRequest

    case = TestCase(test_id="t", intent="chitchat", query="Hi!", response="Hello! How can I help you today?")
    outcome = OfflineJudge().judge(JudgeRequest(dimension="factual_accuracy", sub_scores=["price_accuracy"],
                                                case=case, rubric_version=rubric.version, guidance="",
                                                case_text=""), rubric)
    assert outcome.verdict is None and "price_accuracy: nothing in the case" in outcome.error
