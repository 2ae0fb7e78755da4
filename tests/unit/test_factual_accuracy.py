"""Factual accuracy checks: facts, prices, stock, policy numbers, attributes, unsupported claims."""

from __future__ import annotations

import pytest

from fmquality.schemes.mangaassist.factual_accuracy import check as fa
from fmquality.run.evaluate import score_one_dimension
from fmquality.language.alignment import match_fact, read_units
from fmquality.judges.offline import OfflineJudge, offline_verdict
from fmquality.schemes.mangaassist import SUB_SCORES
from fmquality.domain.case import TestCase

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
    case = make_case(locale="ja-JP", intent="faq", query="いつ発送されますか？", catalog=[],
                     retrieved_chunks=["通常3日以内に発送します。"], response="5月12日の注文は、3日以内に発送します。")
    report = fa.check(case, rubric)
    assert report.sub_scores["policy_accuracy"].score == 1.0  # "12日" is part of a date, not 12 days
    assert not report.hard_failures


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
    match = match_fact("Returns accepted within 15 days of delivery", read_units(response))
    assert (match.status == "covered") is covered


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


@pytest.mark.parametrize("stated", ["only 12 bucks", "just 12 dollars", "twelve dollars"])
def test_informal_prices_are_read_and_compared(rubric, stated):
    report = fa.check(make_case(query="How much is Gyo?", response=f"Gyo is {stated}."), rubric)
    assert report.sub_scores["price_accuracy"].score == 0.0 and rules(report) == ["price_contradiction"]


def test_a_hedged_price_is_compared_with_a_tolerance(rubric):
    near = fa.check(make_case(response="Gyo is just under fifteen dollars."), rubric)
    far = fa.check(make_case(response="Gyo is about $9."), rubric)
    assert near.sub_scores["price_accuracy"].score == 1.0 and far.sub_scores["price_accuracy"].score == 0.0


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


def test_an_unknown_asin_is_settled_and_an_unknown_title_is_a_hint(rubric):
    """An ASIN the catalog lacks is a claim read completely; a bold name the catalog lacks may be a
    series the snapshot does not carry, so it goes to the judge as something to verify."""
    made_up = fa.check(make_case(intent="recommendation",
                                 response="Try **Spiral Nightmares** ($12.99) or B0ZZZZZZZ9."), rubric)
    grounded = fa.check(make_case(intent="recommendation", response="Try **Uzumaki** ($22.99)."), rubric)
    assert made_up.sub_scores["no_hallucination"].score == 0.5
    assert made_up.sub_scores["no_hallucination"].evidence == ["ASIN B0ZZZZZZZ9 is not in the catalog"]
    assert any("Spiral Nightmares" in f and "to verify" in f for f in made_up.findings)
    # Nothing unsupported found is not full marks: the judge decides, with what was verified.
    assert "no_hallucination" in grounded.needs_judge and "no_hallucination" not in grounded.sub_scores
    assert any("verified" in f for f in grounded.findings)


def test_a_volume_the_catalog_does_not_list_is_a_hint_for_the_judge(rubric):
    report = fa.check(make_case(intent="recommendation", response="Berserk Vol. 1 is great, and Berserk Vol. 7 is out now."),
                      rubric)
    assert "no_hallucination" in report.needs_judge
    assert any("volume 7 of Berserk Vol. 1 is not in the catalog" in f for f in report.findings)


def test_order_eta_must_match_page_context(rubric):
    order = {"order": {"order_id": "112-1234567-7654321", "status": "shipped", "eta": "2025-05-14"}}
    right = make_case(intent="order_tracking", query="When will it arrive?", catalog=[], page_context=order,
                      response="Your order has shipped and should arrive on May 14.")
    wrong = right.model_copy(update={"response": "Your order has shipped and should arrive on May 20."})
    assert "no_hallucination" in fa.check(right, rubric).needs_judge
    assert fa.check(wrong, rubric).sub_scores["no_hallucination"].score < 1.0
    delivered = right.model_copy(update={"response": "Your order has been delivered."})
    assert fa.check(delivered, rubric).sub_scores["no_hallucination"].score < 1.0


def test_no_evidence_asks_the_judge_and_offline_uses_the_reference(rubric):
    case = make_case(intent="faq", query="How long is shipping?", catalog=[], reference_response="Standard shipping takes 3 days.",
                     response="Standard shipping takes 3 days.")
    report = fa.check(case, rubric)
    assert "no_hallucination" in report.needs_judge
    agrees = offline_verdict(case, rubric, ["no_hallucination"]).sub_scores["no_hallucination"]
    invents = offline_verdict(case.model_copy(update={"response": "Shipping takes 9 days and costs 20% extra."}),
                              rubric, ["no_hallucination"]).sub_scores["no_hallucination"]
    assert agrees > 0.8 > invents


def test_without_evidence_the_offline_judge_abstains_on_vague_text_and_flags_invented_figures(rubric):
    case = make_case(intent="chitchat", query="Hi!", catalog=[], response="Hello! Happy to help you find manga.")
    vague = offline_verdict(case, rubric, ["no_hallucination"])
    specific = offline_verdict(case.model_copy(update={"response": "We have 40% off for 3 days and 2 weeks of free shipping."}),
                               rubric, ["no_hallucination"])
    assert vague.sub_scores == {} and "no_hallucination" in vague.abstained
    assert specific.sub_scores["no_hallucination"] < 0.5


def test_not_applicable_sub_scores_are_skipped(rubric):
    case = make_case(intent="chitchat", query="Do you like manga?", response="I love helping people find manga!")
    report = fa.check(case, rubric)
    for name in ("fact_coverage", "price_accuracy", "availability_accuracy", "policy_accuracy", "attribute_accuracy"):
        assert name in report.not_applicable
    assert "no_hallucination" in report.not_applicable  # an opinion, nothing the evidence speaks to
    score = score_one_dimension("factual_accuracy", case, rubric, OfflineJudge())
    assert score.status == "not_applicable" and score.score is None


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
    assert match_fact(fact, read_units("You are charged when the item ships.")).status == "covered"
    # Over the whole answer every word is present; no single sentence carries the fact.
    assert match_fact(fact, read_units("You are charged immediately. You can cancel before it ships.")).status != "covered"


@pytest.mark.parametrize(("fact", "answer"), [
    ("Gyo is out of stock", "Good news, Gyo is in stock!"),
    ("Gyo is out of stock", "Gyo isn't sold out."),
    ("codes cannot be combined", "You can combine codes at checkout."),
    ("未開封の商品は返品できます", "未開封の商品は返品できません。"),
])
def test_a_fact_stated_the_other_way_round_is_contradicted(fact, answer):
    assert match_fact(fact, read_units(answer)).status == "contradicted"


@pytest.mark.parametrize(("fact", "answer"), [
    ("shipped on 2024-06-03", "Your order went out on June 3rd."),
    ("5–7 business days", "Refunds take five to seven business days."),
    ("Opened items cannot be returned", "Sorry, opened items can't be returned unless damaged, so I can't start one."),
])
def test_a_fact_in_other_words_and_forms_is_covered(fact, answer):
    assert match_fact(fact, read_units(answer)).status == "covered"


def test_the_offline_judge_has_no_number_for_a_sub_score_without_evidence(rubric):
    """Asked directly about prices of a case that states none, the offline judge abstains with the
    reason; a dimension with nothing else scored is unscored, never given a middle score."""
    from fmquality.scoring.plan import CheckReport, DimensionPlan, finish_dimension
    from fmquality.judges.base import JudgeRequest

    case = TestCase(test_id="t", intent="chitchat", query="Hi!", response="Hello! How can I help you today?")
    request = JudgeRequest(dimension="factual_accuracy", sub_scores=["price_accuracy"], case=case,
                           rubric_version=rubric.version, guidance="", case_data={})
    outcome = OfflineJudge().judge(request, rubric)
    assert outcome.verdict.sub_scores == {} and "price_accuracy" in outcome.verdict.abstained
    report = CheckReport(needs_judge=["price_accuracy"], not_applicable=[n for n in SUB_SCORES["factual_accuracy"]
                                                                          if n != "price_accuracy"])
    score = finish_dimension(DimensionPlan("factual_accuracy", report=report, request=request), outcome, rubric)
    assert score.status == "unscored" and score.score is None and "price_accuracy" in score.unscored_reason
