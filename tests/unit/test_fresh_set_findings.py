"""Findings a set written blind for issue 30 showed to be false alarms, each fixed at its mechanism,
beside the defective answer that must still fail."""

from __future__ import annotations

from fmquality.domain.case import TestCase
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy
from fmquality.schemes.mangaassist.relevance import check as relevance


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


def _case(intent: str, response: str, **fields) -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": intent, "query": fields.pop("query", "?"),
                                    "response": response, **fields})


SERIES = [
    {"asin": "B0QF00004", "title": "Magi: The Labyrinth of Magic Vol. 1", "price": 9.99, "series_status": "complete"},
    {"asin": "B0QF00002", "title": "Frieren: Beyond Journey's End Vol. 1", "price": 11.99, "series_status": "ongoing"},
]
FINISHED_ONLY = [{"role": "user", "content": "Completed series only, please."},
                 {"role": "assistant", "content": "Got it: completed series only."}]


def test_the_catalogs_series_status_settles_whether_a_pick_is_finished():
    # The next sentence calls another title ongoing; the catalog says this one is complete.
    answer = ("Magi: The Labyrinth of Magic is complete (37 volumes) and Vol. 1 is $9.99. "
              "I left out Frieren (still ongoing).")
    case = _case("recommendation", answer, query="Any fantasy?", catalog=SERIES, conversation_history=FINISHED_ONLY)
    assert "constraint_ignored" not in rules(relevance.check(case, None))


def test_a_running_series_offered_to_a_shopper_who_wants_finished_ones_still_fails():
    answer = "Try Frieren: Beyond Journey's End, Vol. 1 is $11.99."
    case = _case("recommendation", answer, query="Any fantasy?", catalog=SERIES, conversation_history=FINISHED_ONLY)
    assert "constraint_ignored" in rules(relevance.check(case, None))


EDITIONS = [
    {"asin": "B0QP00031", "title": "Kaiju No. 8 Vol. 10 (Digital)", "price": 6.99, "availability": "preorder"},
    {"asin": "B0QP00032", "title": "Kaiju No. 8 Vol. 10", "price": 9.99, "availability": "in_stock"},
]


def test_a_format_in_brackets_is_an_edition_the_answer_may_call_by_its_word():
    answer = ("The digital edition of Kaiju No. 8 Vol. 10 is a preorder at $6.99. "
              "The paperback Vol. 10 ($9.99) is in stock now.")
    found = rules(factual_accuracy.check(_case("product_question", answer, catalog=EDITIONS), None))
    assert "price_contradiction" not in found and "availability_contradiction" not in found


def test_the_digital_editions_price_given_to_it_wrong_still_contradicts():
    answer = "The digital edition of Kaiju No. 8 Vol. 10 is a preorder at $4.99."
    assert "price_contradiction" in rules(factual_accuracy.check(_case("product_question", answer, catalog=EDITIONS), None))


SHIPPING = ["Free standard shipping on orders of $35 or more after discounts; otherwise standard shipping is $5.99.",
            "SAVE15: 15% off all physical manga. One code per order."]
ASKED = "If I apply my 15% off code, do I still get free shipping?"
CART = [{"role": "user", "content": "I have $38 in my cart right now."},
        {"role": "assistant", "content": "Nice, that already qualifies for free standard shipping."}]
WORKED = ("Not quite. 15% off your $38.00 cart brings the subtotal to {sub}, and the $35 threshold is checked after discounts, "
          "so standard shipping would be $5.99 and your total {total}.")


def test_a_total_may_follow_from_an_amount_the_answer_worked_out_before_it():
    case = _case("faq", WORKED.format(sub="$32.30", total="$38.29"), retrieved_chunks=SHIPPING, query=ASKED, conversation_history=CART)
    assert "arithmetic_error" not in rules(factual_accuracy.check(case, None))


def test_a_total_built_on_a_subtotal_computed_wrong_still_fails():
    case = _case("faq", WORKED.format(sub="$31.30", total="$37.29"), retrieved_chunks=SHIPPING, query=ASKED, conversation_history=CART)
    assert "arithmetic_error" in rules(factual_accuracy.check(case, None))


def test_a_title_the_answer_says_it_skipped_is_not_offered():
    answer = "Magi: The Labyrinth of Magic Vol. 1 is $9.99. I skipped *Frieren: Beyond Journey's End* since it's still ongoing."
    case = _case("recommendation", answer, query="Any fantasy?", catalog=SERIES, conversation_history=FINISHED_ONLY)
    assert "constraint_ignored" not in rules(relevance.check(case, None))


def test_an_amount_over_a_budget_is_a_difference_not_a_price():
    catalog = [{"asin": f"B0BL00000{n}", "title": f"Blue Lock, Vol. {n}", "price": 10.98} for n in (1, 2, 3)]
    answer = ("Blue Lock, Vols. 1-3 come to $27.45 with the deal, and $32.44 with shipping. "
              "Or grab all three now and accept going ~$2.44 over.")
    chunks = ["Orders under $35: $4.99 standard shipping."]
    case = _case("promotion", answer, catalog=catalog, retrieved_chunks=chunks,
                 conversation_history=[{"role": "user", "content": "I've got $30 to spend."},
                                       {"role": "assistant", "content": "Nice! What are you looking at?"}])
    assert "price_contradiction" not in rules(factual_accuracy.check(case, None))


JJK = [{"asin": "B0P0530001", "title": "Jujutsu Kaisen, Vol. 25 (Digital)", "price": 6.99, "format": "digital"},
       {"asin": "B0P0530002", "title": "Jujutsu Kaisen, Vol. 25", "price": 9.99, "format": "paperback"}]


def test_it_after_the_sentence_that_names_the_other_edition_is_that_edition():
    answer = ("Select *Jujutsu Kaisen, Vol. 25 (Digital)* and request the refund. "
              "Want me to find the paperback of Vol. 25 for you? It's $9.99 and in stock.")
    assert "price_contradiction" not in rules(factual_accuracy.check(_case("return_request", answer, catalog=JJK), None))


def test_the_other_editions_price_given_to_the_named_edition_still_contradicts():
    answer = "Select *Jujutsu Kaisen, Vol. 25 (Digital)*: it's $9.99 and refundable within 7 days."
    assert "price_contradiction" in rules(factual_accuracy.check(_case("return_request", answer, catalog=JJK), None))


PREORDER = ["Pre-orders: payment is charged when the item ships. You can cancel a pre-order at no charge any time "
            "before it ships."]


def test_charged_when_the_pre_order_ships_is_the_shipping_not_the_placing():
    answer = "Since your card is only charged when the pre-order ships, canceling before then means you're never charged."
    assert "policy_contradiction" not in rules(factual_accuracy.check(_case("faq", answer, retrieved_chunks=PREORDER), None))


def test_charged_when_you_pre_order_still_contradicts_the_knowledge():
    answer = "Your card is charged when you pre-order, and you can cancel before it ships."
    assert "policy_contradiction" in rules(factual_accuracy.check(_case("faq", answer, retrieved_chunks=PREORDER), None))


RETURNS = ["Returns: Unopened physical items can be returned within 30 days of delivery. Items that have been opened or had "
           "the shrink-wrap removed can't be returned unless they arrived damaged, defective or were the wrong item."]


def _return(query: str, response: str, chunks=RETURNS) -> TestCase:
    return _case("return_request", response, query=query, retrieved_chunks=chunks)


def test_a_return_granted_to_a_shopper_who_opened_the_item_applies_the_policy_to_a_case_it_excludes():
    from fmquality.claims.exclusions import granted_despite
    granted = _return("I opened Oshi no Ko Vol. 1 and just didn't like it. It arrived 10 days ago.",
                      "Yes, you're within the 30-day window, so you can return it; since it isn't defective, a fee applies.")
    assert granted_despite(granted)  # "arrived" is how it came, not the exception; "isn't defective" denies it
    told = _return("I opened it and read a chapter. Can I return it?",
                   "Totally understandable! Your copy was delivered June 2, so you're all set to send it back.",
                   ["Opened items cannot be returned unless they arrived damaged or defective."])
    assert granted_despite(told)  # granted in so many words, not only in the opening


def test_an_answer_that_invokes_the_exception_is_not_read_as_misapplying_it():
    from fmquality.claims.exclusions import granted_despite
    case = _return("I opened my Berserk Deluxe Vol. 3 and the binding is coming apart. Can I return it?",
                   "Yes. Even though it's opened, a defective binding qualifies, and return shipping is free.")
    assert granted_despite(case) is None
    unopened = _return("I haven't opened it. Can I return it?", "Yes, you can return it within 30 days of delivery.")
    assert granted_despite(unopened) is None


VINLAND = [{"asin": "B0QM00011", "title": "Vinland Saga Deluxe Vol. 1", "price": 24.99, "publisher": "Kodansha Comics"},
           {"asin": "B0QM00012", "title": "Vinland Saga Deluxe Vol. 2", "price": 24.99, "publisher": "Kodansha Comics"}]
KODANSHA = ["Kodansha Week: 20% off all Kodansha Comics titles through March 9.",
            "Expedited delivery (2-3 business days) is $12.99 and is never free."]


def _vinland(after: str) -> TestCase:
    answer = (f"Yes, Kodansha Week takes 20% off through March 9. Vol. 1 and 2 are $24.99 each, so that's $49.98 "
              f"before the discount and {after} after.")
    return _case("promotion", answer, catalog=VINLAND, retrieved_chunks=KODANSHA,
                 query="What would Vinland Saga Deluxe Vol. 1 and 2 cost with the 20% off?")


def test_a_price_after_the_discount_follows_from_the_one_the_answer_gives_before_it():
    assert "arithmetic_error" not in rules(factual_accuracy.check(_vinland("$39.98"), None))
    # $37.98 is $24.99 + $12.99 too, but the answer said how it got there: 49.98 less 20%.
    assert "arithmetic_error" in rules(factual_accuracy.check(_vinland("$37.98"), None))


def test_a_percentage_glued_to_off_is_a_percentage():
    from fmquality.language.numbers import extract_quantities
    assert [(q.value, q.unit) for q in extract_quantities("対象商品が30%OFF")] == [(30.0, "percent")]
    sale = [{"asin": "B0P0600001", "title": "Dungeon Meshi World Guide", "title_ja": "ダンジョン飯 ワールドガイド",
             "price": 1320.0, "currency": "JPY"}]
    case = TestCase.model_validate({"test_id": "t", "intent": "promotion", "locale": "ja-JP", "query": "いくらになりますか。",
                                    "response": "『ダンジョン飯 ワールドガイド』は30%OFFの対象です。\n・通常価格：1,320円\n・セール価格：1,056円",
                                    "catalog": sale, "retrieved_chunks": ["夏のコミックフェア：対象商品が30%OFF。"]})
    assert "arithmetic_error" in rules(factual_accuracy.check(case, None))


MANGA25 = ["Code MANGA25: 25% off orders containing 2 or more manga volumes. One promo code per order.",
           "Orders under $35: $4.99 standard shipping."]
TWO_VOLUMES = [{"asin": "B0P0590001", "title": "Spy x Family, Vol. 13", "price": 12.99},
        {"asin": "B0P0590002", "title": "Kaiju No. 8, Vol. 12", "price": 10.99}]


def _breakdown(discount: str, after: str) -> TestCase:
    answer = ("Here's the breakdown:\n\n**Your cart**\n- Spy x Family, Vol. 13 — $12.99\n- Kaiju No. 8, Vol. 12 — $10.99\n"
              f"- **Subtotal:** $23.98\n\n**With MANGA25 (25% off):**\n- Discount: −{discount}\n- **New subtotal: {after}**")
    return _case("promotion", answer, catalog=TWO_VOLUMES, retrieved_chunks=MANGA25, query="I have code MANGA25, what's my total?")


def test_a_discount_line_under_its_subtotal_is_that_share_of_it():
    assert "arithmetic_error" not in rules(factual_accuracy.check(_breakdown("$6.00", "$17.98"), None))
    assert "arithmetic_error" in rules(factual_accuracy.check(_breakdown("$4.80", "$19.18"), None))
