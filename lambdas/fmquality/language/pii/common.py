"""What every personal-data finder shares: the ``claim`` callback a finder reports spans to, the
same-length width normalization the patterns run on, ASCII-only word boundaries, and the check
digits that tell a card, a barcode and a My Number apart.

Full-width digits and signs (０９０－１２３４－５６７８, ＠, ．) and a ー between digits are matched through
a same-length normalized copy of the text, so the spans replaced are exactly those of the original.
Numeric patterns use ASCII-only boundaries: in Japanese text the characters around a number are word
characters, so ``\\b`` would never match there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# claim(start, end, kind, replacement=None) -> bool: takes the span unless it overlaps one taken
# before (earlier kinds win); a finder calls it for every span it finds.
Claim = Callable[..., bool]

# Full-width digits, letters and signs -> ASCII, one character for one (same length).
_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULLWIDTH.update({0x2212: ord("-"), 0x2010: ord("-"), 0x2011: ord("-"), 0x2012: ord("-"), 0x2013: ord("-"),
                   0x2014: ord("-"), 0xFE63: ord("-"), 0x3000: ord(" "), 0x00A0: ord(" ")})
_FULLWIDTH.update({code: ord(" ") for code in range(0x2002, 0x200B)})
# A long-vowel mark or a bar between two digits is a dash there (090ー1234ー5678).
_DIGIT_DASH = re.compile(r"(?<=\d)[ーｰ―─━](?=\d)")

ASCII_START = r"(?<![0-9A-Za-z_])"  # ASCII-only left boundary
ASCII_END = r"(?![0-9A-Za-z_])"  # ASCII-only right boundary


def luhn_valid(digits: str) -> bool:
    """The Luhn check digit of a card number holds."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def ean13_valid(digits: str) -> bool:
    """A 13-digit EAN/JAN barcode with a valid check digit."""
    if len(digits) != 13:
        return False
    total = sum((ord(c) - 48) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == ord(digits[12]) - 48


def my_number_valid(digits: str) -> bool:
    """The check digit of a 12-digit My Number (個人番号)."""
    if len(digits) != 12:
        return False
    body = [ord(c) - 48 for c in reversed(digits[:11])]
    remainder = sum(p * (n + 1 if n <= 6 else n - 5) for n, p in enumerate(body, start=1)) % 11
    return (0 if remainder <= 1 else 11 - remainder) == ord(digits[11]) - 48


def normalize_width(text: str) -> str:
    """Full-width digits/letters/signs to ASCII and a ー between digits to "-", one character for one
    (indices are preserved)."""
    return _DIGIT_DASH.sub("-", text.translate(_FULLWIDTH))


def digits_of(text: str) -> str:
    """The digits of ``text``, nothing else."""
    return re.sub(r"\D", "", text)


def preceded_by(norm: str, start: int, pattern: re.Pattern, window: int = 30) -> bool:
    """``pattern`` occurs in the ``window`` characters before ``start``."""
    return pattern.search(norm[max(0, start - window):start]) is not None
