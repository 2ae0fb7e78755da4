"""language.negation: negation of a clause and its scope, conditions and exceptions, questions, in
English and Japanese; and the number ranges of language.numbers."""

from __future__ import annotations

import pytest

from fmquality.language.alignment import unit_of
from fmquality.language.negation import (
    conditional_ending,
    conditions_in,
    is_conditional,
    is_negated,
    is_question,
    negated_after,
    negated_before,
    negated_tokens,
    not_yet_before,
    polarity_differs,
)
from fmquality.language.numbers import joins_dates, range_low
from fmquality.language.text import normalize, script_of


@pytest.mark.parametrize(("text", "negated"), [
    ("Opened items can't be returned.", True), ("It is no longer available.", True),
    ("It is not out of stock, not at all.", False),  # two negations
    ("開封済みの商品は返品できません。", True), ("返品できます。", False), ("Returns are accepted.", False),
])
def test_a_clause_is_negated_by_an_odd_number_of_negations(text, negated):
    assert is_negated(normalize(text)) is negated


def test_unless_introduces_an_exception_not_a_condition():
    assert not is_conditional("opened items cannot be returned unless damaged")
    assert is_conditional("if it arrived damaged, we refund it")
    assert is_conditional("破損していた場合は返品できます")


def test_negation_and_conditions_around_a_phrase():
    assert negated_before("it isn't ") and negated_before("no longer ") and not negated_before("it is ")
    assert negated_after("ではありません") and not negated_after("です")
    assert not_yet_before("it hasn't ") and not_yet_before("まだ") and not not_yet_before("it has ")
    assert conditional_ending("ら") and conditional_ending("次第") and not conditional_ending("。")


def test_store_conditions_are_read_canonically_and_unopened_is_not_opened():
    assert conditions_in("sealed copies and 未開封の商品") == {"unopened"}
    assert conditions_in("opened or damaged items") == {"opened", "damaged"}


def test_questions_in_both_languages():
    assert is_question("can i return it?") and is_question("返品できますか") and not is_question("you can return it.")


def test_a_negation_governs_the_next_content_word_and_polarity_is_compared_on_shared_words():
    assert "combine" in negated_tokens(normalize("Codes cannot be combined with other discounts."))
    assert "return" in negated_tokens(normalize("返品できません"))  # 返品 is the store concept "return"
    assert polarity_differs(unit_of("Opened items can be returned."), unit_of("Opened items cannot be returned."))
    assert not polarity_differs(unit_of("Opened items can be returned."), unit_of("Opened items are returned."))


@pytest.mark.parametrize(("text", "high", "low"), [("5-7 business days", "7", 5), ("five to seven days", "seven", 5),
                                                   ("5〜7営業日", "7", 5), ("7-5 days", "5", None),
                                                   ("within 7 days", "7", None)])
def test_the_low_end_of_a_range_is_read_before_its_high_end(text, high, low):
    norm = normalize(text)
    value = 7.0 if high in ("7", "seven") else 5.0
    assert range_low(norm, norm.rindex(high), value, reach=12) == low


def test_a_day_after_a_date_and_a_join_ends_a_range_of_dates():
    assert joins_dates("から") and joins_dates(" through ") and not joins_dates(" within ")


def test_the_script_of_a_text_is_japanese_when_most_letters_are():
    assert script_of("在庫があります (in stock)") == "latin"  # as many Latin letters as Japanese ones
    assert script_of("在庫があります。") == "japanese" and script_of("In stock.") == "latin"
