"""Money amounts in an answer, each read with its role: what the amount is.

An amount is compared with a product's catalog price only when it is that product's price. Its role
is read from the words around it (English and Japanese), or from the layout (a table column's
header, a struck-through former price):

- ``unit``       a product's price ("Vol. 1 is $12.99", 「748円」 on a product's card line)
- ``list``       the regular price beside a sale ("normally $14.99", 通常価格, "drops from $9.99")
- ``sale``       a price after a discount ("20% off, so $23.99", セール価格, "$12.00 → $6.00")
- ``total``      a sum ("Subtotal: $24.98", "you'd pay $29.97 for all four", 合計, 合わせて)
- ``difference`` "$27.00 less than", "adding $8.00 more", あと702円
- ``discount``   "$10 off", "save $5", 500円引き
- ``threshold``  "orders of $35 or more", "under $35", 3,000円以上
- ``fee``        "standard shipping adds $4.99", "a $4.99 label fee", 送料500円, 手数料330円
- ``budget``     "your $30 budget", ご予算3,000円
- ``shopper``    an amount the shopper gave (their cart, their budget), said back to them
- ``term``       an operand of arithmetic the answer writes out ("528円＋770円")

A new role is a pattern here and a branch of ``role_of``; how each role is checked is
``claims.commerce.check_amounts`` (arithmetic in ``claims.arithmetic``); thresholds and fees are
policy numbers (``claims.policy``).
"""

from __future__ import annotations

import re

from fmquality.language.numbers import Price, extract_prices
from fmquality.language.text import strip_markup

_END = r"\s*[:：=]?\s*$"
_THRESHOLD_BEFORE = re.compile(
    r"(?:(?<!just )(?<!a little )(?<!a bit )(?:over|under)|above|below|more than|less than|at least|minimum(?: of| subtotal of| purchase of| order of)?|"
    r"min\.?|orders?(?: totaling| totalling| of| over| above| under| below)?|purchases?(?: of| over)?|"
    r"subtotals?(?: of| over| above| under| below)|spend(?:ing)?|threshold(?: of| is)?|starts? at|kicks in at|"
    r"free(?:[- ]shipping)? (?:at|from|over|above)|送料無料(?:は|の条件は)?"
    r"|\b(?:once|when|if|as soon as)\b[^.$¥\n]{0,50}\b(?:reach(?:es)?|hits?|gets? to))" + _END)
_THRESHOLD_AFTER = re.compile(
    r"^\s*(?:or more|or over|or higher|or above|and up|and above|\+(?!\s*[\d$¥￥])|minimum|min\b|threshold|line|mark|"
    r"free-shipping|free shipping|以上|未満|を超え|超|から送料|で送料無料|送料無料)")
_BUDGET_BEFORE = re.compile(r"(?:budget(?: of| is)?|within(?: your)?|under your|limit(?: of| is)?|予算(?:は)?|ご予算(?:は)?)"
                            + _END)
_BUDGET_AFTER = re.compile(r"^\s*(?:budget|limit|cap|total budget|以内|の予算|のご予算|まで(?:の|で)?(?:ご予算|予算))")
_DIFFERENCE_AFTER = re.compile(
    r"^\s*(?:less|more|cheaper|pricier|higher|lower|extra|short|over\b|under (?:your|the) budget|in savings|savings|difference|"
    r"安|高|お得|の差|分お得|分の差|差|多く|不足|届いて(?:い|お)|届か|足りな|足りま)")
_DIFFERENCE_BEFORE = re.compile(
    r"(?:difference(?: of| is)?|saves?(?: you)?|saving(?:s)?(?: of| you)?|you(?:'d| would| will)? save|"
    r"adding|add(?: another| just| only)?|another|(?:the )?remaining|(?:the )?rest(?: of)?|(?:the )?balance(?: of)?|"
    r"差額(?:は)?|あと|残り|残額(?:は)?|差は|さらに|(?:^|[\s:：(（])[-−])" + _END)
_DISCOUNT_AFTER = re.compile(r"^\s*(?:off|discount|引き|割引|オフ|値引)")
_DISCOUNT_BEFORE = re.compile(r"(?:discount(?: of| is)?|credit(?: of)?|coupon(?: for| worth)?|(?:takes?|knocks?|shaves?) off|"
                              r"値引き|割引額(?:は)?)" + _END)
_TOTAL_BEFORE = re.compile(
    r"(?:total(?: of| is| comes to| would be| will be| becomes)?|subtotal(?: of| is| would be| will be| becomes)?|grand total|"
    r"(?<![a-z0-9%])[=＝]|"  # "Vol. 1 ($9.99) + ... ($9.49) = $41.46": what the terms before it make (their asides dropped)
    r"refund(?:ed)?(?: of| is| would be| will be| comes to)?|with (?:shipping|tax|fees?|the fee)(?: included)?|including (?:shipping|tax)|you'?(?:ll| will) (?:get back|receive)|get back|返金(?:額)?(?:は)?|"
    r"altogether|together|in all|combined|comes? to|came to|adds? up to|works out to|"
    r"(?:brings?|bringing|gets?|getting)(?: it| that| this| you| the total| your (?:sub)?total| your cart| the cart)?(?: down| up)? to|"
    r"you(?:'d| would| will)? pay(?: only| just)?|pay(?: only| just)?|for (?:all|both|the (?:two|three|four|five|set|pair))"
    r"(?: (?:of them|volumes|books|items))?|合計(?:で|は|金額は)?|合わせて(?:も)?|総額(?:は)?|計|小計(?:は)?|"
    r"お支払い(?:金額|額)?(?:は)?)" + _END)
_TOTAL_AFTER = re.compile(r"^\s*(?:in total|total\b|altogether|for (?:all|both|the (?:two|three|four|five|set))|combined|"
                          r"together|refund|back to (?:you|your)|の合計|合計|の総額|のお支払い|の返金|を返金)")
_FEE_BEFORE = re.compile(
    r"(?:shipping(?: fee| cost| charge| rate)?(?: is| of| costs?| adds?| will be| would be| runs)?|"
    r"delivery(?: fee| charge)?(?: is| of)?|(?:is |at |for )?a flat(?: rate of| fee of)?|(?:label|restocking|handling|service|cod|processing|wrapping|gift[- ]wrap(?:ping)?|"
    r"return(?: shipping)?) (?:fee|charge|cost)(?: of| is)?|fee(?: of| is)?|adds?|plus|送料(?:は|が|も)?|配送料(?:は)?|"
    r"手数料(?:は|が)?|返送料(?:は)?)" + _END)
_FEE_AFTER = re.compile(r"^\s*(?:shipping|delivery fee|fee|label|restocking|handling|の送料|送料|手数料|の手数料|返送料)")
_LIST_BEFORE = re.compile(
    r"(?:normally|usually|regular(?:ly)?(?: price)?(?: is| of)?|list(?: price)?(?: is| of)?|was|originally|"
    r"retails?(?: for| at)?|reg\.?|msrp|instead of|down from|drops? from|reduced from|from|full price(?: of| is)?|"
    r"定価|通常価格|通常|元値|本来)" + _END)
_LIST_AFTER = re.compile(r"^\s*(?:list price|list|regular price|retail|のところ|から|(?:→|->|=>))")
_SALE_BEFORE = re.compile(
    r"(?:sale price(?: is| of)?|now(?: just| only)?|on sale(?: for| at)?|discounted to|drops? to|down to|reduced to|"
    r"(?:→|->|=>)|sale|セール価格|特価|割引後(?:価格)?(?:は)?|値引き後|実質)" + _END)
# A sentence that speaks of a discount: a price in it that is not the catalog's may be the sale price.
DISCOUNT_CONTEXT = re.compile(r"%|percent|\boff\b|\bsale\b|discount|deal|promo|coupon|\bcode\b|セール|割引|オフ|引き|"
                              r"キャンペーン|特価|クーポン|半額|\b(?!vol)[a-z]{3,}\d{1,3}\b")  # ... or a code: "with MANGA20"
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？\n]")
_ASIDE = re.compile(r"[(（][^()（）]{0,60}[)）]")
_PARENTHETICAL_START = re.compile(r"^\s*[(（][^()（）]{0,12}[)）]")

ROLES = ("unit", "list", "sale", "total", "difference", "discount", "threshold", "fee", "budget", "shopper", "term",
         "reported", "unknown")


# What a table column or a struck-through amount says an amount is.
_HEADER_ROLES = (
    ("list", re.compile(r"list|regular|usual|normal|original|retail|msrp|was\b|before|通常|定価|元")),
    ("total", re.compile(r"total|subtotal|refund|you pay|合計|小計|お支払い|返金")),
    ("sale", re.compile(r"sale|now|after|discounted|price with|セール|割引後|特価")),
    ("difference", re.compile(r"save|saving|お得|差額|割引額|\boff\b|discount")),
)


def table_roles(norm: str) -> dict[int, str]:
    """Roles that the layout gives amounts: the header of the markdown-table column an amount stands
    in ("List price", "Sale price", "You save") or its row's label ("Refund"), and ~~struck-through~~
    amounts (a former price)."""
    roles: dict[int, str] = {}
    for match in re.finditer(r"~~[^~\n]{0,20}~~", norm):
        for price in extract_prices(match.group(0)):
            roles[match.start() + price.start] = "list"
    lines = norm.split("\n")
    offset, header = 0, None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [(m.start(), m.end()) for m in re.finditer(r"[^|]+", line)]
            if header is None:
                header = [line[s:e].strip() for s, e in cells]
            elif not re.fullmatch(r"[|\s:-]+", stripped):
                label = line[cells[0][0]:cells[0][1]] if cells else ""
                for column, (s, e) in enumerate(cells):
                    # The column's header, else the row's label ("| **Refund** | **$20.00** |").
                    title = (header[column] if column < len(header) else "") or label
                    role = next((r for r, cue in _HEADER_ROLES if cue.search(title)), None)
                    if role is None and column:
                        role = next((r for r, cue in _HEADER_ROLES if cue.search(label)), None)
                    if role:
                        for price in extract_prices(line[s:e]):
                            roles.setdefault(offset + s + price.start, role)
        else:
            header = None
        offset += len(line) + 1
    return roles


def role_of(norm: str, price: Price, shopper_amounts: set[tuple[str, float]]) -> str:
    """The role of one amount, from the words of its sentence around it (``norm`` is the normalized text)."""
    # Only the 100 characters before the amount are read (48 once asides are dropped), so only a
    # sentence end among them matters (searching from the text's start made reading quadratic).
    window = max(0, price.start - 101)
    ends = list(_SENTENCE_END.finditer(norm, window, price.start))
    sentence_start = ends[-1].end() if ends else 0
    # A closed aside before the amount is not its role ("once your subtotal (after discounts) reaches $50").
    before = strip_markup(_ASIDE.sub(" ", norm[max(sentence_start, price.start - 100):price.start]))[-48:].rstrip()
    after = strip_markup(norm[price.end:price.end + 40])
    after = _PARENTHETICAL_START.sub("", after)  # "3,000円（税込）以上": the note is not the role
    if _THRESHOLD_BEFORE.search(before) or _THRESHOLD_AFTER.match(after):
        return "threshold"
    if _BUDGET_BEFORE.search(before) or _BUDGET_AFTER.match(after):
        return "budget"
    if (price.currency, round(price.amount, 2)) in shopper_amounts:
        return "shopper"
    if _DIFFERENCE_AFTER.match(after) or _DIFFERENCE_BEFORE.search(before):
        return "difference"
    if _DISCOUNT_AFTER.match(after) or _DISCOUNT_BEFORE.search(before):
        return "discount"
    if _TOTAL_BEFORE.search(before) or _TOTAL_AFTER.match(after):
        return "total"
    if _FEE_BEFORE.search(before) or _FEE_AFTER.match(after):
        return "fee"
    if _LIST_BEFORE.search(before) or _LIST_AFTER.match(after):
        return "list"
    if _SALE_BEFORE.search(before):
        return "sale"
    return "unit"


def discount_follows(after: str) -> bool:
    """Whether the words right after an amount make it an amount off ("$5 off", 500円引き)."""
    return _DISCOUNT_AFTER.match(after) is not None


# What an amount is charged per ("$3.50 per item", "$4.99 a month", 「1点220円」, 「1回のご注文につき330円」):
# part of what the number is, so "$3.50 per order" is not the knowledge's "$3.50 per item".
_BASIS_WORDS = {"item": "item", "book": "item", "volume": "item", "vol": "item", "copy": "item", "title": "item",
                "order": "order", "purchase": "order", "checkout": "order", "shipment": "shipment",
                "package": "shipment", "parcel": "shipment", "box": "shipment", "month": "month", "year": "year"}
_BASIS_AFTER = re.compile(r"^\W{0,3}(?:(?:per|a|an|/|for each|for every|each)\s*(" + "|".join(_BASIS_WORDS) + r")s?\b|(each)\b"
                          r"|[/／](点|冊|巻|注文|回)|[(（]?\s*(?:1|一)(点|冊|巻)(?:あたり|につき|ごと)"
                          r"|[(（]?\s*(?:1回の)?(?:ご)?(注文)(?:ごと|1回につき|につき|あたり))")
_BASIS_BEFORE = re.compile(r"(?:(?:1|一)(点|冊|巻|品)(?:あたり|につき|ごと)?|(?:1回の)?(?:ご)?(注文)(?:ごと|1回につき|につき|あたり)"
                           r"|\bper (" + "|".join(_BASIS_WORDS) + r")s?)\W{0,3}$")
_JA_BASIS = {"点": "item", "冊": "item", "巻": "item", "品": "item", "注文": "order", "回": "order"}


def rate_basis(norm: str, price: Price) -> str | None:
    """What the amount at ``price`` (read from ``norm``) is charged per: item, order, shipment, month
    or year; None when the text does not say."""
    after = _BASIS_AFTER.match(strip_markup(norm[price.end:price.end + 30]))
    before = None if after else _BASIS_BEFORE.search(strip_markup(norm[max(0, price.start - 16):price.start]))
    found = after or before
    if found is None:
        return None
    word = next(g for g in found.groups() if g)
    return "item" if word == "each" else _BASIS_WORDS.get(word) or _JA_BASIS.get(word)
