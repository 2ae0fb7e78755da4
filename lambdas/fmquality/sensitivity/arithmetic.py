"""Arithmetic operators: an amount the answer computed from the evidence (a total of catalog prices, a
fee added, a difference; a discounted price or a saving at a percentage the answer or the knowledge
states), recomputed wrong. The stated result then no longer follows from the stated inputs."""

from __future__ import annotations

from itertools import combinations

from fmquality.domain.case import TestCase
from fmquality.sensitivity.base import Context, Perturbed, answer, pick, with_response
from fmquality.sensitivity.text import Money, format_money, money_in, quantities_in, replace_span, same_amount


def _addends(case: TestCase, stated: list[Money], currency: str) -> list[float]:
    """The amounts a total may be made of: the catalog prices and every other amount of the answer and
    the knowledge in that currency."""
    values = [i.price for i in case.catalog if i.currency == currency]
    values += [m.value for m in stated if m.currency == currency]
    values += [m.value for c in case.retrieved_chunks for m in money_in(c) if m.currency == currency]
    out: list[float] = []
    for v in values:
        if v > 0 and not any(same_amount(v, o) for o in out):
            out.append(v)
    return out


def computed_totals(case: TestCase) -> list[tuple[Money, str]]:
    """Amounts of the answer that are a sum (2 to 4 distinct amounts, or one times 2..10) or a
    difference of the evidence's amounts, and no catalog price themselves."""
    stated = money_in(answer(case))
    found = []
    for m in stated:
        if any(same_amount(m.value, i.price) for i in case.catalog):
            continue
        pool = [v for v in _addends(case, stated, m.currency) if not same_amount(v, m.value)]
        how = None
        for size in (2, 3, 4):
            for combo in combinations(pool[:12], size):
                if same_amount(sum(combo), m.value):
                    how = " + ".join(f"{v:g}" for v in combo)
                    break
            if how:
                break
        for v in pool:
            for n in range(2, 11):
                if not how and same_amount(v * n, m.value):
                    how = f"{n} x {v:g}"
        for a, b in combinations(pool, 2):
            if not how and same_amount(abs(a - b), m.value):
                how = f"{max(a, b):g} - {min(a, b):g}"
        if how:
            found.append((m, how))
    return found


def _wrong(value: float, currency: str, ctx: Context, avoid: list[float]) -> float:
    """``value`` moved by a few dollars (a few hundred yen), to an amount none of ``avoid`` (the
    evidence's amounts) is, so the wrong result is not some other right one."""
    steps = [1.0, 2.0, 3.0, 5.0, 7.0] if currency == "USD" else [100.0, 200.0, 300.0, 500.0]
    ctx.rng.shuffle(steps)
    for step in steps:
        for new in ((value + step, value - step) if ctx.rng.random() < 0.5 else (value - step, value + step)):
            if new > 0 and not any(same_amount(new, a) for a in avoid):
                return round(new, 2)
    return round(value * 2, 2)


def _avoid(case: TestCase) -> list[float]:
    text = answer(case) + "\n" + "\n".join(case.retrieved_chunks)
    return [i.price for i in case.catalog] + [m.value for m in money_in(text)]


def _restated_wrong(case: TestCase, ctx: Context, found: list[tuple[Money, str]], what: str) -> Perturbed | None:
    """One of the ``found`` amounts the answer works out, stated as a value no evidence or step gives."""
    if not found:
        return None
    money, how = pick(ctx, found)
    text = answer(case)
    rendered = format_money(_wrong(money.value, money.currency, ctx, _avoid(case)), money)
    return Perturbed(with_response(case, replace_span(text, money.start, money.end, rendered)),
                     f"{what} {text[money.start:money.end]} ({how}) stated as {rendered}")


def wrong_total(case: TestCase, ctx: Context) -> Perturbed | None:
    return _restated_wrong(case, ctx, computed_totals(case), "computed amount")


def discounted_amounts(case: TestCase) -> list[tuple[Money, str]]:
    """Amounts of the answer equal to a price less a stated percentage, or to the saving itself."""
    text = answer(case)
    percents = {q.value for q in quantities_in(text + "\n" + "\n".join(case.retrieved_chunks))
                if q.unit == "percent" and 0 < q.value < 100}
    stated = money_in(text)
    bases = _addends(case, stated, "USD") + _addends(case, stated, "JPY")
    found = []
    for m in stated:
        if any(same_amount(m.value, i.price) for i in case.catalog):
            continue
        how = None
        for base in bases:
            for p in sorted(percents):
                for result, name in ((base * (100 - p) / 100, "sale price"), (base * p / 100, "saving")):
                    rounded = (round(result, 2),) if m.currency == "USD" else (float(int(result)), float(round(result)))
                    if not how and any(same_amount(r, m.value) for r in rounded) and not same_amount(base, m.value):
                        how = f"{name}: {base:g} at {p}%"
        if how:
            found.append((m, how))
    return found


def wrong_discount(case: TestCase, ctx: Context) -> Perturbed | None:
    return _restated_wrong(case, ctx, discounted_amounts(case), "discounted amount")
