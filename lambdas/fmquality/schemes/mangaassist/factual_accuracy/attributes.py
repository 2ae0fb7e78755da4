"""Product attributes (attribute_accuracy): authors, publishers, volume counts and whether a series is finished,
attributed to a product, against the catalog, in English ("by ...", "X's Title", "the author is ...",
"complete in 14 volumes", "is still ongoing") and Japanese (作者は…, 全14巻, 連載中). A contradiction
is a hard failure."""

from __future__ import annotations

import re
import unicodedata

from fmquality.claims.reading import Reading
from fmquality.domain.case import CatalogItem
from fmquality.domain.scores import HardFailure
from fmquality.language.negation import is_conditional
from fmquality.language.text import has_japanese, loose_key, normalize, romanize
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.scoring.plan import CheckReport


_BY_NAME = re.compile(r"(?<!published )(?<!translated )(?<!illustrated )(?<!sold )(?<!shipped )(?<!fulfilled )"
                      r"(?<!recommended )(?<!distributed )(?<!imprint )(?<!made )(?<!stocked )"
                      r"\bby\s+(?:the\s+(?:legendary|great|late|acclaimed)\s+)?([A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3}"
                      r"|[\u3040-\u30ff\u4e00-\u9fff][\u3040-\u30ff\u4e00-\u9fffA-Za-z]{1,11})")
_NOT_A_NAME = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|tomorrow|"
                         r"today|tonight|noon|midnight|the end|end of|next|this|then|email|phone|mail)", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b([A-Z][\w.-]+(?:\s+[A-Z][\w.-]+){0,2})'s\s+")
_AUTHOR_IS = re.compile(r"\b(?:author|mangaka|creator|writer)\s+(?:is|was)\s+([A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3})")
# How long a series is, said as such: "complete in 14 volumes", "45 volumes in all", 全14巻, 14巻で完結
# ("these 2 volumes", 「2巻まで」 are counts of something else).
VOLUME_COUNT = re.compile(
    r"(?:complete(?:d)? (?:in|at|with)|(?:runs|ran|spans|spanned|totals?|has|had|(?:wraps|wrapped|wrapping) up (?:at|in)|"
    r"(?:ends|ended) (?:at|in)|(?:finishes|finished) (?:at|in)|(?:concludes|concluded) (?:at|in)|is|was)(?: a)?)\s+(\d+)(?:-| )volumes?\b"
    r"|(\d+) volumes? (?:in total|total|in all|long)\b|(\d+)-volume (?:series|run)\b|series of (\d+) volumes\b"
    r"|全\s*(\d+)\s*巻|(\d+)\s*巻(?:で)?完結")
# How many volumes are out so far ("8 volumes out so far", 既刊21巻, 23巻まで発売): the catalog's count
# less the volumes it lists as pre-orders (a series' count may include the one announced).
_RELEASED_COUNT = re.compile(r"(\d+) volumes? (?:out so far|so far|released so far|out now)\b|既刊\s*(\d+)\s*巻"
                            r"|(\d+)\s*巻まで(?:発売|刊行|出て)")
# Edition words: a sentence about another edition than the listing's ("the 完全版 has 18 volumes").
_EDITION_WORDS = re.compile(r"完全版|新装版|愛蔵版|大型版|特装版|フルカラー|文庫版|ワイド版|\b(?:deluxe|perfect|omnibus|box set|collector'?s|"
                            r"3-in-1|vizbig|fullmetal edition|master edition|hardcover edition|special edition)\b")


# "作者は伊藤潤二（Junji Ito）先生です": a Japanese name, with its romanization when given.
_AUTHOR_JA = re.compile(r"(?:作者|著者|原作者|作画|漫画家)(?:は|:)\s*([^\s、。,(（)）]{2,15}?)\s*(?:[(（]([A-Za-z][A-Za-z .'-]{2,40})[)）])?"
                        r"\s*(?:先生|さん|氏)?(?:です|でございます|となります|。)")
# An answer to "who wrote it?" that opens with the name: "That's **Rumiko Takahashi**!".
_WHO_WROTE = re.compile(r"\bwho (?:wrote|writes|drew|draws|created|made|is the (?:author|mangaka|artist))\b|\bauthor of\b"
                        r"|作者は(?:誰|どなた)|誰が(?:書|描)")
_OPENING_NAME = re.compile(r"^\W*(?:(?i:that'?s|it'?s|it was|that would be|the author is|written by|by)\s+)?\**"
                           r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+){1,2})\**")


# Whether a series has ended, stated of the product the sentence is about ("Delicious in Dungeon is
# still ongoing", "it's complete", 完結済み). Only statements: a question or a condition says nothing.
_STILL_RUNNING = re.compile(r"\b(?:is|'s|are|'re) (?:still )?(?:ongoing|running|being (?:published|serialized)|in progress)\b"
                            r"|\bstill (?:ongoing|running|coming out|being (?:published|serialized))\b"
                            r"|\b(?:is|'s|are|'re) not (?:yet )?(?:finished|complete[d]?|over)\b|\bisn'?t (?:finished|complete[d]?|over)\b"
                            r"|\bhas(?: not|n'?t) (?:ended|finished|concluded|wrapped up)\b|連載中|未完結|完結していません")
_FINISHED = re.compile(r"\b(?:is|'s|are|'re|was) (?:now |already )?(?:complete[d]?|finished|over)\b"
                       r"|\b(?:has |have )?(?:wrapped up|ended|concluded|finished) (?:at|in|with) \d+ volumes?\b"
                       r"|\bcomplete[d]? (?:at|in|with) \d+ volumes?\b|\bcomplete series\b"
                       r"|完結(?:済|しています|しました|した|しておりま)")
_RUNNING_VALUES = ("ongoing", "running", "publishing", "serializing", "連載中", "未完結")
_ENDED_VALUES = ("complete", "completed", "finished", "ended", "concluded", "完結")


def _series_status(item: CatalogItem) -> str | None:
    """"running" or "ended", from a catalog field that says so ("series_status", "status"; never
    availability, which is about the copy on the shelf)."""
    for key, value in (item.model_extra or {}).items():
        if "status" in key and isinstance(value, str):
            value = value.strip().lower()
            if value.startswith(_RUNNING_VALUES):
                return "running"
            if value.startswith(_ENDED_VALUES):
                return "ended"
    return None


def _stated_status(sentence: str) -> tuple[str, int] | None:
    """The status a sentence states and where, unless it states both or asks."""
    running, ended = _STILL_RUNNING.search(sentence), _FINISHED.search(sentence)
    if bool(running) == bool(ended) or sentence.rstrip().endswith(("?", "？")) or is_conditional(sentence):
        return None
    found = running or ended
    assert found is not None
    return ("running" if running else "ended"), found.start()


def _named_authors(reading: Reading, nfkc: str) -> list[tuple[str, list[CatalogItem]]]:
    """Names the answer gives as a product's author in the ways the by/is patterns do not read: in
    Japanese (作者は…), and as the opening words of an answer to "who wrote it?"."""
    found = []
    for match in _AUTHOR_JA.finditer(nfkc):
        claimed = match.group(2) or match.group(1)
        found.append((claimed, reading.attach_one_market(match.start())))
    if _WHO_WROTE.search(normalize(reading.case.query)) and reading.spans:
        first = nfkc[reading.spans[0][0]:reading.spans[0][1]]
        opening = _OPENING_NAME.match(first.strip())
        asked = reading.focus or (reading.products[0] if len(reading.products) == 1 else None)
        if opening and asked:
            found.append((opening.group(1), reading.items([asked])))
    return found


# A name in brackets right after a title, its volume or its closing marks: "**Horimiya, Vol. 1** (HERO &
# Daisuke Hagiwara)", 『ダンジョン飯』1巻（九井諒子）.
_AFTER_TITLE = re.compile(r"^[*_』」]*\s*巻?\s*(?:,?\s*vol(?:ume)?\.?\s*\d+|\d+\s*巻|第?\d+\s*巻)?[*_]*\s*[(（]([^()（）]{2,40})[)）]", re.IGNORECASE)
_NOT_A_PERSON = re.compile(r"\d|[$¥円€£%]|在庫|予約|残り|発売|完結|連載|\b(?:in stock|out of stock|sold out|pre-?order|"
                           r"edition|vol|volumes?|complete|ongoing|english|japanese|hardcover|paperback|set|box)\b", re.IGNORECASE)


def _bracketed_authors(reading: Reading, nfkc: str) -> list[tuple[str, list[CatalogItem], bool]]:
    """Names in brackets right after a product's title: (name, the product, whether the bracket is an
    author for sure). A bracket that is the title in another form, a price, a stock word or an edition
    is no name. A name is an author for sure when it is the author of a product of the case; an
    unknown name only when the answer's other brackets of this kind hold their products' authors (the
    list's layout says what the bracket holds)."""
    others = [i for i in reading.case.catalog if i.author]
    found: list[tuple[str, list[CatalogItem], bool]] = []
    for mention in reading.mentions:
        match = _AFTER_TITLE.match(nfkc[mention.end:mention.end + 60])
        if not match or len(mention.asins) != 1:
            continue
        claimed = match.group(1).strip()
        item = reading.by_asin[mention.asins[0]]
        if _NOT_A_PERSON.search(claimed) or not item.author or any(
                loose_key(claimed) and (loose_key(claimed) in key or key in loose_key(claimed))
                for key in (loose_key(t) for t in (item.title, item.title_ja or "", item.title_romaji or "",
                                                     romanize(item.title_ja or "")) if t) if len(key) >= 3):
            continue
        known = any(_same_author(claimed, i) for i in others)
        found.append((claimed, [item], known))
    if any(known and _same_author(c, items[0]) for c, items, known in found):
        # The layout holds authors: every bracket of it is an author claim.
        return [(c, items, True) for c, items, _ in found]
    return [(c, items, known) for c, items, known in found if known]


def _author_names(item: CatalogItem) -> list[str]:
    names = [item.author or "", *(str(v) for k, v in (item.model_extra or {}).items() if k.startswith("author") and v)]
    return [n for n in names if n]


def _same_author(claimed: str, item: CatalogItem) -> bool | None:
    """Whether a name is the item's author; None when they are written in different scripts and the
    romanization does not settle it (a Japanese name against an English catalog entry)."""
    if has_japanese(claimed) != any(has_japanese(n) for n in _author_names(item)):
        roman = {loose_key(w) for w in romanize(claimed).split()} if has_japanese(claimed) else set()
        known = {loose_key(w) for n in _author_names(item) for w in (romanize(n) if has_japanese(n) else n).split()}
        if roman & known or {loose_key(w) for w in claimed.split()} & known:
            return True
        # A kanji name's reading is not certain (栄一郎: eiichirou, eiichiro), but it starts as its
        # romanization does: no word of the one beginning as a word of the other does is another person.
        latin = roman or {loose_key(w) for w in claimed.split()}
        near = any(a[:3] == b[:3] for a in latin for b in known if a and b)
        return None if near else False
    claimed_words = {loose_key(w) for w in claimed.split()} - {""}
    for name in _author_names(item):
        known = {loose_key(w) for w in name.split()} - {""}
        if claimed_words & known or loose_key(claimed) in loose_key(name) or loose_key(name) in loose_key(claimed):
            return True
    return False


def _volume_count(item: CatalogItem) -> int | None:
    """How many volumes the series has, from a field that says so ("volumes", "series_volumes",
    "volume_count", "total_volumes"; not "volume", the number of this one)."""
    for key, value in (item.model_extra or {}).items():
        if isinstance(value, int) and not isinstance(value, bool) and key != "volume" \
                and ("volumes" in key or key in ("volume_count", "total_volumes")):
            return value
    return None


# "The English edition is published by Harborlight Press", "the publisher is Tsukimi Press". The
# Japanese original's publisher ("originally published by Shueisha") is another company than the listing's.
_PUBLISHED_BY = re.compile(r"\b(?:published|put out|released)\s+(?:in english\s+)?by\s+([A-Z][\w.&'-]+(?:\s+[A-Z][\w.&'-]+){0,3})"
                           r"|\bpublisher\s+(?:is|was)\s+([A-Z][\w.&'-]+(?:\s+[A-Z][\w.&'-]+){0,3})")
_ORIGINAL_EDITION = re.compile(r"\b(?:original(?:ly)?|in japan|japanese edition)\b", re.IGNORECASE)
_COMPANY_WORDS = {"press", "books", "publishing", "publishers", "comics", "media", "entertainment", "manga", "inc", "the"}


def _publishers(reading: Reading, start: int, sentence: str, right: list[str], wrong: list[str]) -> None:
    """A publisher named for a product against the catalog's, when the catalog gives one."""
    plain = re.sub(r"[*_]", " ", sentence)  # same length: positions still stand
    if _ORIGINAL_EDITION.search(plain):
        return
    for match in _PUBLISHED_BY.finditer(plain):
        claimed = match.group(1) or match.group(2)
        for item in reading.attach_one_market(start + match.start()):
            known = str((item.model_extra or {}).get("publisher") or "")
            if not known:
                continue
            words = {loose_key(w) for w in claimed.split()} - _COMPANY_WORDS
            if words & {loose_key(w) for w in known.split()} or loose_key(known) in loose_key(claimed):
                right.append(f"{item.title} published by {claimed}: matches the catalog")
            else:
                wrong.append(f"{item.title} said to be published by {claimed}; the catalog's publisher is {known}")
            break


def _counts(reading: Reading, item: CatalogItem, so_far: bool) -> set[int]:
    """The series' length the catalog gives; said as "out so far", also less the listed pre-orders of it."""
    total = _volume_count(item)
    if total is None or not so_far:
        return {total} if total is not None else set()
    series = re.split(r",|\s+vol|\s+\d+\s*$", item.title, flags=re.IGNORECASE)[0]
    coming = [i for i in reading.case.catalog if i.availability == "preorder" and i.title.startswith(series)]
    return {total, total - len(coming)}


def attribute_accuracy(reading: Reading, report: CheckReport) -> None:
    nfkc = unicodedata.normalize("NFKC", reading.text)
    right: list[str] = []
    wrong: list[str] = []
    named = _named_authors(reading, nfkc)
    for index, (start, end) in enumerate(reading.spans):
        if not reading.mentions_in(index) and not reading.products and not reading.case.page_context.current_asin \
                and not (index == 0 and named):
            continue
        sentence = nfkc[start:end]
        claims = [(m.group(1), reading.attach_one_market(start + m.start()))
                  for regex in (_BY_NAME, _AUTHOR_IS) for m in regex.finditer(sentence)]
        for m in _POSSESSIVE.finditer(sentence):
            # "Naoki Urasawa's Pluto": the name is about the title right after it.
            after = next((x for x in reading.mentions if 0 <= x.start - (start + m.end()) <= 2), None)
            inside = any(x.start <= start + m.start() < x.end for x in reading.mentions)
            if after is not None and not inside:
                claims.append((m.group(1), reading.items(after.asins)))
        if index == 0:
            claims += named  # read once, with the first sentence
            claims += [(c, items) for c, items, _ in _bracketed_authors(reading, nfkc)]
        for claimed, about in claims:
            if _NOT_A_NAME.match(claimed):
                continue  # "arrives by August 20", "by Friday"
            items = [i for i in about if i.author]
            if not items or any(loose_key(claimed) in loose_key(t) for i in items for t in (i.title, i.title_romaji or "")):
                continue  # no author to compare with, or the "name" is the title itself
            same = [_same_author(claimed, i) for i in items]
            if any(same):
                right.append(f"{items[0].title} by {claimed}: matches the catalog")
            elif None not in same:
                wrong.append(f"{items[0].title} attributed to {claimed}; the catalog's author is {items[0].author}")
        _publishers(reading, start, sentence, right, wrong)
        raw = reading.norm[start:end]
        kept = [i for i, ch in enumerate(raw) if ch not in "*_"]  # where each character of plain stands in raw
        plain = "".join(raw[i] for i in kept)  # "complete at **42 volumes**"
        counts = [(m, False) for m in VOLUME_COUNT.finditer(plain)] + [(m, True) for m in _RELEASED_COUNT.finditer(plain)]
        for match, so_far in counts:
            stated = int(next(g for g in match.groups() if g))
            # The count is about the product named nearest before it ("『灯籠の旅人』は連載中、『星喰いの竜』は
            # 全21巻"), not the sentence's first: its place in the sentence, markup put back.
            at = start + kept[match.start()]
            items = [i for i in reading.attach(at) if _volume_count(i) is not None]
            other_edition = [w for w in _EDITION_WORDS.findall(reading.norm[start:end])
                             if not any(w in normalize(t) for i in items for t in (i.title, i.title_ja or ""))]
            if not items or other_edition:
                continue
            if any(stated in _counts(reading, i, so_far) for i in items):
                right.append(f"{items[0].title}: {stated} volumes matches the catalog")
            else:
                wrong.append(f"{items[0].title}: {stated} volumes stated, catalog says {_volume_count(items[0])}")
        status = _stated_status(plain)
        if status is not None:
            items = [i for i in reading.attach(start + status[1]) if _series_status(i) is not None]
            if items and not _EDITION_WORDS.search(plain):
                said = "still running" if status[0] == "running" else "finished"
                if any(_series_status(i) == status[0] for i in items):
                    right.append(f"{items[0].title}: {said}, as the catalog says")
                else:
                    wrong.append(f"{items[0].title}: said to be {said}; the catalog's series status is "
                                 f"{'ongoing' if _series_status(items[0]) == 'running' else 'complete'}")
    right, wrong = list(dict.fromkeys(right)), list(dict.fromkeys(wrong))
    if not right and not wrong:
        report.skip("attribute_accuracy", "no author, volume count or series status attributed to a product")
        return
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="attribute_contradiction", dimension=DIMENSION,
                                                sub_score="attribute_accuracy", detail=detail))
    report.set("attribute_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))
