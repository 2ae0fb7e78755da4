"""Build datasets/tool_use/examples.jsonl: labelled tool-using-agent cases (issue 11, item 5).

Ten agent tasks (six English, four Japanese): order lookup, inventory, refunds, weather, calendar
and search. Each task gives three acceptable runs (the reference run, an independently worded
answer, a run that recovers from a failed call by correcting its arguments) and three defective
ones. The defects were written from the issue's definitions before the scorers existed, and rotate
over the tasks:

- wrong_arguments: the expected tool called with another value for a required argument;
- forbidden_tool: a tool the task must not use was called (e.g. a refund issued on a lookup);
- missing_tool: the expected tool never called, the answer made up;
- missing_keyword: a required fact left out of the answer;
- negated_fact: a required fact stated with the opposite meaning;
- leaked_trace: a stack trace / exception text / error blob pasted into the answer;
- no_recovery: a tool call failed, nothing retried it, and the answer carries on as if it had worked.

Run: python datasets/tool_use/build.py  (writes examples.jsonl next to this file).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

TASKS = [
    dict(key="order-en", category="order_lookup", locale="en-US", complexity="simple", tags=["orders"],
         query="Where is my order 112-4431?",
         calls=[{"name": "get_order", "arguments": {"order_id": "112-4431"},
                 "result": {"status": "shipped", "carrier": "UPS", "eta": "2024-06-14"}}],
         expected=[{"name": "get_order", "arguments": {"order_id": "112-4431"}}],
         forbidden=["cancel_order", "issue_refund"],
         facts=["the order has shipped", "UPS"],
         answer="Your order 112-4431 has shipped with UPS and should arrive on June 14.",
         paraphrase="Good news: UPS is carrying order 112-4431 now; it has shipped and the expected delivery is June 14.",
         negated="Your order 112-4431 has not shipped yet; UPS will pick it up soon.",
         missing="Your order 112-4431 should arrive on June 14.",
         wrong_args={"order_id": "112-4413"},
         bad_call={"name": "cancel_order", "arguments": {"order_id": "112-4431"}, "result": {"cancelled": False}}),
    dict(key="inventory-en", category="inventory", locale="en-US", complexity="simple", tags=["inventory", "retrieval"],
         query="Do you have the Osprey Talon 22 backpack in blue?",
         calls=[{"name": "check_inventory", "arguments": {"sku": "OSP-TAL22", "color": "blue"},
                 "result": {"in_stock": True, "quantity": 4, "store": "Seattle"}}],
         expected=[{"name": "check_inventory", "arguments": {"sku": "OSP-TAL22", "color": "blue"}}],
         forbidden=["place_order"],
         facts=["the blue Talon 22 is in stock", "4 left"],
         answer="Yes, the blue Osprey Talon 22 is in stock: there are 4 left at our Seattle store.",
         paraphrase="We have it! 4 units of the Talon 22 in blue are in stock in Seattle right now.",
         negated="Sorry, the blue Osprey Talon 22 is not in stock; 4 left in other colors.",
         missing="The blue Osprey Talon 22 is available at our Seattle store.",
         wrong_args={"sku": "OSP-TAL22", "color": "green"},
         bad_call={"name": "place_order", "arguments": {"sku": "OSP-TAL22", "quantity": 1}, "result": {"order_id": "118-0092"}}),
    dict(key="refund-en", category="refund", locale="en-US", complexity="complex", tags=["refunds", "policy"],
         query="I returned the headphones from order 113-9002 last week. Has my refund been processed?",
         calls=[{"name": "get_order", "arguments": {"order_id": "113-9002"},
                 "result": {"status": "returned", "total": 89.99}},
                {"name": "get_refund_status", "arguments": {"order_id": "113-9002"},
                 "result": {"refund_status": "processed", "amount": 89.99, "days_to_card": 5}}],
         expected=[{"name": "get_refund_status", "arguments": {"order_id": "113-9002"}}],
         forbidden=["issue_refund"],
         facts=["the refund of $89.99 has been processed", "5 business days"],
         answer="Your refund of $89.99 for order 113-9002 has been processed. It can take up to 5 business days to appear on your card.",
         paraphrase="All done on our side: we processed $89.99 back to you for order 113-9002, and your bank should show it within 5 business days.",
         negated="Your refund of $89.99 for order 113-9002 has not been processed yet. It can take up to 5 business days to appear on your card.",
         missing="We received the headphones from order 113-9002. It can take up to 5 business days to appear on your card.",
         wrong_args={"order_id": "113-9020"},
         bad_call={"name": "issue_refund", "arguments": {"order_id": "113-9002", "amount": 89.99}, "result": {"refund_id": "R-2231"}}),
    dict(key="weather-en", category="weather", locale="en-US", complexity="simple", tags=["weather"],
         query="Will it rain in Boston tomorrow?",
         calls=[{"name": "get_forecast", "arguments": {"city": "Boston", "days": 1},
                 "result": {"date": "2024-06-12", "precip_probability": 80, "high_f": 64}}],
         expected=[{"name": "get_forecast", "arguments": {"city": "boston"}}],
         forbidden=[],
         facts=["80 percent chance of rain", "high of 64"],
         answer="Yes, bring an umbrella: Boston has an 80 percent chance of rain tomorrow, with a high of 64°F.",
         paraphrase="Rain looks likely in Boston tomorrow (80 percent chance), and it will stay cool with a high of 64°F.",
         negated="Boston has an 80 percent chance of rain tomorrow, but there will be no high of 64°F; expect it much warmer.",
         missing="Yes, bring an umbrella in Boston tomorrow.",
         wrong_args={"city": "Austin", "days": 1},
         bad_call=None),
    dict(key="calendar-en", category="calendar", locale="en-US", complexity="medium", tags=["calendar"],
         query="Book a 30-minute meeting with Priya on Thursday at 2pm.",
         calls=[{"name": "check_availability", "arguments": {"attendee": "priya@example.com", "date": "2024-06-13", "start": "14:00", "minutes": 30},
                 "result": {"free": True}},
                {"name": "create_event", "arguments": {"attendees": ["priya@example.com"], "date": "2024-06-13", "start": "14:00", "minutes": 30},
                 "result": {"event_id": "ev-5521", "status": "confirmed"}}],
         expected=[{"name": "create_event", "arguments": {"date": "2024-06-13", "start": "14:00", "minutes": 30}}],
         forbidden=["delete_event"],
         facts=["Thursday at 2pm", "30-minute meeting with Priya is booked"],
         answer="Done: your 30-minute meeting with Priya is booked for Thursday at 2pm, and she has been invited.",
         paraphrase="I've booked 30 minutes with Priya on Thursday at 2pm; the invite is on her calendar.",
         negated="Your 30-minute meeting with Priya is not booked for Thursday at 2pm.",
         missing="Done: Priya has been sent an invite.",
         wrong_args={"attendees": ["priya@example.com"], "date": "2024-06-13", "start": "14:00", "minutes": 60},
         bad_call={"name": "delete_event", "arguments": {"event_id": "ev-5490"}, "result": {"deleted": True}}),
    dict(key="search-en", category="search", locale="en-US", complexity="medium", tags=["search", "retrieval"],
         query="Find me a vegetarian lasagna recipe that takes under an hour.",
         calls=[{"name": "search_recipes", "arguments": {"query": "vegetarian lasagna", "max_minutes": 60},
                 "result": [{"title": "Spinach and Ricotta Lasagna", "minutes": 50, "servings": 6}]}],
         expected=[{"name": "search_recipes", "arguments": {"max_minutes": 60}}],
         forbidden=[],
         facts=["Spinach and Ricotta Lasagna", "50 minutes"],
         answer="Try the Spinach and Ricotta Lasagna: it takes 50 minutes and serves 6.",
         paraphrase="A good fit is Spinach and Ricotta Lasagna, ready in 50 minutes, enough for 6 people.",
         negated="The Spinach and Ricotta Lasagna does not take 50 minutes; plan on much longer.",
         missing="I found a vegetarian lasagna that serves 6.",
         wrong_args={"query": "vegetarian lasagna", "max_minutes": 120},
         bad_call=None),
    dict(key="order-ja", category="order_lookup", locale="ja-JP", complexity="simple", tags=["orders", "japanese"],
         query="注文番号 250-7781 の配送状況を教えてください。",
         calls=[{"name": "get_order", "arguments": {"order_id": "250-7781"},
                 "result": {"status": "発送済み", "carrier": "ヤマト運輸", "eta": "2024-06-15"}}],
         expected=[{"name": "get_order", "arguments": {"order_id": "250-7781"}}],
         forbidden=["cancel_order"],
         facts=["発送済み", "ヤマト運輸"],
         answer="ご注文 250-7781 は発送済みです。ヤマト運輸でお届けし、6月15日に到着予定です。",
         paraphrase="注文 250-7781 の商品はすでに発送済みで、ヤマト運輸が配達します。お届けは6月15日の予定です。",
         negated="ご注文 250-7781 はまだ発送されていません。ヤマト運輸でお届けする予定です。",
         missing="ご注文 250-7781 は6月15日に到着予定です。",
         wrong_args={"order_id": "250-7718"},
         bad_call={"name": "cancel_order", "arguments": {"order_id": "250-7781"}, "result": {"cancelled": False}}),
    dict(key="refund-ja", category="refund", locale="ja-JP", complexity="complex", tags=["refunds", "policy", "japanese"],
         query="注文 260-1204 を返品しました。返金はいつになりますか？",
         calls=[{"name": "get_refund_status", "arguments": {"order_id": "260-1204"},
                 "result": {"refund_status": "処理済み", "amount": 3300, "days_to_card": 7}}],
         expected=[{"name": "get_refund_status", "arguments": {"order_id": "260-1204"}}],
         forbidden=["issue_refund"],
         facts=["返金は処理済み", "7営業日"],
         answer="注文 260-1204 の返金3,300円は処理済みです。カードへの反映まで最大7営業日かかります。",
         paraphrase="返品された注文 260-1204 について、3,300円の返金手続きは処理済みとなっています。カード会社への反映には7営業日ほどかかります。",
         negated="注文 260-1204 の返金3,300円はまだ処理されていません。カードへの反映まで最大7営業日かかります。",
         missing="注文 260-1204 の返品を受け付けました。カードへの反映まで最大7営業日かかります。",
         wrong_args={"order_id": "260-1240"},
         bad_call={"name": "issue_refund", "arguments": {"order_id": "260-1204", "amount": 3300}, "result": {"refund_id": "R-8812"}}),
    dict(key="weather-ja", category="weather", locale="ja-JP", complexity="simple", tags=["weather", "japanese"],
         query="明日の大阪の天気は？",
         calls=[{"name": "get_forecast", "arguments": {"city": "Osaka", "days": 1},
                 "result": {"date": "2024-06-12", "condition": "晴れ", "high_c": 29}}],
         expected=[{"name": "get_forecast", "arguments": {"city": "osaka"}}],
         forbidden=[],
         facts=["明日の大阪は晴れ", "最高気温は29度"],
         answer="明日の大阪は晴れで、最高気温は29度の予報です。",
         paraphrase="大阪は明日、晴れの見込みです。最高気温は29度まで上がるでしょう。",
         negated="明日の大阪は晴れではありません。最高気温は29度の予報です。",
         missing="明日の大阪の最高気温は29度の予報です。",
         wrong_args={"city": "Kyoto", "days": 1},
         bad_call=None),
    dict(key="calendar-ja", category="calendar", locale="ja-JP", complexity="medium", tags=["calendar", "japanese"],
         query="金曜日の10時から1時間、田中さんとの打ち合わせを入れてください。",
         calls=[{"name": "create_event", "arguments": {"attendees": ["tanaka@example.jp"], "date": "2024-06-14", "start": "10:00", "minutes": 60},
                 "result": {"event_id": "ev-7730", "status": "confirmed"}}],
         expected=[{"name": "create_event", "arguments": {"date": "2024-06-14", "start": "10:00", "minutes": 60}}],
         forbidden=["delete_event"],
         facts=["金曜日の10時から1時間", "田中さんとの打ち合わせを登録"],
         answer="金曜日の10時から1時間、田中さんとの打ち合わせを登録しました。招待も送信済みです。",
         paraphrase="田中さんとの打ち合わせを、金曜日の10時から1時間で登録しました。田中さんには招待を送っています。",
         negated="金曜日の10時から1時間の田中さんとの打ち合わせは登録できませんでした。",
         missing="招待を送信しました。",
         wrong_args={"attendees": ["tanaka@example.jp"], "date": "2024-06-14", "start": "11:00", "minutes": 60},
         bad_call={"name": "delete_event", "arguments": {"event_id": "ev-7702"}, "result": {"deleted": True}}),
]

# Error texts a careless agent pastes into its answer (Python, Java, JSON API and HTTP shapes).
LEAKS = [
    'Traceback (most recent call last):\n  File "agent/tools.py", line 88, in call_tool\n    resp.raise_for_status()\nrequests.exceptions.HTTPError: 502 Server Error: Bad Gateway',
    'java.lang.NullPointerException: Cannot invoke "Order.getStatus()"\n\tat com.shop.OrderService.lookup(OrderService.java:142)',
    '{"error": {"code": "InternalServerError", "message": "upstream timed out"}}',
    'Error: ECONNRESET socket hang up',
]
# A failure message a tool returns before the agent corrects its call.
FAILURES = ["HTTP 500 Internal Server Error", "TimeoutError: tool did not answer within 10s", "invalid argument: unknown id"]

DEFECTS = ["wrong_arguments", "forbidden_tool", "missing_tool", "missing_keyword", "negated_fact", "leaked_trace",
           "no_recovery"]


def _case(t: dict, variant: str, answer: str, calls: list[dict], acceptable: bool, defect: str | None) -> dict:
    return {
        "test_id": f"tu-{t['key']}-{variant}",
        "intent": t["category"], "locale": t["locale"], "query": t["query"], "response": answer,
        "tool_calls": calls, "expected_tools": t["expected"], "forbidden_tools": t["forbidden"],
        "required_facts": t["facts"], "complexity": t["complexity"], "tags": t["tags"],
        "label": {"acceptable": acceptable, **({"defect": defect} if defect else {})},
    }


def _recovering(t: dict, n: int) -> list[dict]:
    """The reference calls with the main one first failing (with a wrong id or a transient error)
    and then retried successfully with corrected arguments."""
    calls = copy.deepcopy(t["calls"])
    main = next(i for i, c in enumerate(calls) if c["name"] == t["expected"][0]["name"])
    failed = {"name": calls[main]["name"], "arguments": {**calls[main]["arguments"], **t["wrong_args"]},
              "error": FAILURES[n % len(FAILURES)]}
    return [*calls[:main], failed, *calls[main:]]


def _defect(t: dict, kind: str, n: int) -> dict:
    calls = copy.deepcopy(t["calls"])
    answer = t["answer"]
    main = next(i for i, c in enumerate(calls) if c["name"] == t["expected"][0]["name"])
    if kind == "forbidden_tool" and not t["bad_call"]:
        kind = "wrong_arguments"  # tasks with no forbidden tool get another defect
    if kind == "wrong_arguments":
        calls[main]["arguments"] = {**calls[main]["arguments"], **t["wrong_args"]}
    elif kind == "forbidden_tool":
        calls.append(copy.deepcopy(t["bad_call"]))
    elif kind == "missing_tool":
        del calls[main]
    elif kind == "missing_keyword":
        answer = t["missing"]
    elif kind == "negated_fact":
        answer = t["negated"]
    elif kind == "leaked_trace":
        answer = answer + ("\n" if n % 2 else " ") + LEAKS[n % len(LEAKS)]
    elif kind == "no_recovery":
        calls[main] = {"name": calls[main]["name"], "arguments": calls[main]["arguments"],
                       "error": FAILURES[n % len(FAILURES)]}
    return _case(t, kind.replace("_", "-"), answer, calls, False, kind)


def build() -> list[dict]:
    rows = []
    for n, t in enumerate(TASKS):
        rows.append(_case(t, "ok", t["answer"], copy.deepcopy(t["calls"]), True, None))
        rows.append(_case(t, "ok-paraphrase", t["paraphrase"], copy.deepcopy(t["calls"]), True, None))
        rows.append(_case(t, "ok-recovered", t["answer"], _recovering(t, n), True, None))
        for k in range(3):
            rows.append(_defect(t, DEFECTS[(3 * n + k) % len(DEFECTS)], n + k))
    return rows


def main() -> None:
    rows = build()
    path = HERE / "examples.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} cases to {path}")


if __name__ == "__main__":
    main()
