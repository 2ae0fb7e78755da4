"""Policy exclusions: what the knowledge says a policy does not cover, and whether the shopper's own
situation is one of them.

Read from the knowledge: an exclusion states its circumstance and what it rules out, "Once a pre-order
has shipped, it can no longer be cancelled", "Opened or read items can only be returned if they
arrived damaged", "予約商品を含むご注文では代金引換はご利用いただけません". The shopper's situation
meets it when every content word of one alternative of the circumstance ("opened" | "read") is in the
shopper's own words, not denied there ("I haven't read it" does not meet "read").

An answer that then grants the thing outright (opens with yes, or says the shopper can, with no
refusal anywhere in it) applies the policy to the one case it excludes (``granted_despite``). This
is a reading of words, not of meaning: the offline judge takes it as a finding, the checks do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmquality.domain.case import TestCase
from fmquality.language.negation import negated_before
from fmquality.language.refusal import declines
from fmquality.language.text import normalize, segment_spans

_EXCLUSION_EN = (
    # "Once a pre-order has shipped, it can no longer be cancelled."
    re.compile(r"\b(?:once|after)\s+(?P<cond>[^,.;]{3,60}?),\s*(?:it|they|the \w+|items?|orders?)?\s*"
               r"(?:can no longer|can ?not|can't|may not|is no longer|are no longer)\s+(?:be\s+)?(?P<act>[a-z]+)"),
    # "Opened or read items can only be returned if they arrived damaged."
    re.compile(r"(?P<cond>\b[a-z][a-z -]{2,40}?)\s+(?:items?|books?|orders?|copies)\s+can only be\s+(?P<act>[a-z]+)\s+"
               r"(?:if|when)\s+(?P<exception>[^.;]{3,60})"),
    # "Items that have been opened or had the shrink-wrap removed can't be returned unless they arrived damaged."
    re.compile(r"\b(?:items?|books?|orders?|products?|copies)\s+(?:that|which)\s+(?:have|has|are|were|was)\s+(?:been\s+)?"
               r"(?P<cond>[a-z][^.;,]{2,60}?)\s+(?:can ?not|can't|may not|are not|aren't)\s+(?:be\s+)?(?P<act>[a-z]+)"
               r"(?:\s+unless\s+(?P<exception>[^.;]{3,80}))?"),
    # "Opened items cannot be returned unless they arrived damaged or defective."
    re.compile(r"(?P<cond>\b[a-z][a-z-]{2,20}(?:\s+or\s+[a-z][a-z-]{2,20})?)\s+(?:items?|books?|copies|products?)\s+"
               r"(?:can ?not|can't|may not)\s+be\s+(?P<act>[a-z]+)(?:\s+unless\s+(?P<exception>[^.;]{3,80}))?"),
    # "COD is not available for orders that include a pre-order."
    re.compile(r"(?P<act>\b[a-z][a-z -]{2,30}?)\s+(?:is|are) not available (?:for|with|on)\s+(?:orders?\s+(?:that\s+)?"
               r"(?:include|includes|including|containing|with)\s+)?(?P<cond>[^.;,]{3,40})"),
)
_EXCLUSION_JA = (
    # 「予約商品を含むご注文では代金引換はご利用いただけません」
    re.compile(r"(?P<cond>[^\s、。]{2,12}?)を含むご?注文(?:では|は|の場合)(?P<act>[^。]{0,20}?)(?:ご利用いただけません|できません|いただけません|不可)"),
    # 「開封済み・シュリンク除去済みの商品は、初期不良・誤配送の場合を除き返品できません」
    re.compile(r"(?P<cond>[^\s、。]{2,20}?)の(?:商品|品|本)は、?(?P<exception>[^。]{2,30}?)の場合を除き、?(?P<act>[^。、]{0,10}?)"
               r"(?:できません|いただけません|不可)"),
    # 「発送後はキャンセルできません」
    re.compile(r"(?P<cond>[^\s、。]{2,12}?)(?:後|済みの場合|の場合)(?:は|には)?(?P<act>[^。、]{0,20}?)(?:できません|いただけません|できかねます|不可)"),
)
_STOP = {"a", "an", "the", "it", "its", "they", "has", "have", "had", "been", "is", "are", "was", "were", "your", "you",
         "item", "items", "order", "orders", "book", "books", "copy", "copies", "that", "which", "any", "of", "or", "and"}
# The answer granting it in so many words, wherever it says so.
_GRANTS = re.compile(r"\byou(?:'re| are) (?:all set|eligible|able) to (?:send|return|cancel|get)\b|\byou can (?:return|send it back|"
                     r"cancel|get a (?:full )?refund)\b|\byou(?:'re| are) (?:well |still )?within (?:the|that|your) (?:\d+-day )?"
                     r"(?:return )?window\b|返品(?:の)?お?手続きを?いただけます|返品を?承ります|返品(?:が|も)?可能です|返品期間内です")
# Words of an exception that say how the item came, not what was wrong with it ("unless they arrived damaged").
_HOW_IT_CAME = {"arrived", "arrive", "arrives", "came", "come", "delivered", "received", "they", "were", "was", "if", "when"}
_GRANT_OPENING = re.compile(r"^\W*(?:yes|yep|yeah|sure|of course|absolutely|definitely|certainly|no problem|good news|"
                            r"you can|you're (?:all set|good)|はい|もちろん|可能です|問題ございません|大丈夫です)(?![a-z])")


@dataclass(frozen=True)
class Exclusion:
    circumstance: str  # the excluded situation, as the knowledge words it
    act: str  # what it rules out
    sentence: str
    exception: str = ""  # what still allows it ("if they arrived damaged")


def exclusions(case: TestCase) -> list[Exclusion]:
    out: list[Exclusion] = []
    for chunk in case.retrieved_chunks:
        norm = normalize(chunk)
        for start, end in segment_spans(norm):
            sentence = norm[start:end]
            for pattern in (*_EXCLUSION_EN, *_EXCLUSION_JA):
                for m in pattern.finditer(sentence):
                    exception = (m.groupdict().get("exception") or "").strip()
                    out.append(Exclusion(m.group("cond").strip(), m.group("act").strip(), sentence.strip(), exception))
    return out


def _stem(word: str) -> str:
    return re.sub(r"(?:ed|ing|s)$", "", word) if len(word) > 4 else word


def _meets(circumstance: str, shopper: str) -> bool:
    """Every content word of one alternative of the circumstance in the shopper's words, undenied."""
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", circumstance):
        for alternative in (a for a in re.split(r"[・/や]|または", circumstance) if len(a) >= 2):
            for found in re.finditer(re.escape(alternative), shopper):
                # 未開封 is not 開封済み; 開封済みではない denies it.
                if shopper[max(0, found.start() - 1):found.start()] != "未" and \
                        not re.match(r"^(?:ではな|じゃな|以外)", shopper[found.end():]):
                    return True
        return False
    for alternative in re.split(r"\bor\b|/|,", circumstance):
        words = [w for w in re.findall(r"[a-z][a-z-]+", alternative) if w not in _STOP]
        if words and all(_said(_stem(w), shopper) for w in words):
            return True
    return False


def _said(stem: str, shopper: str) -> bool:
    for m in re.finditer(rf"(?<![a-z]){re.escape(stem)}[a-z-]*", shopper):
        if not negated_before(shopper[max(0, m.start() - 30):m.start()]) and not shopper[max(0, m.start() - 2):m.start()] == "un":
            return True
    return False


def granted_despite(case: TestCase) -> str | None:
    """An exclusion the shopper's situation meets, and an answer that grants the thing outright."""
    answer = normalize(case.response or "")
    if not answer or declines(answer) or not (_GRANT_OPENING.match(answer) or _GRANTS.search(answer)):
        return None
    shopper = normalize(" ".join([*(m.content for m in case.conversation_history if m.role == "user"), case.query]))
    for exclusion in exclusions(case):
        excepted = [w for w in re.findall(r"[a-z][a-z-]+", exclusion.exception) if w not in _STOP | _HOW_IT_CAME]
        # The shopper, or the answer itself, invoking the exception ("a defective binding qualifies") is
        # a case this reading cannot settle.
        if _meets(exclusion.circumstance, shopper) and not any(_said(_stem(w), shopper) or _said(_stem(w), answer)
                                                               for w in excepted):
            return (f"the knowledge rules out {exclusion.act!r} when {exclusion.circumstance!r} "
                    f"({exclusion.sentence[:90]!r}), the shopper's case, and the answer grants it")
    return None
