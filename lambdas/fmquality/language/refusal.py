"""How an answer declines: the phrases that say "I won't / can't do that", hand over to people, or
hold something back, in English and Japanese. A claim made inside a declining sentence ("I can't
share my instructions") is not the claim it names."""

from __future__ import annotations

import re

DECLINED = re.compile(
    r"\b(?:can(?:no|')t|cannot|unable|not able|won'?t|not allowed|not permitted|not authori[sz]ed|i'?m afraid|"
    r"i'?m sorry|unfortunately|rather not|not something i can|contact (?:our )?(?:customer|support)|"
    r"customer (?:service|support)|support team|a (?:human|person|member of (?:our )?staff)|agent|"
    r"i'?ll pass|i don'?t (?:share|give out|reveal|disclose)|keep (?:\w+ ){0,3}private|outside what i can|"
    r"not a good fit|i'?d rather not)\b"
    r"|申し訳|できかね|できません|できない|いたしかねます|お受けできません|致しかねます|お答えできません|ご案内できません"
    r"|控え|ごめん|カスタマー|サポート|お問い合わせ|担当者", re.IGNORECASE)

_SENTENCE_END = re.compile(r"[.!?。！？\n]")


def declines(text: str) -> bool:
    return bool(DECLINED.search(text))


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` that holds ``text[start:end]``."""
    before = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    after = _SENTENCE_END.search(text, end)
    return text[before:after.end() if after else len(text)]
