"""One text of a case read once: normalized text, sentence spans, the catalog products it names, and
which product a statement at a position is about.

Every kind of claim is read over a ``Reading``, so a number or a status is only ever compared with
the catalog when it was attributed to a product (``attach``): the nearest product named before it in
its sentence or list line, a card's header, the product "it" refers back to, every product for "both"
and "all", the only product in play, the page's product. The claims themselves live beside it:
prices and stock in ``claims.commerce`` (money roles in ``claims.money``, arithmetic in
``claims.arithmetic``), policy numbers in ``claims.policy``, order facts in ``claims.orders``, list
references ("the second one") in ``claims.ordinals``, text addressed to the grader in
``claims.grader_address``.

Left to the judge: a statement the reading cannot attach to one product (several products in play,
none named near it) is attached to none, and no check compares it.

Read once per case: every dimension's checks and signals read the same answer, so they ask for it with
``reading_of(case)``; inside ``readings_for_one_case()`` (scoring one case opens it) the first ask
builds the ``Reading`` and the others share it. Outside a scope each ask builds its own.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property

from fmquality.claims.ordinals import ordinal_reference
from fmquality.language.attribution import reported_at
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.language.catalog_index import (Mention, distinct_words, index_for, last_word_position, products_in_play,
                                              title_keys, told_apart)
from fmquality.language.numbers import extract_prices, text_currency
from fmquality.language.text import is_list_line, normalize, segment_spans

_BACK_REFERENCE = re.compile(
    r"\b(it|it's|its|this one|that one|this title|this volume|this book|this series|this set|your copy|the book|"
    r"the volume|the series|the set)\b|こちら|この商品|この作品|この本|本作|同作|その作品|それ"
)
# A statement of the products in play other than the one being talked about.
_THE_OTHERS = re.compile(r"\bthe other (?:two|three|four|ones?|books?|titles?|picks?|volumes?|series)\b|\bthe others\b"
                         r"|\bthe rest\b|他の(?:2|二|3|三)?(?:作品|冊|つ|タイトル)|ほかの(?:2|二)?(?:作品|冊|つ)")
# A statement of every product named: "both are in stock", 「どちらも」.
COLLECTIVE = re.compile(r"\b(all|both|every|each of|all of them|they are|they're)\b|すべて|全て|どちらも|いずれも|どれも")


# A volume named by its number ("Vol. 2", 2巻); not a series' length (全3巻).
_VOLUME_LABEL = re.compile(r"\bvol(?:ume)?\.?\s*\d|(?<![全\d])\d+\s*巻")


class Reading:
    """One text of a case (the answer, by default) read once: normalized text, sentence and list-line
    spans, catalog products named, and which product a statement at a position is about."""

    def __init__(self, case: TestCase, text: str | None = None) -> None:
        self.case = case
        self.text = case.response or "" if text is None else text
        self.norm = normalize(self.text)
        self.spans = segment_spans(self.text)
        self.by_asin = case.catalog_by_asin()
        self.currency = text_currency(self.text, case.is_japanese)
        self.mentions: list[Mention] = index_for(case.catalog).mentions(self.text, self.currency) if case.catalog else []

    @cached_property
    def focus(self) -> str | None:
        """The product the shopper asked about: the one "the second one" points at, else the one the
        query names, else the page's product."""
        reference = ordinal_reference(self.case)
        if reference is not None and len(reference.target.asins) == 1:
            return reference.target.asins[0]
        named = index_for(self.case.catalog).named(self.case.query) if self.case.catalog else []
        if len(named) == 1:
            return named[0]
        return self.case.page_context.current_asin if self.case.page_context.current_asin in self.by_asin else None

    @cached_property
    def in_play(self) -> list[str]:
        """The products the case concerns (named anywhere in it, on the page or expected): the rest
        of a catalog snapshot is the store's shelf, not part of this conversation."""
        if not self.case.catalog:
            return []
        named = products_in_play(self.case)
        # "the second one" can point at a listing no text names in full ("2. Deluxe Hardcover — $24.99").
        return named + [self.focus] if self.focus and self.focus not in named else named

    @cached_property
    def _shelf_siblings(self) -> list[CatalogItem]:
        """Listings of the case's catalog that no text names in full but that share a title with a
        product in play (another volume, another edition): what "Vol. 14" or "the paperback" can mean."""
        in_play = set(self.in_play)
        keys = set().union(*(title_keys(self.by_asin[a]) for a in in_play if a in self.by_asin))
        return [i for i in self.case.catalog if i.asin not in in_play and keys & title_keys(i)]

    @cached_property
    def products(self) -> list[str]:
        """ASINs named, in order of first mention."""
        return list(dict.fromkeys(a for m in self.mentions for a in m.asins))

    def sentence(self, index: int) -> str:
        start, end = self.spans[index]
        return self.norm[start:end]

    @cached_property
    def _span_starts(self) -> list[int]:
        return [start for start, _end in self.spans]

    def _span_holding(self, pos: int) -> int | None:
        """The sentence whose span holds ``pos`` (spans are ordered and disjoint: found by bisection,
        so reading stays linear in the answer's length)."""
        index = bisect_right(self._span_starts, pos) - 1
        return index if index >= 0 and pos < self.spans[index][1] else None

    def sentence_of(self, pos: int) -> int:
        index = self._span_holding(pos)
        return len(self.spans) - 1 if index is None else index

    def reported(self, pos: int) -> bool:
        """Whether what is said at ``pos`` is attributed to another source (``language.attribution``)."""
        index = self.sentence_of(pos)
        start = self.spans[index][0]
        return reported_at(self.sentence(index), pos - start)

    @cached_property
    def _mentions_by_sentence(self) -> dict[int, list[Mention]]:
        grouped: dict[int, list[Mention]] = {}
        for mention in self.mentions:
            index = self._span_holding(mention.start)
            if index is not None:
                grouped.setdefault(index, []).append(mention)
        return grouped

    def mentions_in(self, index: int) -> list[Mention]:
        return self._mentions_by_sentence.get(index, [])

    def items(self, asins: tuple[str, ...] | list[str]) -> list[CatalogItem]:
        return [self.by_asin[a] for a in asins if a in self.by_asin]

    def attach(self, pos: int) -> list[CatalogItem]:
        """The catalog item(s) a statement at ``pos`` is about: the nearest product named before it
        in the same sentence or list line (else the nearest after it); for a card's follow-up line
        the product of the line above; for a sentence that refers back ("it", "this volume", "こちら")
        the product of the sentence before; for "all"/"both" every product named; else the only
        product in play, or the product on the page. Several items when the name is shared by
        several listings (two editions of one title)."""
        if not self.spans:
            return []
        cell = self._table_cell(pos)
        if cell is not None:
            return cell
        index = self.sentence_of(pos)
        others = self._the_others(pos, index)
        if others is not None:
            return others
        inside = self.mentions_in(index)
        if inside:
            before = [m for m in inside if m.end <= pos]
            if not before and len(self.in_play) > 1 and (near := self._nearest_told_apart(pos, index)):
                return near  # "the standard volumes are $12.99, the Deluxe Hardcover $29.99"
            nearest = max(before, key=lambda m: m.end) if before else min(inside, key=lambda m: m.start)
            if before and len(self.in_play) > 1 and _VOLUME_LABEL.search(self.norm[nearest.end:pos]):
                # "Vol. 1 at $12.99 plus Vol. 2 at $10.49": another listing's volume after the last title.
                since = self._nearest_told_apart(pos, index, since=nearest.end)
                if since and not {i.asin for i in since} & set(nearest.asins):
                    return since
            return self._told_apart(self.items(nearest.asins), index)
        collective, refers_back = self._sentence_cues(index)
        if collective and len(self.products) > 1:
            return self.items(self.products)
        if refers_back and self.focus in self.products:
            # "Vol. 3: it's up for preorder": the word the sentence tells one listing apart by wins over "it".
            own = self._told_apart(self.items(self.in_play), index) if len(self.in_play) > 1 else []
            if len(own) == 1:
                return own
            # "it" is most likely what the shopper asked about, when the last sentence that names a
            # product names it too; when only others were named since, "it" may be either: no product.
            named_since = next((self.mentions_in(i) for i in range(index - 1, -1, -1) if self.mentions_in(i)), [])
            return self.items([self.focus]) if not named_since or any(self.focus in m.asins for m in named_since) else []
        candidates = self.items(self.in_play) + self._shelf_siblings
        if len(candidates) > 1:
            own = self._told_apart(candidates, index)
            if len(own) == 1:
                # "19巻は在庫がございます" under the cards, "Vol. 14 is in stock" of a series whose Vol. 15 was
                # asked about: the listing the sentence tells apart by its own word wins.
                return own
        for back in range(1, 7):
            if index - back < 0:
                break
            earlier = self.mentions_in(index - back)
            card = self._card_line(index, index - back)
            if earlier and (refers_back and back <= 2 or card):
                return self._told_apart(self.items(earlier[-1].asins), index)
            # A card runs on over its lines ("- Premise: ...", "- Vol. 1: $12.99") up to its header.
            if earlier or not (back <= 2 or self._card_line(index - back + 1, index - back)):
                break
        named = self._told_apart(self.items(self.in_play), index)
        if len(named) == 1 and len(self.in_play) > 1:
            return named  # "the special edition is a pre-order": the one listing that word names
        if len(self.in_play) > 1 and (near := self._nearest_told_apart(pos, index)):
            # Several listings told apart in one sentence ("the standard volumes are $12.99 each and the
            # Deluxe is $29.99"): the one whose own word comes last before the statement.
            return near
        if len(self.products) == 1:
            return self.items(self.products)
        if not self.products:
            current = self.by_asin.get(self.case.page_context.current_asin or "")
            if current is not None:
                return [current]
            if len(self.in_play) == 1:
                return self.items(self.in_play)
        return []

    def _the_others(self, pos: int, index: int) -> list[CatalogItem] | None:
        """For a statement about "the other two" or "the rest", the products in play other than the
        ones the sentence names and the one asked about; None when it says no such thing."""
        start = max(self.spans[index][0], pos - 40)
        others = _THE_OTHERS.search(self.norm[start:pos])
        if not others or any(start + others.end() <= m.start < pos for m in self.mentions):
            return None  # "Why not the others: *Dandadan* ($11.99)": the title named since says whose it is
        named = {a for m in self.mentions_in(index) for a in m.asins} | ({self.focus} if self.focus else set())
        return self.items([a for a in self.in_play if a not in named])

    @cached_property
    def _apart(self) -> dict[str, set[str]]:
        """The words that tell each product in play from the others (read once)."""
        return distinct_words(self.items(self.in_play))

    def _nearest_told_apart(self, pos: int, index: int, since: int | None = None) -> list[CatalogItem]:
        """The product(s) in play whose own word comes last before ``pos`` in its sentence (after
        ``since``, when given); [] for none."""
        before = self.norm[max(self.spans[index][0], since or 0):pos]
        best: tuple[int, list[CatalogItem]] = (-1, [])
        for item in self.items(self.in_play):
            for word in self._apart.get(item.asin, ()):
                at = last_word_position(word, before)
                if at is not None and at > best[0]:
                    best = (at, [item])
                elif at is not None and at == best[0]:
                    best[1].append(item)
        return best[1]

    def _table_cell(self, pos: int) -> list[CatalogItem] | None:
        """In a markdown table row, the product of the cell at ``pos``: the one its row label names,
        else the one its column header names (a listing the header's words tell apart: "Deluxe
        Hardcover"), else none. None when ``pos`` is not in a table row (the other rules apply)."""
        line_start = self.norm.rfind("\n", 0, pos) + 1
        line_end = self.norm.find("\n", pos)
        line_end = len(self.norm) if line_end < 0 else line_end
        if not self.norm[line_start:line_end].lstrip().startswith("|"):
            return None
        column = self.norm.count("|", line_start, pos)
        cells = self.norm[line_start:line_end].split("|")
        label_start = line_start + len(cells[0]) + 1
        label = [m for m in self.mentions if label_start <= m.start < label_start + len(cells[1])] if len(cells) > 1 else []
        if label and column > 1:
            return self.items(label[0].asins)
        header_start = line_start
        while header_start > 0:  # up to the table's first line
            previous = self.norm.rfind("\n", 0, header_start - 1) + 1
            if not self.norm[previous:header_start].lstrip().startswith("|"):
                break
            header_start = previous
        header_end = self.norm.find("\n", header_start)
        header = self.norm[header_start:len(self.norm) if header_end < 0 else header_end].split("|")
        if header_start == line_start or column >= len(header):
            return []
        offset = header_start + sum(len(c) + 1 for c in header[:column])
        named = [m for m in self.mentions if offset <= m.start < offset + len(header[column])]
        if named:
            return self.items(named[0].asins)
        told = told_apart(self.items(self.in_play), header[column])
        return told if len(told) == 1 and len(self.in_play) > 1 else []

    # Per sentence, read once however many amounts and statuses it holds (a sentence may be long).
    @cached_property
    def _cue_cache(self) -> dict[int, tuple[bool, bool]]:
        return {}

    @cached_property
    def _told_apart_cache(self) -> dict[tuple[tuple[str, ...], int], list[CatalogItem]]:
        return {}

    def _sentence_cues(self, index: int) -> tuple[bool, bool]:
        """Whether sentence ``index`` speaks of every product ("both", "all") and refers back ("it")."""
        if index not in self._cue_cache:
            sentence = self.sentence(index)
            self._cue_cache[index] = (bool(COLLECTIVE.search(sentence)), bool(_BACK_REFERENCE.search(sentence)))
        return self._cue_cache[index]

    def _told_apart(self, items: list[CatalogItem], index: int) -> list[CatalogItem]:
        key = (tuple(i.asin for i in items), index)
        if key not in self._told_apart_cache:
            self._told_apart_cache[key] = told_apart(items, self.sentence(index))
        return list(self._told_apart_cache[key])

    def _card_line(self, index: int, header: int) -> bool:
        """Whether sentence ``index`` continues the product card that starts at sentence ``header``: an
        indented line, or a plain line under a list line ("1. **Gyo**" / "Price: $10.00")."""
        start = self.spans[index][0]
        line_start = self.norm.rfind("\n", 0, start) + 1
        if line_start != start and self.norm[line_start:start].strip():
            return False  # a second sentence on the same line, not a card line
        line = self.norm[start:self.spans[index][1]]
        header_line = self.norm[self.spans[header][0]:self.spans[header][1]].strip("\n")
        return line[:1].isspace() or (is_list_line(header_line) and not is_list_line(line.strip("\n")))

    def attach_one_market(self, pos: int, currency: str | None = None) -> list[CatalogItem]:
        """Like ``attach``; when a title is sold in both markets, the listing in the sentence's
        currency (or ``currency``), else the text's."""
        items = self.attach(pos)
        if len({i.currency for i in items}) < 2:
            return items
        start, end = self.spans[self.sentence_of(pos)]
        stated = {p.currency for p in extract_prices(self.norm[start:end])}
        market = currency or (stated.pop() if len(stated) == 1 else self.currency)
        return [i for i in items if i.currency == market] or items


# The readings of the case being scored, by (id of the case object, text). The case is kept beside its
# reading so that its id cannot be reused by another object while the scope lasts. A context variable:
# each thread (and each process) scoring a case has its own.
_CaseReadings = dict[tuple[int, str | None], tuple[TestCase, Reading]]
_SCOPE: ContextVar[_CaseReadings | None] = ContextVar("fmquality_case_readings", default=None)


@contextmanager
def readings_for_one_case() -> Iterator[None]:
    """While the block runs, ``reading_of`` builds each text of a case once and shares it. Scopes
    nest: an inner one shares the outer one's readings."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def reading_of(case: TestCase, text: str | None = None) -> Reading:
    """``Reading(case, text)``, shared by every check and signal of the case being scored. A Reading
    depends only on the case and the text (its lazy parts included), so sharing it changes nothing
    but the time."""
    readings = _SCOPE.get()
    if readings is None:
        return Reading(case, text)
    key = (id(case), text)
    held = readings.get(key)
    if held is None or held[0] is not case:
        held = readings[key] = (case, Reading(case, text))
    return held[1]

