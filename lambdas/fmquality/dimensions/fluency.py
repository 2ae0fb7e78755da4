"""Fluency: how the answer reads.

- formatting (deterministic): length within the intent's range, product cards (title, price,
  availability on a list line) when a recommendation or promotion presents several products, and
  Japanese titles given as original + romanization + English title (client incident 4). A missing
  romanization caps formatting at a low score whatever the other parts say.
- grammar and tone are judge territory. The offline judge reads mechanical phrasing (repeats,
  run-ons, doubled punctuation, for Japanese mixed politeness, literal calques, の chains, missing
  。, katakana soup) and the register the rubric expects for the intent.
"""

from __future__ import annotations

import re
from collections import Counter

from fmquality.dimensions.base import CheckReport, response_text
from fmquality.dimensions.consistency import mentioned_items, text_currency, title_keys
from fmquality.judges.base import JudgeVerdict
from fmquality.models import CatalogItem, TestCase
from fmquality.rubric import Rubric
from fmquality.text import (
    availability_mentions,
    coverage,
    extract_prices,
    extract_quantities,
    find_phrase,
    has_japanese,
    is_list_line,
    japanese_share,
    normalize,
    phrase_key,
    romaji_key,
    romanize,
    split_sentences,
    tokenize,
    word_count,
)

NAME = "fluency"

# --------------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------------

CARD_INTENTS = {"recommendation", "promotion"}
# A missing romanization is a client-visible defect (incident 4): formatting is capped this low.
MISSING_ROMAJI_SCORE = 0.2
MISSING_ENGLISH_SCORE = 0.5


def length_score(case: TestCase, rubric: Rubric) -> tuple[float, str] | None:
    rule = rubric.length_rule(case.intent.value)
    if rule is None:
        return None
    words = word_count(response_text(case))
    if words < rule.min_words:
        return words / rule.min_words, f"length {words} words is below the {rule.min_words}-word minimum for {case.intent.value}"
    if words > rule.max_words:
        # Linear in the overshoot, reaching 0 at one and a half times the maximum: a 20% longer
        # answer already reads as padded.
        return max(0.0, 1.0 - 2.0 * (words - rule.max_words) / rule.max_words), f"length {words} words is above the {rule.max_words}-word maximum for {case.intent.value}"
    return 1.0, f"length {words} words is within {rule.min_words}-{rule.max_words}"


def _card_block(lines: list[str], index: int, item: CatalogItem, catalog: list[CatalogItem], currency: str) -> str:
    """The line naming the item plus its continuation lines (a card may spread over sub-bullets),
    up to a blank line or a line naming another product."""
    block = [lines[index]]
    for line in lines[index + 1:]:
        if not line.strip() or (is_list_line(line) and not line.startswith((" ", "\t"))):
            break
        if any(a != item.asin for a in mentioned_items(line, catalog, currency)):
            break
        block.append(line)
    return "\n".join(block)


def _is_card_line(line: str) -> bool:
    return is_list_line(line) or line.lstrip().startswith("|")  # markdown table rows are cards too


def product_card_score(case: TestCase, rubric: Rubric) -> tuple[float, list[str]] | None:
    if case.intent.value not in CARD_INTENTS:
        return None
    text = response_text(case)
    currency = text_currency(text)
    named = mentioned_items(text, case.catalog, currency)
    if len(named) < 2:
        return None
    catalog = case.catalog_by_asin()
    lines = text.splitlines()
    fields = rubric.style.product_card_fields
    scores: list[float] = []
    evidence: list[str] = []
    for asin in named:
        item = catalog[asin]
        index = next((i for i, line in enumerate(lines) if asin in mentioned_items(line, case.catalog, currency)), None)
        if index is None:  # named across a line break only; no card to read
            scores.append(0.0)
            evidence.append(f"'{item.title}' has no card line")
            continue
        block = _card_block(lines, index, item, case.catalog, currency)
        block_key = phrase_key(block)
        present = {"list line": _is_card_line(lines[index])}
        for name in fields:
            if name == "title":
                present[name] = any(find_phrase(block_key, k) for k in title_keys(item) if k != phrase_key(item.asin))
            elif name == "price":
                present[name] = bool(extract_prices(block))
            elif name == "availability":
                present[name] = bool(availability_mentions(block))
            elif name == "author":
                present[name] = bool(item.author) and bool(find_phrase(block_key, phrase_key(item.author)))
            else:
                present[name] = bool(find_phrase(block_key, phrase_key(str(getattr(item, name, "") or ""))))
        missing = [n for n, ok in present.items() if not ok]
        scores.append(sum(present.values()) / len(present))
        if missing:
            evidence.append(f"product card for '{item.title}' lacks {', '.join(missing)}")
    if not evidence:
        evidence.append(f"{len(named)} products each shown as a card with {', '.join(fields)}")
    return sum(scores) / len(scores), evidence


def _japanese_title_keys(item: CatalogItem) -> set[str]:
    return {k for k in title_keys(item) if has_japanese(k)}


def _english_title_keys(item: CatalogItem) -> set[str]:
    """The English title in full or as its series name ("Demon Slayer" for "Demon Slayer: Kimetsu
    no Yaiba, Vol. 1"); the romaji is not the English title even when the catalog title contains it."""
    base = re.split(r",|:|\(|\s+vol(?:ume)?\b", item.title, flags=re.IGNORECASE)[0]
    return {k for k in (phrase_key(item.title), phrase_key(base)) if len(k) >= 3}


def japanese_title_score(case: TestCase, rubric: Rubric) -> tuple[float, list[str]] | None:
    """Each catalog title the response gives in Japanese must also be given in romaji and in English."""
    if rubric.style.japanese_title_format != "original_romaji_english":
        return None
    text = response_text(case)
    text_key = phrase_key(text)
    text_romaji = romaji_key(text)
    results: list[tuple[float, str]] = []
    seen_titles: set[str] = set()
    for item in case.catalog:
        ja_keys = _japanese_title_keys(item)
        if not ja_keys or not any(find_phrase(text_key, k) for k in ja_keys) or item.title_ja in seen_titles:
            continue
        seen_titles.add(item.title_ja or "")  # two editions of one title are one title here
        romaji_source = item.title_romaji or romanize(re.sub(r"\s*\d+\s*$", "", item.title_ja or ""))
        romaji_forms = {romaji_key(romaji_source), romaji_key(re.split(r",|:|\s+vol", romaji_source, flags=re.I)[0])}
        has_romaji = any(len(f) >= 3 and f in text_romaji for f in romaji_forms)
        english_keys = _english_title_keys(item)
        has_english = any(find_phrase(text_key, k) for k in english_keys)
        label = f"'{item.title_ja}'"
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
    parts: list[float] = []
    evidence: list[str] = []
    length = length_score(case, rubric)
    if length:
        parts.append(length[0])
        evidence.append(length[1])
    cards = product_card_score(case, rubric)
    if cards:
        parts.append(cards[0])
        evidence.extend(cards[1])
    titles = japanese_title_score(case, rubric)
    if titles:
        parts.append(titles[0])
        evidence.extend(titles[1])
    if parts:
        score = sum(parts) / len(parts)
        if titles and titles[0] < 1.0:
            score = min(score, titles[0])  # incident 4: a missing romanization is never averaged away
        report.set("formatting", score, *evidence)
        report.findings.extend(e for e in evidence if "lacks" in e or "without" in e or "outside" in e or "below" in e or "above" in e)
    else:
        report.skip("formatting")
    report.ask_judge("grammar")
    report.ask_judge("tone")
    return report


# --------------------------------------------------------------------------------------------------
# grammar (offline judge)
# --------------------------------------------------------------------------------------------------

_POLITE_END_RE = re.compile(r"(です|ます|ました|でした|ません|ましょう|でしょう|ください|ございます|ませ|いたします)(?:ね|よ|か|よね)?$")
_PLAIN_END_RE = re.compile(r"(だ|である|だった|った|んだ|ない|る|う|だよ|だね|じゃん)$")
_JA_CALQUES = (
    "あなたの", "あなたは", "あなたに", "あなたが", "私たちの店", "私たちのストア", "親愛なる", "良い一日を",
    "素晴らしい一日", "在庫を持って", "を持っています", "のために私", "はあなた", "私はあなた", "幸せです",
    "あなたのために",
    # Stiff, report-like phrasing a store assistant would not use in chat.
    "存在します", "ある状態です", "は可能です", "以上です。", "である。", "であります",
)
_EN_MECHANICAL = ("please to ", "kindly do the needful", "it is to be noted", "the the ", "a a ")
_KATAKANA_RE = re.compile(r"[\u30a0-\u30ffー]")
_JA_CHAR_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_DOUBLED_PUNCT_RE = re.compile(r"(?<!\.)\.\.(?!\.)|,,|、、|。。|\?\?|！！！|!!!|\s[,.;:](?=\s|$)|,\.|\.,")


def _strip_titles(text: str, catalog: list[CatalogItem]) -> str:
    """Titles repeat by design in product lists; take them out before looking for repeats."""
    for item in catalog:
        for name in (item.title, item.title_ja, item.title_romaji):
            if name:
                text = text.replace(name, " ")
    return text


def _prose_sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip() or _is_card_line(line) or line.lstrip().startswith("#"):
            continue
        out.extend(split_sentences(line))
    return out


def grammar_findings(text: str, catalog: list[CatalogItem]) -> list[tuple[float, str]]:
    """(penalty, evidence) for each sign of mechanical or machine-translated writing."""
    found: list[tuple[float, str]] = []
    prose = _prose_sentences(text)
    stripped = _strip_titles(text, catalog)
    norm = normalize(stripped)

    # Repeated words and phrases.
    # Product cards repeat "in stock" by design: repeats are looked for in the prose only.
    prose_text = _strip_titles("\n".join(prose), catalog)
    tokens = [t for t in tokenize(prose_text) if not t.isdigit() and t not in {"。", "、"}]
    doubled = {a for a, b in zip(tokens, tokens[1:]) if a == b and len(a) > 1 and not has_japanese(a)}
    if doubled:
        found.append((0.15, f"doubled words: {', '.join(sorted(doubled))}"))
    ngram = 4
    grams = Counter(tuple(tokens[i:i + ngram]) for i in range(len(tokens) - ngram + 1))
    repeats = [g for g, n in grams.items() if n >= 2 and sum(len(t) for t in g) >= 8]
    if len(repeats) >= 2:
        found.append((min(0.3, 0.05 * len(repeats)), f"{len(repeats)} phrases repeated, e.g. '{' '.join(repeats[0])}'"))
    starts = Counter(" ".join(tokenize(s)[:2]) for s in prose if len(tokenize(s)) >= 4)
    same_start = [s for s, n in starts.items() if n >= 3 and s]
    if same_start:
        found.append((0.15, f"three or more sentences start the same way ('{same_start[0]}')"))

    # English mechanics.
    lower_starts = [s for s in prose if re.match(r"[a-z]", s) and not has_japanese(s[:3])]
    if lower_starts:
        found.append((min(0.25, 0.08 * len(lower_starts)), f"{len(lower_starts)} sentence(s) start in lower case, e.g. '{lower_starts[0][:40]}'"))
    punct = _DOUBLED_PUNCT_RE.findall(text)
    if punct:
        found.append((min(0.2, 0.1 * len(punct)), f"doubled or misplaced punctuation ({len(punct)}x)"))
    long_en = [s for s in prose if not has_japanese(s) and len(s.split()) > 40]
    if long_en:
        found.append((min(0.3, 0.12 * len(long_en)), f"{len(long_en)} run-on sentence(s) over 40 words"))
    mechanical = [p.strip() for p in _EN_MECHANICAL if p in norm]
    if mechanical:
        found.append((0.15, f"mechanical English phrasing: {', '.join(mechanical)}"))

    # Telegraphic answers: a string of fragments ("Price is 9.99. Stock is yes.", "価格：594円。以上です。").
    en_prose = [s for s in prose if japanese_share(s) <= 0.5]
    short_en = [s for s in en_prose if len(re.findall(r"[A-Za-z0-9]+", s)) <= 4]
    if len(en_prose) >= 4 and len(short_en) / len(en_prose) >= 0.6:
        found.append((0.35, f"telegraphic English: {len(short_en)} of {len(en_prose)} sentences are fragments"))
    if re.search(r"\b(stock|availability|price|purchase) is (yes|no|possible)\b", norm):
        found.append((0.2, "mechanical 'X is yes/possible' phrasing"))

    # Japanese.
    ja_prose = [s for s in prose if japanese_share(s) > 0.5]
    fragments = [s for s in ja_prose
                 if not _POLITE_END_RE.search(re.sub(r"[。！？!?♪）)」』\s]+$", "", s))
                 and not _PLAIN_END_RE.search(re.sub(r"[。！？!?♪）)」』\s]+$", "", s))]
    if len(ja_prose) >= 3 and len(fragments) >= 2 and len(fragments) / len(ja_prose) >= 0.4:
        found.append((0.3, f"telegraphic Japanese: {len(fragments)} of {len(ja_prose)} sentences are bare fragments"))
    if any(re.search(r"[\u4e00-\u9fff]{2}[：:][\u4e00-\u9fff\d]", s) for s in ja_prose):
        found.append((0.15, "key：value fragments in prose"))
    endings = [re.sub(r"[。！？!?♪）)」』\s]+$", "", s) for s in ja_prose if re.search(r"[。！？!?]$", s)]
    polite = sum(1 for e in endings if _POLITE_END_RE.search(e))
    plain = sum(1 for e in endings if not _POLITE_END_RE.search(e) and _PLAIN_END_RE.search(e))
    if polite and plain:
        found.append((0.2 if plain < polite else 0.3, f"mixes polite です/ます ({polite}) with plain endings ({plain})"))
    calques = [c for c in _JA_CALQUES if c in stripped]
    if calques:
        found.append((min(0.4, 0.15 * len(calques)), f"literal, translated-sounding Japanese: {', '.join(calques)}"))
    no_chains = [s for s in ja_prose if re.search(r"の[^、。\s]{1,8}の[^、。\s]{1,8}の", s)]
    if no_chains:
        found.append((min(0.3, 0.12 * len(no_chains)), f"repeated の chains ({len(no_chains)} sentence(s))"))
    ja_chars = _JA_CHAR_RE.findall(stripped)
    prose_ja_chars = sum(len(_JA_CHAR_RE.findall(s)) for s in ja_prose)
    if prose_ja_chars >= 60 and not re.search(r"[。！？!?]", "".join(ja_prose)):
        found.append((0.2, "long Japanese text without sentence-ending 。"))
    elif ja_prose:
        unterminated = [s for s in ja_prose if len(s) >= 30 and not re.search(r"[。！？!?）)」』:：]$", s)]
        if len(unterminated) >= 2:
            found.append((0.1, f"{len(unterminated)} long Japanese sentence(s) without a closing 。"))
    if len(ja_chars) >= 30 and len(_KATAKANA_RE.findall(stripped)) / len(ja_chars) > 0.55:
        found.append((0.25, "mostly katakana transliteration"))
    long_ja = [s for s in ja_prose if len(s) > 110]
    if long_ja:
        found.append((min(0.2, 0.1 * len(long_ja)), f"{len(long_ja)} very long Japanese sentence(s)"))
    return found


# --------------------------------------------------------------------------------------------------
# tone (offline judge)
# --------------------------------------------------------------------------------------------------

REGISTER_MARKERS: dict[str, tuple[str, ...]] = {
    # Empathy in a return conversation is also plain courtesy: "of course", "happy to help", "承ります".
    "empathetic": ("sorry", "apolog", "understand", "unfortunately", "inconvenience", "frustrat", "happy to",
                   "glad", "of course", "no problem", "no worries", "don't worry", "certainly", "gladly",
                   "feel free", "we'll take care", "we will take care", "thank", "all set",
                   "申し訳", "ご不便", "ご迷惑", "恐れ入り", "残念", "お手数", "承ります", "お気軽に", "ご安心",
                   "いただけます", "かしこまりました", "ありがとうございます", "お願いいたします"),
    "enthusiastic": ("great", "love", "fan", "fantastic", "amazing", "perfect", "enjoy", "exciting", "favorite",
                     "must-read", "popular", "!", "おすすめ", "ぜひ", "人気", "楽しめ", "魅力", "お楽しみ", "！"),
    "friendly": ("hi", "hello", "thanks", "thank you", "happy", "glad", "enjoy", "!", "こんにちは", "ありがとう",
                 "嬉しい", "うれしい", "楽しい", "！"),
}
RUDE_PHRASES = ("obviously", "as i already said", "as i said", "just read the faq", "read the faq", "you should have",
                "not my problem", "figure it out", "clearly you", "like i told you", "whatever", "that's your problem",
                "if it bothers you", "that's just", "just check", "instead of just asking", "actually buy",
                "何度も言", "自分で調べ", "自分で手続き", "気になるなら", "当然です", "言ったはず", "はいはい", "じゃあね")
_RUDE_RE = re.compile(r"\b(check|look|do|figure|find|sort)\b[^.!?]{0,30}\byourself\b")
# A shopper reporting a problem is owed an apology, not only courtesy.
COMPLAINT_INTENTS = {"return_request", "order_tracking"}
COMPLAINT_WORDS = ("damaged", "torn", "broken", "disappointed", "wrong item", "missing", "never arrived", "late",
                   "破れ", "破損", "壊れ", "まだ届", "届いていない", "違う商品", "汚れ", "残念")
APOLOGY_WORDS = ("sorry", "apolog", "申し訳", "ご迷惑", "ご不便", "失礼")
FLUFF = ("amazing", "awesome", "super", "incredible", "!!", "😊", "🎉", "✨", "最高")
_POLITE_ANY_RE = re.compile(r"です|ます|ください|ございます|ません")


def _has_marker(norm: str, marker: str) -> bool:
    if has_japanese(marker) or not marker.isalpha():
        return marker in norm
    return re.search(rf"\b{re.escape(marker)}", norm) is not None


def tone_findings(case: TestCase, rubric: Rubric) -> tuple[float, list[str]]:
    text = response_text(case)
    norm = normalize(text)
    register = rubric.style.tone_register.get(case.intent.value, "friendly")
    score = 0.85
    evidence: list[str] = []
    if register in REGISTER_MARKERS:
        hits = [m for m in REGISTER_MARKERS[register] if _has_marker(norm, m)]
        if hits:
            score = 1.0
            evidence.append(f"{register} register: {', '.join(hits[:4])}")
        else:
            score = 0.6
            evidence.append(f"no {register} wording for a {case.intent.value} answer")
    elif register == "precise":
        concrete = bool(extract_quantities(text)) or (bool(case.expected_facts) and
                                                      max(coverage(f, text) for f in case.expected_facts) >= 0.6)
        fluff = [f for f in FLUFF if f in norm]
        score = (1.0 if concrete else 0.65) - 0.1 * len(fluff)
        evidence.append("precise: " + ("states concrete facts" if concrete else "no concrete number or fact")
                        + (f"; fluff: {', '.join(fluff)}" if fluff else ""))
    else:  # informative
        concrete = bool(extract_quantities(text) or mentioned_items(text, case.catalog))
        score = 1.0 if concrete else 0.75
        evidence.append("informative: " + ("gives product facts" if concrete else "few concrete facts"))
    rude = [p for p in RUDE_PHRASES if _has_marker(norm, p)] + [m.group() for m in _RUDE_RE.finditer(norm)]
    complaint = case.intent.value in COMPLAINT_INTENTS and any(_has_marker(normalize(case.query), w) for w in COMPLAINT_WORDS)
    if complaint and not any(w in norm for w in APOLOGY_WORDS):
        score = min(score, 0.5)
        evidence.append("the shopper reports a problem and the answer does not apologise")
    if rude:
        score -= 0.5
        evidence.append(f"rude or dismissive: {', '.join(rude)}")
    query_japanese = japanese_share(case.query) > 0.3
    response_share = japanese_share(text)
    if (case.is_japanese or query_japanese) and response_share < 0.2:
        # The wrong language is a register failure whatever the wording: capped, not just docked.
        score = min(score - 0.5, 0.3)
        evidence.append("answers a Japanese shopper in English")
    elif response_share > 0.5 and not _POLITE_ANY_RE.search(text):
        score -= 0.35
        evidence.append("Japanese answer without polite です/ます form")
    return max(0.0, min(1.0, score)), evidence


def offline_verdict(case: TestCase, rubric: Rubric, sub_scores: list[str]) -> JudgeVerdict:
    scores: dict[str, float] = {}
    evidence: list[str] = []
    notes: list[str] = []
    if "grammar" in sub_scores:
        findings = grammar_findings(response_text(case), case.catalog)
        scores["grammar"] = round(max(0.05, 1.0 - sum(p for p, _ in findings)), 4)
        evidence.extend(f"grammar: {e}" for _, e in findings)
        notes.append("grammar: " + (f"{len(findings)} sign(s) of mechanical writing" if findings else "reads naturally"))
    if "tone" in sub_scores:
        score, found = tone_findings(case, rubric)
        scores["tone"] = round(score, 4)
        evidence.extend(f"tone: {e}" for e in found)
        notes.append(f"tone: {rubric.style.tone_register.get(case.intent.value, 'friendly')} register expected")
    return JudgeVerdict(
        sub_scores=scores,
        rationale="offline fluency reading; " + "; ".join(notes),
        evidence=evidence,
        confidence=0.5,
    )
