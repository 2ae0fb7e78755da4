"""Arithmetic over the amounts of a case: the amounts in play, one step of arithmetic over them, and
arithmetic the answer writes out.

Claims read: expressions written in one clause ("528円＋770円", "$45 minus 15% is $38.25", "$9.99 x
3 = $29.97") with the amount they are said to make (``written_arithmetic``). Used to check amounts:
an amount is *explained* when one step over the amounts in play gives it (``AmountsInPlay.explains``:
a sum of a few, a difference, a percentage of one, a multiple by a count, a conversion).

Left to the judge: an amount nothing explains is a hint, never a contradiction: the checks cannot
tell an invented number from a step they do not model.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from fmquality.language.numbers import Price, extract_quantities
from fmquality.language.text import strip_markup

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

    @cached_property
    def _copies(self) -> list[int]:
        """How many copies a total may be of one amount: a few, or a count in play ("complete in 12 volumes")."""
        return sorted({*range(2, 11), *(int(n) for n in self.numbers if float(n).is_integer() and 10 < n <= 100)})

    def explains_as_total(self, amount: float, currency: str) -> str | None:
        """Whether ``amount`` is a few copies of one amount in play or a sum of two to four of them:
        a total that its words did not mark as one."""
        pool = sorted(self.money.get(currency, set()))
        for a in pool:
            for count in self._copies:
                if close(a * count, amount, currency):
                    return f"{count} x {a:g}"
        for size in (2, 3, 4):
            # With repeats: two volumes at one price and a third at another ($9.99 + $9.99 + $11.99).
            for combo in itertools.combinations_with_replacement(pool, size):
                if close(sum(combo), amount, currency):
                    return " + ".join(f"{x:g}" for x in combo)
        return None

    def derives(self, amount: float, currency: str) -> bool:
        """Whether ``amount`` is what one step makes of other amounts in play: a difference ("あと
        140円": 3,000円 − 2,860円), a percentage of one ("10% on $60 → $6.00 off") or one less a
        percentage ($54.00)."""
        pool = self.money.get(currency, set())
        return any(close(b - a, amount, currency) for a in pool for b in pool if b > a) or any(
            close(a * p / 100, amount, currency) or close(a * (1 - p / 100), amount, currency)
            for a in pool for p in self.percents if 0 < p < 100)

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

# An operator between two amounts of one line: a dash that opens the next line is a bullet, not a minus.
_OPERATOR = re.compile(r"^[^\S\n]*(\+|＋|plus|and|-|−|–|minus|less|x|×|\*|times)[^\S\n]*$")
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
        if i and by_start[i - 1].currency == first.currency \
                and _OPERATOR.match(strip_markup(norm[by_start[i - 1].end:first.start])):
            continue  # the tail of a longer expression ("$11.99 + $11.99 + $21.99"), read from its first term
        terms = [first.amount]
        ops: list[str] = []
        j = i
        text = first.text
        while j + 1 < len(by_start):
            gap = strip_markup(norm[by_start[j].end:by_start[j + 1].start])
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
        # "2,160円 − 216円（10%）＝ 1,944円": a bracketed note on the last term before the result.
        if after is not None and _RESULT.match(re.sub(r"^\s*[(（][^()（）]{0,20}[)）]", "", strip_markup(norm[end:after.start]))):
            result = after
        before = by_start[i - 1] if i > 0 else None
        if result is None and before is not None and re.fullmatch(r"\s*[(（]\s*", norm[before.end:first.start]):
            result = before
        if result is not None and result.currency == first.currency:
            out.append(WrittenArithmetic(result, expected, text, first.start, end))
    return out
