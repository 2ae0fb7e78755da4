"""Where and when a person lives: dates of birth (a date after a birth word - DOB, born, birthday,
生年月日, 誕生日 - or before 生まれ, Western and Japanese era dates; a release date is left alone), postal
codes (〒 / 郵便番号 codes, ZIP codes after a ZIP word) and postal addresses: Japanese (都道府県 /
市区町村 / 丁目 / 番地 / 号 / 1-2-3 blocks, Sapporo's 北1条西2丁目, a room number) and US (number, street
and suffix in any case, "City, ST 12345", PO boxes).
"""

from __future__ import annotations

import re

from fmquality.language.pii.common import ASCII_END, ASCII_START, Claim

_MONTHS = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
           r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)")
_DATE = (r"(?:\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}(?:\s*日)?"
         r"|\d{1,2}\s*[-/.]\s*\d{1,2}\s*[-/.]\s*\d{2,4}"
         rf"|(?i:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
         rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?i:{_MONTHS})\.?,?\s+\d{{4}}"
         r"|(?:昭和|平成|令和|大正|[SHRTshrt]\.?)\s?(?:\d{1,2}|元)\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*日)")
_DOB_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])(?i:date\s+of\s+birth|birth\s?date|birthday|d\.o\.b\.?|dob|born(?:\s+on)?)|生年月日|誕生日)"
    rf"(?:\s*(?:[:=、,]|(?i:is|was|on)(?![A-Za-z])|は|が)\s*){{0,3}}\s*({_DATE})(?![0-9])")
_DOB_AFTER = re.compile(rf"(?<![0-9])({_DATE})\s*(?:生まれ|生(?![一-龯ぁ-ん]))")
_JP_POSTAL = re.compile(r"(?:〒|郵便番号)\s*[:]?\s*\d{3}-?\d{4}" + ASCII_END)
_ZIP_AFTER_WORD = re.compile(r"(?<![A-Za-z])(?i:zip(?:\s*code)?|postal\s*code|post\s*code)\s*(?:[:#]|(?i:is))?\s*"
                             rf"(\d{{5}}(?:-\d{{4}})?){ASCII_END}")
_PREF = r"(?:東京都|北海道|大阪府|京都府|[一-龯]{2,3}県)"
_KANJI_KANA = r"[一-龯ぁ-んァ-ヶー々ヶ]"
_MUNICIPALITY = r"[一-龯ァ-ヶー々]"  # no hiragana: a particle (は, に) never starts an address
_KNUM = r"[一二三四五六七八九十]+"
_FIRST_BLOCK = rf"(?:\d+(?:丁目|番地|番|号|条|-\d+)|{_KNUM}(?:丁目|番地|条))"
_BLOCK = rf"(?:\d+(?:丁目|番地の?|番|号|条)|{_KNUM}(?:丁目|番地|条)|-\d+|\d+(?=-\d)|[東西南北]\d+(?:丁目|条)?)"
_ROOM = rf"(?:\s?{_KANJI_KANA}{{0,12}}?\d+号室)?"
_JP_ADDRESSES = (
    re.compile(rf"{_PREF}{_KANJI_KANA}{{1,20}}?{_FIRST_BLOCK}{_BLOCK}*{_ROOM}"),
    re.compile(rf"(?:{_PREF}\s?)?{_MUNICIPALITY}{{1,12}}?[市区町村郡]{_KANJI_KANA}{{0,12}}?{_FIRST_BLOCK}{_BLOCK}*{_ROOM}"),
    re.compile(rf"[東西南北](?:\d+|{_KNUM})条(?:[東西南北](?:\d+|{_KNUM})丁目)?{_BLOCK}*{_ROOM}"),  # 北1条西2丁目
    re.compile(rf"(?<![0-9])(?:\d+|{_KNUM})丁目\s?\d+(?:番地?|号|-\d+){_BLOCK}*{_ROOM}"),  # 3丁目5-12
)
# A count right after a match ("北海道は3-5日", "1-2営業日") means it was not an address.
_COUNTER_AFTER = re.compile(r"\s?(?:日|営業日|時間|時|分|秒|円|巻|冊|個|点|ヶ月|か月|カ月|月|年|週|%|話|歳|才|名|人|枚|ページ|倍)")
_STREET_SUFFIX = (r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
                  r"Terrace|Ter|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Square|Sq|Trail|Trl)")
_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|"
           "ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|GU|VI")
_CITY_STATE_ZIP = rf"[A-Za-z][A-Za-z.'-]*(?:\s+[A-Za-z][A-Za-z.'-]*){{0,2}},\s*(?i:{_STATES})\s+\d{{5}}(?:-\d{{4}})?{ASCII_END}"
_US_STREET = re.compile(
    rf"{ASCII_START}\d{{1,6}}[A-Za-z]?\s+(?:[NSEWnsew]\.?\s+)?((?:[A-Za-z][A-Za-z'’.-]*\s+){{1,4}})(?i:{_STREET_SUFFIX})\.?(?![A-Za-z])"
    r"(?:\s+(?:NE|NW|SE|SW|N|S|E|W)\.?(?![A-Za-z]))?"
    r"(?:,?\s+(?i:apt|apartment|suite|ste|unit|#)\.?\s*#?[A-Za-z0-9-]+)?"
    rf"(?:,\s*{_CITY_STATE_ZIP})?")
_US_CITY_ZIP = re.compile(rf"(?<![A-Za-z]){_CITY_STATE_ZIP}")
_PO_BOX = re.compile(r"(?<![A-Za-z])(?i:p\.?\s?o\.?\s*box|post\s+office\s+box)\s*#?\s*\d+" + ASCII_END)
# Words that never name a street: "vol 3 on the way", "2 days on the road".
_NOT_STREET_WORDS = frozenset(
    "a an and are at be by day days for from hour hours in is it its more my of on or other our some the their this "
    "that to vol vols volume volumes week weeks with your book books copy copies item items time times".split())


def dates_of_birth_in(norm: str, claim: Claim) -> None:
    for pattern in (_DOB_BEFORE, _DOB_AFTER):
        for m in pattern.finditer(norm):
            claim(*m.span(1), "date_of_birth")


def postal_codes_in(norm: str, claim: Claim) -> None:
    for m in _JP_POSTAL.finditer(norm):
        claim(*m.span(), "postal_code")
    for m in _ZIP_AFTER_WORD.finditer(norm):
        claim(*m.span(1), "postal_code")


def addresses_in(norm: str, claim: Claim) -> None:
    for pattern in _JP_ADDRESSES:
        for m in pattern.finditer(norm):
            if not _COUNTER_AFTER.match(norm, m.end()):
                claim(*m.span(), "address")
    for m in _PO_BOX.finditer(norm):
        claim(*m.span(), "address")
    start = 0
    while True:  # a rejected candidate ("vol 3 on the way") is retried one character further on
        m = _US_STREET.search(norm, start)
        if m is None:
            break
        words = {w.strip(".'’-").lower() for w in m.group(1).split()}
        if words & _NOT_STREET_WORDS:
            start = m.start() + 1
            continue
        claim(*m.span(), "address")
        start = m.end()
    for m in _US_CITY_ZIP.finditer(norm):
        claim(*m.span(), "address")
