"""Relevance checks and the offline relevance judge."""

from __future__ import annotations

import pytest

from fmquality.schemes.mangaassist import SUB_SCORES
from fmquality.schemes.mangaassist.relevance import check as relevance
from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.offline import OfflineJudge, offline_verdict
from fmquality.judges.scripted import ScriptedJudge
from fmquality.domain.case import TestCase

CATALOG = [
    {"asin": "B0HRUZMK01", "title": "Uzumaki", "title_ja": "うずまき", "title_romaji": "Uzumaki", "price": 22.99,
     "currency": "USD", "availability": "in_stock", "author": "Junji Ito", "genre": "horror"},
    {"asin": "B0HRTOMIE1", "title": "Tomie", "title_ja": "富江", "title_romaji": "Tomie", "price": 19.99,
     "currency": "USD", "availability": "in_stock", "author": "Junji Ito", "genre": "horror"},
    {"asin": "B0SHONEPC1", "title": "One Piece Vol. 1", "title_ja": "ワンピース 1", "title_romaji": "Wan Pisu",
     "price": 9.99, "currency": "USD", "availability": "in_stock", "author": "Eiichiro Oda", "genre": "shonen"},
    {"asin": "B0SHSNGKI1", "title": "Attack on Titan", "title_ja": "進撃の巨人", "title_romaji": "Shingeki no Kyojin",
     "price": 528, "currency": "JPY", "availability": "in_stock", "author": "Hajime Isayama", "genre": "shonen"},
]


def make_case(**fields) -> TestCase:
    data = {"test_id": "rel-1", "intent": "recommendation", "query": "Can you recommend some horror manga?",
            "catalog": CATALOG}
    data.update(fields)
    return TestCase.model_validate(data)


GOOD_HORROR = ("For horror, start with Uzumaki by Junji Ito ($22.99), a town cursed by spirals, "
               "then Tomie ($19.99), about a girl who keeps coming back.")
PROMO_FIRST = ("Big shonen sale this week: 30% off One Piece Vol. 1 and every battle manga! "
               "If you still want horror, Uzumaki is $22.99.")


def placement(report) -> dict[str, str]:
    where = {n: "set" for n in report.sub_scores}
    where.update({n: "skip" for n in report.not_applicable})
    where.update({n: "judge" for n in report.needs_judge})
    return where


def test_every_sub_score_is_placed_once(rubric):
    report = relevance.check(make_case(response=GOOD_HORROR), rubric)
    report.validate_for("relevance", SUB_SCORES["relevance"])
    assert placement(report)["intent_relevance"] == "judge"


def test_incident_promotion_opening_scores_low_and_good_answer_high(rubric):
    good = offline_verdict(make_case(response=GOOD_HORROR), rubric, ["intent_relevance"])
    bad = offline_verdict(make_case(response=PROMO_FIRST), rubric, ["intent_relevance"])
    assert good.sub_scores["intent_relevance"] >= 0.8
    assert bad.sub_scores["intent_relevance"] <= 0.3
    assert any("promotion" in e for e in bad.evidence)


def test_promotion_opening_is_fine_when_the_shopper_asked_for_deals(rubric):
    case = make_case(intent="promotion", query="Any deals on horror manga?",
                     response="Yes! Horror sale: Uzumaki is 20% off this week at $22.99.")
    verdict = offline_verdict(case, rubric, ["intent_relevance"])
    assert verdict.sub_scores["intent_relevance"] >= 0.7


def test_answer_in_another_genre_is_penalised(rubric):
    case = make_case(response="You'll love One Piece Vol. 1 and Attack on Titan, two great action series.")
    verdict = offline_verdict(case, rubric, ["intent_relevance"])
    assert verdict.sub_scores["intent_relevance"] <= 0.4


def test_intent_vocabulary_separates_on_topic_from_off_topic(rubric):
    on_topic = make_case(intent="order_tracking", query="Where is my order?", catalog=[],
                         response="Your order shipped yesterday and should be delivered on Friday.")
    off_topic = on_topic.model_copy(update={"response": "We have many great horror titles for you to enjoy today."})
    high = offline_verdict(on_topic, rubric, ["intent_relevance"]).sub_scores["intent_relevance"]
    low = offline_verdict(off_topic, rubric, ["intent_relevance"]).sub_scores["intent_relevance"]
    assert high > 0.7 > low


def test_forbidden_content_is_a_hard_failure_and_zero_intent_relevance(rubric):
    case = make_case(response="Uzumaki is great. SPOILER: the spirals win in the end.",
                     forbidden_content=["the spirals win"])
    report = relevance.check(case, rubric)
    assert report.sub_scores["intent_relevance"].score == 0.0
    assert [f.rule for f in report.hard_failures] == ["forbidden_content"]
    assert report.hard_failures[0].sub_score == "intent_relevance"


def test_forbidden_content_matches_full_width_japanese(rubric):
    case = make_case(locale="ja-JP", query="ホラー漫画のおすすめは？", response="『うずまき』の結末は町が消えることです。",
                     forbidden_content=["町が消える"])
    report = relevance.check(case, rubric)
    assert report.hard_failures and report.hard_failures[0].rule == "forbidden_content"
    clean = relevance.check(case.model_copy(update={"response": "『うずまき』がおすすめです。"}), rubric)
    assert not clean.hard_failures


def test_product_relevance_by_asin_and_by_japanese_title(rubric):
    by_asin = make_case(response="Try B0HRUZMK01 and B0HRTOMIE1.", expected_products=["B0HRUZMK01", "B0HRTOMIE1"])
    by_japanese = make_case(locale="ja-JP", query="ホラー漫画のおすすめは？", response="伊藤潤二の『うずまき』と『富江』がおすすめです。",
                            expected_products=["B0HRUZMK01", "B0HRTOMIE1"])
    half = make_case(response="Try Uzumaki.", expected_products=["B0HRUZMK01", "B0HRTOMIE1"])
    for case in (by_asin, by_japanese):
        assert relevance.check(case, rubric).sub_scores["product_relevance"].score == 1.0
    # One not named may be meant otherwise ("both"): the judge reads it; the offline judge counts it.
    assert "product_relevance" in relevance.check(half, rubric).needs_judge
    assert offline_verdict(half, rubric, ["product_relevance"]).sub_scores["product_relevance"] == pytest.approx(0.5)


def test_off_genre_extra_products_lower_product_relevance(rubric):
    clean = make_case(response="Uzumaki and Tomie.", expected_products=["B0HRUZMK01", "B0HRTOMIE1"])
    padded = clean.model_copy(update={"response": "Uzumaki, Tomie, and also One Piece Vol. 1!"})
    assert relevance.check(clean, rubric).sub_scores["product_relevance"].score == 1.0
    # An extra product may fit or not: the judge reads it; the offline judge by its genre.
    assert "product_relevance" in relevance.check(padded, rubric).needs_judge
    assert offline_verdict(padded, rubric, ["product_relevance"]).sub_scores["product_relevance"] < 1.0


def test_unexpected_catalog_products_go_to_the_judge_and_offline_checks_genre(rubric):
    horror = make_case(response="Uzumaki is a classic.")
    shonen = make_case(response="One Piece Vol. 1 is a classic.")
    report = relevance.check(horror, rubric)
    assert "product_relevance" in report.needs_judge
    good = offline_verdict(horror, rubric, ["product_relevance"]).sub_scores["product_relevance"]
    bad = offline_verdict(shonen, rubric, ["product_relevance"]).sub_scores["product_relevance"]
    assert good > bad


def test_not_applicable_sub_scores_are_skipped_not_full_marks(rubric):
    case = make_case(intent="chitchat", query="Hi there!", catalog=[], response="Hello! How can I help you today?")
    report = relevance.check(case, rubric)
    assert set(report.not_applicable) == {"product_relevance", "context_relevance"}
    score = score_one_dimension("relevance", case, rubric, ScriptedJudge(default=None))
    assert set(score.sub_scores) == {"intent_relevance"}
    assert set(score.not_applicable) == {"product_relevance", "context_relevance"}


def test_context_relevance_uses_the_order_on_the_page(rubric):
    order = {"order": {"order_id": "112-1234567-7654321", "status": "shipped", "eta": "2025-05-14"}}
    uses = make_case(intent="order_tracking", query="Where is my package?", catalog=[], page_context=order,
                     response="Your order 112-1234567-7654321 has shipped and should arrive on May 14.")
    ignores = uses.model_copy(update={"response": "Packages usually arrive within a week of purchase."})
    assert relevance.check(uses, rubric).sub_scores["context_relevance"].score == 1.0
    # Finding no order detail is not evidence of ignoring it (it may be paraphrased): the judge reads it.
    assert "context_relevance" in relevance.check(ignores, rubric).needs_judge
    assert offline_verdict(ignores, rubric, ["context_relevance"]).sub_scores["context_relevance"] < 0.5


def test_context_relevance_resolves_the_second_one_from_history(rubric):
    history = [{"role": "user", "content": "Recommend horror manga"},
               {"role": "assistant", "content": "1. Uzumaki\n2. Tomie"}]
    right = make_case(intent="product_question", query="How much is the second one?", conversation_history=history,
                      response="Tomie is $19.99.")
    wrong = right.model_copy(update={"response": "Uzumaki is $22.99."})
    assert relevance.check(right, rubric).sub_scores["context_relevance"].score == 1.0
    assert relevance.check(wrong, rubric).sub_scores["context_relevance"].score < 0.5


def test_context_relevance_current_product(rubric):
    case = make_case(intent="product_question", query="Is this one scary?", page_context={"current_asin": "B0HRTOMIE1"},
                     response="Tomie is very creepy: a girl who regenerates no matter what.")
    off = case.model_copy(update={"response": "We carry many scary titles across the store."})
    assert relevance.check(case, rubric).sub_scores["context_relevance"].score == 1.0
    assert "context_relevance" in relevance.check(off, rubric).needs_judge
    assert offline_verdict(off, rubric, ["context_relevance"]).sub_scores["context_relevance"] < 0.5


def test_end_to_end_with_offline_judge(rubric):
    good = score_one_dimension("relevance", make_case(response=GOOD_HORROR, expected_products=["B0HRUZMK01"]),
                               rubric, OfflineJudge())
    bad = score_one_dimension("relevance", make_case(response=PROMO_FIRST, expected_products=["B0HRUZMK01"]),
                              rubric, OfflineJudge())
    assert good.status == bad.status == "scored"
    assert good.score > 0.8 > 0.6 > bad.score
    assert good.judge_calls == 0 and good.confidence is None  # the offline judge reports no confidence


def test_chitchat_answering_off_topic_with_invented_facts_is_caught_as_unsupported(rubric):
    case = make_case(intent="chitchat", query="What's the weather like in Tokyo today?", catalog=[],
                     response="I can't check the weather, sorry! But I'd love to help you find a manga for a cozy day.")
    off = case.model_copy(update={"response": "It's 25 degrees and sunny in Tokyo today, with light winds."})
    assert offline_verdict(case, rubric, ["intent_relevance"]).sub_scores["intent_relevance"] >= 0.8
    assert offline_verdict(off, rubric, ["no_hallucination"]).sub_scores["no_hallucination"] < 0.6


@pytest.mark.parametrize(("query", "response"), [
    ("Thanks so much!", "You're welcome, happy reading!"),
    ("ありがとうございました！", "どういたしまして。またのご来店をお待ちしております。"),
])
def test_small_talk_is_answered_in_kind(rubric, query, response):
    answered = make_case(intent="chitchat", query=query, catalog=[], response=response)
    ignored = answered.model_copy(update={"response": "Uzumaki is a horror classic about spirals."})
    assert (offline_verdict(answered, rubric, ["intent_relevance"]).sub_scores["intent_relevance"]
            > offline_verdict(ignored, rubric, ["intent_relevance"]).sub_scores["intent_relevance"])


def test_promotion_opening_also_lowers_product_relevance(rubric):
    clean = make_case(response=GOOD_HORROR, expected_products=["B0HRUZMK01"])
    pushed = make_case(response=PROMO_FIRST, expected_products=["B0HRUZMK01"])
    assert (offline_verdict(pushed, rubric, ["product_relevance"]).sub_scores["product_relevance"]
            < offline_verdict(clean, rubric, ["product_relevance"]).sub_scores["product_relevance"])
