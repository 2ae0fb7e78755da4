"""Reported speech: a statement an answer attributes to another source ("one product note says it's in
stock", "the text you pasted says 20% off", 「メモには在庫ありと書かれていますが」) is that source's
claim, not the answer's. The checks compare the answer's own claims with the evidence; a reported one
is left to the judge (the answer may be flagging the source as wrong, which is what a careful
assistant does when two sources disagree).

A statement is reported when, in its sentence, an attribution to a source other than the store's own
records comes before it (English) or closes it (Japanese), with no contrast ("but", "although",
「が、」) in between. "Our catalog shows ..." is the store's own record, not reported speech.
"""

from __future__ import annotations

import re

_SOURCE_EN = (r"(?:note|notes|listing|description|review|reviews|post|comment|chunk|source|message|text|e-?mail|"
              r"flyer|ad|advert|banner|page|site|website|blog|forum|screenshot|wall|paste|article|sheet|faq)")
REPORTED_EN = re.compile(
    rf"\b(?:a|an|the|one|another|that|this|some|your|their|other)\s+(?:[\w-]+\s+){{0,3}}{_SOURCE_EN}\s+"
    r"(?:(?:you|i|we) (?:pasted|shared|sent|saw|found|quoted|have|got)\s+)?(?:says?|said|claims?|claimed|mentions?|mentioned|lists?|listed|"
    r"shows?|showed|states?|stated|reads?|suggests?|suggested|reports?|reported|has it|puts? it)\b"
    r"|\baccording to (?:a|an|the|one|another|that|this|your|their)\s+(?!(?:our|store)\b)(?:[\w-]+\s+){0,3}"
    rf"{_SOURCE_EN}\b"
    r"|\byou (?:mentioned|said|saw|read|pasted|quoted|were told|heard)\b"
    r"|\b(?:it|that) (?:says|claims|mentions)\b", re.IGNORECASE)
_OWN_RECORDS = re.compile(r"\b(?:our|the store'?s?|my)\s+(?:catalog(?:ue)?|records?|system|listing|product page|inventory)\b",
                          re.IGNORECASE)
CONTRAST_EN = re.compile(r"\b(?:but|although|though|however|whereas|while|yet|actually|in fact)\b", re.IGNORECASE)
_SOURCE_JA = r"(?:メモ|ノート|ページ|説明|レビュー|投稿|記事|資料|情報|サイト|案内文|テキスト|文章|チラシ|広告|メール|コメント|貼り付け|お知らせ|告知|表記)"
REPORTED_JA_BEFORE = re.compile(rf"{_SOURCE_JA}(?:によると|によれば|では|には|に|で)")
REPORTED_JA_AFTER = re.compile(r"と(?:書かれ|記載|あり|表示|のこと|いう|言われ|案内され|され|する)")
CONTRAST_JA = re.compile(r"が、|けれど|けど|一方|ですが|ものの|しかし")


def reported_at(sentence: str, offset: int) -> bool:
    """Whether the statement at ``offset`` of ``sentence`` is attributed to another source."""
    for marker in REPORTED_EN.finditer(sentence, 0, offset + 1):
        if marker.end() <= offset + 1 and not _OWN_RECORDS.search(marker.group(0)) \
                and not CONTRAST_EN.search(sentence, marker.end(), offset):
            return True
    for marker in REPORTED_JA_BEFORE.finditer(sentence, 0, offset + 1):
        if marker.end() <= offset + 1 and not CONTRAST_JA.search(sentence, marker.end(), offset):
            return True
    after = REPORTED_JA_AFTER.search(sentence, offset)
    return after is not None and not CONTRAST_JA.search(sentence, offset, after.start()) \
        and "。" not in sentence[offset:after.start()]
