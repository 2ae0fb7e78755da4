"""Money amounts read with their role: a check compares a product's price with the catalog, works out
the arithmetic of a sale or a written sum, and leaves an amount it cannot explain to the judge."""

from __future__ import annotations

import pytest

from fmquality.claims.reading import Reading
from fmquality.claims.commerce import check_amounts, price_claims
from fmquality.schemes.mangaassist.factual_accuracy import check as fa
from fmquality.domain.case import TestCase
from fmquality.claims.arithmetic import AmountsInPlay, written_arithmetic
from fmquality.claims.money import table_roles
from fmquality.language.numbers import extract_prices
from fmquality.language.text import normalize

CATALOG = [
    {"asin": "B0HORIMIYA1", "title": "Horimiya, Vol. 1", "price": 11.99, "currency": "USD", "availability": "in_stock"},
    {"asin": "B0SKIPLOAF1", "title": "Skip and Loafer, Vol. 1", "price": 12.99, "currency": "USD", "availability": "in_stock"},
    {"asin": "B0WITCHHAT1", "title": "Witch Hat Atelier, Vol. 1", "price": 12.99, "currency": "USD",
     "availability": "in_stock"},
    {"asin": "B0WITCHCOL1", "title": "Witch Hat Atelier Collector's Edition, Vol. 1", "price": 39.99,
     "currency": "USD", "availability": "limited"},
]
SHIPPING = ["Shipping: standard shipping is $4.99; free standard shipping on orders of $35 or more."]


def case(response: str, **fields) -> TestCase:
    data = {"test_id": "m-1", "intent": "recommendation", "query": "Any picks?", "response": response,
            "catalog": CATALOG, "retrieved_chunks": SHIPPING}
    data.update(fields)
    return TestCase.model_validate(data)


def roles(response: str, **fields) -> list[tuple[str, str]]:
    return [(c.price.text, c.role) for c in price_claims(Reading(case(response, **fields)))]


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


def test_roles_of_amounts_around_two_product_prices():
    text = ("- **Horimiya, Vol. 1** — $11.99\n- **Skip and Loafer, Vol. 1** — $12.99\n\nSubtotal: $24.98. Since that's "
            "under the $35 free-shipping threshold, standard shipping adds $4.99, bringing it to **$29.97**.")
    assert roles(text) == [("$11.99", "unit"), ("$12.99", "unit"), ("$24.98", "total"), ("$35", "threshold"),
                           ("$4.99", "fee"), ("$29.97", "total")]


@pytest.mark.parametrize(("text", "role"), [
    ("The regular vol 1 is $12.99 — that's $27.00 less than the Collector's Edition.", "difference"),
    ("Your $30 budget covers it.", "budget"),
    ("Use TAKE10 for $10 off.", "discount"),
    ("Your subtotal becomes $57.96, SPRING20 takes off $11.59.", "discount"),
    ("Adding both would bring you to $45.96.", "total"),
    ("商品合計が3,000円に360円届いていないため、ご利用いただけません。", "difference"),
    ("Free shipping kicks in once your subtotal (after discounts, before tax) reaches $50.00.", "threshold"),
    ("Below that, standard shipping is a flat $4.99 per order.", "fee"),
    ("Orders of $35 or more ship free.", "threshold"),
    ("通常6,600円のところ、5,940円です。", "list"),
])
def test_the_words_around_an_amount_say_what_it_is(text, role):
    first = roles(text)[-1] if role != "list" else roles(text)[0]
    assert first[1] == role


def test_a_sum_and_a_difference_are_explained_not_contradicted():
    text = ("The regular **Witch Hat Atelier, Vol. 1** is $12.99 — that's $27.00 less than the Collector's Edition. "
            "Both together come to $52.98.")
    report = fa.check(case(text, intent="product_question"), None)
    assert "price_contradiction" not in rules(report)
    assert report.sub_scores["price_accuracy"].score == 1.0


def test_a_sale_price_that_follows_from_its_discount_agrees_and_one_that_does_not_is_an_arithmetic_error():
    chunk = ["Summer Fest: 25% off Skip and Loafer, Vol. 1 through August 15."]
    right = fa.check(case("**Skip and Loafer, Vol. 1** is normally $12.99, but it's 25% off right now — **$9.74**.",
                          retrieved_chunks=chunk), None)
    wrong = fa.check(case("**Skip and Loafer, Vol. 1** is normally $12.99, but it's 25% off right now — **$8.99**.",
                          retrieved_chunks=chunk), None)
    assert not right.hard_failures and right.sub_scores["price_accuracy"].score == 1.0
    assert rules(wrong) == ["arithmetic_error"]
    assert "12.99 less 25%" in wrong.hard_failures[0].detail


def test_a_discount_applied_to_the_shoppers_own_total():
    chunk = ["MANGA20: 20% off orders of $50 or more."]
    query = "I have a 20% off code for my $64.95 cart — what will my total be?"
    right = fa.check(case("With MANGA20, your $64.95 cart comes to **$51.96** before tax.", query=query,
                          retrieved_chunks=chunk, catalog=[]), None)
    wrong = fa.check(case("With MANGA20, your $64.95 cart comes to **$49.96** before tax.", query=query,
                          retrieved_chunks=chunk, catalog=[]), None)
    assert "arithmetic_error" not in rules(right)
    assert rules(wrong) == ["arithmetic_error"]


def test_a_percentage_and_the_amount_it_takes_off_are_one_discount():
    chunk = ["SPRING20: 20% off orders of $50 or more."]
    def check(response: str):
        return rules(fa.check(case(response, intent="promotion", retrieved_chunks=chunk, catalog=[]), None))
    assert check("Your subtotal is $60.96, so 20% off takes $12.19 off and you'll pay $48.77.") == []
    assert check("Your subtotal is $60.96, so 20% off takes $12.19 off and you'll pay $47.77.") == ["arithmetic_error"]
    # an amount off that is not the percentage of the base is a second discount: not read completely
    assert "arithmetic_error" not in check("Your subtotal is $60.96, so 20% off plus $5 off leaves you paying $43.77.")


def test_two_bases_or_two_discounts_are_not_arithmetic_read_completely():
    chunk = ["Sale: 20% off. Members get an extra 10% off."]
    report = fa.check(case("**Skip and Loafer, Vol. 1** ($12.99) is on sale: **$9.00** with the member discount.",
                           retrieved_chunks=chunk), None)
    assert "arithmetic_error" not in rules(report)


def test_written_arithmetic_is_checked_as_arithmetic():
    norm = normalize("合計は1,298円（528円＋770円）です。$45 minus 15% is $38.25. $11.99 + $12.99 = $25.98.")
    written = written_arithmetic(norm, extract_prices(norm))
    assert [(w.result.text, w.correct) for w in written] == [("1,298円", True), ("$38.25", True), ("$25.98", False)]


def test_the_terms_of_a_written_sum_are_not_prices_of_the_product_in_the_sentence():
    history = [{"role": "assistant", "content": "1. Horimiya, Vol. 1 ($11.99)\n2. Skip and Loafer, Vol. 1 ($12.99)"}]
    report = fa.check(case("Without Skip and Loafer, Vol. 1 your cart is $11.99 ($11.99 + $0.00).",
                           conversation_history=history), None)
    assert "price_contradiction" not in rules(report)


def test_an_unexplained_total_is_a_hint_for_the_judge_never_a_contradiction():
    report = fa.check(case("- **Horimiya, Vol. 1** — $11.99\n- **Skip and Loafer, Vol. 1** — $12.99\n\nTotal: $31.50."),
                      None)
    assert not report.hard_failures
    assert any("$31.50 (total)" in f and "to verify" in f for f in report.findings)


def test_a_wrong_unit_price_is_still_a_price_contradiction():
    report = fa.check(case("**Horimiya, Vol. 1** is $14.99 and in stock."), None)
    assert rules(report) == ["price_contradiction"]


def test_two_copies_of_one_volume_are_a_total_the_words_did_not_mark():
    report = fa.check(case("**Horimiya, Vol. 1** for you and your sister: $23.98.", intent="product_question"), None)
    assert "price_contradiction" not in rules(report)


def test_table_columns_and_strikethrough_give_amounts_their_roles():
    text = ("| Title | List price | Sale price | You save |\n|---|---|---|---|\n"
            "| Horimiya, Vol. 1 | ~~$11.99~~ | **$9.59** | $2.40 |\n\n| | |\n|---|---|\n| **Refund** | **$7.00** |")
    norm = normalize(text)
    found = {norm[pos:pos + 6]: role for pos, role in table_roles(norm).items()}
    assert found == {"$11.99": "list", "$9.59*": "sale", "$2.40 ": "difference", "$7.00*": "total"}


def test_one_step_of_arithmetic_explains_and_circles_do_not():
    pool = AmountsInPlay()
    pool.add_text("Horimiya $11.99, Skip and Loafer $12.99, shipping $4.99, 20% off")
    assert pool.explains(24.98, "USD") == "11.99 + 12.99"
    assert pool.explains(9.59, "USD") == "11.99 x 0.8"
    assert pool.explains(31.50, "USD") is None
    circular = case("Subtotal: $25.98. With shipping: $30.97.")
    reading = Reading(circular)
    report = check_amounts(circular, reading, price_claims(reading))
    # Neither derived amount is grounded in the catalog: they do not explain each other.
    assert len(report.unexplained) == 2
