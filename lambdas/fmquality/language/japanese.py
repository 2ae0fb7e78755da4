"""Japanese register read by morphology: politeness of each sentence's predicate and misused keigo.

Uses MeCab through fugashi with the UniDic-lite dictionary (both on PyPI, imported lazily): the
offline judge runs locally only, so it may carry the ~250 MB dictionary that the Lambda bundle does
not. Without it, the Japanese register signals abstain (they are never guessed from listed phrases).

The rules are textbook Japanese grammar, not phrases from any dataset:
- politeness (丁寧語): a sentence is polite when its predicate carries the polite auxiliaries
  です / ます (or ございます, ください); plain (常体) when it ends in a verb, adjective or だ/た/ない
  without them; a noun-phrase line (体言止め, "在庫あり") is neither.
- mixing です・ます with the written である style in one text (文体の混在; JTF 日本語標準スタイルガイド).
- misused keigo (文化審議会「敬語の指針」, 2007): a humble verb (謙譲語: 申す, 参る, 致す, 拝見する,
  伺う, おる, 存じる) given the honorific auxiliary れる/られる (おられる, 申される); the humble
  お/ご〜する made honorific with れる/られる (ご注文される); a humble verb in a request to the
  shopper (拝見してください).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from collections.abc import Iterator
from typing import Any

from fmquality.domain.errors import AnalyzerMissing
from fmquality.language.text import is_list_line

# Lemmas (UniDic) of humble verbs (謙譲語).
_HUMBLE_LEMMAS = {"申す", "参る", "致す", "伺う", "存じる", "拝見", "拝読", "拝借", "頂戴", "承る"}
_POLITE_AUX = {"です", "ます"}
_POLITE_VERBS = {"御座る", "下さる"}  # ございます, ください
_SENTENCE_END = re.compile(r"(?<=[。！？!?])|\n")
_CLOSING_ASIDE = re.compile(r"[（(][^（）()]*[）)]\s*(?=[。！？!?]?\s*$)")
_SLANG_ENDING = re.compile(r"っす(?:ね|よ|か)?[。！？!?〜~ー]*\s*$")
_CASUAL_PARTICLES = frozenset(("よ", "ね", "な", "ぞ", "わ", "さ", "の", "よね"))


# One tagger per process, used by one thread at a time. A MeCab tagger keeps its parse state in the
# object, so two threads parsing with it at once drop tokens now and then and the scores stop being
# repeatable; and each tagger maps the ~250 MB dictionary, so one per thread multiplied the memory.
# Parsing holds the GIL anyway: the lock costs no parallelism (the direct engine uses processes).
_TAGGER_LOCK = threading.Lock()
_TAGGER: Any = None


def _tagger() -> Any:
    global _TAGGER
    if _TAGGER is None:
        with _TAGGER_LOCK:
            if _TAGGER is None:
                try:
                    import fugashi  # noqa: PLC0415 - heavy and optional: only the offline judge needs it

                    _TAGGER = fugashi.Tagger()
                except Exception as exc:  # ImportError, or the dictionary missing (RuntimeError from MeCab)
                    raise AnalyzerMissing(
                        f"Japanese morphological analyser unavailable ({exc.__class__.__name__}: {exc})") from exc
    return _TAGGER


def available() -> bool:
    try:
        _tagger()
        return True
    except AnalyzerMissing:
        return False


@dataclass(frozen=True)
class Word:
    surface: str
    pos1: str
    pos2: str
    lemma: str
    form: str  # conjugation form (活用形)


@lru_cache(maxsize=8192)
def words(sentence: str) -> tuple[Word, ...]:
    tagger = _tagger()
    with _TAGGER_LOCK:  # the tokens (and their features) are read from the tagger's parse state
        out = []
        for token in tagger(sentence):
            f = token.feature
            out.append(Word(token.surface, f.pos1 or "", f.pos2 or "", f.lemma or token.surface, f.cForm or ""))
    return tuple(out)


@dataclass
class Register:
    polite: list[str] = field(default_factory=list)
    plain: list[str] = field(default_factory=list)
    dearu: list[str] = field(default_factory=list)  # written である style
    keigo_misuse: list[str] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)  # no predicate at all: "価格：594円。"
    sentences: int = 0
    # Casual speech: plain sentences whose predicate is a verb, an adjective or an auxiliary ("在庫あるよ",
    # "できるね"), not an interjection ("こんにちは！", "ごめんなさい"), which has no polite form to miss;
    # and a noun closed by a sentence-final particle ("ご了承ね"), where polite speech says ですね.
    casual: list[str] = field(default_factory=list)
    # A polite auxiliary anywhere, also inside a sentence ("在庫ありの商品ですので、…").
    speaks_politely: bool = False

    @property
    def predicates(self) -> int:
        return len(self.polite) + len(self.plain)


def _ending(ws: tuple[Word, ...]) -> str | None:
    """"polite", "plain" or None (a noun-phrase line) for one sentence."""
    core = [w for w in ws if w.pos1 not in ("補助記号", "空白") and not (w.pos1 == "助詞" and w.pos2 == "終助詞")]
    if not core:
        return None
    if any((w.pos1 == "助動詞" and w.lemma in _POLITE_AUX) or w.lemma in _POLITE_VERBS for w in core[-4:]):
        return "polite"
    if core[-1].pos1 == "感動詞":
        return "polite" if core[-1].surface.endswith(("ございます", "ございました")) else "plain"
    last = core[-1]
    if last.pos1 in ("動詞", "形容詞") and last.form.startswith(("終止形", "命令形")):
        return "plain"
    if last.pos1 == "助動詞" and last.form.startswith("終止形"):
        return "plain"
    if last.pos1 == "助詞" and last.pos2 == "接続助詞" and last.surface in ("て", "で"):
        return "plain"  # "見てみて" (a plain request)
    return None


def _noun_with_final_particle(ws: tuple[Word, ...]) -> bool:
    """A sentence that closes a noun with よ/ね/な ("ご了承ね"): casual where polite speech says ですね."""
    core = [w for w in ws if w.pos1 not in ("補助記号", "空白")]
    return len(core) >= 2 and core[-1].pos1 == "助詞" and core[-1].pos2 == "終助詞" \
        and core[-1].surface in ("よ", "ね", "な", "よね") and core[-2].pos1 == "名詞"


def _misuse(ws: tuple[Word, ...]) -> list[str]:
    found = []
    for i, w in enumerate(ws):
        nxt = ws[i + 1] if i + 1 < len(ws) else None
        honorific_aux = nxt is not None and nxt.pos1 == "助動詞" and nxt.lemma in ("れる", "られる")
        humble = w.lemma in _HUMBLE_LEMMAS or (w.lemma == "居る" and w.surface.startswith("お"))
        if w.pos1 == "動詞" and humble and honorific_aux:
            found.append(w.surface + nxt.surface)
        if w.pos1 == "動詞" and w.lemma == "為る" and honorific_aux and i >= 2 and ws[i - 2].pos1 == "接頭辞" \
                and ws[i - 2].surface in ("ご", "お", "御"):
            found.append(ws[i - 2].surface + ws[i - 1].surface + w.surface + nxt.surface)
        if w.pos1 == "動詞" and w.lemma == "為る" and i >= 1 and ws[i - 1].lemma in _HUMBLE_LEMMAS:
            request = [x.lemma for x in ws[i + 1:i + 3]]
            if "下さる" in request:
                found.append(ws[i - 1].surface + w.surface + "…ください")
        if w.pos1 == "動詞" and w.lemma in _HUMBLE_LEMMAS - {"拝見", "拝読", "拝借", "頂戴"} and \
                "下さる" in [x.lemma for x in ws[i + 1:i + 3]]:
            found.append(w.surface + "…ください")
        # The humble お/ご〜する in a request to the shopper: ご確認してください (ご確認ください).
        if w.pos1 == "動詞" and w.lemma == "為る" and i >= 2 and ws[i - 2].pos1 == "接頭辞" \
                and ws[i - 2].surface in ("ご", "お", "御") and [x.lemma for x in ws[i + 1:i + 3]][:2] == ["て", "下さる"]:
            found.append(ws[i - 2].surface + ws[i - 1].surface + "して…ください")
        # A double honorific: お〜になる made honorific again with れる/られる (お確かめになられる).
        if w.pos1 == "動詞" and w.lemma == "成る" and honorific_aux and i >= 3 and ws[i - 1].surface == "に" \
                and ws[i - 3].surface in ("お", "ご", "御"):
            found.append(ws[i - 3].surface + ws[i - 2].surface + "に" + w.surface + nxt.surface)
        # Polite auxiliaries stacked: 〜ますです, 〜ませでございます.
        if w.pos1 == "助動詞" and w.lemma == "ます" and nxt is not None and nxt.pos1 == "助動詞" and nxt.lemma in ("です", "だ"):
            found.append(w.surface + nxt.surface + ("…" if nxt.lemma == "だ" else ""))
    return found


def _sentences(text: str) -> Iterator[tuple[str, bool]]:
    """Each sentence of ``text``, and whether it stands on a list line."""
    for line in (text or "").splitlines():
        listed = is_list_line(line)
        for sentence in _SENTENCE_END.split(line):
            yield sentence.strip(), listed


def _casual_particle(ws: tuple[Word, ...]) -> bool:
    """The sentence closes on a final particle of casual speech (よ, ね, な, ぞ, わ, さ, の)."""
    tail = [w for w in ws if w.pos1 not in ("補助記号", "空白")][-2:]
    return any(w.pos1 == "助詞" and w.pos2 == "終助詞" and w.surface in _CASUAL_PARTICLES for w in tail)


def register(text: str) -> Register:
    """Politeness of every Japanese sentence of ``text`` (list lines of cards included: a line
    without a predicate counts for neither side)."""
    result = Register()
    for sentence, listed in _sentences(text):
        if not sentence or not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", sentence):
            continue
        # A bracket closing the sentence is an aside (出荷いたします（一部地域を除く）。): the predicate stands before it.
        ws = words(_CLOSING_ASIDE.sub("", sentence) or sentence)
        result.sentences += 1
        ending = _ending(ws)
        if _SLANG_ENDING.search(sentence):
            result.casual.append(sentence)  # 〜っす: the slang clipping of です, casual whatever it parses as
        elif ending == "plain" and listed and not _casual_particle(ws):
            # A list item in plain form (お気に入りの巻を読み返す, どちらがよいか) is a heading or a step,
            # written so in polite answers too; only a casual particle (読み返すよ) makes it speech.
            result.fragments.append(sentence)
        elif ending == "polite":
            result.polite.append(sentence)
        elif ending == "plain":
            result.plain.append(sentence)
            core = [w for w in ws if w.pos1 not in ("補助記号", "空白") and not (w.pos1 == "助詞" and w.pos2 == "終助詞")]
            # なさい closes set formulae (ごめんなさい, おやすみなさい) that have no other polite form.
            if core[-1].pos1 != "感動詞" and not core[-1].surface.startswith("なさい"):
                result.casual.append(sentence)
        elif _noun_with_final_particle(ws):
            result.casual.append(sentence)
        elif not any(w.pos1 in ("動詞", "形容詞", "助動詞") for w in ws):
            result.fragments.append(sentence)
        result.speaks_politely = result.speaks_politely or any(
            (w.pos1 == "助動詞" and w.lemma in _POLITE_AUX) or w.lemma in _POLITE_VERBS for w in ws)
        core = [w for w in ws if w.pos1 not in ("補助記号", "空白")]
        if len(core) >= 2 and core[-2].lemma == "だ" and core[-1].lemma == "有る" and core[-1].form.startswith("終止形"):
            result.dearu.append(sentence)  # the sentence ends in である
        result.keigo_misuse.extend(_misuse(ws))
    return result
