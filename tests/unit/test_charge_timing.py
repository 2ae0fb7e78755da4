"""When a pre-order is charged: a timing read completely (a pre-order, a charge verb, the event in the
charge's own clause) is compared with the knowledge's one timing; everything less stays silent."""

from __future__ import annotations

import pytest

from fmquality.claims.charge_timing import PLACE, SHIP, knowledge_contradictions, knowledge_timing, timing_flips, timings
from fmquality.domain.case import TestCase
from fmquality.schemes.mangaassist.consistency import check as consistency
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy

AT_SHIPPING = ["Pre-orders: you are charged when the item ships, not when you place the pre-order. "
               "You can cancel a pre-order at any time before it ships."]
AT_SHIPPING_JA = ["予約商品：代金は商品の発送時に請求されます。予約注文は発送前であればいつでもキャンセルできます。"]


@pytest.mark.parametrize(("answer", "events"), [
    ("Pre-orders are charged immediately when you place them.", [PLACE]),
    ("You won't be charged for the pre-order until it ships.", [SHIP]),
    ("Your pre-order is charged the day it ships, not today.", [SHIP]),
    ("We bill your pre-order at checkout.", [PLACE]),
    # a charge denied says nothing about when one happens; the event after the comma has no verb
    ("Pre-orders aren't charged when you place them, only when they ship.", []),
    # a release date is not an event this reading knows: silent, not guessed
    ("Your pre-order is charged on release day.", []),
    ("ご予約の時点でお支払いが確定し、代金が引き落とされます。", [PLACE]),
    ("ご予約時ではなく、発送時に請求されます。", [SHIP]),
    ("ご予約いただいても、発送まで請求されません。", []),
])
def test_the_event_a_charge_is_tied_to(answer, events):
    assert [t.event for t in timings(answer)] == events


@pytest.mark.parametrize("answer", [
    "Will you be charged when you place the pre-order? No.",  # a question
    "If you pay with PayPal, your pre-order is charged at checkout.",  # a condition narrows the subject
    "A 20% deposit on the pre-order is charged when you order.",  # a charge in parts
    "Your card is authorized for the pre-order now and charged later.",  # a hold, not a charge
])
def test_claims_not_read_completely_are_not_read(answer):
    assert timings(answer) == []


def test_an_answer_that_charges_a_pre_order_when_the_knowledge_does_not_contradicts_it():
    wrong = "Pre-orders are charged immediately when you place them, so the full amount is taken right away."
    right = "Good news: you won't be charged for a pre-order until it ships."
    assert knowledge_contradictions(wrong, AT_SHIPPING)
    assert knowledge_contradictions(right, AT_SHIPPING) == []
    assert knowledge_contradictions("ご予約の時点で代金が引き落とされます。", AT_SHIPPING_JA)
    assert knowledge_contradictions("予約商品は発送時に請求されますのでご安心ください。", AT_SHIPPING_JA) == []


@pytest.mark.parametrize("chunks", [
    # a deposit at order beside the charge at shipping: the charge is not one event
    ["Pre-order deposits: signed editions require a 20% deposit at order; the balance is charged when the item ships."],
    ["Pre-orders: your card is authorized when you place the order but only charged when the item ships."],
    # two timings for pre-orders, or none
    AT_SHIPPING + ["Pre-orders of box sets are charged at checkout."],
    ["Pre-orders can be cancelled anytime before they ship."],
])
def test_knowledge_without_one_plain_timing_compares_nothing(chunks):
    assert knowledge_timing(chunks) is None
    assert knowledge_contradictions("Your pre-order is charged at checkout.", chunks) == []


def test_a_sentence_about_another_kind_of_item_is_not_the_pre_orders_timing():
    answer = "The in-stock item is charged at checkout; the pre-order is charged when it ships."
    assert knowledge_contradictions(answer, AT_SHIPPING) == []
    assert timing_flips(answer) == []


def test_one_undistinguished_charge_tied_to_two_events_contradicts_itself():
    flip = "You're charged when each item ships, so nothing is billed up front. Both items are billed today at checkout."
    assert timing_flips(flip)
    assert timing_flips("You're charged when each item ships, so nothing is billed up front.") == []


def _case(response: str, **fields) -> TestCase:
    data = {"test_id": "t-1", "intent": "faq", "query": "When am I charged for a pre-order?", "response": response,
            "retrieved_chunks": AT_SHIPPING}
    data.update(fields)
    return TestCase.model_validate(data)


def test_the_checks_fail_the_item_on_a_contradicted_or_flipped_timing(rubric):
    wrong = factual_accuracy.check(_case("Pre-orders are charged immediately when you place them."), None)
    assert [f.rule for f in wrong.hard_failures] == ["policy_contradiction"]
    right = factual_accuracy.check(_case("You're charged for a pre-order when it ships, not before."), None)
    assert right.hard_failures == []
    flip = consistency.check(_case("You're charged when each item ships. Both items are billed today at checkout."), rubric)
    assert "self_contradiction" in [f.rule for f in flip.hard_failures]
