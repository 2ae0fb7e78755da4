"""Text as the checks read it: normalization, script (English or Japanese), word tokens, sentences
and list lines, and loose keys for comparing titles.

Japanese is segmented with TinySegmenter (a real, pure-Python word segmenter), never split on
spaces. Positions of sentences are in ``normalize(text)``, the coordinate system of every span in
the core (mentions, prices, dates). Numbers, amounts, ranges and dates are read in
``language.numbers``; negation and conditions in ``language.negation``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import tinysegmenter

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
_CJK_RE = re.compile(f"[{_CJK}]")
_CJK_RUN_RE = re.compile(f"[{_CJK}ー々〆〤]+")
_LATIN_WORD_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_SEGMENTER = tinysegmenter.TinySegmenter()

ENGLISH_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from about as is are was were be been being
    it its this that these those i you he she we they me my your our their his her them us do does
    did have has had can could will would should may might must shall not no yes so than then there
    here what which who whom whose when where why how all any both each few more most other some such
    only own same too very just also into over under again once up down out off s t don now please
    get got let lets one ones""".split()
)
JAPANESE_STOPWORDS = frozenset(
    "の は が を に で と も へ や か な だ です ます でした ました する し て た い ね よ こと もの これ それ あれ この その あの "
    "ある あり いる ない から まで より など ので けど けれど ください お ご さん 。 、 ！ ？".split()
)


def normalize(text: str) -> str:
    """NFKC (full-width to half-width), lower case, unified apostrophes."""
    return unicodedata.normalize("NFKC", text).lower().replace("’", "'")


def has_japanese(text: str) -> bool:
    return bool(_CJK_RE.search(text or ""))


def japanese_share(text: str) -> float:
    """Share of letters that are Japanese script (0 for pure English, near 1 for pure Japanese)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_RE.match(c)) / len(letters)


def script_of(text: str) -> str:
    """"japanese" when more than half of the text's letters are Japanese script, else "latin"."""
    return "japanese" if japanese_share(text) > 0.5 else "latin"


_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")


def is_hiragana(word: str) -> bool:
    """Hiragana only: in a Japanese sentence mostly its grammar (particles, endings), not its content."""
    return _HIRAGANA.match(word) is not None


@lru_cache(maxsize=4096)
def _segment(run: str) -> tuple[str, ...]:
    return tuple(t for t in _SEGMENTER.tokenize(run) if t.strip())


def tokenize(text: str) -> list[str]:
    """Word tokens of mixed English/Japanese text, in order, normalised."""
    norm = normalize(text or "")
    tokens: list[str] = []
    pos = 0
    for match in _CJK_RUN_RE.finditer(norm):
        tokens.extend(_LATIN_WORD_RE.findall(norm[pos:match.start()]))
        tokens.extend(_segment(match.group()))
        pos = match.end()
    tokens.extend(_LATIN_WORD_RE.findall(norm[pos:]))
    return tokens


def word_count(text: str) -> int:
    """Words for length rules: English words, and Japanese characters counted two per word."""
    norm = normalize(text or "")
    cjk_chars = len(_CJK_RE.findall(norm))
    latin_words = len(_LATIN_WORD_RE.findall(_CJK_RUN_RE.sub(" ", norm)))
    return latin_words + (cjk_chars + 1) // 2


# Markdown emphasis ("**$12.99**", "_Vol. 1_"): the marks are layout, not words.
_MARKUP = re.compile(r"[*_`]+")


def strip_markup(text: str) -> str:
    """The text without markdown emphasis marks (``*``, ``_``, backquote)."""
    return _MARKUP.sub("", text)


# --------------------------------------------------------------------------------------------------
# Romanization
# --------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _kakasi():
    import pykakasi  # imported lazily: building its dictionaries costs ~0.4 s

    return pykakasi.kakasi()


def romanize(text: str) -> str:
    """Hepburn romanization of Japanese text (a fallback; catalog `title_romaji` is authoritative)."""
    return " ".join(part["hepburn"] for part in _kakasi().convert(text) if part["hepburn"].strip())


def loose_key(text: str) -> str:
    """Letters and digits only, lower case: for comparing titles and romanizations."""
    return re.sub(r"[^0-9a-z\u3040-\u30ff\u4e00-\u9fff]", "", normalize(text))


# --------------------------------------------------------------------------------------------------
# Sentences that survive prices and abbreviations, list lines, romaji comparison
# --------------------------------------------------------------------------------------------------

# English full stops end a sentence only before whitespace or the end, and not after an abbreviation
# ("Vol. 2", "No. 5") or inside a number ("$12.99"); Japanese 。！？ always end one.
_ABBREVIATIONS = frozenset({"vol", "vols", "no", "nos", "e.g", "i.e", "mr", "mrs", "ms", "dr", "st", "jr", "ch", "etc",
                            "approx", "ed", "eds", "pp", "vs"})
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS))
_ABBREVIATION_BEFORE = re.compile(r"([A-Za-z.]+)$")
_SENTENCE_END_RE = re.compile(rf"[。！？]+|[.!?]+(?=\s|$|[{_CJK}])")


# No sentence of a chatbot answer or a knowledge chunk is this long (the longest in every labelled set
# is under 800 characters); a longer run without a sentence end is cut at a space or comma before it,
# so the work done per claim inside its sentence stays bounded and reading stays linear in the text.
MAX_SENTENCE_CHARS = 1_000
_SOFT_CUT = re.compile(r"[\s,、，]")


def _bounded(start: int, end: int, text: str) -> list[tuple[int, int]]:
    """(start, end) cut into pieces of at most MAX_SENTENCE_CHARS, each ending after a space or comma
    in its second half when there is one."""
    pieces = []
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        cut = max((m.end() for m in _SOFT_CUT.finditer(text, start + MAX_SENTENCE_CHARS // 2, limit)), default=limit)
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of mixed English/Japanese text, as written. Never cuts "$12.99",
    "Vol. 2" or a "1." list marker off its sentence."""
    out: list[str] = []
    for line in (text or "").splitlines():
        start = 0
        pieces: list[tuple[int, int]] = []
        for match in _SENTENCE_END_RE.finditer(line):
            if match.group().startswith("."):
                if match.start() - start <= 16 and line[start:match.start()].strip().isdigit():
                    continue  # "1. One Piece": a list marker, not a sentence
                word = _ABBREVIATION_BEFORE.search(line, max(start, match.start() - _LONGEST_ABBREVIATION - 2),
                                                   match.start())
                if word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                    continue
            pieces.append((start, match.end()))
            start = match.end()
        pieces.append((start, len(line)))
        for piece_start, piece_end in pieces:
            for a, b in _bounded(piece_start, piece_end, line):
                piece = line[a:b].strip()
                if piece:
                    out.append(piece)
    return out


_LIST_MARKER_RE = re.compile(r"^\s*(?:[-•*・●▪‣◦◆◇■□○▶►★☆→]|\d{1,2}[.)．）]|[①-⑳]|\(\d{1,2}\))\s*")


def is_list_line(line: str) -> bool:
    """A bulleted ("-", "•", "*", "・") or numbered ("1.", "1)", "①") line with content after the marker."""
    match = _LIST_MARKER_RE.match(line or "")
    return bool(match) and bool(line[match.end():].strip()) and not re.match(r"^\s*\d+\.\d", line)


def list_items(text: str) -> list[str]:
    """The list lines of a text, in order, without their markers."""
    return [_LIST_MARKER_RE.sub("", line, count=1).strip() for line in (text or "").splitlines() if is_list_line(line)]


def romaji_key(text: str) -> str:
    """A loose key for romanized Japanese: accents and macrons dropped, long vowels folded
    ("Shōnen", "Shounen" and "shonen" all give "shonen"), letters and digits only."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text or ""))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    plain = re.sub(r"[^0-9a-z]", "", plain)
    for long_vowel, short in (("ou", "o"), ("oo", "o"), ("uu", "u"), ("aa", "a"), ("ii", "i")):
        plain = plain.replace(long_vowel, short)
    return plain


# --------------------------------------------------------------------------------------------------
# Spans: sentences and list lines (positions are in normalize(text))
# --------------------------------------------------------------------------------------------------

_NOT_A_SENTENCE_START = tuple("()（）[]］」』/|,、.:：;!?")
_VISIBLE = re.compile(r"\S")
_WORD_BEFORE = re.compile(r"([a-z]+)$")


def _next_visible(norm: str, pos: int) -> str:
    """The first non-space character at or after ``pos`` ("" at the end), without copying the rest."""
    match = _VISIBLE.search(norm, pos)
    return match.group() if match else ""


def segment_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or list line of ``normalize(text)``: the positional twin of
    ``split_sentences``. It does not cut "Vol. 1", "No. 5" or "12.99", so a product and its price
    stay in one segment."""
    norm = normalize(text or "")
    # The text as written, where it lines up with the normalized one: its case tells a title's "!"
    # ("Yotsuba&! at $13.99") from a sentence's end ("Great pick! At $13.99 ...").
    cased = text if text and text != norm and len(text) == len(norm) else None  # not when given normalized text
    spans: list[tuple[int, int]] = []
    start = 0
    for i, char in enumerate(norm):
        cut = char in "\n。！？!?"
        if char in "!?" and _next_visible(norm, i + 1) in _NOT_A_SENTENCE_START:
            cut = False  # "よつばと!（Yotsuba to! / Yotsuba&!）": the mark belongs to a title
        if char == "!" and cased is not None and i > 0 and norm[i - 1] in "&!abcdefghijklmnopqrstuvwxyz" \
                and _next_visible(cased, i + 1).islower():
            cut = False  # "Yotsuba&! at $13.99", "Haikyu!! is": a title's mark, the sentence goes on
        if char == "." and (i + 1 == len(norm) or norm[i + 1].isspace()):
            # Only the few characters before the mark are read: cost stays linear in the text.
            word = _WORD_BEFORE.search(norm, max(start, i - _LONGEST_ABBREVIATION - 1), i)
            head = norm[start:i] if i - start <= 16 else ""
            list_marker = head.strip().isdigit()  # "1. Berserk ..." starts a list line
            cut = not (word and word.group(1) in _ABBREVIATIONS) and not _next_visible(norm, i + 1).isdigit() \
                and not list_marker
        if cut:
            spans.extend(p for p in _bounded(start, i + 1, norm) if norm[p[0]:p[1]].strip())
            start = i + 1
    spans.extend(p for p in _bounded(start, len(norm), norm) if norm[p[0]:p[1]].strip())
    return spans


def phrase_in(needle: str, haystack: str) -> bool:
    """Case-, width- and spacing-insensitive containment (for forbidden phrases, ids, titles)."""
    n, h = normalize(needle).strip(), normalize(haystack)
    if not n:
        return False
    if n in h:
        return True
    key = loose_key(needle)
    return len(key) >= 4 and key in loose_key(haystack)
