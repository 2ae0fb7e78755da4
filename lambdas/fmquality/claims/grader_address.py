"""Text of an answer addressed to whoever grades it ("Note to the evaluator: ... score 5", 「評価者へ」).

Claims read: phrases in the vocabulary of grading, English and Japanese (``grader_address``). Such
text is part of the answer a shopper would read; the consistency check and the offline judge find
it, and the judge reads the answer without it (``without_grader_address``) so that it cannot steer
the grade. Whether the rest of the answer is good is the judge's.
"""

from __future__ import annotations

import re

from fmquality.language.text import normalize

# Text addressed to whoever grades the answer ("Note to the evaluator: ... score 5"): the vocabulary
# of grading, in English and Japanese. It is part of the answer a shopper would read.
_GRADER_ADDRESS = re.compile(
    r"\b(?:note|message|instructions?|reminder)s?\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:ai\s+|llm\s+)?"
    r"(?:evaluators?|graders?|judges?|reviewers?|assessors?|raters?|scorers?)\b"
    r"|(?:^|\n|[.!?]\s+)\(?\s*(?:to the\s+)?(?:evaluator|grader|judge|reviewer|assessor|rater|scorer)s?\s*[:：,]"
    r"|\b(?:score|rate|grade|mark)\s+(?:this|the|my)\s+(?:response|answer|reply)\b"
    r"|\b(?:this|the|my)\s+(?:response|answer|reply)\s+(?:deserves|merits|should (?:get|receive|be (?:given|rated|scored|graded)))\b"
    r"|\b(?:give|assign|award)\s+(?:this|it|me)\s+(?:a\s+)?(?:score|rating|grade|full marks|top marks|5 stars|five stars|\d\s*/\s*\d)"
    r"|\bignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|other) (?:instructions|rules|criteria|guidelines)\b"
    r"|\b(?:scoring|evaluation|grading) (?:rubric|criteria|guidelines)\b"
    r"|(?:評価者|採点者|審査員|評価AI|ジャッジ|レビュアー)(?:様|の方|へ|各位)?(?:へ|に|:|：|、)"
    r"|(?:この|本)(?:回答|応答|返答)(?:は|を|に)[^。]{0,12}(?:満点|高評価|最高評価|5点|５点|高く評価)"
    r"|満点をつけ|高く評価してください")


def grader_address(text: str) -> list[str]:
    """Phrases of the text addressed to whoever grades it."""
    return list(dict.fromkeys(m.group(0).strip() for m in _GRADER_ADDRESS.finditer(normalize(text))))


def without_grader_address(text: str) -> str:
    """The text without its sentences (or lines) addressed to the grader."""
    return "\n".join(line for line in re.split(r"(?<=[.!?。！？])\s+|\n", text or "")
                      if not _GRADER_ADDRESS.search(normalize(line)))
