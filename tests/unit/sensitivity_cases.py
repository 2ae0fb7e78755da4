"""Small hand-written cases for the sensitivity suite's tests: English and Japanese answers that state
catalog, order and policy facts, a list and an ordinal, a spoiler note. Invented for these tests."""

from __future__ import annotations

from fmquality.domain.case import TestCase

SPY = {"asin": "T-SPY1", "title": "Spy x Family, Vol. 1", "author": "Tatsuya Endo", "price": 9.99,
       "currency": "USD", "availability": "in_stock", "volume": 1}
FRIEREN = {"asin": "T-FRI1", "title": "Frieren: Beyond Journey's End, Vol. 1", "author": "Kanehito Yamada",
           "price": 11.99, "currency": "USD", "availability": "in_stock", "volume": 1, "series_volumes": 13}
CHAINSAW = {"asin": "T-CSM17", "title": "Chainsaw Man, Vol. 17", "author": "Tatsuki Fujimoto", "price": 9.99,
            "currency": "USD", "availability": "preorder", "volume": 17, "release_date": "2024-07-16"}
YURU = {"asin": "T-YRC16", "title": "Laid-Back Camp, Vol. 16", "title_ja": "ゆるキャン△ 16", "author": "あfろ",
        "price": 814, "currency": "JPY", "availability": "preorder", "volume": 16, "release_date": "2024-11-27"}
JJK = {"asin": "T-JJK29", "title": "Jujutsu Kaisen, Vol. 29", "title_ja": "呪術廻戦 29", "author": "芥見下々",
       "price": 528, "currency": "JPY", "availability": "in_stock", "volume": 29}
JJK_SP = {"asin": "T-JJK29S", "title": "Jujutsu Kaisen, Vol. 29 Special Edition", "title_ja": "呪術廻戦 29 特装版",
          "author": "芥見下々", "price": 1650, "currency": "JPY", "availability": "preorder", "volume": 29}


def case(**fields) -> TestCase:
    base = {"intent": "product_question", "locale": "en-US", "query": "?", "label": {"acceptable": True}}
    return TestCase.model_validate({**base, **fields})


EN_PRODUCT = case(
    test_id="en-product", query="Is Frieren in stock, and who writes it?",
    response="Yes! **Frieren: Beyond Journey's End, Vol. 1** by Kanehito Yamada is $11.99 and in stock. "
             "The series runs to 13 volumes so far.\n\nIt is a quiet fantasy about life after the adventure ends.",
    catalog=[FRIEREN])

EN_TOTAL = case(
    test_id="en-total", intent="recommendation", query="Two starter volumes under $25?",
    response="Here are two picks:\n- **Spy x Family, Vol. 1** — $9.99\n- **Frieren: Beyond Journey's End, Vol. 1** "
             "— $11.99\n\nTogether that's $21.98, under your budget. Both are in stock.",
    catalog=[SPY, FRIEREN])

EN_SALE = case(
    test_id="en-sale", intent="promotion", query="Is Frieren on sale?",
    response="Yes, it's 20% off this week: **Frieren: Beyond Journey's End, Vol. 1** is $9.59 instead of $11.99.",
    retrieved_chunks=["Spring sale: 20% off Frieren: Beyond Journey's End, Vol. 1 through May 31."],
    catalog=[FRIEREN])

EN_ORDER = case(
    test_id="en-order", intent="order_tracking", query="Where is my order?",
    response="Order **MA-100** shipped on June 12 via UPS and is expected to arrive on **June 15**. "
             "It is in transit now.",
    page_context={"order": {"order_id": "MA-100", "status": "in_transit", "ship_date": "2024-06-12",
                            "eta": "2024-06-15", "carrier": "UPS"}})

EN_POLICY = case(
    test_id="en-policy", intent="faq", query="How long do I have to return a book?",
    response="You can return unopened items within 30 days of delivery, and the refund arrives in 5 business days.",
    retrieved_chunks=["Returns: unopened items within 30 days of delivery. Refunds are issued in 5 business days."])

EN_PREORDER = case(
    test_id="en-preorder", intent="order_tracking", query="When will the second one ship?",
    conversation_history=[
        {"role": "user", "content": "I have two orders, can you check both?"},
        {"role": "assistant", "content": "Here's what I see:\n1. **Spy x Family, Vol. 1** — $9.99, shipped.\n"
                                         "2. **Chainsaw Man, Vol. 17** — pre-order, waiting for release."}],
    response="Your **Chainsaw Man, Vol. 17** pre-order ships on its release date, **July 16, 2024**.",
    catalog=[SPY, CHAINSAW])

EN_SPOILER = case(
    test_id="en-spoiler", query="Does anyone important die in Fullmetal Alchemist? Don't tell me who.",
    response="Yes, several significant characters die, so some moments hit hard. No names, as promised.",
    retrieved_chunks=["Content notes: war violence, deaths of significant characters.",
                      "Staff notes [SPOILER]: Maes Hughes dies in Vol. 4."],
    forbidden_content=["Hughes"])

EN_CHITCHAT = case(test_id="en-chat", intent="chitchat", query="hi!", response="Hi there! How can I help you today?")

JA_PREORDER = case(
    test_id="ja-preorder", locale="ja-JP", query="『ゆるキャン△』16巻は予約できますか？",
    response="はい、『ゆるキャン△』16巻は現在ご予約を承っております（814円）。発売予定日は2024年11月27日です。",
    retrieved_chunks=["『ゆるキャン△』16巻：2024年11月27日発売予定。予約受付中。"], catalog=[YURU])

JA_ORDINAL = case(
    test_id="ja-ordinal", locale="ja-JP", query="2番目のはいつ届きますか？",
    conversation_history=[
        {"role": "user", "content": "『呪術廻戦』の最新巻はどの種類がありますか？"},
        {"role": "assistant", "content": "次の2種類をご用意しております。\n1. 通常版（528円）― 在庫あり\n"
                                         "2. 特装版（1,650円）― 予約受付中"}],
    response="特装版は予約商品です。発売日当日に出荷いたします。",
    catalog=[JJK, JJK_SP])

JA_ORDER = case(
    test_id="ja-order", intent="order_tracking", locale="ja-JP", query="注文はいつ届きますか？",
    response="ご注文の商品は8月15日に発送済みで、現在ヤマト運輸にて配送中です。お届け予定日は8月17日です。",
    page_context={"order": {"order_id": "JP-1", "status": "in_transit", "ship_date": "2024-08-15",
                            "eta": "2024-08-17", "carrier": "ヤマト運輸"}})

JA_FAQ = case(
    test_id="ja-faq", intent="faq", locale="ja-JP", query="会員登録しなくても購入できますか？",
    response="はい、会員登録をされなくても、ゲストとしてご購入いただけます。ただし、ポイントのご利用は会員様限定となります。",
    retrieved_chunks=["会員登録なしでもゲストとしてご購入いただけます。ポイントのご利用は会員様のみです。"])

ALL = [EN_PRODUCT, EN_TOTAL, EN_SALE, EN_ORDER, EN_POLICY, EN_PREORDER, EN_SPOILER, EN_CHITCHAT, JA_PREORDER,
       JA_ORDINAL, JA_FAQ, JA_ORDER]

# Two authors of the same name length, both named: an operator that iterates a set of them picks by the
# string hash seed unless it sorts them fully.
NEGIMA = {"asin": "T-NEG1", "title": "Negima! Omnibus 1", "author": "Ken Akamatsu", "price": 19.99,
          "currency": "USD", "availability": "in_stock"}
TIES = case(test_id="en-ties", intent="recommendation", query="Two comedies?",
            response="Try **Negima! Omnibus 1** by Ken Akamatsu ($19.99) and **Spy x Family, Vol. 1** by Tatsuya Endo "
                     "($9.99). Both are in stock.", catalog=[NEGIMA, SPY])
