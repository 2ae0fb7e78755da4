"""False alarms found on answers written blind to this code, each fixed at its mechanism, with the
defective answer next to it that must still fail."""

from __future__ import annotations

from fmquality.claims.reading import Reading
from fmquality.domain.case import TestCase
from fmquality.language.catalog_index import products_in_play
from fmquality.language.numbers import extract_prices
from fmquality.schemes.mangaassist.consistency import check as consistency
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy
from fmquality.schemes.mangaassist.relevance import check as relevance


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


# --- amounts the answer derives beside the policy's own number --------------------------------------

COUPON = ["Coupon SAVE8: $8 off orders of $50 or more. Tier discounts (Silver 5%, Gold 10%) can't be combined with coupon codes."]


def _promotion(response: str, chunks=COUPON, query="I'm Gold and have SAVE8. Both on my $60 order?") -> TestCase:
    return TestCase.model_validate({"test_id": "d-1", "intent": "promotion", "query": query, "response": response,
                                    "retrieved_chunks": chunks})


def test_a_percentage_the_answer_works_out_beside_the_policys_own_number_is_arithmetic():
    worked = _promotion("They don't stack. Gold 10% on $60 is $6.00 off; SAVE8 is $8.00 off, so SAVE8 wins: you pay $52.00.")
    assert "policy_contradiction" not in rules(factual_accuracy.check(worked, None))


def test_a_derived_amount_given_as_the_policys_own_number_still_contradicts_it():
    # $30 is $35 - $5, but the answer never gives the $35: it states $30 as the threshold.
    chunks = ["Free standard shipping on orders of $35 or more, calculated after discounts."]
    wrong = _promotion("Free shipping kicks in at $30, so your order qualifies even after the $5 coupon.", chunks,
                       query="My cart is $38 and I used a $5 coupon. Why shipping?")
    assert "policy_contradiction" in rules(factual_accuracy.check(wrong, None))


def test_what_is_left_to_a_threshold_is_not_the_threshold():
    chunks = ["クーポン「MANGA500」：税込3,000円以上のご注文で500円引き。"]
    case = TestCase.model_validate({
        "test_id": "d-2", "intent": "promotion", "locale": "ja-JP", "query": "MANGA500は使えますか？",
        "response": "カートの合計は2,860円のため、適用条件（税込3,000円以上）にあと140円届いておりません。140円以上の商品を追加していただければ500円引きになります。",
        "retrieved_chunks": chunks, "page_context": {"cart": {"subtotal": 2860, "currency": "JPY"}}})
    assert "policy_contradiction" not in rules(factual_accuracy.check(case, None))


# --- a comparison table, and an edition called by its own words -------------------------------------

EDITIONS = [
    {"asin": "B0IRONP007", "title": "Iron Petal, Vol. 7", "price": 10.99, "currency": "USD", "availability": "in_stock"},
    {"asin": "B0IRONPD07", "title": "Iron Petal, Vol. 7 Deluxe Hardcover", "price": 24.99, "currency": "USD",
     "availability": "preorder"},
]
TABLE = ("| | Regular | Deluxe Hardcover |\n|---|---|---|\n| Price | $10.99 | $24.99 |\n"
         "| Availability | In stock | Pre-order |\n\nThe deluxe is $14.00 more.")


def _editions(response: str, query="What's the difference between the regular and deluxe Vol. 7?") -> TestCase:
    return TestCase.model_validate({"test_id": "e-1", "intent": "product_question", "query": query,
                                    "response": response, "catalog": EDITIONS,
                                    "conversation_history": [{"role": "user", "content": "Is Iron Petal Vol. 7 out?"}]})


def test_an_edition_called_by_its_own_words_is_in_play():
    assert products_in_play(_editions(TABLE)) == ["B0IRONP007", "B0IRONPD07"]
    unrelated = _editions("It's out.", query="Is it out?")
    assert "B0IRONPD07" not in products_in_play(unrelated)


def test_a_table_cell_belongs_to_its_column_headers_edition():
    reading = Reading(_editions(TABLE))
    attached = {p.text: [i.asin for i in reading.attach(p.start)] for p in extract_prices(reading.text)}
    assert attached["$10.99"] == ["B0IRONP007"] and attached["$24.99"] == ["B0IRONPD07"]
    report = factual_accuracy.check(_editions(TABLE), None)
    assert not {"price_contradiction", "availability_contradiction"} & set(rules(report))


def test_a_wrong_price_in_a_table_column_still_contradicts_its_edition():
    wrong = TABLE.replace("$24.99", "$19.99")
    assert "price_contradiction" in rules(factual_accuracy.check(_editions(wrong), None))


def test_a_cell_whose_header_names_no_single_listing_is_attached_to_none():
    reading = Reading(_editions("| | Option A | Option B |\n|---|---|---|\n| Price | $10.99 | $99.99 |"))
    assert all(reading.attach(p.start) == [] for p in extract_prices(reading.text))


# --- the shopper asks what they are talking to --------------------------------------------------------


def test_saying_it_is_an_ai_assistant_when_asked_is_honest_not_a_persona_break(rubric):
    def persona(query: str, response: str):
        case = TestCase.model_validate({"test_id": "p-1", "intent": "chitchat", "query": query, "response": response})
        return rules(consistency.check(case, rubric))
    assert persona("あなたは人間のスタッフさんですか？", "いいえ、私は当ストアのAIショッピングアシスタントです。") == []
    assert persona("are you a real person?", "Nope, I'm an AI shopping assistant for the store.") == []
    # a language model, a vendor or a prompt stays a break, asked or not
    assert "persona_break" in persona("are you a bot?", "Honestly, I'm a general-purpose large language model.")
    assert "persona_break" in persona("are you a bot?", "Yes, I'm built on OpenAI's GPT-4.")
    # unasked, it is a break as before
    assert "persona_break" in persona("Any horror picks?", "I'm an AI, so I don't get scared, but try Uzumaki.")


# --- "the first one" taken up first, then an alternative ------------------------------------------------

BOX_SETS = [
    {"asin": "B0MOONFORG", "title": "Moonlit Forge Box Set", "price": 74.50, "currency": "USD", "availability": "out_of_stock"},
    {"asin": "B0PAPERLAN", "title": "Paper Lantern Cafe Complete Box Set", "price": 69.99, "currency": "USD",
     "availability": "in_stock"},
]
LISTED = [{"role": "user", "content": "A box set gift under $80?"},
          {"role": "assistant", "content": "1. **Moonlit Forge Box Set** — $74.50\n2. **Paper Lantern Cafe Complete Box Set** — $69.99"}]


def _ordinal(response: str) -> TestCase:
    return TestCase.model_validate({"test_id": "o-1", "intent": "recommendation", "query": "The first one looks great, can I order it?",
                                    "response": response, "catalog": BOX_SETS, "conversation_history": LISTED})


def test_an_answer_that_takes_up_the_meant_item_first_and_then_offers_another_resolved_it(rubric):
    case = _ordinal("The **Moonlit Forge Box Set** is out of stock right now. If you need it soon, the "
                    "**Paper Lantern Cafe Complete Box Set** ($69.99) is in stock, a lovely set with a long, cozy run.")
    assert "wrong_reference" not in rules(consistency.check(case, rubric))
    assert relevance.check(case, rubric).sub_scores["context_relevance"].score == 1.0


def test_another_item_named_before_the_meant_one_is_the_judges_and_the_wrong_one_alone_fails(rubric):
    compared = _ordinal("The **Paper Lantern Cafe Complete Box Set** is cheaper, but the **Moonlit Forge Box Set** is out of stock.")
    assert "wrong_reference" not in rules(consistency.check(compared, rubric))
    assert "context_relevance" in relevance.check(compared, rubric).needs_judge
    wrong = _ordinal("Sure! The **Paper Lantern Cafe Complete Box Set** is $69.99 and in stock.")
    assert "wrong_reference" in rules(consistency.check(wrong, rubric))
