"""References to an earlier list: "the second one", 「2つ目」, "the last one".

Claims read: which entry of the assistant's last list the shopper's ordinal points at
(``ordinal_reference``: the list's bulleted or numbered lines, each matched to the catalog item it
names, else the catalog items the turn names), and whether the answer is about that entry, about
another listed entry, or about none of them (``resolve_ordinal``). An entry that shares its name with
others cannot be told apart and is ignored.

Left to the judge: whether what the answer says of the entry is right or helpful; a list the
reading cannot match to the catalog.

``Reading.focus`` (``claims.reading``) uses the reference, so this module takes a reading as an
argument and does not import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmquality.domain.case import TestCase
from fmquality.language.catalog_index import distinct_words, index_for, told_apart, word_position
from fmquality.language.numbers import find_ordinal, text_currency
from fmquality.language.text import list_items, normalize

_LABEL_CUT = re.compile(r"\s[-–—:]\s|[:：(（$¥￥,、—–|]|\s-\s")


@dataclass(frozen=True)
class ListedEntry:
    position: int  # 1-based
    label: str
    asins: tuple[str, ...]  # the catalog item(s) the line names, empty when none


def listed_entries(case: TestCase, turn: str) -> list[ListedEntry]:
    """The items an assistant turn listed, in order: its bulleted or numbered lines (each matched to
    the catalog item it names), or else the catalog items it names, when there are several."""
    index = index_for(case.catalog)
    currency = text_currency(turn, case.is_japanese)
    lines = list_items(turn)
    if len(lines) >= 2:
        entries = []
        for position, line in enumerate(lines, start=1):
            mentions = index.mentions(line, currency)
            best = max(mentions, key=lambda m: (m.end - m.start, -m.start)) if mentions else None
            # A line that names a shared title, or none, is matched by the words that tell one listing
            # apart ("1. 完全版 1巻", "2. Special Edition").
            candidates = [case.catalog_by_asin()[a] for a in best.asins] if best else list(case.catalog)
            apart = told_apart(candidates, normalize(line))
            asins = tuple(i.asin for i in apart) if len(apart) == 1 or best else ()
            label = _LABEL_CUT.split(line.replace("*", "").strip())[0].strip()
            entries.append(ListedEntry(position, label, asins))
        return entries
    named = index.named(turn, currency)
    if len(named) >= 2:
        return [ListedEntry(i, a, (a,)) for i, a in enumerate(named, start=1)]
    return []


@dataclass(frozen=True)
class OrdinalReference:
    ordinal: int  # 1-based, -1 for "the last one"
    target: ListedEntry
    entries: list[ListedEntry]


def ordinal_reference(case: TestCase) -> OrdinalReference | None:
    """What "the second one" in the shopper's query points at in the assistant's last list."""
    ordinal = find_ordinal(case.query)
    if ordinal is None:
        return None
    for message in reversed(case.conversation_history):
        if message.role == "assistant":
            entries = listed_entries(case, message.content)
            if entries:
                if abs(ordinal) > len(entries):
                    return None
                return OrdinalReference(ordinal, entries[ordinal - 1] if ordinal > 0 else entries[-1], entries)
    return None


def _label_named(reading, entry: ListedEntry, entries: list[ListedEntry]) -> list[int]:  # noqa: ANN001
    """Where the answer names a listed entry: a mention of its catalog item that no other entry's item
    shares, or a word of its title that the other listed items' titles lack ("the full-colour one");
    its label when it has no item."""
    if entry.asins:
        others = {a for e in entries if e is not entry for a in e.asins}
        hits = [m.start for m in reading.mentions if set(m.asins) & set(entry.asins) and not set(m.asins) & others]
        listed = reading.items(tuple(dict.fromkeys(a for e in entries for a in e.asins)))
        words = set().union(*(distinct_words(listed).get(a, set()) for a in entry.asins)) if len(listed) > 1 else set()
        hits += [p for w in words if (p := word_position(w, reading.norm)) is not None]
        return sorted(hits)
    label = normalize(entry.label)
    return [m.start() for m in re.finditer(re.escape(label), reading.norm)] if len(label) >= 3 else []


def resolve_ordinal(reference: OrdinalReference, reading) -> tuple[str, list[str]]:  # noqa: ANN001 - a claims.reading.Reading (it imports this module)
    """("target", evidence) when the answer names the referenced entry first, ("other", ...) when it
    names another listed entry and not that one, ("both", ...) when it names another before it,
    ("none", ...) when it names none of them. An entry that shares its name with others (two volumes
    of a series) cannot tell them apart and is ignored."""
    def own(entry: ListedEntry) -> list[int]:
        shared = [e for e in reference.entries if e is not entry and set(e.asins) & set(entry.asins)]
        return [] if shared else _label_named(reading, entry, reference.entries)

    target_hits = own(reference.target)
    rivals = sorted(((min(own(e)), e) for e in reference.entries if e is not reference.target and own(e)),
                    key=lambda r: r[0])
    name = reference.target.label or ",".join(reference.target.asins)
    if not target_hits and rivals:
        rival = rivals[0][1]
        return "other", [f"the shopper referred to listed item {reference.target.position} ({name}); the answer is "
                         f"about item {rival.position} ({rival.label})"]
    if not target_hits:
        return "none", [f"the answer names none of the listed items; item {reference.target.position} ({name}) was meant"]
    if rivals and rivals[0][0] < min(target_hits):
        # Another listed item named first, the meant one after it: a comparison, or an answer about the
        # wrong one that mentions the right one. Which it is, is the judge's.
        rival = rivals[0][1]
        return "both", [f"the answer names listed item {rival.position} ({rival.label}) before item "
                        f"{reference.target.position} ({name}), the one meant"]
    return "target", [f"the reference resolves to listed item {reference.target.position} ({name})"]
