"""Aligning statements with text, sentence by sentence: what an expected fact, an answer sentence or
an evidence sentence has in common with another.

A text is read into ``Unit``s (its sentences and list lines), each with its content words (English
lightly stemmed and mapped through the store vocabulary, ``language.vocabulary``; Japanese as words
and character pairs), its word pairs in order, its numbers with their kind of unit, its dates and its
polarity (``language.negation``). Two uses:

- coverage: does an answer convey an expected fact? The best-matching answer sentence must carry the
  fact's numbers and most of its content words, with the same polarity ("Gyo is in stock" does not
  convey "Gyo is out of stock").
- grounding: how much of an answer sentence an evidence sentence supports (content words and, more
  strictly, word pairs in order: a recombination of the source's words is not support).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from fmquality.domain.case import TestCase
from fmquality.language.negation import is_question, negated_tokens, polarity_differs
from fmquality.language.numbers import DateMention, extract_quantities, find_dates, number_value, range_low
from fmquality.language.stock import COMPATIBLE_STOCK, availability_mentions
from fmquality.language.text import normalize, segment_spans, tokenize
from fmquality.language.vocabulary import concept_tokens, stem


def _word_pairs(norm: str) -> frozenset[tuple[str, str]]:
    words = [t for t in tokenize(norm) if t not in ("。", "、")]
    return frozenset(zip(words, words[1:]))


@dataclass(frozen=True)
class Unit:
    text: str  # normalized
    start: int
    end: int
    tokens: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    numbers: frozenset[tuple[str, float]]  # (kind, value): "duration" in days, "percent", "usd", ...
    dates: tuple[DateMention, ...]
    negated: frozenset[str]  # content words in the scope of a negation ("cannot be returned": return)


_COUNTED = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten)\s+(?!of\b|more\b|or\b|and\b|to\b)"
                      r"([a-z]{3,})")


def _numbers(norm: str, dates: list[DateMention]) -> frozenset[tuple[str, float]]:
    """(kind, value) of every number; a range ("5-7 business days", "five to seven days") gives
    both ends in the range's unit, so "5–7 business days" and "five to seven business days" meet."""
    out = set()
    range_starts: set[float] = set()
    quantities = extract_quantities(norm)
    for q in quantities:
        low = range_low(norm, q.start, q.value, reach=14) if q.unit else None
        if low is not None:
            range_starts.add(low)
            days = q.in_days()
            out.add(("duration", round(low * days / q.value, 3)) if days is not None else (q.unit, low))
    # Counted things said in words: "one promo code", "three codes" (kind: what is counted).
    for match in _COUNTED.finditer(norm):
        value = number_value(match.group(1))
        if value is not None:
            out.add((f"count:{stem(match.group(2))}", value))
    for q in quantities:
        if any(d.start <= q.start < d.end for d in dates) or (not q.unit and q.value in range_starts):
            continue
        days = q.in_days()
        out.add(("duration", round(days, 3)) if days is not None else (q.unit or "number", q.value))
        if days is not None:
            out.add(("as written", q.value))  # "27-year-old" is also supported by "aged 27"
    return frozenset(out)


def read_units(text: str) -> list[Unit]:
    """The sentences and list lines of a text as units (cached: the checks and the judge read the same
    answer, knowledge and turns many times)."""
    return list(_read_units(text or ""))


@lru_cache(maxsize=16384)
def _read_units(text: str) -> tuple[Unit, ...]:
    norm = normalize(text)
    units = []
    for start, end in segment_spans(text):
        piece = norm[start:end]
        dates = find_dates(piece)
        units.append(Unit(piece, start, end, concept_tokens(piece), _word_pairs(piece), _numbers(piece, dates),
                          tuple(dates), negated_tokens(piece)))
    return tuple(units)


def unit_of(text: str) -> Unit:
    """A whole (short) text as one unit: an expected fact, a catalog record."""
    norm = normalize(text or "")
    dates = find_dates(norm)
    return Unit(norm, 0, len(norm), concept_tokens(norm), _word_pairs(norm), _numbers(norm, dates),
                tuple(dates), negated_tokens(norm))


def _share(part: frozenset[str], whole: frozenset[str]) -> float | None:
    return len(part & whole) / len(part) if part else None


def recall(needle: Unit, hay: Unit) -> float:
    """Share of the needle's content words the haystack carries: of its words, or of its Japanese
    character pairs when that is higher (a reworded Japanese phrase segments differently). 1.0 for a
    needle without content words (a bare date or number, compared as such)."""
    words = frozenset(t for t in needle.tokens if not t.startswith("~"))
    pairs = needle.tokens - words
    shares = [x for x in (_share(words, hay.tokens), _share(pairs, hay.tokens)) if x is not None]
    return max(shares) if shares else 1.0


def _same_number(a: tuple[str, float], numbers: frozenset[tuple[str, float]]) -> bool:
    kind, value = a
    return any(k == kind and abs(v - value) < 1e-6 for k, v in numbers) or \
        any(k == "number" and abs(v - value) < 1e-6 for k, v in numbers) or \
        (kind == "number" and any(abs(v - value) < 1e-6 for _, v in numbers))


@dataclass(frozen=True)
class FactMatch:
    status: str  # "covered", "contradicted", "not_found"
    score: float  # how much of the fact the best sentence carries, 0..1
    evidence: str


def match_fact(fact: str, answer: list[Unit]) -> FactMatch:
    """Whether an answer conveys an expected fact. The fact's parts are its content words (one part)
    and each of its numbers and dates; the best sentence (or two adjacent ones) is the one carrying
    the most of them. Covered: every number and date, and at least half of the parts, with the same
    polarity. Contradicted: the answer gives the fact's kind of number or its date another value and
    never the fact's own, states another stock status, or states the fact with the opposite polarity.
    Otherwise not found; ``score`` is the share of the parts found."""
    target = unit_of(fact)
    if not answer:
        return FactMatch("not_found", 0.0, f"{fact!r}: empty answer")
    specifics = sorted(n for n in target.numbers if n[0] != "as written")  # sorted: the same order every run

    def parts(u: Unit) -> tuple[float, int, int]:
        number_hits = sum(_same_number(n, u.numbers) for n in specifics)
        date_hits = sum(any(d.same_day(e) for e in u.dates) for d in target.dates)
        has_words = bool(target.tokens)
        total = has_words + len(specifics) + len(target.dates)
        return ((recall(target, u) if has_words else 0.0) + number_hits + date_hits) / max(1, total), number_hits, date_hits

    # One sentence must carry the fact: words scattered over sentences ("charged immediately ... it
    # ships") do not convey "charged when it ships".
    best = max(answer, key=lambda u: parts(u)[0])
    coverage, number_hits, date_hits = parts(best)
    numbers_ok = number_hits == len(specifics)
    dates_ok = date_hits == len(target.dates)
    all_numbers = frozenset().union(*(u.numbers for u in answer))
    rivals = [f"{v:g} {k}" for k, v in specifics if not _same_number((k, v), all_numbers)
              and any(kind == k and k != "number" for kind, _ in all_numbers)]
    if target.dates and not any(d.same_day(e) for u in answer for e in u.dates for d in target.dates) \
            and any(u.dates for u in answer):
        rivals.append("its date")
    if rivals and (coverage >= 0.3 or not target.tokens):
        return FactMatch("contradicted", 0.0, f"{fact!r}: the answer gives another value where the fact gives "
                                              + ", ".join(rivals))
    fact_status = {status for status, _ in availability_mentions(fact)}
    said_status = {status for status, _ in availability_mentions(best.text)}
    if fact_status and said_status and coverage >= 0.3 and not any(
            a == b or (a, b) in COMPATIBLE_STOCK for a in said_status for b in fact_status):
        return FactMatch("contradicted", 0.0, f"{fact!r}: the answer says {', '.join(sorted(said_status))}")
    # A number alone is not the fact, nor is one of its words.
    words_ok = not target.tokens or (recall(target, best) >= 0.4
                                     and len(target.tokens & best.tokens) >= min(2, len(target.tokens)))
    # A negated stock phrase was already read as its opposite status above.
    names = frozenset({"stock"}) if fact_status else frozenset()
    flipped = polarity_differs(target, best, names)
    # The fact said with its own polarity in another sentence ("limited to unopened items. Opened items
    # cannot be returned") is conveyed there: the best-aligned sentence was its neighbour.
    agreeing = [(parts(u), u) for u in answer if flipped and not polarity_differs(target, u, names)
                and len(target.tokens & u.tokens) >= min(2, len(target.tokens))]
    agreeing = [(p, u) for p, u in agreeing if p[0] >= 0.5]
    if agreeing:
        (coverage, number_hits, date_hits), best = max(agreeing, key=lambda pu: pu[0][0])
        numbers_ok, dates_ok, flipped = number_hits == len(specifics), date_hits == len(target.dates), False
        words_ok = not target.tokens or recall(target, best) >= 0.4
    if flipped and coverage >= 0.3 and len(target.tokens & best.tokens) >= min(2, len(target.tokens)):
        return FactMatch("contradicted", 0.0, f"{fact!r}: stated with the opposite polarity ({best.text.strip()!r})")
    if coverage >= 0.5 and numbers_ok and dates_ok and words_ok and (not fact_status or said_status):
        return FactMatch("covered", coverage, f"{fact!r}: conveyed ({coverage:.0%} of its parts)")
    missing = [] if numbers_ok else ["its numbers"]
    missing += [] if dates_ok else ["its date"]
    why = f"{coverage:.0%} of its parts" + (", without " + " and ".join(missing) if missing else "")
    return FactMatch("not_found", coverage, f"{fact!r}: not found ({why})")


# --------------------------------------------------------------------------------------------------
# Claims and grounding
# --------------------------------------------------------------------------------------------------

# Sentences that address the shopper rather than assert something: wishes, offers, thanks, questions.
_PHATIC = re.compile(
    r"^\s*(?:let me know|feel free|hope|enjoy|happy reading|thanks|thank you|have a|if you (?:have|need|want)|"
    r"anything else|is there anything|i'?d be happy|i'?m happy|glad|you'?re welcome|no problem)"
    r"|お気軽に|お楽しみ|ありがとうございま|ございましたら|お待ちしております|いかがでしょうか|お役に立て")


def is_claim(unit: Unit) -> bool:
    """A sentence that asserts something checkable: not a question, not a courtesy, with at least two
    content words (or a number or date)."""
    if is_question(unit.text) or _PHATIC.search(unit.text):
        return bool(unit.numbers or unit.dates)
    return len({t for t in unit.tokens if not t.startswith("~")}) >= 2 or bool(unit.numbers or unit.dates)


def precision(claim: Unit, evidence: Unit) -> float:
    """Share of the claim's content words the evidence carries."""
    if not claim.tokens:
        return 1.0
    return len(claim.tokens & evidence.tokens) / len(claim.tokens)


def pair_precision(claim: Unit, evidence_pairs: frozenset[tuple[str, str]]) -> float | None:
    """Share of the claim's word pairs (in order) the evidence carries: recombining the source's
    words ("the president was a senator") is not support. None for a one-word claim."""
    if not claim.pairs:
        return None
    return len(claim.pairs & evidence_pairs) / len(claim.pairs)


# Claims compared with each other: within one text, each claim with the next ones up to this many;
# between texts, this many claims of each side (the earlier turns' last, the answer's first). Every
# answer and conversation of the labelled sets has fewer claims, so all their pairs are compared; a
# longer text costs linear time instead of quadratic.
COMPARED_CLAIMS = 64


def comparable_pairs(first: list[Unit], second: list[Unit], subjects: Callable[[Unit], frozenset[str]],
                     same_text: bool = False) -> list[tuple[Unit, Unit]]:
    """Claim sentences of ``first`` and ``second`` that are about the same thing: they name the same
    product or policy topic (``subjects``) or share most of their content words. Only such pairs can
    contradict each other. With ``same_text`` (``first`` is ``second``) each pair is taken once."""
    claims = [u for u in first if is_claim(u)]
    known = {id(u): subjects(u) for u in claims}
    if same_text:
        candidates = ((a, b) for i, a in enumerate(claims) for b in claims[i + 1:i + 1 + COMPARED_CLAIMS])
    else:
        later = [u for u in second if is_claim(u)][:COMPARED_CLAIMS]
        known.update({id(u): subjects(u) for u in later})
        candidates = ((a, b) for a in claims[-COMPARED_CLAIMS:] for b in later)
    out = []
    for a, b in candidates:
        union = a.tokens | b.tokens
        if known[id(a)] & known[id(b)] or (union and len(a.tokens & b.tokens) / len(union) >= 0.25):
            out.append((a, b))
    return out


def prose_evidence(case: TestCase) -> list[Unit]:
    """The evidence that can support prose: the retrieved knowledge and the reference answer, when
    there is one. Catalog records and the page context are structured: they back specifics (prices,
    stock, dates, ids, which the checks verify), not sentences."""
    texts = [*case.retrieved_chunks, *([case.reference_response] if case.reference_response else [])]
    return [u for text in texts for u in read_units(text)]


def held_to_evidence(claim: Unit, evidence: list[Unit], subject_tokens: frozenset[str]) -> bool:
    """A claim sentence is held to the prose evidence when what it says (its words beyond the names
    of the products it is about) touches what the evidence talks about; a sentence on something the
    evidence never mentions (a plot summary beside a return policy) is silent, not contradicted."""
    said = claim.tokens - subject_tokens
    return any(said & e.tokens for e in evidence)


def significant_numbers(unit: Unit) -> set[tuple[str, float]]:
    """Numbers that make a claim: small counts ("one book", "2 volumes", list positions) do not."""
    return {(k, v) for k, v in unit.numbers if k != "as written" and not k.startswith("count:")
            and not (k in ("number", "item") and v < 10)}


def checkable(case: TestCase, text: str) -> list[Unit]:
    """Claim sentences the evidence can speak to: with numbers or dates, or held to the prose evidence."""
    evidence = prose_evidence(case)
    subject = subject_tokens(case)
    return [u for u in read_units(text) if is_claim(u)
            and (significant_numbers(u) or u.dates
                 or held_to_evidence(u, evidence, subject))]


def subject_tokens(case: TestCase) -> frozenset[str]:
    """The words of the names of the case's products (titles, authors): what sentences are about."""
    return _name_tokens(tuple(n for i in case.catalog for n in (i.title, i.title_ja, i.title_romaji, i.author) if n))


@lru_cache(maxsize=1024)
def _name_tokens(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset().union(*(concept_tokens(normalize(n)) for n in names))
