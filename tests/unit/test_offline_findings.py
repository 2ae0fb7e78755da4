"""The offline judge: findings graded as verdicts (they may fail an item at the lowest level),
heuristic readings that count only with the weight their measured agreement with people earns."""

from __future__ import annotations

import pytest

from fmquality.scoring.composite import combine
from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.offline import OfflineJudge, offline_verdict, signal_weights
from fmquality.domain.scores import DimensionScore
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.domain.case import TestCase


def case(response: str, **fields) -> TestCase:
    data = {"test_id": "o-1", "intent": "return_request", "query": "I ordered the wrong volume, can I return it?",
            "response": response}
    data.update(fields)
    return TestCase.model_validate(data)


@pytest.mark.parametrize(("response", "locale", "query"), [
    ("Well, that's on you for not double-checking, but fine — you can return it.", "en-US", None),
    ("It's unopened, so yes. Next time, please read the title more carefully.", "en-US", None),
    ("あるよ〜！新刊なら10%オフになるんだ。チェックしてみてね！", "ja-JP", "新刊の割引ってありますか？"),
    ("ご確認してくださいませでございます。お確かめになられてくださいませ。", "ja-JP", "注文できません。"),
    ("あなたはそれを楽しむことができるでしょう。価格は770円です。", "ja-JP", "どんな漫画ですか？"),
    ("ダンジョン飯。在庫はある状態です。価格は990円。購入は可能です。", "ja-JP", "ダンジョン飯はありますか？"),  # telegraphic
])
def test_a_register_defect_is_a_finding_at_the_lowest_level(rubric, response, locale, query):
    verdict = offline_verdict(case(response, locale=locale, **({"query": query} if query else {})), rubric, ["tone"])
    assert verdict.sub_scores["tone"] == 0.0 and "tone" not in verdict.weights


def test_a_formula_the_assistant_takes_on_with_the_shopper_is_not_impolite(rubric):
    def tone(response: str):
        return offline_verdict(case(response, query="It says delivered but nothing is here"), rubric, ["tone"]).sub_scores.get("tone")
    assert tone("Ugh, I'm sorry! Let's figure it out: check the porch and the mailroom first.") != 0.0
    assert tone("Check the porch. Figure it out, it's not that hard.") == 0.0


def test_without_a_register_defect_the_judge_abstains_on_tone(rubric):
    verdict = offline_verdict(case("Sure — it's unopened, so you can return it within 30 days of delivery.",
                                   query="Can I return an unopened book?"), rubric, ["tone"])
    assert "tone" in verdict.abstained and "tone" not in verdict.sub_scores


def test_a_sale_pushed_on_a_service_request_is_a_finding(rubric):
    pitch = case("Sorry it arrived damaged! Report it within 14 days.\n\nAnd hey, our Summer Sale has 40% off box sets — "
                 "don't wait too long!", query="My box set arrived damaged, what do I do?")
    fine = case("Sorry it arrived damaged! Report it within 14 days with a photo and we'll replace it.",
                query="My box set arrived damaged, what do I do?")
    assert offline_verdict(pitch, rubric, ["intent_relevance"]).sub_scores["intent_relevance"] == 0.0
    assert "intent_relevance" in offline_verdict(fine, rubric, ["intent_relevance"]).weights


def test_urgency_about_the_shoppers_own_cancellation_pushes_no_sale(rubric):
    def relevance(response: str):
        verdict = offline_verdict(case(response, intent="order_tracking", locale="ja-JP", query="キャンセルできますか？"),
                                  rubric, ["intent_relevance"])
        return verdict.sub_scores.get("intent_relevance")
    assert relevance("はい、キャンセルできます。ご注文で使われたポイントも戻ります。\n（発送済みになるとキャンセルできなくなりますので、"
                     "お早めにどうぞ）") != 0.0
    assert relevance("はい、キャンセルできます。\n今ならポイント5倍キャンペーン中です。お早めにどうぞ！") == 0.0


def test_every_pick_of_another_genre_than_asked_is_a_finding(rubric):
    catalog = [{"asin": "B0BERSERK1", "title": "Berserk, Vol. 1", "price": 12.99},
               {"asin": "B0YOTSUBA1", "title": "Yotsuba&!, Vol. 1", "price": 12.00}]
    chunks = ["Berserk: a dark fantasy of brutal battles and revenge.", "Yotsuba&!: a gentle slice of life comedy."]
    unfit = case("Try **Berserk, Vol. 1** ($12.99) tonight!", intent="recommendation", catalog=catalog,
                 retrieved_chunks=chunks, query="A cozy slice of life manga for bedtime?")
    fits = unfit.model_copy(update={"response": "Try **Yotsuba&!, Vol. 1** ($12.00) tonight!"})
    assert offline_verdict(unfit, rubric, ["product_relevance"]).sub_scores["product_relevance"] == 0.0
    assert offline_verdict(fits, rubric, ["product_relevance"]).sub_scores["product_relevance"] > 0.0


def test_a_perk_no_evidence_mentions_is_a_finding(rubric):
    chunks = ["Damaged items: report within 14 days and we replace them."]
    verdict = offline_verdict(case("We'll replace it, and every replacement comes with a free bookmark!",
                                   retrieved_chunks=chunks), rubric, ["no_hallucination"])
    assert verdict.sub_scores["no_hallucination"] == 0.0


def test_an_art_book_no_evidence_mentions_is_a_perk_and_an_art_booklet_the_evidence_lists_is_not(rubric):
    def finding(response: str, chunks: list[str]) -> float | None:
        verdict = offline_verdict(case(response, intent="recommendation", query="Classic cyberpunk?",
                                       retrieved_chunks=chunks), rubric, ["no_hallucination"])
        return verdict.sub_scores.get("no_hallucination")
    assert finding("Akira is $39.99, and this set even comes with an exclusive art book.", ["Akira: a Neo-Tokyo epic."]) == 0.0
    assert finding("The collector's edition adds a slipcase and an art booklet.",
                   ["Collector's edition: slipcase, art booklet."]) != 0.0


@pytest.mark.parametrize("response", [
    "作中の名台詞「あなたは誰？」が印象的な作品です。ぜひお楽しみくださいませ。",  # someone else's words
    "主人公の翔太君は料理が得意な高校生です。ぜひお楽しみくださいませ。",  # 〜君 after a name: a character
])
def test_a_second_person_word_that_does_not_address_the_shopper_is_no_finding(rubric, response):
    verdict = offline_verdict(case(response, locale="ja-JP", query="どんな作品ですか？"), rubric, ["tone"])
    assert verdict.sub_scores.get("tone") != 0.0


@pytest.mark.parametrize("response", [
    # Noun-phrase lines of a card are labels, not sentences.
    "はい、ございます！\n- 『ダンジョン飯』1巻。\n- 価格：990円。\n- 在庫：あり。\nぜひお楽しみください。",
    # One noun-phrase sentence among polite ones is a choice of style.
    "おすすめは『ダンジョン飯』。990円で在庫がございます。冒険とグルメの物語です。ぜひどうぞ。",
    # A policy's own words quoted in 「」.
    "規約には「開封品は返品不可。破損品は交換。」とございます。未開封でしたら返品いただけます。",
])
def test_noun_phrase_sentences_that_are_not_the_answers_style_are_no_finding(rubric, response):
    verdict = offline_verdict(case(response, locale="ja-JP", query="ダンジョン飯はありますか？"), rubric, ["tone"])
    assert verdict.sub_scores.get("tone") != 0.0


def test_a_number_stated_where_the_case_carries_no_evidence_at_all_is_a_finding(rubric):
    def grounding(response: str, query: str, **fields) -> tuple[float | None, bool]:
        verdict = offline_verdict(case(response, intent="chitchat", query=query, **fields), rubric, ["no_hallucination"])
        return verdict.sub_scores.get("no_hallucination"), "no_hallucination" in verdict.weights
    weather = "It's 25 degrees and sunny in Tokyo today, with light winds."
    assert grounding(weather, "What's the weather like in Tokyo today?") == (0.0, False)
    # The shopper's own number, repeated, rests on the case.
    assert grounding("Enjoy your 25th birthday!", "It's my 25th birthday today!")[0] != 0.0
    # With knowledge in the case the same sentence is a reading the judge weighs, not a finding.
    value, weighted = grounding(weather, "What's the weather like in Tokyo today?",
                                retrieved_chunks=["Tokyo store pickup is open 10:00-20:00."])
    assert value != 0.0 and weighted


def test_the_checks_date_hint_settles_no_hallucination(rubric):
    hint = "to verify: date 'march 14' is neither in the evidence nor follows from it"
    verdict = offline_verdict(case("It releases March 14.", retrieved_chunks=["Pre-orders ship on release."]), rubric,
                              ["no_hallucination"], hints=[hint])
    assert verdict.sub_scores["no_hallucination"] == 0.0 and "no_hallucination" not in verdict.weights


def test_heuristic_readings_carry_the_weight_the_agreement_file_gives_them(rubric):
    verdict = offline_verdict(case("Sure — it's unopened, so you can return it within 30 days.",
                                   retrieved_chunks=["Unopened items can be returned within 30 days of delivery."]),
                              rubric, ["no_hallucination"])
    assert verdict.weights == {"no_hallucination": signal_weights()["no_hallucination"]}


def _scores(sub: dict[str, float], weights: dict[str, float]) -> dict[str, DimensionScore]:
    out = {d: DimensionScore(dimension=d, status="scored", score=1.0, sub_scores={"x": 1.0}) for d in DIMENSIONS}
    out["factual_accuracy"] = DimensionScore(dimension="factual_accuracy", status="scored", score=min(sub.values()),
                                             sub_scores=sub, judged=list(weights), weights=weights)
    return out


def test_a_heuristic_readings_shortfall_counts_in_proportion_to_its_weight(rubric):
    low = case("x", intent="faq")
    unweighted = combine(low, rubric, _scores({"no_hallucination": 0.2}, {"no_hallucination": 0.0}))
    half = combine(low, rubric, _scores({"no_hallucination": 0.2}, {"no_hallucination": 0.5}))
    full = combine(low, rubric, _scores({"no_hallucination": 0.2}, {"no_hallucination": 1.0}))
    # faq weighs factual accuracy 0.40: the 0.8 shortfall costs 0, 0.16 and 0.32 of the composite.
    assert (unweighted.composite_score, half.composite_score, full.composite_score) == (1.0, 0.84, 0.68)
    # A heuristic reading never fails an item alone, however low.
    zero = combine(low, rubric, _scores({"no_hallucination": 0.0}, {"no_hallucination": 0.0}))
    assert zero.passed


def test_the_offline_judge_end_to_end_passes_a_plain_good_answer(rubric):
    good = case("Yes — it's unopened, so you can return it within 30 days of delivery from your Orders page.",
                retrieved_chunks=["Unopened items can be returned within 30 days of delivery from the Orders page."])
    scores = {d: score_one_dimension(d, good, rubric, OfflineJudge()) for d in DIMENSIONS}
    assert combine(good, rubric, scores).passed


# --- a policy granted in the one case the knowledge excludes ------------------------------------

PREORDER_CHUNK = ("Pre-orders can be cancelled anytime before they ship. Once a pre-order has shipped, it can no longer "
                  "be cancelled; you may return it unopened within 30 days.")
RETURN_CHUNK = "Returns: unopened, unread items within 30 days. Opened or read items can only be returned if they arrived damaged."


@pytest.mark.parametrize(("query", "response", "chunk", "finding"), [
    ("It shipped yesterday. Can I still cancel my pre-order?", "Yes! Pre-orders can be cancelled anytime.", PREORDER_CHUNK, True),
    ("It hasn't shipped yet. Can I cancel my pre-order?", "Yes! Pre-orders can be cancelled anytime before they ship.",
     PREORDER_CHUNK, False),
    ("It shipped yesterday. Can I still cancel my pre-order?", "Unfortunately it can't be cancelled now, but you can "
     "return it unopened within 30 days.", PREORDER_CHUNK, False),
    ("I read it and didn't like it. Can I return it?", "Absolutely, you can return it for a full refund!", RETURN_CHUNK, True),
    ("I haven't read it yet. Can I return it?", "Absolutely, unread items can go back within 30 days.", RETURN_CHUNK, False),
    ("I opened it and the cover arrived damaged. Can I return it?", "Yes, damaged items can be returned.", RETURN_CHUNK, False),
    ("予約商品と一緒に注文します。代引きは使えますか？", "はい、代金引換をご利用いただけます。",
     "代金引換：手数料330円。予約商品を含むご注文では代金引換はご利用いただけません。", True),
])
def test_a_policy_granted_where_the_knowledge_excludes_the_shoppers_case(rubric, query, response, chunk, finding):
    locale = "ja-JP" if "予約" in query else "en-US"
    verdict = offline_verdict(case(response, query=query, retrieved_chunks=[chunk], locale=locale, intent="faq"),
                              rubric, ["no_hallucination"])
    found = verdict.sub_scores.get("no_hallucination") == 0.0 and "no_hallucination" not in verdict.weights
    assert found is finding


# --- an offer no evidence speaks of ---------------------------------------------------------------


@pytest.mark.parametrize(("response", "chunks", "finding"), [
    ("Report it within 14 days. As an apology, we'll also add a $5 coupon to your account.",
     ["Defective items: report within 14 days for a replacement or refund."], True),
    ("Report it within 14 days. We'll also add a $5 coupon to your account.",
     ["Defective items: report within 14 days; we add a $5 coupon to your account as an apology."], False),
    ("Report it within 14 days. Coupons can't be applied to replacements.",
     ["Defective items: report within 14 days for a replacement or refund."], False),
])
def test_an_offer_the_evidence_never_speaks_of_is_a_finding(rubric, response, chunks, finding):
    verdict = offline_verdict(case(response, retrieved_chunks=chunks), rubric, ["no_hallucination"])
    assert (verdict.sub_scores.get("no_hallucination") == 0.0 and "no_hallucination" not in verdict.weights) is finding


def test_a_free_gift_message_is_a_service_not_an_invented_gift():
    from fmquality.schemes.mangaassist.factual_accuracy.signal import invented_perk
    chunks = ["Gift orders: at checkout you can add a gift message at no extra charge."]
    case = TestCase.model_validate({"test_id": "t", "intent": "recommendation", "query": "Gift ideas?",
                                    "response": "At checkout you can add a free gift message.", "retrieved_chunks": chunks})
    assert invented_perk(case, case.response) is None
    assert invented_perk(case, "We'll include a free gift with the order.")
