"""Reported speech: another source's claim quoted by the answer is not the answer's claim."""

from __future__ import annotations

import pytest

from fmquality.language.attribution import reported_at

CASES = [
    ("our catalog lists it as a pre-order, although one product note says it's in stock.", "in stock", True),
    ("our catalog lists it as a pre-order, although one product note says it's in stock.", "pre-order", False),
    ("a stock note i found says it's out of stock, so the two don't agree.", "out of stock", True),
    ("one product note says it's in stock, but our catalog shows it as a pre-order.", "pre-order", False),
    ("the text you pasted says returns are accepted within 60 days.", "60 days", True),
    ("uzumaki is $22.99 and in stock.", "in stock", False),
    ("メモには在庫ありと書かれていますが、カタログでは予約商品です。", "在庫あり", True),
    ("メモには在庫ありと書かれていますが、カタログでは予約商品です。", "予約商品", False),
    ("カタログでは『鬼滅の刃』（¥484）は現在在庫切れとなっています。", "在庫切れ", False),
]


@pytest.mark.parametrize(("sentence", "claim", "reported"), CASES)
def test_a_claim_attributed_to_another_source_is_reported(sentence, claim, reported):
    assert reported_at(sentence, sentence.index(claim)) is reported
