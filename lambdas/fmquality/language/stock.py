"""Stock statuses as a store writes them: the phrases of each status (English and Japanese), the
statuses a text states, and which stated status agrees with which catalog status.

Read by the stock claims (``claims.commerce``), the coverage of an expected fact
(``alignment.match_fact``) and product-card formatting. A new stock phrase goes into
``AVAILABILITY_PHRASES``; how a negation around it is read is ``language.negation``'s.
"""

from __future__ import annotations

import re

from fmquality.language.negation import negated_after, negated_before
from fmquality.language.text import normalize

# Stock-status vocabulary of an online store, English and Japanese.
AVAILABILITY_PHRASES: dict[str, tuple[str, ...]] = {
    "in_stock": ("in stock", "available now", "available to order", "ships today", "ready to ship", "ships right away",
                 "back in stock", "在庫あり", "在庫がある", "在庫がござい", "在庫もござい", "在庫はござい", "在庫がありま",
                 "在庫もありま", "在庫はありま", "すぐに発送", "すぐにお届け", "即納"),
    "out_of_stock": ("out of stock", "sold out", "currently unavailable", "unavailable", "not available",
                     "not in stock", "no stock", "在庫切れ", "品切れ", "売り切れ", "完売", "在庫がありません",
                     "在庫がない", "在庫はありません", "在庫はない", "在庫もありません", "在庫がございません",
                     "在庫はございません", "在庫もございません", "入荷待ち"),
    "preorder": ("pre-order", "preorder", "pre order", "available for pre-order", "not released yet",
                 "予約受付", "予約注文", "予約販売", "ご予約", "発売前"),
    "limited": ("limited stock", "only a few left", "few left", "few copies left", "low stock", "almost sold out",
                "selling fast", "残りわずか", "残り僅か", "在庫僅少", "残り少な", "在庫わずか"),
}
_AVAILABILITY_LONGEST_FIRST = sorted(
    ((p, s) for s, ps in AVAILABILITY_PHRASES.items() for p in ps), key=lambda x: -len(x[0])
)
# 「ご予約の時点」「ご予約時」「ご予約のキャンセル」: the act of pre-ordering named, not a status stated.
_THE_ACT_OF_ORDERING = re.compile(r"(?:の(?:時点|際|段階|キャンセル|変更|方法|お手続き|手続き)|時)")
# What a negated status says ("isn't sold out" is in stock); a negated pre-order says nothing.
_NEGATION_FLIP = {"in_stock": "out_of_stock", "out_of_stock": "in_stock", "limited": "out_of_stock"}

# Stated vs catalog statuses that are not a contradiction ("only a few left" of an in-stock item,
# "not available yet" of a pre-order).
COMPATIBLE_STOCK = {("limited", "in_stock"), ("in_stock", "limited"), ("out_of_stock", "preorder"),
                    ("buyable", "in_stock"), ("buyable", "limited"), ("buyable", "preorder")}

# Telling the shopper to put a product in the cart or buy it now says it can be bought ("buyable"):
# true of anything but a sold-out title. Negated ("can't be added to the cart"), it says nothing.
_PURCHASE_PROMPTS = ("to your cart", "to the cart", "buy it now", "order it now", "カートに入れ", "カートに追加",
                     "ご購入いただけます", "購入できます", "ご注文いただけます")


def availability_mentions(text: str) -> list[tuple[str, int]]:
    """Stock statuses stated in the text, as (status, position in ``normalize(text)``), longest
    phrase first at a position. A negated status is read as its opposite ("isn't sold out" is in
    stock, "not in stock" is out of stock); a negated pre-order says nothing."""
    norm = normalize(text or "")
    hits: list[tuple[str, int]] = []
    taken: list[tuple[int, int]] = []
    for phrase, status in _AVAILABILITY_LONGEST_FIRST:
        start = norm.find(phrase)
        while start != -1:
            end = start + len(phrase)
            if not any(s <= start < e or s < end <= e for s, e in taken):
                taken.append((start, end))
                if status == "preorder" and _THE_ACT_OF_ORDERING.match(norm[end:end + 8]):
                    start = norm.find(phrase, end)
                    continue  # 「ご予約の時点では」: the moment of ordering, said of pre-orders in general
                negated = negated_before(norm[max(0, start - 20):start]) or negated_after(norm[end:end + 8])
                effective = _NEGATION_FLIP.get(status) if negated and "not" not in phrase and "ません" not in phrase \
                    and "ない" not in phrase else status
                if effective:
                    hits.append((effective, start))
            start = norm.find(phrase, end)
    return sorted(hits, key=lambda h: h[1])


# "The product page will show whether you can add it to your cart": a question left open, not a prompt.
_OPEN_QUESTION = re.compile(r"\b(?:whether|if)\b[^.!?\n]*$|かどうか")
# 「カートに入れられません」, 「カートに追加できない」: the prompt denied further on.
_DENIED_AFTER = re.compile(r"^[^。、.!?\n]{0,8}(?:ません|ない|できず)")


def purchase_prompts(text: str) -> list[tuple[str, int]]:
    """("buyable", position in ``normalize(text)``) of each prompt to buy or add to the cart, not negated."""
    norm = normalize(text or "")
    hits: list[tuple[str, int]] = []
    for phrase in _PURCHASE_PROMPTS:
        for match in re.finditer(re.escape(phrase), norm):
            start = match.start()
            # Two phrases of one prompt (「カートに入れる」ボタンから…ご購入いただけます) are one claim.
            if any(abs(at - start) < 20 for _, at in hits) or negated_before(norm[max(0, start - 25):start]) \
                    or _OPEN_QUESTION.search(norm[max(0, start - 40):start]) or _DENIED_AFTER.match(norm[match.end():]):
                continue
            hits.append(("buyable", start))
    return sorted(hits, key=lambda h: h[1])
