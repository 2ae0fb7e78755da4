"""How an answer declines: the common phrases that say "I won't / can't do that" or hand over to
customer service, in English and Japanese (a decline worded otherwise is not seen). A claim made
inside a declining sentence ("I can't share my instructions") is not the claim it names."""

from __future__ import annotations

import re

DECLINED = re.compile(
    r"\b(?:can(?:no|')t|cannot|unable|not able|won'?t|not allowed|not permitted|not authori[sz]ed|i'?m afraid|"
    r"i'?m sorry|unfortunately|rather not|no such|contact (?:our )?customer (?:service|support)|"
    r"(?:do not|don't|never) (?:share|reveal|disclose|discuss|give out))\b"
    r"|申し訳|できかね|できません|できない|いたしかねます|お受けできません|致しかねます|お答えできません|ご案内できません|控え",
    re.IGNORECASE)

_SENTENCE_END = re.compile(r"[.!?。！？\n]")


def declines(text: str) -> bool:
    return bool(DECLINED.search(text))


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` that holds ``text[start:end]``."""
    before = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    after = _SENTENCE_END.search(text, end)
    return text[before:after.end() if after else len(text)]
