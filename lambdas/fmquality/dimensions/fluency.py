"""Fluency: how the answer reads.

- formatting (deterministic, from the rubric's style rules, which the answer either meets or not):
  length within the intent's range, product cards (title, price, availability on a list line or
  table row) when a recommendation or promotion presents several products, and Japanese titles
  given as original + romanization + English title (client incident 4). A missing romanization
  keeps formatting low whatever the other parts say.
- grammar and tone are the judge's: the offline judge reads them from general signals
  (``judges/offline/fluency.py``), the Bedrock judge from the model.
"""

from __future__ import annotations

import re

from fmquality.catalog_index import index_for, key_of, title_keys
from fmquality.claims import Reading
from fmquality.dimensions.base import CheckReport, response_text
from fmquality.models import CatalogItem, TestCase
from fmquality.rubric import Rubric
from fmquality.text import (
    availability_mentions,
    extract_prices,
    has_japanese,
    is_list_line,
    romaji_key,
    romanize,
    word_count,
)

NAME = "fluency"

CARD_INTENTS = {"recommendation", "promotion"}
# A missing romanization is a client-visible defect (incident 4): formatting stays this low.
MISSING_ROMAJI_SCORE = 0.2
MISSING_ENGLISH_SCORE = 0.5


def length_score(case: TestCase, rubric: Rubric) -> tuple[float, str] | None:
    rule = rubric.length_rule(case.intent)
    if rule is None:
        return None
    words = word_count(response_text(case))
    if words < rule.min_words:
        return words / rule.min_words, f"length {words} words is below the {rule.min_words}-word minimum for {case.intent}"
    if words > rule.max_words:
        # Linear in the overshoot, reaching 0 at one and a half times the maximum: a 20% longer
        # answer already reads as padded.
        return max(0.0, 1.0 - 2.0 * (words - rule.max_words) / rule.max_words), \
            f"length {words} words is above the {rule.max_words}-word maximum for {case.intent}"
    return 1.0, f"length {words} words is within {rule.min_words}-{rule.max_words}"


def is_card_line(line: str) -> bool:
    return is_list_line(line) or line.lstrip().startswith("|")  # markdown table rows are cards too


def product_card_score(case: TestCase, rubric: Rubric, reading: Reading) -> tuple[float, list[str]] | None:
    """Each product a recommendation names, shown as a card with the rubric's fields."""
    if case.intent not in CARD_INTENTS or len(reading.products) < 2:
        return None
    index = index_for(case.catalog)
    lines = reading.text.splitlines()
    named_on = [set(index.named(line, reading.currency)) for line in lines]
    fields = rubric.style.product_card_fields
    scores: list[float] = []
    evidence: list[str] = []
    for asin in reading.products:
        item = reading.by_asin[asin]
        first = next((i for i, names in enumerate(named_on) if asin in names), None)
        if first is None:  # named across a line break only; no card to read
            scores.append(0.0)
            evidence.append(f"'{item.title}' has no card line")
            continue
        block = [lines[first]]
        for line, names in zip(lines[first + 1:], named_on[first + 1:]):
            if not line.strip() or (is_list_line(line) and not line.startswith((" ", "\t"))) or names - {asin}:
                break
            block.append(line)
        card = "\n".join(block)
        present = {"list line": is_card_line(lines[first])}
        for name in fields:
            if name == "title":
                present[name] = any(k in key_of(card) for k in title_keys(item) if k != key_of(item.asin))
            elif name == "price":
                present[name] = bool(extract_prices(card))
            elif name == "availability":
                present[name] = bool(availability_mentions(card))
            elif name == "author":
                present[name] = bool(item.author) and key_of(item.author or "") in key_of(card)
            else:
                present[name] = key_of(str(getattr(item, name, "") or "")) in key_of(card)
        missing = [n for n, ok in present.items() if not ok]
        scores.append(sum(present.values()) / len(present))
        if missing:
            evidence.append(f"product card for '{item.title}' lacks {', '.join(missing)}")
    if not evidence:
        evidence.append(f"{len(reading.products)} products each shown as a card with {', '.join(fields)}")
    return sum(scores) / len(scores), evidence


def _english_keys(item: CatalogItem) -> set[str]:
    """The English title in full or as its series name; the romaji is not the English title even
    when the catalog title contains it."""
    base = re.split(r",|:|\(|\s+vol(?:ume)?\b", item.title, flags=re.IGNORECASE)[0]
    return {k for k in (key_of(item.title), key_of(base)) if len(k) >= 3}


def japanese_title_score(case: TestCase, rubric: Rubric, reading: Reading) -> tuple[float, list[str]] | None:
    """Each catalog title the answer gives in Japanese must also be given in romaji and in English."""
    if rubric.style.japanese_title_format != "original_romaji_english":
        return None
    text_key = key_of(reading.text)
    text_romaji = romaji_key(reading.text)
    results: list[tuple[float, str]] = []
    seen: set[str] = set()
    for mention in reading.mentions:
        if not has_japanese(mention.text):
            continue
        item = reading.by_asin[mention.asins[0]]
        if (item.title_ja or item.title) in seen:
            continue  # two editions of one title are one title here
        seen.add(item.title_ja or item.title)
        romaji_source = item.title_romaji or romanize(re.sub(r"\s*\d+\s*$", "", item.title_ja or ""))
        romaji_forms = {romaji_key(romaji_source), romaji_key(re.split(r",|:|\s+vol", romaji_source, flags=re.I)[0])}
        has_romaji = any(len(f) >= 3 and f in text_romaji for f in romaji_forms)
        has_english = any(k in text_key for k in _english_keys(item))
        label = f"'{item.title_ja or mention.text}'"
        if has_romaji and has_english:
            results.append((1.0, f"{label} is given with romanization and English title"))
        elif not has_romaji:
            results.append((MISSING_ROMAJI_SCORE if has_english else MISSING_ROMAJI_SCORE / 2,
                            f"{label} is given without its romanization '{romaji_source}'"
                            + ("" if has_english else f" and without its English title '{item.title}'")))
        else:
            results.append((MISSING_ENGLISH_SCORE, f"{label} is given without its English title '{item.title}'"))
    if not results:
        return None
    return min(s for s, _ in results), [e for _, e in results]


def check(case: TestCase, rubric: Rubric) -> CheckReport:
    report = CheckReport()
    reading = Reading(case)
    parts: list[tuple[float, list[str]]] = []
    length = length_score(case, rubric)
    if length:
        parts.append((length[0], [length[1]]))
    for found in (product_card_score(case, rubric, reading), japanese_title_score(case, rubric, reading)):
        if found:
            parts.append(found)
    if parts:
        # Each style rule is a requirement of its own: the weakest one decides (a missing card layout
        # or romanization is not averaged away by a good length).
        score = min(s for s, _ in parts)
        evidence = [e for _, es in parts for e in es]
        report.set("formatting", score, *evidence)
        report.findings.extend(e for e in evidence if "lacks" in e or "without" in e or "below" in e or "above" in e)
    else:
        report.skip("formatting", "no style rule applies")
    report.ask_judge("grammar")
    report.ask_judge("tone")
    return report
