"""Order ids: MangaAssist ids (MA + 7 letters/digits with a digit) and marketplace 3-7-7 digit ids,
replaced by a keyed token the caller makes (``Redactor.order_token``), so the same id always gives
the same token. ``MA`` ids are matched in any case (``maq7k29xb`` is the same order as
``MAQ7K29XB``) when an order word precedes them or their tail mixes letters after digits (so
``#manga2024`` is left alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fmquality.language.pii.common import ASCII_END, ASCII_START, Claim, preceded_by

ORDER_ID_PATTERNS: tuple[str, ...] = (
    # MangaAssist order ids: MA + 7 upper-case letters/digits, at least one digit (MAQ7K29XB).
    rf"{ASCII_START}MA(?=[A-Z]*[0-9])[A-Z0-9]{{7}}{ASCII_END}",
    # Marketplace-style 3-7-7 digit ids (123-4567890-1234567).
    rf"{ASCII_START}\d{{3}}-\d{{7}}-\d{{7}}{ASCII_END}",
)
_ORDER_ANY_CASE = re.compile(rf"{ASCII_START}[Mm][Aa]([A-Za-z0-9]{{7}}){ASCII_END}")
_ORDER_WORD = re.compile(r"(?i:order|ord\b|注文|オーダー)")


def order_ids_in(norm: str, claim: Claim, patterns: list[re.Pattern], default_patterns: bool,
                 token: Callable[[str], str]) -> None:
    """Order ids of ``patterns``; with the default patterns, also ``MA`` ids in any case (see above)."""
    for pattern in patterns:
        for m in pattern.finditer(norm):
            claim(*m.span(), "order_id", token(m.group()))
    if not default_patterns:
        return
    for m in _ORDER_ANY_CASE.finditer(norm):
        tail = m.group(1)
        if not any(c.isdigit() for c in tail):
            continue
        mixed = re.search(r"\d[A-Za-z]", tail) is not None  # a letter after a digit: maq7k29xb, not manga2024
        if mixed or preceded_by(norm, m.start(), _ORDER_WORD):
            claim(*m.span(), "order_id", token(m.group().upper()))
