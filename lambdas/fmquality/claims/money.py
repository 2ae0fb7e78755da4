"""Money amounts in an answer, each read with its role, and the arithmetic behind the derived ones.

An amount is compared with a product's catalog price only when it is that product's price. Its role
is read from the words around it (English and Japanese):

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

How each is checked (``check_amounts``):
- a unit or list price against the catalog price of the product it is attributed to;
- a sale price as arithmetic: the list price (stated, else the catalog's) less the discount stated in
  its sentence, in the shopper's question or in the knowledge about that product; a discount found
  and a result that does not follow from it is an arithmetic error;
- arithmetic the answer writes out ("528円＋770円", "$45 minus 15% is $38.25") as arithmetic;
- every other amount (a total, a difference, points worth, a remaining amount) is *explained* when
  one step of arithmetic over the amounts in play gives it (a sum of a few of them, a difference,
  a percentage of one, a multiple by a count, a conversion); an amount nothing explains is a hint
  for the judge, never a contradiction: the checks cannot tell an invented number from a step they
  do not model.

Thresholds and fees are policy numbers (``claims.policy_numbers``); they are atoms here, not claims.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from fmquality.domain.case import CatalogItem
from fmquality.language.text import Price, extract_prices, extract_quantities, normalize

# --------------------------------------------------------------------------------------------------
# Roles
# --------------------------------------------------------------------------------------------------

_END = r"\s*[:：=]?\s*$"
_THRESHOLD_BEFORE = re.compile(
    r"(?:(?<!just )(?<!a little )(?<!a bit )(?:over|under)|above|below|more than|less than|at least|minimum(?: of| subtotal of| purchase of| order of)?|"
    r"min\.?|orders?(?: totaling| totalling| of| over| above| under| below)?|purchases?(?: of| over)?|"
    r"subtotals?(?: of| over| above| under| below)|spend(?:ing)?|threshold(?: of| is)?|starts? at|kicks in at|"
    r"free(?:[- ]shipping)? (?:at|from|over|above)|送料無料(?:は|の条件は)?)" + _END)
_THRESHOLD_AFTER = re.compile(
    r"^\s*(?:or more|or over|or higher|or above|and up|and above|\+(?!\s*[\d$¥￥])|minimum|min\b|threshold|line|mark|"
    r"free-shipping|free shipping|以上|未満|を超え|超|から送料|で送料無料|送料無料)")
_BUDGET_BEFORE = re.compile(r"(?:budget(?: of| is)?|within(?: your)?|under your|limit(?: of| is)?|予算(?:は)?|ご予算(?:は)?)"
                            + _END)
_BUDGET_AFTER = re.compile(r"^\s*(?:budget|limit|cap|total budget|以内|の予算|のご予算|まで(?:の|で)?(?:ご予算|予算))")
_DIFFERENCE_AFTER = re.compile(
    r"^\s*(?:less|more|cheaper|pricier|higher|lower|extra|short|in savings|savings|difference|"
    r"安|高|お得|の差|分お得|分の差|差|多く|不足)")
_DIFFERENCE_BEFORE = re.compile(
    r"(?:difference(?: of| is)?|saves?(?: you)?|saving(?:s)?(?: of| you)?|you(?:'d| would| will)? save|"
    r"adding|add(?: another| just| only)?|another|差額(?:は)?|あと|残り|差は|さらに|(?:^|[\s:：(（])[-−])" + _END)
_DISCOUNT_AFTER = re.compile(r"^\s*(?:off|discount|引き|割引|オフ|値引)")
_DISCOUNT_BEFORE = re.compile(r"(?:discount(?: of| is)?|credit(?: of)?|coupon(?: for| worth)?|値引き|割引額(?:は)?)" + _END)
_TOTAL_BEFORE = re.compile(
    r"(?:total(?: of| is| comes to| would be| will be| becomes)?|subtotal(?: of| is| would be| will be| becomes)?|grand total|"
    r"refund(?:ed)?(?: of| is| would be| will be| comes to)?|with (?:shipping|tax|fees?|the fee)(?: included)?|including (?:shipping|tax)|you'?(?:ll| will) (?:get back|receive)|get back|返金(?:額)?(?:は)?|"
    r"altogether|together|in all|combined|comes? to|came to|adds? up to|works out to|"
    r"(?:brings?|bringing)(?: it| that| this| the total| your (?:sub)?total| your cart| the cart)?(?: down| up)? to|"
    r"you(?:'d| would| will)? pay(?: only| just)?|pay(?: only| just)?|for (?:all|both|the (?:two|three|four|five|set|pair))"
    r"(?: (?:of them|volumes|books|items))?|合計(?:で|は|金額は)?|合わせて(?:も)?|総額(?:は)?|計|小計(?:は)?|"
    r"お支払い(?:金額|額)?(?:は)?)" + _END)
_TOTAL_AFTER = re.compile(r"^\s*(?:in total|total\b|altogether|for (?:all|both|the (?:two|three|four|five|set))|combined|"
                          r"together|refund|back to (?:you|your)|の合計|合計|の総額|のお支払い|の返金|を返金)")
_FEE_BEFORE = re.compile(
    r"(?:shipping(?: fee| cost| charge| rate)?(?: is| of| costs?| adds?| will be| would be| runs)?|"
    r"delivery(?: fee| charge)?(?: is| of)?|(?:label|restocking|handling|service|cod|processing|wrapping|gift[- ]wrap(?:ping)?|"
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
_MARKUP = re.compile(r"[*_`]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？\n]")
_PARENTHETICAL_START = re.compile(r"^\s*[(（][^()（）]{0,12}[)）]")

ROLES = ("unit", "list", "sale", "total", "difference", "discount", "threshold", "fee", "budget", "shopper", "term",
         "unknown")


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
    # Only the 48 characters before the amount are read, so only a sentence end among them matters
    # (searching from the text's start made reading quadratic in the answer's length).
    window = max(0, price.start - 49)
    ends = list(_SENTENCE_END.finditer(norm, window, price.start))
    sentence_start = ends[-1].end() if ends else 0
    before = _MARKUP.sub("", norm[max(sentence_start, price.start - 48):price.start]).rstrip()
    after = _MARKUP.sub("", norm[price.end:price.end + 40])
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


# --------------------------------------------------------------------------------------------------
# Amounts in play and one step of arithmetic
# --------------------------------------------------------------------------------------------------


def tolerance(currency: str) -> float:
    """Half the smallest coin plus rounding: a result may be rounded or truncated to the coin."""
    return 1.0 if currency == "JPY" else 0.011


def close(a: float, b: float, currency: str) -> bool:
    return abs(a - b) <= tolerance(currency)


@dataclass
class AmountsInPlay:
    """Money amounts and plain numbers an answer's arithmetic may start from: catalog prices of the
    products in play, every amount and number in the knowledge, the page, the conversation and the
    answer itself."""

    money: dict[str, set[float]] = field(default_factory=lambda: {"USD": set(), "JPY": set()})
    numbers: set[float] = field(default_factory=set)  # counts, percents, points, rates
    percents: set[float] = field(default_factory=set)

    def add_text(self, text: str) -> None:
        for q in extract_quantities(text or ""):
            if q.unit in ("usd", "jpy"):
                self.money[q.unit.upper()].add(round(q.value, 2))
            elif q.unit == "percent":
                self.percents.add(q.value)
            elif q.unit in ("", "item"):
                self.numbers.add(q.value)

    def add_value(self, value: object, currency: str | None) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            return
        if currency in self.money:
            self.money[currency].add(round(float(value), 2))
        self.numbers.add(float(value))

    def add_structure(self, data: object, currency: str | None) -> None:
        """Numbers of a JSON-like structure (the page context: a cart, an order)."""
        if isinstance(data, dict):
            for value in data.values():
                self.add_structure(value, currency)
        elif isinstance(data, list):
            for value in data:
                self.add_structure(value, currency)
        elif isinstance(data, str):
            self.add_text(data)
        else:
            self.add_value(data, currency)

    def with_amounts(self, prices: Iterable[Price]) -> "AmountsInPlay":
        """A copy with more amounts (the answer's others, when one of its amounts is checked)."""
        copy = AmountsInPlay(money={c: set(v) for c, v in self.money.items()}, numbers=set(self.numbers),
                             percents=set(self.percents))
        for price in prices:
            copy.money[price.currency].add(round(price.amount, 2))
        return copy

    @cached_property
    def _factors(self) -> set[float]:
        """Multipliers of one step: counts (up to 20), 1 - p and p of every percent, per-100 rates."""
        counts = {n for n in self.numbers if 0 < n <= 20 and float(n).is_integer()} | set(range(1, 11))
        out = {float(c) for c in counts}
        for p in self.percents:
            out |= {1 - p / 100, p / 100}
        out |= {1 / 100, 1 / 10}
        return out

    def explains_as_total(self, amount: float, currency: str) -> str | None:
        """Whether ``amount`` is a few copies of one amount in play or a sum of two to four of them:
        a total that its words did not mark as one."""
        pool = sorted(self.money.get(currency, set()))
        for a in pool:
            for count in range(2, 11):
                if close(a * count, amount, currency):
                    return f"{count} x {a:g}"
        for size in (2, 3, 4):
            for combo in itertools.combinations(pool, size):
                if close(sum(combo), amount, currency):
                    return " + ".join(f"{x:g}" for x in combo)
        return None

    def explains(self, amount: float, currency: str) -> str | None:
        """How one step of arithmetic over the amounts in play gives ``amount``, or None."""
        pool = sorted(self.money.get(currency, set()))
        if not pool:
            return None
        for a in pool:
            if close(a, amount, currency):
                return f"{a:g} is in play"
        for a in pool:
            for f in self._factors:
                if close(a * f, amount, currency):
                    return f"{a:g} x {f:g}"
            for n in self.numbers:
                if n > 1 and close(a / n, amount, currency):
                    return f"{a:g} / {n:g}"
        for a, b in itertools.combinations(pool, 2):
            if close(b - a, amount, currency):
                return f"{b:g} - {a:g}"
        # Sums of up to four amounts, each possibly taken a few times ("all four at $9.99").
        for size in (2, 3, 4):
            for combo in itertools.combinations_with_replacement(pool, size):
                if close(sum(combo), amount, currency):
                    return " + ".join(f"{x:g}" for x in combo)
        # A sum less a discount or plus a fee: a + b - c, a + b + c already above.
        for a, b in itertools.combinations_with_replacement(pool, 2):
            for c in pool:
                if c not in (a, b) and close(a + b - c, amount, currency):
                    return f"{a:g} + {b:g} - {c:g}"
        # A discounted sum: (a + b) x (1 - p).
        for a, b in itertools.combinations_with_replacement(pool, 2):
            for p in self.percents:
                if close((a + b) * (1 - p / 100), amount, currency):
                    return f"({a:g} + {b:g}) x (1 - {p:g}%)"
        return None


def discounted(base: float, percent: float, currency: str) -> list[float]:
    """The prices a ``percent`` discount of ``base`` may be written as: rounded, truncated or rounded
    up to the coin."""
    exact = base * (1 - percent / 100)
    coin = 1.0 if currency == "JPY" else 0.01
    return [round(exact / coin) * coin, math.floor(exact / coin + 1e-9) * coin, math.ceil(exact / coin - 1e-9) * coin]


# --------------------------------------------------------------------------------------------------
# Written-out arithmetic: "528円＋770円", "$45 minus 15% is $38.25", "$9.99 x 3 = $29.97"
# --------------------------------------------------------------------------------------------------

_OPERATOR = re.compile(r"^\s*(\+|＋|plus|and|-|−|–|minus|less|x|×|\*|times)\s*$")
_RESULT = re.compile(r"^\s*(?:=|＝|is|comes to|makes|gives|→|->|equals|で|は|ちょうど|、)?\s*$")


@dataclass(frozen=True)
class WrittenArithmetic:
    result: Price
    expected: float
    expression: str
    start: int  # where the expression's terms begin and end in the normalized text
    end: int

    @property
    def correct(self) -> bool:
        return close(self.expected, self.result.amount, self.result.currency)


def written_arithmetic(norm: str, prices: list[Price]) -> list[WrittenArithmetic]:
    """Expressions the answer writes out in one clause: amounts joined by + / - / x (with counts or
    percents), and the amount they are said to make (before them, "1,298円（528円＋770円）", or after,
    "$45 minus 15% is $38.25")."""
    out: list[WrittenArithmetic] = []
    by_start = sorted(prices, key=lambda p: p.start)
    for i, first in enumerate(by_start):
        terms = [first.amount]
        ops: list[str] = []
        j = i
        text = first.text
        while j + 1 < len(by_start):
            gap = _MARKUP.sub("", norm[by_start[j].end:by_start[j + 1].start])
            op = _OPERATOR.match(gap)
            if not op or by_start[j + 1].currency != first.currency:
                break
            ops.append(op.group(1))
            terms.append(by_start[j + 1].amount)
            text += f" {op.group(1)} {by_start[j + 1].text}"
            j += 1
        end = by_start[j].end
        # "$45 minus 15%": a percentage taken off the last term.
        percent = re.match(r"^\s*(?:minus|less|-|−|off)\s*(\d+(?:\.\d+)?)\s*(?:%|percent)", norm[end:end + 20])
        if percent:
            value = terms[-1] * (1 - float(percent.group(1)) / 100)
            terms[-1] = value
            end += percent.end()
            text += f" minus {percent.group(1)}%"
        elif not ops:
            continue
        expected = terms[0]
        for op, term in zip(ops, terms[1:]):
            if op in ("+", "＋", "plus", "and"):
                expected += term
            elif op in ("x", "×", "*", "times"):
                expected *= term
            else:
                expected -= term
        if ops and all(op == "and" for op in ops):
            continue  # "$11.99 and $12.99": two prices, not a sum
        result = None
        after = by_start[j + 1] if j + 1 < len(by_start) else None
        if after is not None and _RESULT.match(_MARKUP.sub("", norm[end:after.start])):
            result = after
        before = by_start[i - 1] if i > 0 else None
        if result is None and before is not None and re.fullmatch(r"\s*[(（]\s*", norm[before.end:first.start]):
            result = before
        if result is not None and result.currency == first.currency:
            out.append(WrittenArithmetic(result, expected, text, first.start, end))
    return out


# --------------------------------------------------------------------------------------------------
# Reading and checking the amounts of an answer
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Amount:
    price: Price
    role: str
    items: tuple[CatalogItem, ...]  # the products a unit, list or sale price is attributed to


@dataclass
class AmountReport:
    """What the checks found about the answer's amounts."""

    agree: list[str] = field(default_factory=list)  # product prices that match the catalog
    contradict: list[tuple[Amount, str]] = field(default_factory=list)  # a product price the catalog contradicts
    arithmetic_errors: list[str] = field(default_factory=list)  # a sale price or written sum that does not follow
    explained: list[str] = field(default_factory=list)  # derived amounts one step of arithmetic gives
    unexplained: list[tuple[Amount, str]] = field(default_factory=list)  # amounts nothing explains: hints for the judge
    loose: list[str] = field(default_factory=list)  # product prices with no product to compare with
    amounts: list[Amount] = field(default_factory=list)

    @property
    def product_prices(self) -> list[Amount]:
        return [a for a in self.amounts if a.role in ("unit", "list", "sale")]


def amounts_in_play(case, reading) -> AmountsInPlay:  # noqa: ANN001 - TestCase and claims.Reading (no import cycle)
    """Every amount and number an answer's arithmetic may start from (see ``AmountsInPlay``)."""
    pool = AmountsInPlay()
    for item in reading.items(reading.in_play):
        for key, value in item.model_dump(exclude_none=True).items():
            if "price" in key:
                pool.add_value(value, item.currency)
    for text in (*case.retrieved_chunks, case.query, *(m.content for m in case.conversation_history)):
        pool.add_text(text)
    currency = "JPY" if case.is_japanese else "USD"
    pool.add_structure(case.page_context.model_dump(exclude_none=True), currency)
    return pool


def _percents_for(case, reading, price: Price, items: tuple[CatalogItem, ...]) -> tuple[set[float], set[float]]:  # noqa: ANN001
    """Discounts (percent, amount) that apply to a price: stated in its sentence or line, in the
    shopper's question, or in the knowledge about its product (any knowledge when it names no product)."""
    from fmquality.language.catalog_index import index_for  # noqa: PLC0415 - the index imports models only

    start, end = reading.spans[reading.sentence_of(price.start)]
    line_start = reading.norm.rfind("\n", 0, price.start) + 1
    line_end = reading.norm.find("\n", price.end)
    local = reading.norm[min(start, line_start):max(end, line_end if line_end != -1 else len(reading.norm))]
    texts = [local, case.query]
    asins = {i.asin for i in items}
    index = index_for(case.catalog) if case.catalog else None
    for chunk in case.retrieved_chunks:
        named = set(index.named(chunk)) if index is not None else set()
        if not named or named & asins:
            texts.append(chunk)
    percents: set[float] = set()
    amounts: set[float] = set()
    for text in texts:
        norm = normalize(text)
        for q in extract_quantities(text):
            if q.unit == "percent":
                percents.add(q.value)
            elif q.unit == price.currency.lower() and _DISCOUNT_AFTER.match(_MARKUP.sub("", norm[q.end:q.end + 12])):
                amounts.add(q.value)
    return percents, amounts


def check_amounts(case, reading, claims) -> AmountReport:  # noqa: ANN001 - TestCase, claims.Reading, [PriceClaim]
    """Check what can be checked of the answer's amounts (``claims``: each with its role and products;
    see the module docstring)."""
    report = AmountReport()
    prices = [c.price for c in claims]
    pool = amounts_in_play(case, reading)
    knowledge_amounts = {q.value for chunk in case.retrieved_chunks for q in extract_quantities(chunk)}
    written = written_arithmetic(reading.norm, prices)
    for arithmetic in written:
        if arithmetic.correct:
            report.explained.append(f"{arithmetic.result.text} = {arithmetic.expression}")
        else:
            report.arithmetic_errors.append(f"{arithmetic.expression} makes {arithmetic.expected:,.2f}, "
                                            f"the answer says {arithmetic.result.text}")
    results = {a.result.start for a in written}
    derived: list = []  # amounts to explain by arithmetic, once the product prices are read
    for claim in claims:
        price, role, items = claim.price, claim.role, claim.items
        report.amounts.append(Amount(price, role, items))
        if price.start in results or role in ("threshold", "fee", "budget", "shopper", "term"):
            continue  # written arithmetic is checked above; policy numbers and the shopper's own are read elsewhere
        if role in ("unit", "list"):
            if not items:
                report.loose.append(price.text)
            elif any(close(p, price.amount, price.currency) or (price.approx and abs(p - price.amount) <= 0.1 * p)
                     for i in items for p in item_prices(i)):
                report.agree.append(f"{price.text} = catalog price of {items[0].title}")
            elif price.amount in knowledge_amounts:
                report.agree.append(f"{price.text} for {items[0].title} is the retrieved knowledge's (a promotion)")
            elif (how := pool.explains_as_total(price.amount, price.currency)) is not None:
                derived.append(claim)  # "¥1,056" beside a ¥528 volume: two copies, a total the words did not mark
            else:
                shown = ", ".join(f"{i.title}: {i.price:g} {i.currency}" for i in items)
                report.contradict.append((Amount(price, role, items), f"{price.text} stated, catalog says {shown}"))
            continue
        if role in ("sale", "total"):
            verdict = _discount_arithmetic(case, reading, claim, claims, pool)
            if verdict is not None:
                (report.agree if verdict[0] else report.arithmetic_errors).append(verdict[1])
                continue
        derived.append(claim)
    # A derived amount is explained by one step from the amounts in play, or from the answer's own
    # amounts that are themselves the evidence's or explained (a total from an explained subtotal),
    # never from one another in a circle.
    grounded = pool.with_amounts(c.price for c in claims if c.role in ("unit", "list", "fee", "threshold", "shopper", "term")
                                 or c.price.start in results)
    open_claims = list(derived)
    progress = True
    while open_claims and progress:
        progress = False
        for claim in list(open_claims):
            how = grounded.explains(claim.price.amount, claim.price.currency)
            if how:
                report.explained.append(f"{claim.price.text} ({claim.role}) = {how}")
                grounded = grounded.with_amounts([claim.price])
                open_claims.remove(claim)
                progress = True
    for claim in open_claims:
        if claim.role == "sale" and not claim.items:
            report.loose.append(claim.price.text)
        else:
            report.unexplained.append((Amount(claim.price, claim.role, claim.items),
                                       f"{claim.price.text} ({claim.role}): no sum, difference or discount of the "
                                       "amounts in play gives it"))
    return report


def _discount_arithmetic(case, reading, claim, claims, others: AmountsInPlay) -> tuple[bool, str] | None:  # noqa: ANN001
    """A sale price or a discounted total checked against its base less the discount in play: (True,
    why) when it follows, (False, why) when base and discount are both known and it does not follow
    from them or from any other step of arithmetic, None when there is nothing to compute with."""
    price, items = claim.price, claim.items
    if claim.role == "sale" and any(close(p, price.amount, price.currency) for i in items for p in item_prices(i)):
        return True, f"{price.text} = catalog price of {items[0].title}"
    percents, fixed = _percents_for(case, reading, price, items)
    line_start = reading.norm.rfind("\n", 0, price.start) + 1
    sentence_start = reading.spans[reading.sentence_of(price.start)][0]
    bases = {c.price.amount for c in claims if c.price.currency == price.currency and c.role in ("unit", "list", "total", "shopper")
             and min(line_start, sentence_start) <= c.price.start < price.start}
    if claim.role == "sale":
        bases |= {p for i in items for p in item_prices(i)}
    expected = {v for b in bases for pct in percents for v in discounted(b, pct, price.currency)}
    expected |= {b - d for b in bases for d in fixed}
    if any(close(v, price.amount, price.currency) for v in expected):
        return True, f"{price.text} follows from the discount stated for it"
    # An error only when the arithmetic was read completely: one base and one discount in play.
    if len(bases) != 1 or len(percents) + len(fixed) != 1 \
            or DISCOUNT_CONTEXT.search(reading.sentence(reading.sentence_of(price.start))) is None:
        return None
    if others.explains(price.amount, price.currency):
        return None
    shown = [f"{b:,g} less {pct:g}%" for b in sorted(bases) for pct in sorted(percents)]
    shown += [f"{b:,g} less {d:,g}" for b in sorted(bases) for d in sorted(fixed)]
    return False, f"{price.text} does not follow from {', '.join(shown)}"


def item_prices(item: CatalogItem) -> list[float]:
    """The catalog price plus any other price field the snapshot carries (sale_price, list_price)."""
    extra = [v for k, v in (item.model_extra or {}).items() if "price" in k and isinstance(v, (int, float))]
    return [item.price, *extra]
