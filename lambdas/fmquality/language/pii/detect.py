"""The kinds of personal data, the token each is replaced by, and the order they claim spans in:
earlier kinds win where two overlap (an e-mail holding digits is an e-mail, not a phone). Order ids
come first (``pii.orders``, through the Redactor, which holds the hashing key), then ``FINDERS`` in
turn, then names, which look wider when the text holds other personal data.
"""

from __future__ import annotations

from collections.abc import Callable

from fmquality.language.pii.common import Claim, normalize_width
from fmquality.language.pii.contact import emails_in, ips_in, phones_in
from fmquality.language.pii.names import names_in
from fmquality.language.pii.numbers import cards_in, my_numbers_in, passports_in
from fmquality.language.pii.places import addresses_in, dates_of_birth_in, postal_codes_in

TOKENS = {"email": "[EMAIL]", "card": "[CARD]", "my_number": "[MY_NUMBER]", "passport": "[PASSPORT]",
          "ip_address": "[IP_ADDRESS]", "date_of_birth": "[DATE_OF_BIRTH]", "postal_code": "[POSTAL_CODE]",
          "address": "[ADDRESS]", "phone": "[PHONE]", "name": "[NAME]"}

FINDERS: tuple[Callable[[str, Claim], None], ...] = (
    emails_in, cards_in, my_numbers_in, passports_in, ips_in, dates_of_birth_in, postal_codes_in, addresses_in,
    phones_in,
)


def find_personal_data(norm: str, claim: Claim, protect: list[str], found: Callable[[], bool]) -> None:
    """Every kind after the order ids, on the width-normalized text: ``FINDERS`` in order, then names.
    ``found()``: whether anything was claimed so far (a bare full name counts only in such text);
    ``protect``: phrases never taken for a name (catalog titles)."""
    for finder in FINDERS:
        finder(norm, claim)
    names_in(norm, claim, protect, found())


def personal_data_in(text: str) -> list[tuple[str, str]]:
    """(kind, span) of every personal datum ``FINDERS`` read in ``text``: e-mail and IP addresses,
    phones, cards, My Numbers, passports, dates of birth, postal codes, street addresses. Names are left
    out: read alone they cannot tell a person from a character or an author."""
    norm = normalize_width(text)
    taken: list[tuple[int, int, str]] = []

    def claim(start: int, end: int, kind: str, replacement: str | None = None) -> bool:
        if start >= end or any(start < e and s < end for s, e, _ in taken):
            return False
        taken.append((start, end, kind))
        return True

    for finder in FINDERS:
        finder(norm, claim)
    return [(kind, text[start:end]) for start, end, kind in sorted(taken)]
