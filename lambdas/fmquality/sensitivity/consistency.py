"""Consistency operators: the answer contradicts itself, the item the shopper pointed at, or what the
assistant said in an earlier turn. Each contradiction is built from a statement the answer or the
conversation makes, so one of the two statements must be wrong."""

from __future__ import annotations

import re

from fmquality.domain.case import CatalogItem, TestCase
from fmquality.sensitivity.base import Context, Perturbed, answer, item_names, mentions_of, pick, with_response
from fmquality.sensitivity.factual import new_price, stock_statements
from fmquality.sensitivity.text import (format_money, money_in, quantities_in, replace_span, same_amount, sentences)

OPPOSITE_STOCK_EN = {"in_stock": "out of stock", "limited": "out of stock", "out_of_stock": "in stock",
                     "preorder": "in stock and ships today"}
OPPOSITE_STOCK_JA = {"in_stock": "在庫切れ", "limited": "在庫切れ", "out_of_stock": "在庫あり",
                     "preorder": "在庫ありですぐに発送可能"}


def _title(item: CatalogItem, japanese: bool) -> str:
    return (item.title_ja or item.title) if japanese else item.title


def _stock_sentence(item: CatalogItem, japanese: bool) -> str:
    if japanese:
        return f"なお、『{_title(item, True)}』は現在{OPPOSITE_STOCK_JA[item.availability]}です。"
    return f"Note that {_title(item, False)} is currently {OPPOSITE_STOCK_EN[item.availability]}."


YES = re.compile(r"^\W*(?:yes\b|yep\b|absolutely\b|sure\b|はい|もちろん|可能です|できます)", re.I)
NO = re.compile(r"^\W*(?:no\b|unfortunately\b|sorry\b|i'?m afraid\b|いいえ|申し訳|残念ながら|あいにく)", re.I)
REVERSAL = {("en", "yes"): "So, to be clear: no, that isn't possible.",
            ("en", "no"): "So, to be clear: yes, you can do that.",
            ("ja", "yes"): "つまり、ご希望の対応はいたしかねます。",
            ("ja", "no"): "つまり、問題なくご対応可能です。"}


def sentence_contradiction(case: TestCase, ctx: Context) -> Perturbed | None:
    """A sentence appended that states the opposite of one the answer makes: the availability it gives
    an item (read against the catalog), else the yes or no it opens with."""
    text, japanese = answer(case), case.is_japanese
    # (statement, the items it is about that the answer names): the contradiction names an item the
    # answer itself speaks of, so it is the answer against itself
    stated = []
    for start, _, cls, _ in stock_statements(case):
        sentence = next(s for s in sentences(text) if s.start <= start < s.end)
        items = [i for i in case.catalog if i.availability == cls and mentions_of(sentence.text, i)] or \
                [i for i in case.catalog if i.availability == cls and mentions_of(text, i)]
        if items:
            stated.append(items)
    if stated:
        item = pick(ctx, pick(ctx, stated))
        added = _stock_sentence(item, japanese)
        return Perturbed(with_response(case, _append(text, added, japanese)), f"appended: {added}")
    first = sentences(text)[0].text if text.strip() else ""
    polarity = "yes" if YES.search(first) else "no" if NO.search(first) else None
    if polarity is None:
        return None
    added = REVERSAL[("ja" if japanese else "en", polarity)]
    return Perturbed(with_response(case, _append(text, added, japanese)), f"opens with {polarity}; appended: {added}")


def _append(text: str, sentence: str, japanese: bool) -> str:
    return text.rstrip() + ("\n\n" if "\n\n" in text else ("" if japanese else " ")) + sentence


# ------------------------------------------------------------------ ordinals

_EN_AFTER = r"(?=\s+(?:one|item|option|book|title|edition|listed|choice|pick)\b|\s*[?.!,]|\s*$)"
ORDINALS = ((r"\b(?:first|1st)" + _EN_AFTER + r"|最初の|1番目|一番目|1つ目|一つ目|ひとつ目", 0),
            (r"\b(?:second|2nd)" + _EN_AFTER + r"|2番目|二番目|2つ目|二つ目|ふたつ目", 1),
            (r"\b(?:third|3rd)" + _EN_AFTER + r"|3番目|三番目|3つ目|三つ目|みっつ目", 2),
            (r"\b(?:fourth|4th)" + _EN_AFTER + r"|4番目|四番目|4つ目", 3),
            (r"\blast" + _EN_AFTER + r"|最後の", -1))
_LIST_LINE = re.compile(r"^\s*(?:\d+[.)．、]|[-*•・])\s*(.+)$", re.M)


def listed_items(case: TestCase) -> list[tuple[str, CatalogItem | None]]:
    """The items of the last earlier assistant turn that lists several (its list lines), each with the
    catalog entry the line names (by name or by price) when there is one."""
    for message in reversed(case.conversation_history):
        if message.role != "assistant":
            continue
        lines = [m.group(1).strip() for m in _LIST_LINE.finditer(message.content)]
        if len(lines) >= 2:
            return [(line, _entry_of(line, case)) for line in lines]
    return []


def _entry_of(line: str, case: TestCase) -> CatalogItem | None:
    named = [i for i in case.catalog if mentions_of(line, i)]
    if len(named) == 1:
        return named[0]
    amounts = [m.value for m in money_in(line)]
    priced = [i for i in (named or case.catalog) if any(same_amount(i.price, a) for a in amounts)]
    return priced[0] if len(priced) == 1 else (named[-1] if named else None)


def _label(line: str) -> str:
    """A list line's own name for its item: before a price, a dash or a bracket."""
    return re.split(r"\s*(?:[（(]|[—―–-]\s|[:：]|\$|¥|\d[\d,]*円)", re.sub(r"\*\*|『|』", "", line))[0].strip()


def ordinal_neighbour(case: TestCase, ctx: Context) -> Perturbed | None:
    """The shopper points at an item of an earlier list ("the second one"); the answer's mentions of
    that item (its name, its list label, its price) are moved to the neighbouring item of the list."""
    items = listed_items(case)
    index = next((i for pattern, i in ORDINALS if re.search(pattern, case.query, re.I)), None)
    if not items or index is None or abs(index) > len(items) or index >= len(items):
        return None
    index %= len(items)
    neighbour = index + 1 if index + 1 < len(items) else index - 1
    (line, entry), (other_line, other_entry) = items[index], items[neighbour]
    text = answer(case)
    pairs: list[tuple[str, str]] = []
    if entry is not None and other_entry is not None and entry.asin != other_entry.asin:
        pairs += list(zip(item_names(entry), item_names(other_entry)))
        pairs.append(("PRICE", ""))
    label, other_label = _label(line), _label(other_line)
    if label and other_label and label != other_label:
        pairs.append((label, other_label))
    new = text
    for old, replacement in pairs:
        if old == "PRICE":
            for m in reversed(money_in(new)):
                if same_amount(m.value, entry.price):  # type: ignore[union-attr]
                    new = replace_span(new, m.start, m.end, format_money(other_entry.price, m))  # type: ignore[union-attr]
        elif old and old in new and old not in other_line:
            new = new.replace(old, replacement)
    if new == text:
        return None
    return Perturbed(with_response(case, new), f"item {index + 1} of the list answered as item {neighbour + 1}")


# ------------------------------------------------------------------ an earlier turn contradicted


def earlier_turn_contradicted(case: TestCase, ctx: Context) -> Perturbed | None:
    """What an earlier assistant turn stated, stated otherwise now: a number with its unit that the
    answer repeats is changed; else a catalog price or an availability the earlier turn gave is
    restated differently in an appended sentence."""
    earlier = "\n".join(m.content for m in case.conversation_history if m.role == "assistant")
    if not earlier:
        return None
    text, japanese = answer(case), case.is_japanese
    said = {(q.value, q.unit) for q in quantities_in(earlier)}
    repeated = [q for q in quantities_in(text) if (q.value, q.unit) in said]
    if repeated:
        q = pick(ctx, repeated)
        new = q.value + pick(ctx, [2, 3, 5, 7])
        return Perturbed(with_response(case, replace_span(text, q.start, q.end, str(new))),
                         f"earlier turn's {q.value} {q.unit} restated as {new} {q.unit}")
    # an amount of the earlier turn is a catalog entry's price when the entry is named there, or when it
    # is the only entry at that price
    priced = [(i, m) for i in case.catalog for m in money_in(earlier) if same_amount(m.value, i.price)
              and (mentions_of(earlier, i) or sum(same_amount(m.value, o.price) for o in case.catalog) == 1)]
    if priced:
        item, money = pick(ctx, priced)
        value = new_price(item.price, item.currency, [i.price for i in case.catalog], ctx)
        amount = format_money(value, money)
        added = (f"なお、『{_title(item, True)}』は{amount}です。" if japanese else f"By the way, {_title(item, False)} is {amount}.")
        return Perturbed(with_response(case, _append(text, added, japanese)), f"earlier price restated: {added}")
    stocked = [i for i in case.catalog if mentions_of(earlier, i) and i.availability in OPPOSITE_STOCK_EN]
    if stocked and re.search(r"stock|sold out|pre-?order|在庫|予約|品切れ", earlier, re.I):
        item = pick(ctx, stocked)
        added = _stock_sentence(item, japanese)
        return Perturbed(with_response(case, _append(text, added, japanese)), f"earlier availability restated: {added}")
    return None
