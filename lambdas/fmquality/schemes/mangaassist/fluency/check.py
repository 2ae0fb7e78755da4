"""Fluency: how the answer reads.

- formatting (deterministic, from the rubric's style rules, which the answer either meets or not):
  length within the intent's range, product cards (title, price, availability on a list line or
  table row) where the rubric's card convention applies (recommendations and promotions that present
  several products), and Japanese titles given as original + romanization + English title where the
  title convention applies (English answers; a Japanese answer writes 『タイトル』 alone). Each rule
  is a style requirement: it lowers formatting, which counts through the composite.
- grammar and tone are the judge's: the offline judge reads them from general signals
  (``judges/offline/fluency.py``), the Bedrock judge from the model.
"""

from __future__ import annotations

import re
import unicodedata

from fmquality.language.catalog_index import index_for, key_of, title_keys
from fmquality.claims.reading import Reading, reading_of
from fmquality.scoring.plan import CheckReport, response_text
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.domain.scores import HardFailure
from fmquality.config.rubric import Rubric
from fmquality.language.stock import availability_mentions
from fmquality.language.numbers import extract_prices
from fmquality.language.text import (
    has_japanese,
    is_list_line,
    japanese_share,
    normalize,
    romaji_key,
    split_sentences,
    romanize,
    script_of,
    word_count,
)

NAME = "fluency"

# A missing romanization or English title is a style lapse (client incident 4): it lowers formatting,
# which counts through the composite; it never fails an item on its own.
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
    if not rubric.style.product_card_scope.applies(case.intent, case.locale, script_of(reading.text)) or len(reading.products) < 2:
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
    if rubric.style.japanese_title_format != "original_romaji_english" \
            or not rubric.style.japanese_title_scope.applies(case.intent, case.locale, script_of(reading.text)):
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


# --------------------------------------------------------------------------------------------------
# Defects of the text as a whole, read completely: cut off, in another language, out of length
# --------------------------------------------------------------------------------------------------

# The last line stops on what cannot end a sentence: a comma, a conjunction, an article or a
# preposition (English), a case particle or a て-form (Japanese), or inside an open bracket.
_CUT_EN = re.compile(r"(?:,|\b(?:and|or|but|the|a|an|to|of|with|for|from|in|on|at|by|because|so|which|that|if|"
                     r"your|our|my|their|its|any|every|each|some|into|onto|via|than|until|during|"
                     r"is|are|was|were|will|can|could|would|should|must|might|\w+n't|\w+'(?:ll|re|ve|d)|not))\s*$")
_CUT_JA = re.compile(r"(?:[、,]|を|に|が|は|の|と|で|て|へ|や|も|から|より|ので|けど|けれど)\s*$")
_OPEN_CLOSE = (("(", ")"), ("（", "）"), ("「", "」"), ("『", "』"), ("[", "]"))


def _ends_with_mark(line: str) -> bool:
    """Whether a line ends as a sentence may: on an end mark, a closing bracket or quote, an ellipsis or
    a pictograph (an emoji, a symbol)."""
    last = line.rstrip()[-1:]
    return bool(last) and (last in ".!?。！？…)）」』]】〉》\"”’~〜♪" or unicodedata.category(last) in ("So", "Sk"))


def _list_item(line: str) -> bool:
    """A list line; a line that opens with bold (**Title** ...) is running text, not a bullet."""
    return is_list_line(line) and not line.lstrip().startswith("**")


def _chose_lower_case(text: str) -> bool:
    """Latin-script text that starts no sentence with a capital: chat written in lower case, and
    without full stops ("ha ha i'm so shy"), chose its style; its last sentence needs no end mark."""
    starts = re.findall(r"(?:^|[.!?]\s+|\n\W*)([A-Za-z])", text)
    return bool(starts) and not any(c.isupper() for c in starts)


def truncation(text: str) -> str | None:
    """Why the answer stops mid-sentence, or None. A list line needs no full stop, but it cannot end
    on a comma or a particle either; an emoji, a full stop or a closing mark ends anything."""
    lines = [line for line in (text or "").rstrip().splitlines() if line.strip()]
    if not lines:
        return None
    last = re.sub(r"[*_`~]+", "", lines[-1]).rstrip()
    opened = [o for o, c in _OPEN_CLOSE if last.count(o) > last.count(c)]
    if opened:
        return f"the last line opens {opened[0]!r} and never closes it: {last[-40:]!r}"
    if not last or _ends_with_mark(last):
        return None
    tail = normalize(last)
    if has_japanese(tail[-3:]) and _CUT_JA.search(tail):
        return f"the last line stops on {tail[-1]!r}: {last[-40:]!r}"
    if not has_japanese(tail[-3:]) and _CUT_EN.search(tail):
        return f"the last line stops on {tail.split()[-1]!r}: {last[-40:]!r}"
    if not _list_item(lines[-1]) and not lines[-1].lstrip().startswith(("#", "|")) and not _chose_lower_case(text):
        # Running text ends its last sentence with an end mark; this one stops on a word, a number or
        # a sign that opens what follows ($, -, %). A list line, a table row or a heading may go without.
        return f"the last sentence stops without an end mark: {last[-40:]!r}"
    if _list_item(lines[-1]):
        siblings = [re.sub(r"[*_`~]+", "", line).rstrip() for line in lines[:-1] if _list_item(line)]
        if siblings and all(_ends_with_mark(s) for s in siblings):
            # Every other item of the list ends with an end mark: this one was cut inside its sentence.
            return f"the last list item stops without the end mark every other item has: {last[-40:]!r}"
    return None


def _sentence_key(sentence: str) -> str:
    return re.sub(r"[\W_]+", " ", normalize(sentence)).strip()


def repeated_sentence(text: str) -> str | None:
    """A sentence (six words or more, or fifteen Japanese characters) said again word for word in the
    same answer: a paragraph or a line pasted twice. Two cards of one layout differ in their titles
    and numbers, so they are not the same sentence."""
    seen: set[str] = set()
    for line in (text or "").splitlines():
        for sentence in split_sentences(line):
            key = _sentence_key(sentence)
            long_enough = len(key.split()) >= 6 or len(re.sub(r"[^\u3040-\u30ff\u4e00-\u9fff]", "", key)) >= 15
            if not long_enough:
                continue
            if key in seen:
                return f"says the same sentence twice: {sentence.strip()[:60]!r}"
            seen.add(key)
    return None


# An English sentence, as opposed to a title or a name: words a title rarely has two of.
_ENGLISH_CLAUSE_WORDS = frozenset("""i you your we our us it it's its is are was were be been am this that these those
    can will would should could do does did have has had please thank thanks me my here there what how why
    if not really very so just also""".split())
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")


def english_sentences(text: str) -> list[str]:
    """Sentences of English prose (four words or more, two of them clause words such as "you",
    "is", "please") outside quotes and brackets, where a title or a name would stand."""
    stripped = re.sub(r"『[^』]*』|「[^」]*」|\([^)]*\)|（[^）]*）|\*\*[^*]*\*\*|\*[^*]*\*", " ", text or "")
    out = []
    for piece in re.split(r"(?<=[.!?。！？])\s*|\n|(?<=[\u3040-\u30ff\u4e00-\u9fff])\s+(?=[A-Za-z])", stripped):
        words = _ENGLISH_WORD.findall(piece)
        clause = {w.lower().replace("’", "'") for w in words} & _ENGLISH_CLAUSE_WORDS
        if len(words) >= 4 and len(clause) >= 2 and japanese_share(piece) < 0.2:
            out.append(piece.strip())
    return out


def shopper_writes_japanese(case: TestCase) -> bool:
    share = japanese_share(case.query)
    return share > 0.3 or (case.is_japanese and share > 0.0) or (case.is_japanese and not re.search(r"[A-Za-z]{3}", case.query))


_LOWER_WORD = re.compile(r"(?<![A-Za-z0-9@./_-])[a-z]{4,}(?![A-Za-z0-9@./_-])")


def english_words_in_japanese(case: TestCase, text: str) -> list[str]:
    """English words written into Japanese sentences where Japanese has its own (予約のpaymentは、
    shipmentのタイミングで...): lower-case dictionary words, not names or titles (capitalised), codes,
    addresses, quoted or bracketed words, nor words the case's own evidence or the shopper uses."""
    evidence = normalize(" ".join([case.query, *(m.content for m in case.conversation_history), *case.retrieved_chunks,
                                   case.page_context.model_dump_json(exclude_none=True),
                                   *(i.model_dump_json() for i in case.catalog)]))
    stripped = re.sub(r"『[^』]*』|「[^」]*」|\([^)]*\)|（[^）]*）|`[^`]*`|https?://\S+", " ", text or "")
    found: list[str] = []
    for line in stripped.splitlines():
        for sentence in split_sentences(line):
            if japanese_share(sentence) < 0.3:
                continue
            found += [w for w in _LOWER_WORD.findall(sentence) if w not in evidence and w not in found]
    return found


def japanese_sentences(text: str) -> list[str]:
    """Sentences of Japanese prose (ten Japanese characters or more, kana among them, mostly Japanese
    script) outside quotes and brackets, where a title or a name would stand."""
    stripped = re.sub(r"『[^』]*』|「[^」]*」|\([^)]*\)|（[^）]*）|\*\*[^*]*\*\*", " ", text or "")
    out = []
    for line in stripped.splitlines():
        for sentence in split_sentences(line):
            japanese = re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]", sentence)
            if len(japanese) >= 10 and re.search(r"[\u3040-\u309f]", sentence) and japanese_share(sentence) > 0.5:
                out.append(sentence.strip())
    return out


def language_problem(case: TestCase) -> str | None:
    """The answer, or part of it, in another language than the shopper's: an English answer to a
    shopper writing Japanese (or a Japanese answer to one writing English), or English sentences
    inside a Japanese answer. Titles, names, codes and quoted words are not sentences."""
    text = case.response or ""
    answer_japanese = japanese_share(text)
    if shopper_writes_japanese(case):
        if answer_japanese < 0.2:
            return "the shopper writes Japanese and the answer is in English"
        english = english_sentences(text)
        if english:
            return f"English sentences in a Japanese answer: {english[0][:60]!r}"
        words = english_words_in_japanese(case, text)
        if len(words) >= 2:
            return f"English words inside Japanese sentences: {', '.join(words[:5])}"
    elif answer_japanese > 0.5 and japanese_share(case.query) == 0.0:
        return "the shopper writes English and the answer is in Japanese"
    elif japanese_share(case.query) == 0.0 and not case.is_japanese:
        japanese = japanese_sentences(text)
        if japanese:
            return f"Japanese sentences in an English answer: {japanese[0][:40]!r}"
    return None


def check(case: TestCase, rubric: Rubric) -> CheckReport:
    report = CheckReport()
    reading = reading_of(case)
    parts: list[tuple[float, list[str]]] = []
    length = length_score(case, rubric)
    if length:
        parts.append((length[0], [length[1]]))
        words, rule = word_count(reading.text), rubric.length_rule(case.intent)
        # Half again over the maximum (where the length score reaches 0), or under half the minimum: a
        # few words either side is a style lapse the composite weighs; past this, no acceptable answer
        # of the labelled sets is (README, "Who may fail an item").
        if rule is not None and (words >= 1.5 * rule.max_words or words < rule.min_words / 2):
            report.hard_failures.append(HardFailure(rule="length_out_of_range", dimension=NAME,
                                                    sub_score="formatting", detail=length[1]))
    cut = truncation(reading.text)
    if cut:
        report.hard_failures.append(HardFailure(rule="truncated_response", dimension=NAME, sub_score="grammar", detail=cut))
        report.findings.append(cut)
    repeated = repeated_sentence(reading.text)
    if repeated:
        report.hard_failures.append(HardFailure(rule="repeated_text", dimension=NAME, sub_score="grammar", detail=repeated))
        report.findings.append(repeated)
    language = language_problem(case)
    if language:
        report.hard_failures.append(HardFailure(rule="wrong_language", dimension=NAME, sub_score="tone", detail=language))
        report.findings.append(language)
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
