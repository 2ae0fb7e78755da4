"""Fluency operators: how the answer is written breaks, whatever it says. Cut off mid-sentence, a
paragraph pasted twice, a Japanese answer dropping into casual speech, a sentence in the other language,
a rude closing line."""

from __future__ import annotations

import re

from fmquality.domain.case import TestCase
from fmquality.sensitivity.base import Context, Perturbed, answer, pick, with_response
from fmquality.sensitivity.text import is_japanese_text, paragraphs, sentences

_END = "。！？!?.…」』)）"


def truncated(case: TestCase, ctx: Context) -> Perturbed | None:
    """Cut at 45-75% of its length, inside a sentence (never right after an end mark), on a word
    boundary in English; the rest is gone, as when generation stops at a token limit."""
    text = answer(case).rstrip()
    if len(text) < 40:
        return None
    target = int(len(text) * ctx.rng.uniform(0.45, 0.75))
    cuts = []
    for pos in range(max(10, target - 25), min(len(text) - 5, target + 25)):
        before, after = text[:pos].rstrip(), text[pos:]
        if not before or before[-1] in _END or before[-1] in "、，,:：-—*#\n" or not after.strip():
            continue
        if case.is_japanese or is_japanese_text(before[-1]):
            if re.match(r"[\u3040-\u9fffA-Za-z0-9]", text[pos]):
                cuts.append(pos)
        elif text[pos] == " " and before[-1].isalnum():
            cuts.append(pos)
    if not cuts:
        return None
    pos = min(cuts, key=lambda p: abs(p - target))
    cut = text[:pos].rstrip()
    return Perturbed(with_response(case, cut), f"cut at {len(cut)}/{len(text)} characters")


def repeated_paragraph(case: TestCase, ctx: Context) -> Perturbed | None:
    """A paragraph of the answer (of six words, or 25 Japanese characters, or more) pasted again right
    after itself; with a single paragraph, its longest sentence said twice."""
    text = answer(case)
    long_enough = (lambda s: len(s) >= 25) if case.is_japanese else (lambda s: len(s.split()) >= 6)
    paras = [p for p in paragraphs(text) if long_enough(p.text)]
    if len(paragraphs(text)) > 1 and paras:
        p = pick(ctx, paras)
        new = text[:p.end] + "\n\n" + p.text + text[p.end:]
        return Perturbed(with_response(case, new), "a paragraph said twice")
    sents = [s for s in sentences(text) if long_enough(s.text)]
    if not sents:
        return None
    s = max(sents, key=lambda x: len(x.text))
    new = text[:s.end] + ("" if case.is_japanese else " ") + s.text + text[s.end:]
    return Perturbed(with_response(case, new), "a sentence said twice")


# Polite endings and their casual forms, longest first (a crude morphology: broken casual speech is as
# much a register defect as correct casual speech).
CASUAL = (("でございます", "だよ"), ("ございません", "ないよ"), ("いたしかねます", "できないよ"),
          ("いたします", "するね"), ("しております", "してるよ"), ("しています", "してるよ"), ("おります", "いるよ"),
          ("いただけます", "もらえるよ"), ("いただけません", "もらえないよ"), ("くださいませ", "ね"), ("ください", "ね"),
          ("できません", "できないよ"), ("ません", "ないよ"), ("ました", "たよ"), ("ましょう", "ようよ"),
          ("できます", "できるよ"), ("あります", "あるよ"), ("なります", "なるよ"), ("します", "するよ"),
          ("ます", "るよ"), ("でした", "だったよ"), ("です", "だよ"))
_POLITE_END = re.compile("(" + "|".join(p for p, _ in CASUAL) + r")(?=[。！？!?\n]|$|[（(]|ね|よ)")


def casual_register(case: TestCase, ctx: Context) -> Perturbed | None:
    """Japanese only: every polite sentence ending (です・ます, いたします, ございます ...) turned casual
    (だよ, するね, あるよ ...), as a shop never speaks to a customer."""
    text = answer(case)
    if "ありがとうございます" in text:
        text = text.replace("ありがとうございます", "ありがとう")
    casual = dict(CASUAL)
    new, count = _POLITE_END.subn(lambda m: casual[m.group(1)], text)
    if count == 0:
        return None
    return Perturbed(with_response(case, new), f"{count} polite ending(s) made casual")


OTHER_LANGUAGE = {
    "ja": ("Please note that stock and prices can change at any time, so check the product page before you order.",
           "Let me know if there is anything else I can help you with!"),
    "en": ("在庫や価格は変動する場合がございますので、ご注文前に商品ページをご確認ください。",
           "ほかにもご不明な点がございましたら、お気軽にお問い合わせください。"),
}


def mixed_language(case: TestCase, ctx: Context) -> Perturbed | None:
    """A sentence in the other language put after the answer's first paragraph (English in a Japanese
    answer to a Japanese shopper; Japanese prose, not a title, in an English answer)."""
    text = answer(case)
    paras = paragraphs(text)
    if not paras:
        return None
    added = pick(ctx, OTHER_LANGUAGE["ja" if case.is_japanese else "en"])
    first = paras[0]
    new = text[:first.end] + ("\n\n" + added if len(paras) > 1 else (" " + added)) + text[first.end:]
    return Perturbed(with_response(case, new), f"inserted: {added}")


RUDE = {
    "en": ("Honestly, all of this is on the product page, so please look before asking next time.",
           "Anyway, that's all I'm going to say about it. Figure the rest out yourself.",
           "Not sure why that was so hard to find, but there you go."),
    "ja": ("というか、これくらい商品ページに書いてあるので、次からは自分で調べてください。",
           "以上です。これ以上は答えないので、あとは自分でなんとかしてください。"),
}


def rude_closing(case: TestCase, ctx: Context) -> Perturbed | None:
    """A dismissive closing line appended: the content stays right, the tone no shop would take."""
    text = answer(case)
    if not text.strip():
        return None
    added = pick(ctx, RUDE["ja" if case.is_japanese else "en"])
    return Perturbed(with_response(case, text.rstrip() + ("\n\n" if "\n" in text else ("" if case.is_japanese else " ")) + added),
                     f"appended: {added}")
