"""False alarms of two more sets written blind (R: four assistant voices with Japanese product cards;
S: marketplace cards with worked arithmetic), each fixed at its mechanism, beside the defect that
must still fail."""

from __future__ import annotations

from fmquality.claims.arithmetic import AmountsInPlay, written_arithmetic
from fmquality.claims.orders import stated_order_statuses
from fmquality.domain.case import TestCase
from fmquality.language.numbers import extract_prices
from fmquality.language.stock import availability_mentions
from fmquality.language.text import normalize
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy
from fmquality.schemes.mangaassist.relevance import check as relevance


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


def _case(intent: str, response: str, **fields) -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": intent, "query": fields.pop("query", "?"),
                                    "response": response, **fields})


def test_titles_under_a_lead_in_that_leaves_them_out_are_not_offered():
    catalog = [{"asin": "B1", "title": "Frieren Vol. 1", "price": 11.99, "series_status": "ongoing"},
               {"asin": "B2", "title": "Magi Vol. 1", "price": 9.99, "series_status": "complete"}]
    history = [{"role": "user", "content": "Only completed ones, please."}, {"role": "assistant", "content": "Sure!"}]
    left_out = "📗 **Magi Vol. 1** — $9.99 · In stock\n\nLeft out on purpose:\n- *Frieren Vol. 1* — still ongoing"
    case = _case("recommendation", left_out, catalog=catalog, conversation_history=history)
    assert "constraint_ignored" not in rules(relevance.check(case, None))
    offered = "📗 **Magi Vol. 1** — $9.99 · In stock\n\nAlso great:\n- **Frieren Vol. 1** — $11.99"
    assert "constraint_ignored" in rules(relevance.check(_case("recommendation", offered, catalog=catalog,
                                                               conversation_history=history), None))


def test_a_series_named_in_passing_does_not_offer_the_box_set_it_excludes():
    catalog = [{"asin": "B1", "title": "Haikyu Vol. 1", "price": 9.99},
               {"asin": "B9", "title": "Haikyu Box Set 1", "price": 89.99}]
    history = [{"role": "user", "content": "Budget is $30 for the books."}, {"role": "assistant", "content": "Got it."}]
    answer = ("📘 **Haikyu Vol. 1** — $9.99 · In stock\n\nHaikyu is rated all ages and complete at 45 volumes. "
              "The *Haikyu Box Set 1* ($89.99) is well over budget.")
    case = _case("recommendation", answer, catalog=catalog, conversation_history=history)
    assert "constraint_ignored" not in rules(relevance.check(case, None))


def test_a_japanese_exclusion_from_the_shoppers_conditions_is_not_an_offer():
    catalog = [{"asin": "B1", "title": "葬送のフリーレン 1巻", "title_ja": "葬送のフリーレン 1", "price": 594, "currency": "JPY",
                "series_status": "ongoing"}]
    history = [{"role": "user", "content": "完結している作品だけでお願いします。"}, {"role": "assistant", "content": "かしこまりました。"}]
    answer = "なお、『葬送のフリーレン』は連載中のため、今回のご条件からは外しております。"
    case = _case("recommendation", answer, catalog=catalog, conversation_history=history, locale="ja-JP")
    assert "constraint_ignored" not in rules(relevance.check(case, None))


def test_the_moment_of_pre_ordering_is_no_stock_status():
    said = [status for status, _ in availability_mentions("ご予約の時点では請求は発生いたしません。")]
    assert said == []
    assert [s for s, _ in availability_mentions("現在ご予約を承っております。")] == ["preorder"]


VOLUMES = [{"asin": "B15", "title": "Chainsaw Man Vol. 15", "price": 11.99, "availability": "preorder"},
           {"asin": "B14", "title": "Chainsaw Man Vol. 14", "price": 11.99, "availability": "in_stock"}]


def test_a_volume_named_by_its_number_is_that_volume_not_the_one_asked_about():
    answer = ("📕 **Chainsaw Man Vol. 15** — $11.99 · Pre-order\n\nIf you need something in the meantime, "
              "Vol. 14 is in stock at $11.99.")
    case = _case("product_question", answer, catalog=VOLUMES, query="Is Chainsaw Man vol 15 out yet?")
    assert "availability_contradiction" not in rules(factual_accuracy.check(case, None))
    wrong = "📕 **Chainsaw Man Vol. 15** — $11.99\n\nVol. 15 is in stock now."
    assert "availability_contradiction" in rules(factual_accuracy.check(
        _case("product_question", wrong, catalog=VOLUMES, query="Is Chainsaw Man vol 15 out yet?"), None))


def test_a_bullet_dash_opening_the_next_line_is_no_minus():
    norm = normalize("- 15% off = $6.59\n- $43.96 − $6.59 = $37.37")
    written = written_arithmetic(norm, extract_prices(norm))
    assert [round(w.expected, 2) for w in written] == [37.37]


def test_a_bracketed_note_before_the_result_keeps_the_written_sum():
    norm = normalize("- 2,160円 − 216円（10%）＝ 1,944円")
    assert [round(w.expected) for w in written_arithmetic(norm, extract_prices(norm))] == [1944]


def test_a_total_may_repeat_a_price_among_its_terms():
    pool = AmountsInPlay()
    pool.add_structure({"prices": [9.99, 11.99, 9.49]}, "USD")
    assert pool.explains_as_total(41.46, "USD")  # 9.99 + 9.99 + 11.99 + 9.49


def test_a_delivered_order_was_shipped_and_what_the_store_will_get_moving_is_no_state():
    order = {"order_id": "MA-1", "status": "delivered", "ship_date": "2024-10-02", "delivered_date": "2024-10-06"}
    history = _case("order_tracking", "Order MA-1: shipped Oct 2 via USPS, marked delivered on Oct 6.",
                    page_context={"order": order})
    assert "order_contradiction" not in rules(factual_accuracy.check(history, None))
    moving = _case("order_tracking", "Order MA-1 is on its way and arrives tomorrow.", page_context={"order": order})
    assert "order_contradiction" in rules(factual_accuracy.check(moving, None))
    assert stated_order_statuses("Here's how to get your replacement set on its way:") == set()


def test_a_products_price_said_each_is_not_a_fee_of_the_same_amount():
    chunks = ["Expedited shipping costs $12.99 per order."]
    catalog = [{"asin": f"B{n}", "title": f"Blue Period Vol. {n}", "price": 12.99} for n in (1, 2)]
    each = _case("promotion", "Your cart (Blue Period Vols. 1-2, $12.99 each) comes to $25.98.",
                 catalog=catalog, retrieved_chunks=chunks)
    assert "policy_contradiction" not in rules(factual_accuracy.check(each, None))


def test_the_others_said_before_a_title_do_not_take_its_price():
    catalog = [{"asin": "B1", "title": "One-Punch Man Vol. 1", "price": 9.99},
               {"asin": "B2", "title": "Dandadan Vol. 1", "price": 11.99}]
    answer = "📕 **One-Punch Man Vol. 1** — $9.99\n\nWhy not the others: *Dandadan* ($11.99) has a romance subplot."
    assert "price_contradiction" not in rules(factual_accuracy.check(_case("recommendation", answer, catalog=catalog), None))


def test_a_rating_out_of_five_is_no_date():
    from fmquality.language.numbers import find_dates
    assert find_dates("the series holds a 4.8/5 average from our customers") == []
    assert [(d.month, d.day) for d in find_dates("it ships 8/5")] == [(8, 5)]
