"""Order facts: what an answer says of the shopper's orders (status, id, carrier, dates), compared
with the orders on the page.

Claims read: order statuses stated plainly ("has shipped", 発送済み; "hasn't shipped yet" is still
being prepared; "once it ships", 発送されましたら state nothing yet: ``stated_order_statuses``),
order ids of the page's shape, carriers by name (``carriers_in``), and delivery or ship dates by the
nearest cue before them in their clause. Compared field by field (``order_facts``): an id that is not
the page's, a carrier the page does not name, a date none of the page's orders has for that role, a
status of the only order that contradicts its status.

Left to the judge: anything read incompletely: an order with items in several states, a hedged date
("around the 12th"), a date under a condition or negation, a question.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, timedelta

from fmquality.claims.reading import Reading
from fmquality.domain.case import TestCase
from fmquality.language.negation import (
    condition_in,
    conditional_ending,
    is_conditional,
    is_negated,
    is_question,
    not_yet_before,
)
from fmquality.language.numbers import DateMention, find_dates
from fmquality.language.text import has_japanese, loose_key, normalize

_STATUS_FAMILIES = {
    "delivered": "delivered",
    "shipped": "shipped", "in_transit": "shipped", "in transit": "shipped", "out_for_delivery": "shipped",
    "out for delivery": "shipped", "dispatched": "shipped", "on_the_way": "shipped",
    "processing": "processing", "pending": "processing", "preparing": "processing", "ordered": "processing",
    "confirmed": "processing", "not_shipped": "processing",
    "cancelled": "cancelled", "canceled": "cancelled",
    "delayed": "delayed",
}
# Phrases that state an order's status (not "once it ships"), English and Japanese.
ORDER_STATUS_PHRASES: dict[str, tuple[str, ...]] = {
    "delivered": ("has been delivered", "was delivered", "is delivered", "already delivered", "配達済", "配達完了",
                  "お届け済", "配達されました", "お届けしました", "お届けいたしました"),
    "shipped": ("has shipped", "has been shipped", "was shipped", "already shipped", "is on its way", "is on the way",
                "in transit", "out for delivery", "has been dispatched", "was dispatched", "has left our warehouse",
                "発送済", "発送しました", "発送されました", "発送いたしました", "出荷済", "配送中", "輸送中", "配達中"),
    "processing": ("being prepared", "still processing", "is processing", "being processed", "hasn't shipped",
                   "has not shipped", "not yet shipped", "not shipped yet", "hasn't been shipped", "has not been shipped",
                   "準備中", "未発送", "処理中", "まだ発送されていません", "まだ発送しておりません"),
    "cancelled": ("has been cancelled", "has been canceled", "was cancelled", "was canceled", "is cancelled",
                  "is canceled", "キャンセルされ", "キャンセル済"),
    "delayed": ("delayed", "is running late", "遅延", "遅れて"),
}


def status_family(status: str | None) -> str | None:
    if not status:
        return None
    key = normalize(status).strip().replace("-", "_")
    return _STATUS_FAMILIES.get(key) or _STATUS_FAMILIES.get(key.replace("_", " "))


# Shipped, in any tense or form ("it's already on its way", "went out yesterday"); negated, it says
# the order is still being prepared ("hasn't shipped yet").
_SHIPPED = re.compile(r"\b(?:shipped|dispatched|on its way|on the way|in transit|out for delivery|went out|sent out|"
                      r"left (?:our|the) warehouse)\b|発送済|発送しました|発送されました|発送いたしました|出荷済|配送中|輸送中")


# What the shopper or the store will do, not where the order is: "(how to) get your replacement set on its way".
_TO_GET = re.compile(r"\bget(?:s|ting)?\b(?:\s+[\w'-]+){0,3}\s*$")
# Moving now, as opposed to shipped at some point: a delivered order was shipped, it is not on its way.
_IN_TRANSIT = re.compile(r"\b(?:on its way|on the way|in transit|out for delivery)\b|配送中|輸送中|配達中")



def _to_get(norm: str, at: int) -> bool:
    return _TO_GET.search(norm[max(0, at - 40):at]) is not None


def _said_moving(norm: str) -> bool:
    """The answer says the parcel is moving now (not what someone will get moving)."""
    return any(not _to_get(norm, m.start()) for m in _IN_TRANSIT.finditer(norm))


# Each phrase compiled once.
_ORDER_STATUS_PATTERNS = [(family, re.compile(re.escape(p))) for family, phrases in ORDER_STATUS_PHRASES.items()
                          for p in phrases]


# Said under a condition after a status (「発送済みになると」, 「発送済みの場合」), and the policy's own words
# quoted (「…『発送済み』になる前であれば…」): no state of this order.
_JA_CONDITION_AFTER = re.compile(r"^み?[』」]?(?:に(?:なる|なった|なれば)(?:と|ら|前|まで|ば)?|の(?:場合|際|とき)|以降)")
_QUOTED = re.compile(r"「[^」]{12,}」|“[^”]{12,}”|\"[^\"\n]{12,}\"")  # not a status named in quotes: 現在「処理中」


def stated_order_statuses(text: str) -> set[str]:
    norm = _QUOTED.sub(" ", normalize(text))
    # A phrase under a condition ("発送されましたら", "once it has shipped") states nothing yet.
    found = {family for family, pattern in _ORDER_STATUS_PATTERNS for m in pattern.finditer(norm)
             if not conditional_ending(norm[m.end():m.end() + 2]) and not _JA_CONDITION_AFTER.match(norm[m.end():])
             and not condition_in(norm[max(0, m.start() - 20):m.start()].split(".")[-1])}
    for match in _SHIPPED.finditer(norm):
        before = norm[max(0, match.start() - 20):match.start()]
        if condition_in(before.split(".")[-1]) or conditional_ending(norm[match.end():match.end() + 2]) \
                or _JA_CONDITION_AFTER.match(norm[match.end():]) or _to_get(norm, match.start()):
            continue  # "once it ships", "as soon as it's on its way", "how to get your replacement on its way"
        found.add("processing" if not_yet_before(before) else "shipped")
    return found


# --------------------------------------------------------------------------------------------------
# Orders on the page: ids, statuses, carriers and dates, each compared with what the answer says
# --------------------------------------------------------------------------------------------------

# Parcel carriers of the US and Japanese markets, by the names shoppers and staff use.
CARRIERS: dict[str, tuple[str, ...]] = {
    "ups": ("ups",), "usps": ("usps", "postal service", "u.s. mail"), "fedex": ("fedex", "fed ex"), "dhl": ("dhl",),
    "ontrac": ("ontrac",), "lasership": ("lasership",), "amazon": ("amazon logistics",),
    "yamato": ("ヤマト運輸", "ヤマト", "クロネコ", "yamato"), "sagawa": ("佐川急便", "佐川", "sagawa"),
    "japan_post": ("日本郵便", "ゆうパック", "ゆうパケット", "ゆうメール", "japan post"), "seino": ("西濃運輸", "西濃"),
}
_CARRIER_PATTERNS = [(name, re.compile(re.escape(word) if has_japanese(word) else rf"(?<![a-z]){re.escape(word)}(?![a-z])"))
                     for name, words in CARRIERS.items() for word in words]
# What a date in an order answer is the date of, by the nearest cue before it in its clause.
_DATE_ROLE_CUES = (
    ("delivery", re.compile(r"\b(?:arriv\w*|deliver\w*|eta|get (?:it|there|to you)|reach\w*|expected|due)\b"
                            r"|お届け|到着|配達|届")),
    ("ship", re.compile(r"\b(?:ship\w*|dispatch\w*|went out|sent out|left (?:our|the) (?:warehouse|facility))\b|発送|出荷")),
    # A deadline or a window's end ("the return window ended on", 返品期限): not a date of the order.
    ("other", re.compile(r"\b(?:return\w*|refund\w*|window|deadline|until|through|thru|ends?|ended|expires?|"
                         r"cancel\w*|sale|release\w*|valid|by when)\b|期限|返品|返金|まで|締め切り|発売|キャンセル")),
)
_DEADLINE_AFTER = re.compile(r"^\W{0,3}(?:[(（][月火水木金土日](?:曜日?)?[)）]\W{0,2})?(?:まで|迄|までに)")
_DATE_HEDGE = re.compile(r"\b(?:around|about|approximately|roughly|or so|give or take|usually|typically)\b|ごろ|頃|前後|目安|程度")


def carriers_in(text: str) -> set[str]:
    norm = normalize(text or "")
    return {name for name, pattern in _CARRIER_PATTERNS if pattern.search(norm)}


def _page_orders(case: TestCase) -> list[dict]:
    """The orders the page shows: ``order`` and any list of ``orders`` (as plain dicts)."""
    page = case.page_context.model_dump(exclude_none=True)
    orders = [page["order"]] if isinstance(page.get("order"), dict) else []
    orders += [o for o in page.get("orders") or [] if isinstance(o, dict)] if isinstance(page.get("orders"), list) else []
    return orders


def _record_dates(record: object, key: str = "") -> list[tuple[str, DateMention]]:
    """(role, date) of every date field of an order record, its items included: eta/delivered ->
    delivery, ship -> ship, anything else (release, order date) -> other."""
    out: list[tuple[str, DateMention]] = []
    if isinstance(record, dict):
        for k, v in record.items():
            out += _record_dates(v, str(k).lower())
    elif isinstance(record, list):
        for v in record:
            out += _record_dates(v, key)
    elif isinstance(record, str):
        role = "delivery" if any(w in key for w in ("eta", "deliver", "arriv")) else "ship" if "ship" in key else "other"
        out += [(role, d) for d in find_dates(record)]
    return out


@dataclass
class OrderFacts:
    contradictions: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)


def order_facts(case: TestCase, reading: Reading) -> OrderFacts:
    """What the answer says of the orders on the page, compared field by field: an order id of the
    page's shape that is not the page's, a carrier the page does not name, a delivery or ship date
    that none of the page's orders has (stated plainly, not hedged or under a condition), a status
    of the only order that contradicts its status. Each is a claim read completely; anything less
    (an order with items in several states, a hedged date) is left to the judge."""
    facts = OrderFacts()
    orders = _page_orders(case)
    if not orders:
        return facts
    _compare_ids(orders, reading.text, facts)
    _compare_carriers(orders, reading.text, facts)
    _compare_dates(case, orders, reading, facts)
    if len(orders) == 1:
        _compare_time_to_delivery(case, orders[0], reading, facts)
        _compare_return_window(case, orders[0], reading, facts)
    if len(orders) == 1 and not any(isinstance(v, list) and v and isinstance(v[0], dict) and "status" in v[0]
                                    for v in orders[0].values()):
        _compare_status(orders[0], reading.text, facts)
    return facts


def _compare_ids(orders: list[dict], text: str, facts: OrderFacts) -> None:
    """Order ids of the page's shape in the answer: the page's (verified) or another (a contradiction)."""
    nfkc = unicodedata.normalize("NFKC", text)
    ids = [str(o["order_id"]) for o in orders if o.get("order_id")]
    for order_id in ids:
        shape = re.sub(r"[A-Za-z]", "[A-Za-z]", re.sub(r"\d", r"\\d", re.escape(order_id)))
        for match in re.finditer(rf"(?<![\w-]){shape}(?![\w-])", nfkc):
            if loose_key(match.group()) in {loose_key(i) for i in ids}:
                facts.verified.append(f"order id {match.group()}")
            else:
                facts.contradictions.append(f"order id {match.group()} is not the page's ({', '.join(ids)})")


def _compare_carriers(orders: list[dict], text: str, facts: OrderFacts) -> None:
    """Carriers the answer names against those of the page's orders: only others is a contradiction."""
    page_carriers = set().union(*(carriers_in(json.dumps(o, ensure_ascii=False)) for o in orders))
    said_carriers = carriers_in(text)
    if page_carriers and said_carriers:
        wrong = said_carriers - page_carriers
        if wrong and not (said_carriers & page_carriers):
            facts.contradictions.append(f"carrier {', '.join(sorted(wrong))} stated, the order ships with "
                                        f"{', '.join(sorted(page_carriers))}")
        elif not wrong:
            facts.verified.append(f"carrier {', '.join(sorted(said_carriers))}")


def _date_role(sentence: str, date: DateMention) -> str | None:
    """What a date of a sentence is the date of ("delivery", "ship", "other"), by the nearest cue
    before it in its clause (after it, in Japanese); a deadline ("11月19日までに") is "other"."""
    before = sentence[:date.start]
    cues = [(m.start(), role) for role, cue in _DATE_ROLE_CUES for m in cue.finditer(before)]
    after_cues = [(m.start(), role) for role, cue in _DATE_ROLE_CUES for m in cue.finditer(sentence[date.end:])]
    role = max(cues)[1] if cues else (min(after_cues)[1] if after_cues and has_japanese(sentence) else None)
    if _DEADLINE_AFTER.match(sentence[date.end:]):
        role = "other"  # 「11月19日までに」, "by Nov 19 to ...": a deadline, not the order's date
    return role


# "Well before the weekend", "until Friday": a point in time, not a condition on the sentence's dates.
_TIME_PHRASE = re.compile(r"\b(?:before|after|until)\s+(?:the\s+)?(?:weekend|holidays?|end of (?:the )?(?:week|month)|"
                          r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|tonight|noon|midnight)\b")


def _compare_dates(case: TestCase, orders: list[dict], reading: Reading, facts: OrderFacts) -> None:
    """Dates the answer states plainly: any date of the page (verified), or a delivery or ship date
    that none of the orders has for that role, unhedged (a contradiction)."""
    page_dates = [d for o in orders for d in _record_dates(o)]
    whole_page = [d for _, d in _record_dates(case.page_context.model_dump(exclude_none=True))]
    roles = {role for role, _ in page_dates}
    # The knowledge's own calendar (a holiday closure, a cut-off) is not the order's dates.
    knowledge_dates = [d for chunk in case.retrieved_chunks for d in find_dates(chunk)]
    for index in range(len(reading.spans)):
        sentence = reading.sentence(index)
        if is_conditional(_TIME_PHRASE.sub(" ", sentence)) or is_negated(sentence) or is_question(sentence):
            continue
        for date in find_dates(sentence):
            role = _date_role(sentence, date)
            shown = sentence[date.start:date.end]
            if any(date.same_day(d) for d in whole_page):
                facts.verified.append(f"date {shown}")
            elif any(date.same_day(d) for d in knowledge_dates):
                facts.verified.append(f"date {shown} (the knowledge's)")
            elif role in roles and role != "other" and not _DATE_HEDGE.search(sentence):
                # (An "other" date, a deadline or a window's end, is not the date of anything on the page.)
                known = ", ".join(f"{d.month}/{d.day}" for r, d in page_dates if r == role)
                facts.contradictions.append(f"{role} date {shown!r} stated, the order's is {known}")


# How long until the order arrives, said from today: "in the next 2-3 days", "within 5 business
# days", "arrives today", 「2〜3日でお届け」, 「明日到着」 (not the day of a date: 「5月15日でございます」).
_TIME_TO_DELIVERY = re.compile(
    r"\b(?:in|within)\s+(?:the next\s+|another\s+)?(\d+)(?:\s*(?:-|–|~|to|or)\s*(\d+))?\s+(business\s+|working\s+)?days?\b"
    r"|(?<![\d〜~\-月/])(\d+)(?:\s*[〜~-]\s*(\d+))?\s*(営業)?日(?:以内|後|で(?!ござ|す|し))|\b(today|tomorrow)\b|(本日|今日|明日)")
_DELIVERY_CUE = _DATE_ROLE_CUES[0][1]


def _business_days(start: date, end: date) -> int:
    days = range((end - start).days)
    return sum(1 for i in days if (start + timedelta(days=i + 1)).weekday() < 5)


def _compare_time_to_delivery(case: TestCase, order: dict, reading: Reading, facts: OrderFacts) -> None:
    """A time to delivery the answer states plainly, against the days from the session's date to the
    order's ETA (calendar or business days: either reading agrees). Needs both dates on the page."""
    today, eta = _iso_date((case.page_context.model_extra or {}).get("session_date")), _iso_date(order.get("eta"))
    if today is None or eta is None or eta < today or status_family(str(order.get("status") or "")) == "delivered":
        return
    calendar, business = (eta - today).days, _business_days(today, eta)
    for index in range(len(reading.spans)):
        sentence = reading.sentence(index)
        if not _DELIVERY_CUE.search(sentence) or is_conditional(sentence) or is_negated(sentence) \
                or is_question(sentence) or _DATE_HEDGE.search(sentence):
            continue
        for match in _TIME_TO_DELIVERY.finditer(sentence):
            g = match.groups()
            if g[6] or g[7]:
                low = high = 0 if (g[6] or g[7]) in ("today", "本日", "今日") else 1
            else:
                low = int(g[0] or g[3])
                high = int(g[1] or g[4] or low)
                if match.group().startswith("within") or "以内" in match.group():
                    low = 0
            said = match.group().strip()
            if low <= calendar <= high or low <= business <= high:
                facts.verified.append(f"time to delivery {said!r}")
            else:
                facts.contradictions.append(f"delivery {said!r} stated; the order's ETA {eta.isoformat()} is {calendar} "
                                            f"day(s) after the session's date {today.isoformat()}")


# A window counted from delivery in the knowledge ("within 30 days of delivery", 到着後30日以内), and the
# answer saying the shopper is inside it or past it ("you're within the 30-day return window", 期限を過ぎて).
_WINDOW_KNOWN = re.compile(r"\bwithin (\d{1,3}) (?:calendar )?days? (?:of|from|after) (?:delivery|receipt|arrival)"
                           r"|(?:到着|お届け|受け取り|受取|配達)(?:日)?(?:後|から)\s*(\d{1,3})\s*日(?:以内|間)")
_INSIDE = re.compile(r"\bwithin (?:the |your )?(?:(\d{1,3})[- ]day )?(?:return |refund |change-of-mind )*(?:window|period)\b"
                     r"|\bstill (?:eligible|returnable|in time)\b|(?:返品|返金)?(?:期限|期間)内")
_OUTSIDE = re.compile(r"\b(?:outside|past|beyond) (?:the |your )?(?:(\d{1,3})[- ]day )?(?:return |refund |change-of-mind )*"
                      r"(?:window|period)\b|\bwindow (?:has )?(?:closed|passed|expired|ended)\b|(?:期限|期間)を(?:過ぎ|超え)")


def _compare_return_window(case: TestCase, order: dict, reading: Reading, facts: OrderFacts) -> None:
    """Inside or past a window counted from delivery, said plainly, against the days from the
    delivery date on the page to the session's date. The window is the answer's own ("30-day") or the
    knowledge's only one; a day either way is left alone (whether the day of delivery counts)."""
    today = _iso_date((case.page_context.model_extra or {}).get("session_date"))
    delivered = _iso_date(order.get("delivered_date")
                          or (order.get("eta") if status_family(str(order.get("status") or "")) == "delivered" else None))
    known = {int(next(g for g in m.groups() if g)) for chunk in case.retrieved_chunks
             for m in _WINDOW_KNOWN.finditer(normalize(chunk))}
    if today is None or delivered is None or not known:
        return
    elapsed = (today - delivered).days
    for index in range(len(reading.spans)):
        sentence = reading.sentence(index)
        if is_conditional(sentence) or is_negated(sentence) or is_question(sentence):
            continue
        for pattern, inside in ((_INSIDE, True), (_OUTSIDE, False)):
            for match in pattern.finditer(sentence):
                days = int(match.group(1)) if match.group(1) else (next(iter(known)) if len(known) == 1 else None)
                if days is None:
                    continue  # several windows and the answer names none of them
                if elapsed > days + 1 if inside else elapsed < days:
                    facts.contradictions.append(f"{match.group(0)!r} stated; delivered {delivered.isoformat()}, {elapsed} days "
                                                f"before the session's date {today.isoformat()}, against a {days}-day window")
                else:
                    facts.verified.append(f"{match.group(0)!r}: {elapsed} days since delivery")


def _iso_date(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def _compare_status(order: dict, text: str, facts: OrderFacts) -> None:
    """The statuses the answer states against the only order's status."""
    family = status_family(str(order.get("status") or ""))
    claimed = stated_order_statuses(text)
    if family and claimed:
        # "in transit" of a shipped order, "delayed" of any open order are not contradictions.
        allowed = {family} | ({"delayed"} if family in ("shipped", "processing") else set())
        if family == "delivered" and not _said_moving(normalize(text)):
            allowed.add("shipped")  # "shipped Oct 2 via USPS": the delivered order's history, not its state
        if family == "delayed":
            # Late at the stage it is in: shipped when the page gives a ship date, else being prepared.
            allowed.add("shipped" if order.get("ship_date") or order.get("tracking_number") else "processing")
        if claimed - allowed and family not in claimed:
            facts.contradictions.append(f"status stated as {sorted(claimed)}, the order is {order.get('status')}")
        else:
            facts.verified.append(f"order status {order.get('status')}")
