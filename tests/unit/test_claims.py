"""Claims tied to what they are about: policy numbers to their topic, prices and stock to products."""

from __future__ import annotations

import pytest

from fmquality.claims.reading import Reading
from fmquality.claims.policy import (
    compare_policies,
    conflicting_values,
    policy_numbers,
    shopper_numbers,
    value_statements,
)
from fmquality.claims.commerce import price_claims, stock_claims
from fmquality.domain.case import TestCase
from fmquality.language.numbers import extract_prices, extract_quantities

KNOWLEDGE = ("Returns: unopened items can be returned within 15 days of delivery. Damaged items can be returned "
             "within 30 days. Refunds are issued within 5-7 business days after we receive the item. "
             "Free shipping on orders over $35; standard shipping is $4.99.")
CATALOG = [{"asin": "B0HRUZMK01", "title": "Uzumaki", "price": 22.99, "availability": "in_stock", "author": "Junji Ito"},
           {"asin": "B0HRGYOJI1", "title": "Gyo", "price": 14.99, "availability": "out_of_stock", "author": "Junji Ito"}]


def topics(text: str, context: str | None = None) -> list[tuple[str, float, float]]:
    return [(n.topic, n.low, n.high) for n in policy_numbers(text, context) if n.unit != "date"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Your refund arrives within 15 business days.", [("refund", 15, 15)]),
    ("Once we receive your return, the refund goes back to your payment method within 5–7 business days.",
     [("refund", 5, 7)]),
    ("返品商品の到着を確認後、5〜7営業日以内に元のお支払い方法へ返金いたします。", [("refund", 5, 7)]),
    ("You can send it back within a month.", [("return", 30, 30)]),
    ("Orders over forty bucks ship free.", [("free_shipping", 40, 40)]),
    ("It's $10.99 before the discount.", []),  # a product's price, not a policy number
])
def test_a_number_belongs_to_the_policy_of_its_clause(text, expected):
    assert topics(text) == expected


def test_reference_points_elapsed_time_and_the_shoppers_numbers_are_not_policy_claims():
    assert topics("You have 30 days from delivery.", context="return") == [("return", 30, 30)]
    assert topics("Since you opened it 10 days ago, it can't be returned.") == []
    case = TestCase(test_id="t", intent="return_request", query="I bought it 12 days ago, can I return it?")
    numbers = policy_numbers("You bought it 12 days ago, and returns are accepted within 15 days.",
                             shopper_numbers=shopper_numbers(case))
    assert [(n.topic, n.low) for n in numbers] == [("return", 15)]


def test_policy_claims_are_compared_by_topic_range_unit_and_condition():
    knowledge = policy_numbers(KNOWLEDGE)
    claims = policy_numbers("Unopened items can be returned within two weeks. Damaged ones can be returned within 30 days. "
                            "Refunds take about a week. Refunds take 24 hours. Free shipping over $50.")
    result = compare_policies(claims, knowledge)
    assert sorted(c.text for c, _ in result.agree) == ["30 days", "a week"]  # inside "5-7 business days"
    assert sorted(c.text for c, _ in result.contradict) == ["$50", "24 hours", "two weeks"]


def test_prices_read_in_many_forms_and_attached_to_their_product():
    assert [(p.amount, p.currency, p.approx) for p in extract_prices("only 12 bucks, or about ¥1,200 / 千円ほど")] == [
        (12.0, "USD", False), (1200.0, "JPY", True), (1000.0, "JPY", True)]
    case = TestCase(test_id="t", intent="recommendation", query="horror?", catalog=CATALOG,
                    response="1. **Uzumaki**\n   Price: $22.99\n2. **Gyo**\n   Price: $10.00\nOrders over $35 ship free.")
    claims = price_claims(Reading(case))
    assert [(c.price.amount, [i.asin for i in c.items], c.product_price) for c in claims] == [
        (22.99, ["B0HRUZMK01"], True), (10.0, ["B0HRGYOJI1"], True), (35.0, [], False)]


def test_a_back_reference_goes_to_the_product_the_shopper_asked_about():
    history = [{"role": "assistant", "content": "1. Uzumaki — $22.99\n2. Gyo — $14.99"}]
    case = TestCase(test_id="t", intent="product_question", query="Tell me about the second one", catalog=CATALOG,
                    conversation_history=history, response="Gyo is stranger than Uzumaki. It costs $14.99.")
    (claim,) = price_claims(Reading(case))
    assert [i.asin for i in claim.items] == ["B0HRGYOJI1"]


@pytest.mark.parametrize(("text", "status"), [("Gyo isn't sold out.", "in_stock"), ("Gyo is not in stock.", "out_of_stock"),
                                              ("ギョは売り切れではありません。", "in_stock")])
def test_a_negated_stock_status_is_its_opposite(text, status):
    catalog = CATALOG + [{"asin": "B0JPGYOJI1", "title": "Gyo", "title_ja": "ギョ", "price": 1500, "currency": "JPY"}]
    case = TestCase(test_id="t", intent="product_question", query="Gyo?", catalog=catalog, response=text)
    assert [c.status for c in stock_claims(Reading(case))] == [status]


def test_two_values_for_one_subject_conflict_unless_their_conditions_differ():
    case = TestCase(test_id="t", intent="faq", query="returns?",
                    response="Unopened items: 15 days. Damaged items: 30 days. Returns are accepted within 60 days.")
    statements = value_statements(Reading(case), "return")
    pairs = {frozenset({a.shown, b.shown}) for a, b in conflicting_values(statements, statements)}
    assert pairs == {frozenset({"15 days", "60 days"}), frozenset({"30 days", "60 days"})}


def test_spelled_and_japanese_numbers_are_quantities():
    found = {(q.value, q.unit) for q in extract_quantities("fifteen days, twenty-two volumes, 十五日, a quarter off, "
                                                            "a two - week trip")}
    assert {(15, "day"), (22, "item"), (25, "percent"), (2, "week")} <= found
