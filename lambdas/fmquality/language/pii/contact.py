"""Ways to reach a person: e-mail addresses (also written ``name(at)domain``, ``name [at] domain
[dot] com``, ``name at domain dot com``, ``name★domain``, ``name＠domain``), IP addresses v4 and v6
(validated with ``ipaddress``; not after "version"), and phone numbers: international (+81 ..., +1
...), US ((555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567, 5551234567), Japanese
(03-1234-5678, 03(1234)5678, (03)1234-5678, 090 1234 5678, 090.1234.5678, 09012345678,
0120-123-456; ー as a separator); an undashed 10-digit number after ISBN/ASIN is a book, not a phone.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from fmquality.language.pii.common import ASCII_END, ASCII_START, Claim, digits_of

_LOCAL = r"[A-Za-z0-9._%+-]+"
_AT = (r"(?:@|\s*[(\[{<]\s*(?i:at)\s*[)\]}>]\s*|\s*(?:★|☆|アットマーク|あっとまーく|@マーク)\s*)")
_DOT = r"(?:\.|\s*[(\[{<]\s*(?i:dot)\s*[)\]}>]\s*)"
_EMAIL = re.compile(rf"(?<![A-Za-z0-9._%+-]){_LOCAL}{_AT}[A-Za-z0-9-]+(?:{_DOT}[A-Za-z0-9-]+)*{_DOT}[A-Za-z]{{2,}}"
                    r"(?![A-Za-z0-9-])")
_EMAIL_SPOKEN = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+(?:\s+(?i:dot)\s+[A-Za-z0-9_%+-]+)*\s+(?i:at)\s+[A-Za-z0-9-]+"
    r"(?:\s+(?i:dot)\s+[A-Za-z0-9-]+)*\s+(?i:dot)\s+(?i:com|net|org|jp|co|ne|or|io|me|info|edu|gov|us|uk|biz)"
    r"(?![A-Za-z0-9])")
_IPV4 = re.compile(r"(?<![0-9A-Za-z_.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
                   r"(?![0-9A-Za-z_]|\.\d)")
_IPV6 = re.compile(r"(?<![0-9A-Za-z_:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.\d{1,3}){0,3}(?:%[0-9A-Za-z]+)?"
                   r"(?![0-9A-Za-z_:])")
_VERSION_BEFORE = re.compile(r"(?i:version|ver\.?|v)\s*$")
# Each phone candidate is checked by its digit count.
_PHONES: tuple[tuple[re.Pattern, Callable[[str], bool]], ...] = (
    (re.compile(rf"(?<![0-9A-Za-z_+])\+\d{{1,3}}(?:[ .-]?\(?\d{{1,4}}\)?){{2,5}}{ASCII_END}"),
     lambda d: 8 <= len(d) <= 15),  # international
    (re.compile(rf"(?<![0-9A-Za-z_(-])\(\d{{3}}\)\s?\d{{3}}[ .-]?\d{{4}}{ASCII_END}"), lambda d: len(d) == 10),  # (555) 123-4567
    (re.compile(rf"(?<![0-9A-Za-z_.-])(?:1[ .-])?\d{{3}}[ .-]\d{{3}}[ .-]\d{{4}}{ASCII_END}(?![.-]\d)"),
     lambda d: len(d) in (10, 11)),  # US
    (re.compile(rf"(?<![0-9A-Za-z_(])\(0\d{{1,4}}\)\s?\d{{1,4}}[ .-]?\d{{3,4}}{ASCII_END}"), lambda d: len(d) in (10, 11)),
    (re.compile(rf"{ASCII_START}0\d{{1,4}}\(\d{{1,4}}\)\d{{3,4}}{ASCII_END}"), lambda d: len(d) in (10, 11)),  # 03(1234)5678
    (re.compile(rf"(?<![0-9A-Za-z_.-])0\d{{1,4}}[ .-]\d{{1,4}}[ .-]\d{{3,4}}{ASCII_END}(?![.-]\d)"),
     lambda d: len(d) in (10, 11)),  # Japanese with separators
    (re.compile(rf"(?<![0-9A-Za-z_.-])(?:0[5789]0\d{{8}}|0\d{{9}}){ASCII_END}(?![.-]\d)"), lambda d: True),  # JP, joined
)
_US_JOINED = re.compile(rf"(?<![0-9A-Za-z_+.-])1?[2-9]\d{{2}}[2-9]\d{{6}}{ASCII_END}(?![.-]\d)")
_BOOK_WORD = re.compile(r"(?i:isbn(?:-?1[03])?|asin)\s*[:#]?\s*$")


def emails_in(norm: str, claim: Claim) -> None:
    for pattern in (_EMAIL, _EMAIL_SPOKEN):
        for m in pattern.finditer(norm):
            claim(*m.span(), "email")


def ips_in(norm: str, claim: Claim) -> None:
    for m in _IPV6.finditer(norm):  # first: ::ffff:198.51.100.7 is one address
        candidate = m.group()
        if candidate.count(":") < 2 or not re.search(r"[0-9A-Fa-f]", candidate):
            continue
        try:
            ipaddress.IPv6Address(candidate.split("%", 1)[0])
        except ValueError:
            continue
        claim(*m.span(), "ip_address")
    for m in _IPV4.finditer(norm):
        if not _VERSION_BEFORE.search(norm[max(0, m.start() - 12):m.start()]):
            claim(*m.span(), "ip_address")


def phones_in(norm: str, claim: Claim) -> None:
    for pattern, digits_ok in _PHONES:
        for m in pattern.finditer(norm):
            if digits_ok(digits_of(m.group())):
                claim(*m.span(), "phone")
    for m in _US_JOINED.finditer(norm):
        if not _BOOK_WORD.search(norm[max(0, m.start() - 16):m.start()]):
            claim(*m.span(), "phone")
