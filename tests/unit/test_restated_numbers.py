"""A knowledge clause said again with another number (claims/restated.py), and authors named in brackets
after a title (factual_accuracy/attributes.py): each reading with its near-misses."""

from __future__ import annotations

import pytest

from fmquality.claims.restated import restated_with_another_number
from fmquality.domain.case import TestCase


def _case(response: str, chunks: list[str], **extra) -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": "faq", "query": "How does it work?",
                                    "response": response, "retrieved_chunks": chunks, **extra})


@pytest.mark.parametrize("response, chunk", [
    ("Points are credited 21 days after delivery, so they'll be ready next time.",
     "Member points: earn 2 points per $1. Points are credited 14 days after delivery."),
    ("在庫ありの商品ですので、通常1〜9営業日以内に発送いたします。", "在庫ありの商品は、通常1〜2営業日以内に発送いたします。"),
    ("商品到着から21日以内のお申し出が対象ですが、期間内でございます。",
     "破損・汚損品：商品到着後14日以内に、破損箇所の写真を添えてご連絡ください。"),
])
def test_a_knowledge_clause_restated_with_another_number_contradicts_it(response, chunk):
    assert restated_with_another_number(_case(response, [chunk]), response)


def test_the_same_number_the_days_left_and_the_shoppers_own_number_say_nothing():
    chunk = "Points are credited 14 days after delivery."
    same = "Points are credited 14 days after delivery."
    left = "Points are credited 14 days after delivery, so yours arrive in 9 days after delivery."
    assert restated_with_another_number(_case(same, [chunk]), same) == []
    assert restated_with_another_number(_case(left, [chunk]), left) == []  # the clause's own number is beside it
    own = "Points are credited 10 days after delivery, you said?"
    assert restated_with_another_number(_case(own, [chunk]), own) == []  # a question
    given = "Points are credited 10 days after delivery."
    asked = _case(given, [chunk], query="My friend said points are credited 10 days after delivery?")
    assert restated_with_another_number(asked, given) == []  # a number the shopper gave is not the answer's invention


def test_a_clause_about_something_else_is_not_a_restatement():
    chunk = "Returns are accepted within 30 days of delivery."
    other = "Standard shipping takes 5 days."
    assert restated_with_another_number(_case(other, [chunk]), other) == []


def test_a_thousands_separator_is_no_clause_boundary():
    """'1,000 years' is one number: split at its comma, '000 years' was read as 0 (QAGS-CNNDM)."""
    chunk = "It has been 1,000 years since the ancestors of modern humans left Africa."
    same = "It has been 1,000 years since the ancestors of modern humans left Africa, scientists say."
    assert restated_with_another_number(_case(same, [chunk]), same) == []
