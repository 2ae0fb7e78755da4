"""Where catalog products are named in a text: one multi-pattern matcher over the catalog's title keys.

Every check that needs "which product is this sentence about" (prices, stock, authors, ordinals,
product cards) and the products-in-play resolution of a store-sized catalog go through
``CatalogIndex.mentions``. The matcher is an Aho-Corasick automaton (pyahocorasick) over the
title keys, so a lookup costs the length of the text, not the size of the catalog.

Keys and text are compared in the same "compact" form: NFKC, lower case, apostrophes dropped, every
run of other punctuation or space collapsed to one space ("Spy x Family!" and "spy × family" meet
only where their letters do). Positions of a ``Mention`` are in ``normalize(text)``, the coordinate
system of every other span in the core (sentences, prices, dates).

Listings that share a name (two editions of a title, two volumes of a series) are told apart by the
title words only one of them has (``told_apart``: 特装版, "Collector's Edition", "Vol. 12").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import ahocorasick

from fmquality.domain.case import CatalogItem
from fmquality.language.text import ENGLISH_STOPWORDS, has_japanese, normalize

if TYPE_CHECKING:
    from fmquality.domain.case import TestCase

_WORD_CHARS = r"0-9a-z\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f々ー"
_WORD_CHAR = re.compile(f"[{_WORD_CHARS}]")
_NON_WORD_RUN = re.compile(f"[^{_WORD_CHARS}]+")
_LATIN = re.compile(r"[0-9a-z]")
_ONE_CAPITALISED_WORD = re.compile(r"[A-Z][a-z]+")
_KATAKANA_ONLY = re.compile(r"[\u30a0-\u30ffー]+")
_KATAKANA = re.compile(r"[\u30a1-\u30faー]")

# Where an English title stops being the series name: "One Piece, Vol. 3", "Naruto: Box Set 1".
_SERIES_CUT = re.compile(r",|:|\(|（|\s[-–—]\s|\s+vol(?:ume)?s?\b\.?|\s+#\s*\d", re.IGNORECASE)
# "ベルセルク 1巻", "ベルセルク（1）", "Berserk 1": the series without its volume.
_VOLUME_TAIL = re.compile(r"[\s(（]*(?:第?\s*\d+\s*巻|\d+)\s*[)）]?\s*$")
# An edition or a format in brackets after the title: "(Collector's Edition)", "(Digital)", "（電子版）".
_EDITION_TAIL = re.compile(r"\s*[(（][^)）]*(?:edition|版|box|set|digital|e-?book|paperback|hardcover|hardback|"
                           r"電子|デジタル)[^)）]*[)）]\s*$", re.IGNORECASE)
# "Knights of Sidonia Master Edition Vol. 1", "ベルセルク 大型版 1": the series without its edition words.
_EDITION_WORDS = re.compile(r"\s+(?:[\w'’]+\s+)?(?:edition|omnibus|box set|complete set|collection)\b.*$"
                            r"|\s*(?:完全版|新装版|愛蔵版|特装版|大型版|フルカラー版|限定版|全\d+巻セット|\d+\s*[〜~-]\s*\d+巻セット)\s*.*$",
                            re.IGNORECASE)


def compact(text: str) -> tuple[str, list[int]]:
    """``normalize(text)`` with apostrophes dropped and other non-word runs collapsed to one space,
    plus, for every compact character, its position in ``normalize(text)``."""
    norm = normalize(text or "")
    out: list[str] = []
    positions: list[int] = []
    for index, char in enumerate(norm):
        if char == "'":
            continue
        if _WORD_CHAR.match(char):
            out.append(char)
            positions.append(index)
        elif out and out[-1] != " ":
            out.append(" ")
            positions.append(index)
    while out and out[-1] == " ":
        out.pop()
        positions.pop()
    return "".join(out), positions


@lru_cache(maxsize=262144)
def key_of(name: str) -> str:
    """``compact(name)[0]`` without the positions: one substitution instead of a loop per character,
    and cached, since a store-sized index computes a dozen keys per product and the volumes of a
    series share most of theirs."""
    return _NON_WORD_RUN.sub(" ", normalize(name or "").replace("'", "")).strip(" ")


def _long_enough(key: str) -> bool:
    # Two Japanese characters are a real name ("呪術"); a Latin name needs three letters ("Gyo").
    letters = key.replace(" ", "")
    return len(letters) >= 3 or (len(letters) == 2 and has_japanese(letters))


@lru_cache(maxsize=65536)
def _keys(asin: str, title: str, title_ja: str | None, title_romaji: str | None) -> frozenset[str]:
    names: set[str] = {asin}
    for name in (title, title_ja, title_romaji):
        if not name:
            continue
        # The tail patterns can only match a name ending in a bracket or a volume; most names do not.
        stem = _EDITION_TAIL.sub("", name) if name.rstrip().endswith((")", "）")) else name
        series = _SERIES_CUT.split(stem, maxsplit=1)[0]
        plain = _EDITION_WORDS.sub("", series)
        names |= {name, stem, series, _VOLUME_TAIL.sub("", stem), plain, _VOLUME_TAIL.sub("", plain)}
    return frozenset(k for k in (key_of(n) for n in names) if _long_enough(k))


def title_keys(item: CatalogItem) -> frozenset[str]:
    """Compact keys under which a text may name the item: its full titles (English, Japanese,
    romaji), their series names without volume, edition or subtitle, and its ASIN."""
    return _keys(item.asin, item.title, item.title_ja, item.title_romaji)


def _needs_capital(name: str) -> bool:
    """One capitalised English word ("Monster", "Nana") is a title only when written capitalised."""
    return bool(_ONE_CAPITALISED_WORD.fullmatch(unicodedata.normalize("NFKC", name).strip()))


@dataclass(frozen=True)
class Mention:
    asins: tuple[str, ...]  # every item named by exactly this span (two editions share a title)
    start: int  # in normalize(text)
    end: int
    text: str


class CatalogIndex:
    """The catalog's title keys in one automaton. Build it once per catalog (a case's snapshot, or
    a run's store-sized file) and ask it where a text names products."""

    def __init__(self, items: Iterable[CatalogItem]) -> None:
        self.items: dict[str, CatalogItem] = {}
        # A list per key, not a set: a store has one owner for most keys, and fewer containers
        # keep the garbage collector's passes over a 50,000-item build short.
        owners: dict[str, list[str]] = {}
        self._capital_only: set[str] = set()
        for item in items:
            self.items.setdefault(item.asin, item)
            for key in title_keys(item):
                asins = owners.get(key)
                if asins is None:
                    owners[key] = [item.asin]
                elif item.asin not in asins:
                    asins.append(item.asin)
            for name in (item.title, item.title_romaji):
                if name and _needs_capital(name):
                    self._capital_only.add(key_of(name))
        self._automaton = ahocorasick.Automaton()
        for key, asins in owners.items():
            self._automaton.add_word(key, (key, tuple(sorted(asins))))
        if owners:
            self._automaton.make_automaton()
        self._empty = not owners

    def __len__(self) -> int:
        return len(self.items)

    def get(self, asin: str) -> CatalogItem | None:
        return self.items.get(asin)

    def mentions(self, text: str, prefer_currency: str | None = None) -> list[Mention]:
        """Products named in ``text``, in order. Latin names match whole words only; a katakana name
        inside a longer katakana word is another word ("ナナ" in "バナナ"); the longest match wins an
        overlap. ``prefer_currency`` keeps, of two editions named by the same words, the one sold in
        that currency."""
        if self._empty or not text:
            return []
        haystack, positions = compact(text)
        norm = normalize(text)
        cased = unicodedata.normalize("NFKC", text).replace("’", "'")
        cased = cased if len(cased) == len(norm) else None
        found: list[tuple[int, int, tuple[str, ...]]] = []
        for last, (key, asins) in self._automaton.iter(haystack):
            first = last - len(key) + 1
            if not self._standalone(haystack, first, last, key):
                continue
            if key in self._capital_only and cased is not None and not cased[positions[first]].isupper():
                continue
            found.append((first, last, asins))
        found.sort(key=lambda f: (-(f[1] - f[0]), f[0]))
        kept: dict[tuple[int, int], list[str]] = {}
        for first, last, asins in found:
            span = (first, last)
            if span in kept:
                kept[span].extend(a for a in asins if a not in kept[span])
            elif not any(s <= last and first <= e for s, e in kept):
                kept[span] = list(asins)
        out: list[Mention] = []
        for (first, last), asins in sorted(kept.items()):
            if prefer_currency and len(asins) > 1:
                preferred = [a for a in asins if self.items[a].currency == prefer_currency]
                asins = preferred or asins
            start, end = positions[first], positions[last] + 1
            out.append(Mention(tuple(asins), start, end, norm[start:end]))
        return out

    @staticmethod
    def _standalone(haystack: str, first: int, last: int, key: str) -> bool:
        before = haystack[first - 1] if first > 0 else " "
        after = haystack[last + 1] if last + 1 < len(haystack) else " "
        if _LATIN.match(key[0]) and _LATIN.match(before):
            return False
        if _LATIN.match(key[-1]) and _LATIN.match(after):
            return False
        if _KATAKANA_ONLY.fullmatch(key) and (_KATAKANA.match(before) or _KATAKANA.match(after)):
            return False
        return True

    def named(self, text: str, prefer_currency: str | None = None) -> list[str]:
        """ASINs named in ``text``, in order of first mention, without repeats."""
        seen: dict[str, None] = {}
        for mention in self.mentions(text, prefer_currency):
            for asin in mention.asins:
                seen.setdefault(asin, None)
        return list(seen)


# --------------------------------------------------------------------------------------------------
# Telling apart listings that share a name (two editions, two volumes) by their own title words
# --------------------------------------------------------------------------------------------------

def _title_words(item: CatalogItem) -> set[str]:
    """The words of a listing's titles: English words, volume numbers, Japanese title parts."""
    words: set[str] = set()
    for title in (item.title, item.title_ja or ""):
        norm = normalize(title)
        volume = re.search(r"(\d+)\s*[)）]?\s*$", norm)  # the number a title ends on is its volume
        words |= {w for w in re.findall(r"[a-z0-9']+|[^\sa-z0-9'!?,.:;()（）・/&-]+", norm)
                  if len(w) >= 2 and not w.isdigit()}
        words |= {volume.group(1)} if volume else set()
    return {w for w in words if w not in ENGLISH_STOPWORDS} - {"vol", "vols", "set", "edition"}


def distinct_words(items: list[CatalogItem]) -> dict[str, set[str]]:
    """Per listing, the title words no other of ``items`` has (特装版, "Collector's Edition", "12")."""
    own = {i.asin: _title_words(i) for i in items}
    out = {asin: words - set().union(*(w for a, w in own.items() if a != asin)) for asin, words in own.items()}
    # The plain listing of a title that another listing extends with words of its own ("Vol. 7"
    # beside "Vol. 7 Deluxe Hardcover") is the one people call the regular or standard edition.
    for asin, words in own.items():
        series = {w for w in words if not w.isdigit()}
        if series and any(a != asin and series < other and any(not w.isdigit() for w in other - words)
                          for a, other in own.items()):
            out[asin] = out[asin] | _PLAIN_EDITION
    return out


_PLAIN_EDITION = frozenset({"regular", "standard", "normal", "paperback", "通常版"})


def told_apart(items: list[CatalogItem], sentence: str) -> list[CatalogItem]:
    """Of listings that share a name (two editions, two volumes), the one whose own title words the
    sentence (normalized) uses; all of them when it uses none or several."""
    if len(items) < 2:
        return items
    distinct = distinct_words(items)
    hits = [i for i in items if any(_word_in(w, sentence) for w in distinct[i.asin])]
    return hits if len(hits) == 1 else items


def word_position(word: str, text: str) -> int | None:
    """Where a title word stands in a normalized text (a number as a volume: "vol. 12", 「12巻」)."""
    if has_japanese(word):
        found = text.find(word)
        return None if found < 0 else found
    if word.isdigit():
        match = re.search(rf"(?:vol(?:ume)?\.?\s*|#|第\s*)0*{word}(?!\d)|(?<!\d){word}\s*巻", text)
    else:
        match = re.search(rf"(?<![a-z0-9']){re.escape(word)}(?![a-z0-9'])", text)
    return match.start() if match else None


def last_word_position(word: str, text: str) -> int | None:
    """Where a title word last stands in a normalized text."""
    found, offset = None, 0
    while (at := word_position(word, text[offset:])) is not None:
        found = offset + at
        offset = found + 1
    return found


def _word_in(word: str, sentence: str) -> bool:
    return word_position(word, sentence) is not None


_INDEXES: dict[tuple[str, ...], CatalogIndex] = {}


def index_for(items: list[CatalogItem]) -> CatalogIndex:
    """The index of a case's catalog, built once per distinct snapshot (cases of a run share them)."""
    signature = tuple(f"{i.asin}\x1f{i.title}\x1f{i.title_ja}\x1f{i.title_romaji}\x1f{i.currency}" for i in items)
    index = _INDEXES.get(signature)
    if index is None:
        if len(_INDEXES) > 256:
            _INDEXES.clear()
        index = _INDEXES[signature] = CatalogIndex(items)
    return index


ASIN_PATTERN = re.compile(r"\bB0[0-9A-Z]{8}\b")


def case_texts(case: "TestCase") -> list[str]:
    """Every text of a case that can name a product: the query, the answer and the conversation."""
    return [case.query, case.response or "", *(m.content for m in case.conversation_history)]


def products_in_play(case: "TestCase", index: CatalogIndex | None = None) -> list[str]:
    """ASINs a case can concern: named (by title, series or ASIN) in its query, answer or
    conversation, the page's product and the expected products, in that order. ``index`` is the
    catalog to look in (a store-sized one in Prepare); by default the case's own snapshot."""
    index = index or index_for(case.catalog)
    found: dict[str, None] = {}
    for text in case_texts(case):
        for asin in index.named(text):
            found.setdefault(asin, None)
        for asin in ASIN_PATTERN.findall(unicodedata.normalize("NFKC", text)):
            if index.get(asin) is not None:
                found.setdefault(asin, None)
    # The page's product, any product the page lists (a cart, an order's items) and the expected ones.
    page = unicodedata.normalize("NFKC", case.page_context.model_dump_json(exclude_none=True))
    for asin in [case.page_context.current_asin, *ASIN_PATTERN.findall(page), *case.expected_products]:
        if asin and index.get(asin) is not None:
            found.setdefault(asin, None)
    for asin in _editions_named(case, list(found)):
        found.setdefault(asin, None)
    return list(found)


def _editions_named(case: "TestCase", named: list[str]) -> list[str]:
    """Editions of a named title that the case calls by their own words only ("the regular and the
    deluxe Vol. 7", a table column "Deluxe Hardcover"): a listing of the case's catalog whose title
    is a named listing's title and more, when a text of the case uses a word of the more."""
    if not named or len(case.catalog) < 2:
        return []
    bases = [normalize(item.title) for item in case.catalog if item.asin in named]
    texts = [normalize(t) for t in case_texts(case)]
    out = []
    for item in case.catalog:
        title = normalize(item.title)
        if item.asin in named:
            continue
        for base in (b for b in bases if title.startswith(b)):
            extra = {w for w in re.findall(r"[a-z]{3,}", title[len(base):]) if w not in ENGLISH_STOPWORDS}
            if any(_word_in(w, t) for w in extra for t in texts):
                out.append(item.asin)
                break
    return out


def resolve_catalog(case: "TestCase", index: CatalogIndex) -> list[CatalogItem]:
    """The catalog entries a case is scored with: its own snapshot (which wins), then the entries of
    ``index`` (a run's or the store's catalog) for the products in play. The rest of the store is
    not part of the conversation and never reaches the checks or the judge."""
    own = {item.asin for item in case.catalog}
    return [*case.catalog, *(index.items[a] for a in products_in_play(case, index) if a not in own)]
