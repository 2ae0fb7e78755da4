"""Identity and payment numbers: card numbers (13-19 digits with spaces, dashes or dots between
groups, a card's first digit 2-6, Luhn valid; a 13-digit EAN/JAN code is not a card unless a card
word precedes it; ISBN-13s never start like a card), My Number (12 digits, 4-4-4 or joined, with a
valid check digit or after a My Number word, not after a tracking-number word), and passports (two
letters and seven digits, or what follows a passport word).
"""

from __future__ import annotations

import re

from fmquality.language.pii.common import (
    ASCII_END,
    ASCII_START,
    Claim,
    digits_of,
    ean13_valid,
    luhn_valid,
    my_number_valid,
    preceded_by,
)

_NUMBER_RUN = re.compile(r"(?<![0-9A-Za-z_])\d+(?:[ .\-]\d+)*(?![0-9A-Za-z_])")
_CARD_WORD = re.compile(r"(?i:card|カード|クレジット|visa|master|amex|jcb|diners|discover)")
_BARCODE_WORD = re.compile(r"(?i:jan|ean|isbn|barcode|バーコード)")
_MY_NUMBER = re.compile(r"(?<![0-9A-Za-z_])(?<!\d[ .\-])\d{4}[ \-]?\d{4}[ \-]?\d{4}(?![0-9A-Za-z_])(?![ .\-]\d)")
_MY_NUMBER_WORD = re.compile(r"(?i:マイナンバー|個人番号|my\s?number)")
_TRACKING_WORD = re.compile(r"(?i:追跡|伝票|問い?合わ?せ番号|tracking)")
_PASSPORT = re.compile(rf"{ASCII_START}[A-Z]{{2}}\d{{7}}{ASCII_END}")
_PASSPORT_AFTER_WORD = re.compile(
    r"(?i:passport|パスポート|旅券)(?:\s*(?i:番号|number|no\.?|num|#|id))?\s*(?:[:=]|は|(?i:is))?\s*"
    rf"([A-Za-z]{{0,2}}\d{{6,9}}){ASCII_END}")


def cards_in(norm: str, claim: Claim) -> None:
    """Card numbers, tried on every run of digit groups and on its sub-runs of whole groups (a CVV or
    a second number right after a card does not hide it)."""
    for run in _NUMBER_RUN.finditer(norm):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in re.finditer(r"\d+", run.group())]
        i = 0
        while i < len(groups):
            for j in range(len(groups) - 1, i - 1, -1):
                start, end = groups[i][0], groups[j][1]
                digits = digits_of(norm[start:end])
                if not (13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)):
                    continue
                if len(digits) == 13 and ean13_valid(digits) and not preceded_by(norm, start, _CARD_WORD):
                    continue  # a JAN/EAN barcode
                if preceded_by(norm, start, _BARCODE_WORD, 12) and not preceded_by(norm, start, _CARD_WORD, 12):
                    continue
                if claim(start, end, "card"):
                    i = j
                    break
            i += 1


def my_numbers_in(norm: str, claim: Claim) -> None:
    for m in _MY_NUMBER.finditer(norm):
        if preceded_by(norm, m.start(), _MY_NUMBER_WORD) or (
                not preceded_by(norm, m.start(), _TRACKING_WORD) and my_number_valid(digits_of(m.group()))):
            claim(*m.span(), "my_number")


def passports_in(norm: str, claim: Claim) -> None:
    for m in _PASSPORT_AFTER_WORD.finditer(norm):
        claim(*m.span(1), "passport")
    for m in _PASSPORT.finditer(norm):
        claim(*m.span(), "passport")
