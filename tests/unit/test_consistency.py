"""Consistency checks: intra-turn contradictions, cross-turn (ordinal resolution, incident 3;
earlier-turn contradictions) and persona."""

from __future__ import annotations

import pytest

from fmquality.schemes.mangaassist.consistency import check as consistency
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy
from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.offline import OfflineJudge, offline_verdict
from fmquality.domain.case import TestCase

from tests.unit.shonen_catalog import CATALOG
LIST_TURN = (
    "Here are three shonen picks:\n"
    "1. One Piece, Vol. 1 - $9.99, in stock\n"
    "2. Jujutsu Kaisen, Vol. 1 - $9.99, in stock\n"
    "3. Demon Slayer: Kimetsu no Yaiba, Vol. 1 - $9.99, out of stock"
)
HISTORY = [{"role": "user", "content": "Recommend some shonen manga"}, {"role": "assistant", "content": LIST_TURN}]


def make_case(response: str, query: str = "Tell me more", **fields) -> TestCase:
    data = {"test_id": "t1", "intent": "product_question", "query": query, "response": response, "catalog": CATALOG}
    data.update(fields)
    return TestCase.model_validate(data)


# --- cross_turn: ordinal resolution (incident 3) -------------------------------------------------


def test_incident3_second_one_answered_about_third_item_scores_zero_and_names_both(rubric):
    case = make_case("Demon Slayer follows Tanjiro, who becomes a demon slayer to save his sister.",
                     query="tell me about the second one", conversation_history=HISTORY)
    report = consistency.check(case, rubric)
    cross = report.sub_scores["cross_turn"]
    assert cross.score == 0.0
    evidence = " ".join(cross.evidence)
    assert "Jujutsu Kaisen" in evidence and "Demon Slayer" in evidence


def test_second_one_answered_about_second_item_scores_high(rubric):
    case = make_case("Jujutsu Kaisen follows Yuji Itadori, who swallows a cursed finger. Vol. 1 is $9.99 and in stock.",
                     query="tell me about the second one", conversation_history=HISTORY)
    assert consistency.check(case, rubric).sub_scores["cross_turn"].score == 1.0


def test_last_one_resolves_to_final_list_item(rubric):
    right = make_case("Demon Slayer: Kimetsu no Yaiba is about Tanjiro's fight against demons.",
                      query="What about the last one?", conversation_history=HISTORY)
    wrong = make_case("One Piece follows Luffy and his pirate crew.",
                      query="What about the last one?", conversation_history=HISTORY)
    assert consistency.check(right, rubric).sub_scores["cross_turn"].score == 1.0
    assert consistency.check(wrong, rubric).sub_scores["cross_turn"].score < 0.5


@pytest.mark.parametrize(
    ("query", "response", "good"),
    [("2つ目について教えてください", "呪術廻戦（Jujutsu Kaisen）は、虎杖悠仁が呪いと戦う物語です。", True),
     ("2つ目について教えてください", "鬼滅の刃（Kimetsu no Yaiba）は、炭治郎が鬼と戦う物語です。", False),
     ("最後のはどうですか？", "鬼滅の刃は、家族を守るために戦う少年の物語です。", True)],
)
def test_japanese_ordinals_resolve_against_the_list(rubric, query, response, good):
    case = make_case(response, query=query, locale="ja-JP", conversation_history=HISTORY)
    score = consistency.check(case, rubric).sub_scores["cross_turn"].score
    assert (score == 1.0) if good else (score == 0.0)


def test_ordinal_resolves_against_the_last_assistant_list_not_an_older_one(rubric):
    history = HISTORY + [
        {"role": "user", "content": "Anything else?"},
        {"role": "assistant", "content": "Also consider:\n- Demon Slayer: Kimetsu no Yaiba, Vol. 1\n- One Piece, Vol. 1"},
    ]
    case = make_case("One Piece is a long-running pirate adventure.", query="the second one?", conversation_history=history)
    assert consistency.check(case, rubric).sub_scores["cross_turn"].score == 1.0


def test_list_lines_without_catalog_match_use_the_line_title(rubric):
    history = [{"role": "assistant", "content": "Try these:\n1. Blue Period - art school drama\n2. Haikyu!! - volleyball"}]
    right = make_case("Haikyu!! is about a high-school volleyball team.", query="tell me about the second one",
                      conversation_history=history, catalog=[])
    wrong = make_case("Blue Period follows Yatora, who discovers painting.", query="tell me about the second one",
                      conversation_history=history, catalog=[])
    assert consistency.check(right, rubric).sub_scores["cross_turn"].score == 1.0
    assert consistency.check(wrong, rubric).sub_scores["cross_turn"].score == 0.0


# --- cross_turn: contradictions against earlier turns --------------------------------------------


def test_a_second_price_is_the_catalogs_to_judge_not_the_earlier_turns(rubric):
    """A product's price that differs from an earlier turn is compared with the catalog, the better
    reference: the wrong one is a price contradiction; consistency does not read it as a second
    value of the same thing (it may be a sale, a total or another product's price)."""
    history = [{"role": "assistant", "content": "One Piece, Vol. 1 costs $9.99 and is in stock."}]
    case = make_case("One Piece, Vol. 1 is $12.99.", query="Can I buy it?", conversation_history=history)
    assert "cross_turn" not in consistency.check(case, rubric).sub_scores
    facts = factual_accuracy.check(case, rubric)
    assert [f.rule for f in facts.hard_failures] == ["price_contradiction"] and "$12.99" in facts.hard_failures[0].detail

def test_cross_turn_change_signalled_by_user_is_not_a_contradiction(rubric):
    history = [{"role": "assistant", "content": "One Piece, Vol. 1 costs $12.99."}]
    case = make_case("One Piece, Vol. 1 is now $9.99.", query="I heard the price changed?", conversation_history=history)
    report = consistency.check(case, rubric)
    assert "cross_turn" not in report.sub_scores or report.sub_scores["cross_turn"].score == 1.0


def test_cross_turn_policy_number_contradiction(rubric):
    history = [{"role": "assistant", "content": "You can return unread manga within 30 days of delivery."}]
    case = make_case("Returns are accepted within 14 days.", query="How long do I have again?",
                     intent="faq", conversation_history=history)
    assert consistency.check(case, rubric).sub_scores["cross_turn"].score == 0.0


def test_cross_turn_without_history_is_skipped_not_full_marks(rubric):
    case = make_case("One Piece, Vol. 1 is $9.99 and in stock.")
    report = consistency.check(case, rubric)
    assert "cross_turn" in report.not_applicable
    assert "cross_turn" not in report.sub_scores
    scored = score_one_dimension("consistency", case, rubric, OfflineJudge())
    assert "cross_turn" not in scored.sub_scores
    assert "cross_turn" in scored.not_applicable


def test_an_answer_that_restates_nothing_from_the_history_has_no_cross_turn(rubric):
    history = [{"role": "assistant", "content": "Happy to help you find something to read!"}]
    case = make_case("Sure, what genre do you like?", query="hi again", conversation_history=history)
    report = consistency.check(case, rubric)
    assert "cross_turn" in report.not_applicable and "cross_turn" not in report.needs_judge


def test_an_answer_that_restates_the_history_without_a_found_conflict_goes_to_the_judge(rubric):
    history = [{"role": "assistant", "content": "One Piece, Vol. 1 is a great pirate adventure."}]
    case = make_case("One Piece, Vol. 1 is a long pirate adventure, great for beginners.", query="is it good?",
                     conversation_history=history)
    report = consistency.check(case, rubric)
    assert "cross_turn" in report.needs_judge and "cross_turn" not in report.sub_scores


# --- intra_turn ----------------------------------------------------------------------------------


def test_two_prices_for_one_product_in_one_answer_fail_on_the_wrong_one(rubric):
    case = make_case("One Piece, Vol. 1 is $9.99. Great choice! One Piece, Vol. 1 costs $11.99 right now.")
    facts = factual_accuracy.check(case, rubric)
    assert [f.detail for f in facts.hard_failures if f.rule == "price_contradiction"] == [
        "$11.99 stated, catalog says One Piece, Vol. 1: 9.99 USD"]

def test_two_stock_statuses_via_back_reference_fail_on_the_wrong_one(rubric):
    case = make_case("One Piece, Vol. 1 is in stock. Sorry, it is sold out at the moment.")
    facts = factual_accuracy.check(case, rubric)
    assert [f.rule for f in facts.hard_failures] == ["availability_contradiction"]

def test_intra_turn_two_values_for_one_policy(rubric):
    case = make_case("You can return manga within 15 days. Our return window is 30 days from delivery.",
                     intent="faq", catalog=[])
    intra = consistency.check(case, rubric).sub_scores["intra_turn"]
    assert intra.score < 0.3
    assert "15 days" in intra.evidence[0] or "30 days" in intra.evidence[0]


def test_different_products_and_ranges_are_not_contradictions(rubric):
    case = make_case(
        "One Piece, Vol. 1 is $9.99 and in stock. Demon Slayer: Kimetsu no Yaiba, Vol. 1 is out of stock. "
        "Returns are accepted within 30 days, and refunds take 5-7 business days.")
    report = consistency.check(case, rubric)
    assert "intra_turn" not in report.sub_scores  # nothing found: not settled, never full marks


def test_offline_judge_flags_a_claim_stated_both_ways_and_passes_agreeing_claims(rubric):
    flip = make_case("Gift cards are refundable within 30 days. Gift cards are not refundable.")
    agree = make_case("Gift cards are not refundable. Gift cards are never refundable, sorry.")
    flip_score = offline_verdict(flip, rubric, ["intra_turn"]).sub_scores["intra_turn"]
    agree_score = offline_verdict(agree, rubric, ["intra_turn"]).sub_scores["intra_turn"]
    assert flip_score < 0.6 <= agree_score


def test_offline_judge_abstains_when_no_two_claims_are_about_the_same_thing(rubric):
    verdict = offline_verdict(make_case("Hello!"), rubric, ["intra_turn"])
    assert verdict.sub_scores == {} and "intra_turn" in verdict.abstained


# --- persona -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    ["As an AI language model, I cannot read manga, but One Piece is popular.",
     "I'm just like ChatGPT, happy to help!",
     "私は言語モデルなので、感想はありません。"],
)
def test_persona_break_scores_zero_with_evidence(rubric, response):
    persona = consistency.check(make_case(response), rubric).sub_scores["persona"]
    assert persona.score == 0.0
    assert "persona break" in persona.evidence[0]


@pytest.mark.parametrize("response", ["I'm just a bot, but One Piece is popular.",
                                      "私はただのAIプログラムなので、おすすめはできません。",
                                      "As an AI, I can't read manga."])
def test_self_disclosures_in_other_words_are_persona_breaks(rubric, response):
    assert consistency.check(make_case(response), rubric).sub_scores["persona"].score == 0.0


def test_persona_no_false_match_inside_words_and_no_full_marks_for_saying_nothing(rubric):
    # "siri" and "claude" are forbidden names; "series" and "Claudette" must not trip them. The
    # answer says nothing about the assistant, so there is no persona to grade.
    report = consistency.check(make_case("This series stars Claudette, a witch."), rubric)
    assert "persona" not in report.sub_scores and "persona" in report.not_applicable


def test_an_identity_statement_goes_to_the_judge_and_the_offline_judge_reads_it(rubric):
    own = make_case("I'm MangaAssist, the store's shopping assistant. Let me help!")
    other = make_case("I'm a huge fan of shonen, so let me help!")
    assert "persona" in consistency.check(own, rubric).needs_judge
    assert offline_verdict(own, rubric, ["persona"]).sub_scores["persona"] == 1.0


# --- end to end ----------------------------------------------------------------------------------


def test_end_to_end_incident3_through_score_one_dimension(rubric):
    wrong = make_case("Demon Slayer follows Tanjiro, a boy who fights demons.", query="tell me about the second one",
                      conversation_history=HISTORY)
    right = make_case("Jujutsu Kaisen follows Yuji Itadori, a boy who fights curses.", query="tell me about the second one",
                      conversation_history=HISTORY)
    wrong_score = score_one_dimension("consistency", wrong, rubric, OfflineJudge())
    right_score = score_one_dimension("consistency", right, rubric, OfflineJudge())
    assert wrong_score.status == right_score.status == "scored"
    assert wrong_score.sub_scores["cross_turn"] == 0.0
    assert right_score.score > wrong_score.score
    assert right_score.score >= 0.9
    assert wrong_score.judge_calls == 0  # the offline judge is local computation


def test_different_conditions_may_have_different_policy_numbers(rubric):
    case = make_case("Unopened manga can be returned within 30 days. Damaged items can be returned within 7 days.",
                     intent="faq", catalog=[])
    assert "intra_turn" in consistency.check(case, rubric).needs_judge


def test_two_editions_priced_in_their_own_currencies_are_not_a_contradiction(rubric):
    catalog = [
        {"asin": "US2", "title": "Demon Slayer", "price": 9.99, "currency": "USD", "title_ja": "鬼滅の刃"},
        {"asin": "JP2", "title": "Demon Slayer", "price": 484, "currency": "JPY", "title_ja": "鬼滅の刃"},
    ]
    case = make_case("鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）は484円です。在庫切れです。", catalog=catalog, locale="ja-JP")
    assert "intra_turn" not in consistency.check(case, rubric).sub_scores


def test_a_delivery_date_against_the_order_and_an_earlier_turn(rubric):
    """A date is an event's, not a policy value: the order on the page is the reference."""
    history = [{"role": "assistant", "content": "Your order shipped on 2024-06-03 and should arrive by 2024-06-07."}]
    order = {"order": {"order_id": "A1", "status": "shipped", "ship_date": "2024-06-03", "eta": "2024-06-07"}}
    wrong = make_case("No problem! It is expected to arrive by 2024-06-09.", query="what was the date again?",
                      intent="order_tracking", conversation_history=history, page_context=order, catalog=[])
    same = make_case("It should arrive by June 7.", query="what was the date again?",
                     intent="order_tracking", conversation_history=history, page_context=order, catalog=[])
    failures = factual_accuracy.check(wrong, rubric).hard_failures
    assert [f.rule for f in failures] == ["order_contradiction"] and "2024-06-09" in failures[0].detail
    assert not factual_accuracy.check(same, rubric).hard_failures

def test_cross_turn_policy_left_implicit_in_follow_up_and_sealed_means_unopened(rubric):
    history = [{"role": "assistant", "content": "Unopened items can be returned within 15 days of delivery."}]
    case = make_case("Yes! You have 30 days from delivery for sealed items.", query="It's still sealed, so I'm fine?",
                     intent="return_request", conversation_history=history, catalog=[])
    assert consistency.check(case, rubric).sub_scores["cross_turn"].score == 0.0


def test_prices_in_one_sentence_naming_two_products_are_attributed_to_each(rubric):
    history = [{"role": "assistant", "content": "1. One Piece, Vol. 1 — $9.99\n2. Jujutsu Kaisen, Vol. 1 — $9.99"}]
    case = make_case("One Piece, Vol. 1 is the cheapest at $7.99, while Jujutsu Kaisen, Vol. 1 is $9.99.",
                     query="Which is cheapest?", conversation_history=history)
    failures = factual_accuracy.check(case, rubric).hard_failures
    assert [f.detail for f in failures] == ["$7.99 stated, catalog says One Piece, Vol. 1: 9.99 USD"]

def test_granting_then_refusing_the_shoppers_case_is_a_contradiction_and_a_later_promise_is_not(rubric):
    flip = make_case("Sure, you can return Tomie for a full refund. Opened items cannot be returned unless damaged.",
                     query="I opened and read it. Can I return it?", intent="return_request", catalog=[])
    later = make_case("Sorry, it can't ship this week. I can notify you as soon as it can ship again.",
                      query="Can it ship this week?", catalog=[])
    assert consistency.check(flip, rubric).sub_scores["intra_turn"].score == 0.0
    assert "intra_turn" not in consistency.check(later, rubric).sub_scores
    assert offline_verdict(later, rubric, ["intra_turn"]).sub_scores["intra_turn"] >= 0.8
