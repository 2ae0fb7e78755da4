"""Fluency signals: grammar from general error patterns and sentence shape, tone from register.

grammar = exp(-0.4 x weighted errors) x sentence shape, where
- errors (English) are textbook patterns that need no dictionary: a word doubled ("the the"),
  "a" before a vowel or "an" before a consonant, a determiner followed by a verb or a function word
  ("the is"), two auxiliaries in a row that do not form a tense ("is are"), a sentence that ends on an
  article or a conjunction, a comma between a short subject and its verb ("Canteen, is cheap"), two
  finite verbs in one clause ("is near Soho has Wi-Fi"), a subject pronoun followed by a noun ("he
  hotel is"), "called"/"named" without the name, the same content word twice in
  one sentence, a phrase repeated across sentences, a sentence that says again what another said;
- errors (Japanese, by morphology: ``japanese.py``) are plain and polite endings mixed, the written
  である style mixed with です/ます, and misused keigo;
- an answer cut off mid-sentence (it ends on a comma, a conjunction or a て-form) counts double;
- sentence shape follows the readability finding that comprehension falls as sentences grow past
  about 8 words (American Press Institute; 14 words about 90%): 1 / (1 + (words - 8) / 54), and for
  Japanese past 40 characters.

tone reads defects of register: impolite or blaming formulae (Culpeper, "Impoliteness", 2011:
condescension, dismissals, message enforcers, pointed criticism), an answer in another language than
the shopper's, plain-form Japanese to a shopper, broken keigo or telegraphic sentences of bare noun
phrases (by morphology) are findings graded
as verdicts; lesser shortfalls (no apology to a shopper who reports a problem, some plain sentences,
vagueness where precision is asked) a heuristic reading. Without either it abstains.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from fmquality.language.vocabulary import stem as _stem
from fmquality.language.alignment import unit_of
from fmquality.language import japanese
from fmquality.domain.case import TestCase
from fmquality.scoring.signal import Abstain, Signal, SignalFn
from fmquality.config.rubric import Rubric
from fmquality.language.text import has_japanese, is_list_line, japanese_share, normalize, split_sentences

ERROR_WEIGHT = 0.4
# Sentences without a predicate, as a share of an answer's sentences, past which they are its style
# rather than a heading or an aside.
FRAGMENT_SHARE = 0.4

_DET = set("a an the this these those my your our their every each no".split())
_PREP = set("of to in on at for with from by near about into over under between through during without within".split())
_CONJ = set("and or but nor so because although while if than".split())
_AUX = set("is are was were be been being am do does did has have had will would can could should may might must".split())
_STOP = _DET | _PREP | _CONJ | _AUX | set("""i you he she it we they me him them us his her its not there that which who what
    when where how why then also just only very more most all both any some one ones out up""".split())
# A sentence may not end on an article or a coordinating conjunction ("... and", "... the").
_NO_FINAL = {"a", "an", "the", "and", "or", "but", "nor", "because", "which", "whose"}
_FINITE = set("is are was were has have".split())
# A subject pronoun is followed by its verb, not by a noun ("He hotel tomo is ..."); only adverbs,
# quantifiers and reflexives may come between.
_PRONOUN_THEN_VERB = re.compile(r"^(?:he|she|they|we|i)\s+([a-z]+)((?:\s+[a-z]+){0,3})\s+(?:is|are|am|has|have|was|were)\b")
_BETWEEN_SUBJECT_AND_VERB = frozenset("""also both all each still often never always just really even only already
    usually currently sometimes myself himself herself ourselves themselves too""".split())
_MODAL = {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}
_VOWEL_SOUND_CONSONANT = ("uni", "use", "usu", "eu", "one", "once")  # "a university", "a one-off"
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")


def _detokenize(text: str) -> str:
    """Tokenized corpora space out punctuation ("hotel ?", "near it ,"): read the words, not the spacing."""
    return re.sub(r"\s+([,.;:!?)])", r"\1", re.sub(r"([(])\s+", r"\1", text))


def english_errors(sentence: str) -> list[str]:
    errors: list[str] = []
    if re.match(r"^\s*[a-z]", sentence):
        errors.append("the sentence starts in lower case")
    text = normalize(_detokenize(sentence)).replace("...", "…")  # an ellipsis is not a doubled full stop
    tokens = re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*|[,.;:!?]", text)
    words = [t for t in tokens if t[0].isalnum()]
    for a, b in zip(tokens, tokens[1:]):
        if a == b and a[0].isalnum():
            errors.append(f"doubled word '{a}'")
        elif a == b:
            errors.append(f"doubled '{a}'")
        if a == "a" and b[0] in "aeiou" and not b.startswith(_VOWEL_SOUND_CONSONANT):
            errors.append(f"'a {b}'")
        if a == "an" and b[0].isalpha() and b[0] not in "aeiou" and not b.startswith(_SILENT_H):
            errors.append(f"'an {b}'")
        if a in _DET - {"this", "these", "those", "that", "no"} and (b in _AUX or b in _PREP or b in _CONJ or b in ",.;:!?"):
            errors.append(f"'{a} {b}'")
        if a in _AUX and b in _AUX and not (a in ("is", "are", "was", "were") and b in ("being", "been")) and not (
                a in ("will", "would", "can", "could", "should", "may", "might", "must", "do", "does", "did") and b in ("be", "have")) \
                and not (a in ("has", "have", "had") and b == "been"):
            errors.append(f"'{a} {b}'")
    if words and words[-1] in _NO_FINAL:
        errors.append(f"ends on '{words[-1]}'")
    if words and words[-1] in ("which", "where", "what", "who") and not text.rstrip().endswith("?") or \
            len(words) > 2 and words[-1] in ("which", "where") and words[-2] not in _AUX:
        errors.append(f"a clause that ends on '{words[-1]}'")  # "Inn at the presidio has which ."
    if len(words) > 2 and words[-2] in ("that", "which", "who") and words[-1] in _AUX:
        errors.append(f"a relative clause with no predicate ('{words[-2]} {words[-1]}')")
    # A lone letter that is no word ("hotel c a kimpton"); s, t, d and m are what a tokenizer leaves of
    # "it's", "don't", "I'd", "I'm".
    stray = [w for w in words if len(w) == 1 and w.isalpha() and w not in ("a", "i", "s", "t", "d", "m")]
    if stray:
        errors.append(f"stray letter(s) {', '.join(stray)}")  # "hotel c a kimpton", "all s good"
    if re.search(r"\b(?:can|could|will|would|should|may|might|must)\s+(?:do|does|did)\s+not\b", text):
        errors.append("a modal before 'do not'")  # "Can you do not care"
    modal_past = re.search(r"\b(?:can|could|will|would|should|may|might|must)\s+(?:not\s+)?([a-z]+ed)\b", text)
    if modal_past and modal_past.group(1) not in ("need", "feed", "seed", "speed", "bleed", "proceed", "exceed", "succeed"):
        errors.append(f"a past form after a modal ('{modal_past.group(0)}')")  # "You may called the hotel"
    if re.search(r"(?<![\d.,$])\b0\s+[a-z]+s\b", text):
        errors.append("a count of 0 written as a number")  # "There are 0 restaurants"
    for a, b, c in zip(words, words[1:], words[2:]):
        if a in ("do", "does", "did") and b == "not" and (c in _MODAL or c in _AUX - {"be", "have"}):
            errors.append(f"'{a} not {c}'")
    if re.match(r"^(?:thank you|thanks|sorry|yes|no|okay|ok|sure)\s+(?:the|a|an|i|we|you|it|there|this|that)\b", text):
        errors.append("no punctuation after the opening word")
    if re.search(r"\b(?:a|an|the)\s+\w+\s+(?:called|named)\s+(?:in|at|on|near|by)\b", text):
        errors.append("'called' or 'named' without the name")  # "a hotel called in the ..."
    subject = _PRONOUN_THEN_VERB.match(text)
    if subject and not any(w.endswith(("ly", "ed", "s")) or w in _BETWEEN_SUBJECT_AND_VERB or w in _STOP
                           for w in [subject.group(1), *subject.group(2).split()]):
        errors.append(f"a subject pronoun followed by '{subject.group(1)}'")  # "he hotel tomo is ..."
    if re.match(r"^[a-z0-9' ]{2,40}, (?:is|are|has|have|was|were)\b", text):
        errors.append("a comma between the subject and its verb")
    for clause in re.split(r"[,;:]|\b(?:and|or|but|which|that|who|where|when|if|because|while)\b", text):
        finite = [w for w in re.findall(r"[a-z']+", clause) if w in _FINITE]
        if len(finite) >= 2 and not re.search(r"\b(?:what|how|why)\b", clause):
            errors.append(f"two verbs in one clause ({' '.join(finite)})")
    # The same content word again within a few words ("a pricey price range", "the hotel is a nice hotel").
    for clause in re.split(r"[,;:]", text):
        clause_words = re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", clause)
        # Stems, and the first five letters of long words, so "pricey price" meets as "pricey"/"price" do not.
        stems = [(_stem(w)[:5] if len(w) >= 5 else _stem(w)) if w not in _STOP and len(w) > 2 and not w[0].isdigit() else None
                 for w in clause_words]
        for i, stem in enumerate(stems):
            if stem and stem in stems[max(0, i - 5):i]:
                errors.append(f"'{clause_words[i]}' again within a few words")
    return errors


# The last line of an answer that stops on a function word, with no full stop, was cut off.
_TRUNCATED_EN = re.compile(r"(?:,|\b(?:and|or|but|the|a|an|to|of|with|for|from|in|on|at|because|so|which|that|if|"
                           r"is|are|was|were|has|have|had|will|can|could|would|should|\w+n't|not))\s*$")
_TRUNCATED_JA = re.compile(r"(?:、|て|で|が|ので|けど|けれど|のち|ため|し|から|と)\s*$")


def truncated(text: str) -> bool:
    """An answer that stops mid-sentence: on a comma, a conjunction, an article or a て-form."""
    last_line = (text or "").rstrip().splitlines()[-1] if (text or "").strip() else ""
    if is_list_line(last_line) or last_line.lstrip().startswith("|"):
        return False  # a list line needs no full stop
    stripped = normalize(last_line).rstrip()
    if not stripped or stripped[-1] in ".!?。！？)）」』*":
        return False
    return bool(_TRUNCATED_JA.search(stripped) if has_japanese(stripped[-3:]) else _TRUNCATED_EN.search(stripped))


def _repeated_phrases(sentences: list[str]) -> list[str]:
    # Five words, or twelve Japanese characters (a polite formula like いただけます is not a repeat).
    grams: Counter[tuple[str, ...]] = Counter()
    for sentence in sentences:
        norm = normalize(sentence)
        words = re.findall(r"[a-z0-9]+", norm)
        chars = re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]", norm)
        # Each n-gram once per sentence, in order of appearance (a set's order would vary between runs).
        grams.update(dict.fromkeys(tuple(words[i:i + 5]) for i in range(len(words) - 4)).keys())
        grams.update(dict.fromkeys(tuple(chars[i:i + 12]) for i in range(len(chars) - 11)).keys())
    return [" ".join(g) if g[0].isascii() else "".join(g) for g, n in grams.items() if n > 1]


def _repeated_trigrams(sentences: list[str]) -> list[tuple[str, ...]]:
    """Runs of three words said again in the same answer ("i am a student, but i am a student"), each
    repeat once; a run of function words only ("it is a") is no content said again."""
    words = [w for s in sentences for w in re.findall(r"[a-z0-9']+", normalize(_detokenize(s)))]
    grams = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    seen: set[tuple[str, ...]] = set()
    out = []
    for gram in grams:
        if gram in seen and any(w not in _STOP for w in gram):
            out.append(gram)
        seen.add(gram)
    return out


_OVERT_PRONOUN = re.compile(r"^(?:それは|それが|その|あなた|彼は|彼女は|私たちは|これは)")


def _restatements(sentences: list[str]) -> list[str]:
    """Sentences that say again what an earlier one said: most of their content words are the same."""
    units = [unit_of(s) for s in sentences]
    out = []
    for j, later in enumerate(units):
        if len(later.tokens) < 3:
            continue
        for earlier in units[:j]:
            union = later.tokens | earlier.tokens
            if union and len(later.tokens & earlier.tokens) / len(union) >= 0.6:
                out.append(sentences[j])
                break
    return out


def _numbers(sentence: str) -> list[str]:
    return re.findall(r"\d+", normalize(sentence))


def _prose(text: str) -> list[str]:
    """Sentences outside list lines and table rows (cards repeat their layout by design)."""
    out = []
    for line in (text or "").splitlines():
        if not line.strip() or is_list_line(line) or line.lstrip().startswith(("|", "#")):
            continue
        out.extend(split_sentences(line))
    return out


def grammar(case: TestCase) -> Signal:
    text = case.response or ""
    prose = _prose(text)
    if not prose and not text.strip():
        raise Abstain("no text")
    prose = prose or split_sentences(text)
    errors: list[str] = []
    english = [s for s in prose if japanese_share(s) <= 0.5]
    jp = [s for s in prose if japanese_share(s) > 0.5]
    # A text written in lower case throughout (chat, a tokenized corpus) has chosen its style; a
    # lower-case start is an error where the other sentences start with a capital.
    capitalised = any(re.match(r"^\W*[A-Z]", s) for s in english)
    for sentence in english:
        errors += [e for e in english_errors(sentence) if capitalised or e != "the sentence starts in lower case"]
    errors += [f"words said again: {' '.join(g)!r}" for g in _repeated_trigrams(english)]
    openings = [tuple(re.findall(r"[a-z']+", normalize(s))[:2]) for s in english]
    errors += [f"two sentences in a row open with {' '.join(a)!r}" for a, b in zip(openings, openings[1:])
               if len(a) == 2 and a == b]
    if jp:
        try:
            reg = japanese.register("\n".join(jp))
        except japanese.AnalyzerMissing as exc:
            raise Abstain(str(exc)) from exc
        if reg.polite and reg.plain:
            errors += [f"plain ending among polite ones: {s[:30]!r}" for s in reg.plain[: len(reg.polite)]]
        if reg.dearu and reg.polite:
            errors.append("the written である style mixed with です/ます")
        if len(reg.fragments) >= 2 and len(reg.fragments) >= FRAGMENT_SHARE * reg.sentences:
            errors += [f"a fragment without a predicate: {f[:20]!r}" for f in reg.fragments]
        errors += [f"misused keigo {m!r}" for m in reg.keigo_misuse]
        # Japanese drops pronouns a translation keeps ("それは…", "あなたは…"): one such subject is
        # a choice, several are translationese (JTF 日本語標準スタイルガイド on pronouns).
        overt = [s for s in jp if _OVERT_PRONOUN.match(s.strip())] + [s for s in jp if "あなた" in s]
        if len(overt) >= 2:
            errors += [f"pronoun a Japanese writer would drop: {s[:20]!r}" for s in overt]
    errors += [f"phrase repeated: {p!r}" for p in _repeated_phrases(prose)]
    restated = _restatements(prose)
    # Said over again with the same numbers: not two cards of one layout ("全3巻…748円" / "全5巻…693円").
    numbers = Counter(tuple(_numbers(a)) for a in prose)  # counted once: a long answer has thousands of sentences
    repeated = [b for b in restated if numbers[tuple(_numbers(b))] >= 2]
    if len(repeated) >= 2:
        # Saying things over again more than once is padding, not a slip of style: a finding.
        return Signal(0.0, [f"{len(repeated)} sentences say again what an earlier one said, with the same numbers: "
                            + "; ".join(repr(b[:40]) for b in repeated)], finding=True)
    errors += [f"says again what an earlier sentence said: {b[:40]!r}" for b in restated]
    weight = len(errors)
    if truncated(text):
        errors.append("the answer stops mid-sentence")
        weight += 2
    en_words = [len(re.findall(r"[A-Za-z0-9]+", s)) for s in english]
    ja_chars = [len(re.sub(r"\s", "", s)) for s in jp]
    shapes = [1 / (1 + max(0, n - 8) / 54) for n in en_words] + [1 / (1 + max(0, n - 40) / 120) for n in ja_chars]
    if not shapes and not weight:
        raise Abstain("no sentence to read and no error found")
    shape = sum(shapes) / len(shapes) if shapes else 1.0  # errors alone, when there is no sentence to measure
    evidence = [f"{len(prose)} sentence(s), sentence shape {shape:.2f}"] + (errors[:6] or ["no grammar error pattern found"])
    return Signal(math.exp(-ERROR_WEIGHT * weight) * shape, evidence)


# Conventionalised impoliteness formulae (Culpeper 2011, ch. 4), as a store assistant might slip
# into them: condescension, dismissals, message enforcers, pointed criticism; English and Japanese.
IMPOLITENESS = (
    "clearly you", "as i already said", "as i said", "like i said", "like i told you", "i already told you",
    "it's not that hard", "it is not that hard", "not rocket science", "figure it out", "not my problem",
    "that's your problem", "your problem", "your fault", "whatever.",
    "deal with it", "get over it", "go away", "stop asking", "don't bother", "do you even", "did you even",
    "listen,", "get it?", "understand?", "seriously?", "duh", "read the faq", "just read", "look it up",
    "何度も言", "言ったはず", "自分で調べ", "しつこい", "わかりますか？", "当然です", "当たり前でしょう", "はいはい",
)
_DO_IT_YOURSELF = re.compile(r"\b(?:check|look|do|figure|find|sort)\b[^.!?]{0,30}\byourself\b")
# Blame and lecturing (Culpeper's pointed criticism and condescension): the shopper's mistake held
# against them, or a lesson for next time.
_BLAME = re.compile(
    r"\b(?:that'?s|that is|it'?s|it is) (?:on you|your (?:own )?(?:fault|mistake|problem))\b|\byour own fault\b"
    r"|\bnext time,? (?:please )?(?:read|check|look|make sure|be (?:more )?careful|pay attention|double-check)\b"
    r"|\b(?:read|check|look) (?:more )?(?:carefully|properly) (?:next time|before)\b"
    r"|\bif you (?:had )?(?:asked|read|checked|looked|paid attention)\b[^.!?]{0,30}\b(?:clearer|properly|carefully|first|better)\b"
    # "You should have checked" holds a past act against the shopper; "what you should have" is possession.
    r"|\byou should(?: have|'ve) (?:\w+ed|read|known|seen|done|taken|bought|chosen|written|gone|kept)\b"
    r"|\bbefore (?:reaching out|contacting us|asking (?:us|me)|bothering)\b|\bclearly (?:shows|states|says)\b"
    r"|\b(?:the )?information is (?:all )?(?:there|right there)\b|\bnext time,? actually\b"
    # Dismissals: the shopper's problem waved away.
    r"|\bif it (?:bothers|upsets) you\b|\bthat'?s just (?:shipping|how it is|the way it is)\b|\bhappens all the time\b"
    r"|\b(?:not|no) (?:a )?big deal\b|\bdeal with it\b|よくあること(?:です|なので)|気になるなら|自分で(?:手続き|調べ|確認)して"
    r"|(?:ご自身で|お客様ご自身が)[^。]{0,30}(?:防げ|避けられ|確認いただければ)|防げた(?:こと|もの|はず)"
    r"|今後は[^。]{0,30}(?:必ず|よく|しっかり)[^。]{0,20}(?:ご確認|お確かめ|ご注意)")
# The shopper's own language read by morphology: most predicates in plain form is casual speech to
# a customer; two kinds of misused keigo is broken register, not a slip.
PLAIN_SHARE_FINDING = 0.5
# The shopper reports a problem: a damaged, late, wrong or missing item.
COMPLAINT = re.compile(r"\b(?:damaged|torn|broken|ripped|bent|defective|disappointed|wrong (?:item|book|volume)|missing|"
                       r"never (?:arrived|came)|hasn't arrived|has not arrived|didn't arrive|late|still waiting)\b"
                       r"|破れ|破損|壊れ|汚れ|届いていない|届かない|まだ届|違う商品|間違|不良")
APOLOGY = re.compile(r"\b(?:sorry|apolog\w*|regret)\b|申し訳|ご迷惑|ご不便|失礼いたしました|お詫び")
_VAGUE = re.compile(r"\b(?:soon|shortly|a few days|some time|probably|maybe|i think|should be fine)\b|そのうち|たぶん|多分|おそらく")


# The shopper addressed as あなた, 君 or お前: shop Japanese says お客様 or leaves the pronoun out (文化審議会
# 「敬語の指針」: あなた is not used to a customer or a superior). Text in 「」 is someone else's words.
# (君 after a name is the suffix 〜君, "翔太君は": a character, not the shopper.)
_SECOND_PERSON_JA = re.compile(r"(?:あなた|貴方|お前|(?<![\u3040-\u30ff\u4e00-\u9fff])君)(?!様|方)(?=[はがのをにもへ])")
_QUOTED_JA = re.compile(r"「[^」]*」|『[^』]*』")


_CASUAL_END = re.compile(r"(?:の|なの|かな|よね|だよ|じゃん|でしょ|だね|[ってで]た|んだ|だ)[？?！!〜ー]*$")


def _writes_plain(query: str) -> bool:
    """The shopper writes in plain form themselves (a child, a friend's tone): answering in kind is
    accommodation, not a lapse of register (keigo misuse and あなた stay findings)."""
    if japanese_share(query) <= 0.3:
        return False
    try:
        reg = japanese.register(query)
    except japanese.AnalyzerMissing:
        return False
    # Plain form, and a casual sentence ending (読んでた！, お話なの？): a tone, not a trailing clause (取れなくて…).
    return bool(reg.plain) and not reg.polite and any(_CASUAL_END.search(p.strip()) for p in reg.plain)


# "Let's figure it out", "let me look it up": the assistant doing it with or for the shopper.
_TOGETHER = re.compile(r"\b(?:let'?s|let us|let me|we'?ll|we will|we can|i'?ll|i will|i can|help you)\s+$")


def _said_to_shopper(formula: str, norm: str) -> bool:
    at = norm.find(formula)
    while at != -1:
        if not _TOGETHER.search(norm[max(0, at - 12):at]):
            return True
        at = norm.find(formula, at + 1)
    return False


def tone_finding(case: TestCase, text: str) -> str | None:
    """A defect of register named by what was read: an impolite or blaming formula, English to a
    shopper writing Japanese, casual plain speech, broken keigo, あなた or telegraphic noun phrases
    to a Japanese shopper."""
    norm = normalize(text)
    rude = [p for p in IMPOLITENESS if _said_to_shopper(p, norm)] + [m.group(0) for m in (*_DO_IT_YOURSELF.finditer(norm),
                                                                                           *_BLAME.finditer(norm))]
    if rude:
        return "impolite or blaming formulae: " + ", ".join(dict.fromkeys(rude[:4]))
    if (case.is_japanese or japanese_share(case.query) > 0.3) and japanese_share(text) < 0.2:
        return "answers a Japanese shopper in English"
    if japanese_share(text) > 0.3:
        try:
            reg = japanese.register(_QUOTED_JA.sub("「」", text))  # quoted words are someone else's register
        except japanese.AnalyzerMissing:
            return None
        if len(reg.plain) >= 2 and len(reg.plain) >= PLAIN_SHARE_FINDING * reg.predicates and not _writes_plain(case.query):
            return f"{len(reg.plain)} of {reg.predicates} sentences in casual plain form to a shopper: {reg.plain[0][:30]!r}"
        if reg.speaks_politely and reg.casual and not _writes_plain(case.query):
            # The answer speaks politely and drops into casual speech: a shop does not say 在庫あるよ
            # to a customer, once or more (a greeting or an apology has no polite form to miss).
            return f"{len(reg.casual)} sentence(s) in casual speech among polite ones: {reg.casual[0][-30:]!r}"
        if len(set(reg.keigo_misuse)) >= 2:
            return "misused keigo: " + ", ".join(dict.fromkeys(reg.keigo_misuse))
        addressed = _SECOND_PERSON_JA.search(_QUOTED_JA.sub("", text))
        if addressed:
            return f"addresses the shopper as {addressed.group(0)!r} (a store says お客様, or no pronoun)"
        telegraphic = _telegraphic(text)
        if telegraphic:
            return (f"{len(telegraphic)} sentences closed with 。 on a bare noun phrase, telegraphic rather than the "
                    f"shop's polite register: " + ", ".join(repr(s[:20]) for s in telegraphic[:3]))
    return None


def _telegraphic(text: str) -> list[str]:
    """Sentences of running text written as bare noun phrases and closed with 。 (価格は528円。予約：可能。),
    when they are two or more and at least FRAGMENT_SHARE of those sentences. Card and list lines,
    tables and headings are not sentences; a line without 。 is a label, not a sentence; words quoted in
    「」 (a policy's own text) are someone else's."""
    closed = [s for s in _prose(re.sub(r"「[^」]*」", "「」", text)) if japanese_share(s) > 0.5 and s.rstrip().endswith("。")]
    if len(closed) < 2:
        return []
    bare = [s for s in closed if japanese.register(s).fragments]
    return bare if len(bare) >= 2 and len(bare) >= FRAGMENT_SHARE * len(closed) else []


def tone(case: TestCase, rubric: Rubric) -> Signal:
    """A register defect named by what was read (``tone_finding``) is graded as a verdict; lesser
    shortfalls (some plain sentences, one misused keigo, no apology to a shopper reporting a
    problem, vague words where the intent asks for precision) are a heuristic reading. With neither,
    the offline judge abstains: the markers of a good register (warmth, empathy) measured no
    agreement with people on data nobody here wrote (README, "The offline judge")."""
    text = case.response or ""
    finding = tone_finding(case, text)
    if finding:
        return Signal(0.0, [finding], finding=True)
    norm = normalize(text)
    register = rubric.style.tone_register.get(case.intent, "friendly")
    shortfalls: list[tuple[float, str]] = []
    if japanese_share(text) > 0.3:
        try:
            reg = japanese.register(text)
        except japanese.AnalyzerMissing as exc:
            raise Abstain(str(exc)) from exc
        if reg.predicates and reg.plain:
            shortfalls.append((0.6 * len(reg.plain) / reg.predicates,
                               f"{len(reg.plain)} of {reg.predicates} sentences in plain form to a shopper"))
        if reg.keigo_misuse:
            shortfalls.append((0.25 * len(reg.keigo_misuse), "misused keigo: " + ", ".join(reg.keigo_misuse)))
    if COMPLAINT.search(normalize(case.query)) and case.intent in ("return_request", "order_tracking") \
            and not APOLOGY.search(norm):
        shortfalls.append((0.3, "the shopper reports a problem and the answer does not apologise"))
    if register == "precise":
        vague = _VAGUE.findall(norm)
        if vague:
            shortfalls.append((0.1 * len(vague), f"vague where the {case.intent} register is precise: {', '.join(vague)}"))
    if not shortfalls:
        raise Abstain("no register defect found (impolite or blaming formula, plain speech, misused keigo, an "
                      "apology owed, vagueness)")
    return Signal(max(0.0, 1.0 - sum(c for c, _ in shortfalls)), [why for _, why in shortfalls])


# The offline judge's reading of each sub-score the checks may leave open (formatting: none).
SIGNALS: dict[str, SignalFn] = {
    "grammar": lambda case, rubric, hints: grammar(case),
    "tone": lambda case, rubric, hints: tone(case, rubric),
}
