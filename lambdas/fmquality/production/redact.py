"""Personal data redaction, applied before a turn is stored (in the chatbot-side CaptureClient, again
in the Firehose transformation Lambda, so a careless producer cannot store PII, and in ``fmquality
sample``, which may read a producer's own turn files).

Always on decoded text: a record is parsed (or its JSON escapes decoded) before anything is matched,
because in ASCII-escaped JSON (``json.dumps``' default) Japanese text and full-width digits are
``\\uXXXX`` sequences that no pattern sees.

What is replaced, in this order (earlier kinds win where two overlap):
- order ids -> ``ord_<16 hex>``, an HMAC-SHA256 of the id under a secret key (the same id always
  gives the same token within a key, so "where is my order" turns stay comparable; without the key
  the id cannot be recovered or guessed by hashing candidates). ``MA`` ids are matched in any case
  (``maq7k29xb`` is the same order, the same token as ``MAQ7K29XB``) when an order word precedes
  them or their tail mixes letters after digits (so ``#manga2024`` is left alone);
- e-mail addresses -> ``[EMAIL]``, also written ``name(at)domain``, ``name [at] domain [dot] com``,
  ``name at domain dot com``, ``name★domain``, ``name＠domain`` (full width);
- card numbers: 13-19 digits (spaces, dashes, dots between groups), a card's first digit (2-6), Luhn
  valid -> ``[CARD]``. A 13-digit EAN/JAN code (valid EAN check digit) is not a card unless a card
  word precedes it; ISBN-13s (978/979) never start like a card;
- My Number (12 digits, 4-4-4 or joined) -> ``[MY_NUMBER]`` when its check digit is valid or a My
  Number word precedes it (not after a tracking-number word);
- passports: two letters and seven digits (Japanese), or what follows a passport word -> ``[PASSPORT]``;
- IP addresses, v4 and v6 (validated with ``ipaddress``) -> ``[IP_ADDRESS]`` (not after "version");
- dates of birth: a date after a birth word (DOB, born, birthday, 生年月日, 誕生日) or before 生まれ,
  Western and Japanese era dates -> ``[DATE_OF_BIRTH]`` (a release date is left alone);
- postal codes: 〒 / 郵便番号 codes and ZIP codes after a ZIP word -> ``[POSTAL_CODE]``;
- postal addresses: Japanese (都道府県 / 市区町村 / 丁目 / 番地 / 号 / 1-2-3 blocks, Sapporo's 北1条西2丁目,
  a room number) and US (number, street and suffix in any case, "City, ST 12345", PO boxes) ->
  ``[ADDRESS]``;
- phone numbers: international (+81 ..., +1 ...), US ((555) 123-4567, 555-123-4567, 555.123.4567,
  555 123 4567, 5551234567), Japanese (03-1234-5678, 03(1234)5678, (03)1234-5678, 090 1234 5678,
  090.1234.5678, 09012345678, 0120-123-456; ー as a separator) -> ``[PHONE]``; an undashed 10-digit
  number after ISBN/ASIN is a book, not a phone;
- names: a Japanese name before 様/さま/さん/くん/君/ちゃん/殿/氏 (kanji 2-8 or katakana, role words
  such as 担当者様, お客様, 配達員さん and compounds such as 仕様 excluded), after 名前は/氏名/名義は, before
  と申します; a full name without honorific (a common surname + 1-3 kanji, "山田花子") only in text about
  the shopper's own delivery, booking or identity (住所, 〒, 電話, 予約, 名義, 返品 ...) or holding other
  personal data, so an author named in an answer (伊藤潤二) stays; an English name after
  Mr/Mrs/Ms/Miss/Mx/Dr/Prof or "my name is"; a common Japanese surname in romaji before
  -san/-sama/-kun/-chan ("Yamada-san"; "Kaguya-sama" is a title) -> ``[NAME]`` (the honorific
  stays: ``[NAME]様``). Titles such as "Dr. Stone", and any phrase passed as ``protect`` (the turn's
  catalog and page titles), are not names. A bare English name ("Jane Doe" alone) is not detected.

Full-width digits and signs (０９０－１２３４－５６７８, ＠, ．) and a ー between digits are matched through
a same-length normalized copy of the text, so the spans replaced are exactly those of the original.
Numeric patterns use ASCII-only boundaries: in Japanese text the characters around a number are word
characters, so ``\\b`` would never match there. A second pass over redacted text changes nothing (the
tokens match no pattern; ids already in token form are kept), so the transformation Lambda is
idempotent over a redacting client.

Identifiers: ``turn_id`` -> ``turn_<16 hex>`` and ``session_id`` -> ``sess_<16 hex>``, HMACs under the
same key (separate domains, so an id never hashes to another kind's token). ``page_context`` keeps only
what the scorers read (``PAGE_CONTEXT_ALLOWED``); every other key is dropped and counted under
``page_context_dropped``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from fmquality.domain.errors import RedactionKeyMissing

ORDER_TOKEN_PREFIX = "ord_"
TURN_TOKEN_PREFIX = "turn_"
SESSION_TOKEN_PREFIX = "sess_"
ORDER_KEY_ENV = "FMQ_ORDER_HASH_KEY"
ORDER_KEY_SECRET_ENV = "ORDER_HASH_SECRET_ID"
PAGE_CONTEXT_DROPPED = "page_context_dropped"

# Full-width digits, letters and signs -> ASCII, one character for one (same length).
_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULLWIDTH.update({0x2212: ord("-"), 0x2010: ord("-"), 0x2011: ord("-"), 0x2012: ord("-"), 0x2013: ord("-"),
                   0x2014: ord("-"), 0xFE63: ord("-"), 0x3000: ord(" "), 0x00A0: ord(" ")})
_FULLWIDTH.update({code: ord(" ") for code in range(0x2002, 0x200B)})
# A long-vowel mark or a bar between two digits is a dash there (090ー1234ー5678).
_DIGIT_DASH = re.compile(r"(?<=\d)[ーｰ―─━](?=\d)")

_NB = r"(?<![0-9A-Za-z_])"  # ASCII-only left boundary
_NA = r"(?![0-9A-Za-z_])"  # ASCII-only right boundary

ORDER_ID_PATTERNS: tuple[str, ...] = (
    # MangaAssist order ids: MA + 7 upper-case letters/digits, at least one digit (MAQ7K29XB).
    rf"{_NB}MA(?=[A-Z]*[0-9])[A-Z0-9]{{7}}{_NA}",
    # Marketplace-style 3-7-7 digit ids (123-4567890-1234567).
    rf"{_NB}\d{{3}}-\d{{7}}-\d{{7}}{_NA}",
)
_ORDER_ANY_CASE = re.compile(rf"{_NB}[Mm][Aa]([A-Za-z0-9]{{7}}){_NA}")
_ORDER_WORD = re.compile(r"(?i:order|ord\b|注文|オーダー)")

# ---- e-mail
_LOCAL = r"[A-Za-z0-9._%+-]+"
_AT = (r"(?:@|\s*[(\[{<]\s*(?i:at)\s*[)\]}>]\s*|\s*(?:★|☆|アットマーク|あっとまーく|@マーク)\s*)")
_DOT = r"(?:\.|\s*[(\[{<]\s*(?i:dot)\s*[)\]}>]\s*)"
_EMAIL = re.compile(rf"(?<![A-Za-z0-9._%+-]){_LOCAL}{_AT}[A-Za-z0-9-]+(?:{_DOT}[A-Za-z0-9-]+)*{_DOT}[A-Za-z]{{2,}}"
                    r"(?![A-Za-z0-9-])")
_EMAIL_SPOKEN = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+(?:\s+(?i:dot)\s+[A-Za-z0-9_%+-]+)*\s+(?i:at)\s+[A-Za-z0-9-]+"
    r"(?:\s+(?i:dot)\s+[A-Za-z0-9-]+)*\s+(?i:dot)\s+(?i:com|net|org|jp|co|ne|or|io|me|info|edu|gov|us|uk|biz)"
    r"(?![A-Za-z0-9])")

# ---- numbers: cards, My Number, passports
_NUMBER_RUN = re.compile(r"(?<![0-9A-Za-z_])\d+(?:[ .\-]\d+)*(?![0-9A-Za-z_])")
_CARD_WORD = re.compile(r"(?i:card|カード|クレジット|visa|master|amex|jcb|diners|discover)")
_BARCODE_WORD = re.compile(r"(?i:jan|ean|isbn|barcode|バーコード)")
_MY_NUMBER = re.compile(r"(?<![0-9A-Za-z_])(?<!\d[ .\-])\d{4}[ \-]?\d{4}[ \-]?\d{4}(?![0-9A-Za-z_])(?![ .\-]\d)")
_MY_NUMBER_WORD = re.compile(r"(?i:マイナンバー|個人番号|my\s?number)")
_TRACKING_WORD = re.compile(r"(?i:追跡|伝票|問い?合わ?せ番号|tracking)")
_PASSPORT = re.compile(rf"{_NB}[A-Z]{{2}}\d{{7}}{_NA}")
_PASSPORT_AFTER_WORD = re.compile(
    r"(?i:passport|パスポート|旅券)(?:\s*(?i:番号|number|no\.?|num|#|id))?\s*(?:[:=]|は|(?i:is))?\s*"
    rf"([A-Za-z]{{0,2}}\d{{6,9}}){_NA}")

# ---- IP addresses
_IPV4 = re.compile(r"(?<![0-9A-Za-z_.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
                   r"(?![0-9A-Za-z_]|\.\d)")
_IPV6 = re.compile(r"(?<![0-9A-Za-z_:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.\d{1,3}){0,3}(?:%[0-9A-Za-z]+)?"
                   r"(?![0-9A-Za-z_:])")
_VERSION_BEFORE = re.compile(r"(?i:version|ver\.?|v)\s*$")

# ---- dates of birth
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

# ---- postal codes and addresses
_JP_POSTAL = re.compile(r"(?:〒|郵便番号)\s*[:]?\s*\d{3}-?\d{4}" + _NA)
_ZIP_AFTER_WORD = re.compile(r"(?<![A-Za-z])(?i:zip(?:\s*code)?|postal\s*code|post\s*code)\s*(?:[:#]|(?i:is))?\s*"
                             rf"(\d{{5}}(?:-\d{{4}})?){_NA}")
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
_CITY_STATE_ZIP = rf"[A-Za-z][A-Za-z.'-]*(?:\s+[A-Za-z][A-Za-z.'-]*){{0,2}},\s*(?i:{_STATES})\s+\d{{5}}(?:-\d{{4}})?{_NA}"
_US_STREET = re.compile(
    rf"{_NB}\d{{1,6}}[A-Za-z]?\s+(?:[NSEWnsew]\.?\s+)?((?:[A-Za-z][A-Za-z'’.-]*\s+){{1,4}})(?i:{_STREET_SUFFIX})\.?(?![A-Za-z])"
    r"(?:\s+(?:NE|NW|SE|SW|N|S|E|W)\.?(?![A-Za-z]))?"
    r"(?:,?\s+(?i:apt|apartment|suite|ste|unit|#)\.?\s*#?[A-Za-z0-9-]+)?"
    rf"(?:,\s*{_CITY_STATE_ZIP})?")
_US_CITY_ZIP = re.compile(rf"(?<![A-Za-z]){_CITY_STATE_ZIP}")
_PO_BOX = re.compile(r"(?<![A-Za-z])(?i:p\.?\s?o\.?\s*box|post\s+office\s+box)\s*#?\s*\d+" + _NA)
# Words that never name a street: "vol 3 on the way", "2 days on the road".
_NOT_STREET_WORDS = frozenset(
    "a an and are at be by day days for from hour hours in is it its more my of on or other our some the their this "
    "that to vol vols volume volumes week weeks with your book books copy copies item items time times".split())

# ---- phones (each candidate is checked by digit count)
_PHONES: tuple[tuple[re.Pattern, Callable[[str], bool]], ...] = (
    (re.compile(rf"(?<![0-9A-Za-z_+])\+\d{{1,3}}(?:[ .-]?\(?\d{{1,4}}\)?){{2,5}}{_NA}"),
     lambda d: 8 <= len(d) <= 15),  # international
    (re.compile(rf"(?<![0-9A-Za-z_(-])\(\d{{3}}\)\s?\d{{3}}[ .-]?\d{{4}}{_NA}"), lambda d: len(d) == 10),  # (555) 123-4567
    (re.compile(rf"(?<![0-9A-Za-z_.-])(?:1[ .-])?\d{{3}}[ .-]\d{{3}}[ .-]\d{{4}}{_NA}(?![.-]\d)"),
     lambda d: len(d) in (10, 11)),  # US
    (re.compile(rf"(?<![0-9A-Za-z_(])\(0\d{{1,4}}\)\s?\d{{1,4}}[ .-]?\d{{3,4}}{_NA}"), lambda d: len(d) in (10, 11)),
    (re.compile(rf"{_NB}0\d{{1,4}}\(\d{{1,4}}\)\d{{3,4}}{_NA}"), lambda d: len(d) in (10, 11)),  # 03(1234)5678
    (re.compile(rf"(?<![0-9A-Za-z_.-])0\d{{1,4}}[ .-]\d{{1,4}}[ .-]\d{{3,4}}{_NA}(?![.-]\d)"),
     lambda d: len(d) in (10, 11)),  # Japanese with separators
    (re.compile(rf"(?<![0-9A-Za-z_.-])(?:0[5789]0\d{{8}}|0\d{{9}}){_NA}(?![.-]\d)"), lambda d: True),  # JP, joined
)
_US_JOINED = re.compile(rf"(?<![0-9A-Za-z_+.-])1?[2-9]\d{{2}}[2-9]\d{{6}}{_NA}(?![.-]\d)")
_BOOK_WORD = re.compile(r"(?i:isbn(?:-?1[03])?|asin)\s*[:#]?\s*$")

# ---- names
_KANJI = r"[一-龯々〆]"
_HONORIFIC = r"(?:様|さま|さん|くん|君|ちゃん|殿|氏)"
_HONORIFIC_AT = re.compile(_HONORIFIC)
_JA_KANJI_NAME = re.compile(rf"(?<![一-龯々〆])({_KANJI}{{2,8}}(?:[ ]{_KANJI}{{1,4}})?)(?={_HONORIFIC})")
_JA_KATAKANA_NAME = re.compile(rf"(?<![ァ-ヶー・])([ァ-ヶ][ァ-ヶー]{{1,9}}(?:・[ァ-ヶ][ァ-ヶー]{{1,9}})?)(?={_HONORIFIC})")
_JA_NAME_AFTER_WORD = re.compile(rf"(?:名前は|名前[:]|氏名[:は]?|名義は)\s*((?:{_KANJI}|[ァ-ヶー]){{2,8}}"
                                 rf"(?:[ ](?:{_KANJI}|[ァ-ヶー]){{1,6}})?)")
# A full name written without an honorific ("山田花子、〒150-0002 ..."): one of the most common
# two-kanji (or longer) surnames, then a given name of 1-3 kanji, the whole kanji run and nothing more.
# A bare surname ("佐藤です") is left alone; so are places and institutions (中村区, 松本市, 中野駅).
_COMMON_SURNAMES = (
    "佐藤 鈴木 高橋 田中 伊藤 渡辺 渡邊 山本 中村 小林 加藤 吉田 山田 佐々木 山口 松本 井上 木村 斎藤 斉藤 清水 山崎 池田 橋本 "
    "阿部 石川 山下 中島 石井 小川 前田 岡田 長谷川 藤田 後藤 近藤 村上 遠藤 青木 坂本 福田 太田 西村 藤井 金子 岡本 藤原 "
    "中野 三浦 原田 中川 松田 竹内 小野 田村 中山 和田 石田 森田 上田 柴田 酒井 工藤 横山 宮崎 宮本 内田 高木 安藤 島田 "
    "谷口 大野 高田 丸山 今井 河野 藤本 村田 武田 上野 杉山 増田 小山 大塚 平野 菅原 久保 松井 千葉 岩崎 桜井 木下 野口 "
    "松尾 菊地 野村 新井 渡部").split()
_JA_BARE_NAME = re.compile(rf"(?<![一-龯々〆])((?:{'|'.join(sorted(_COMMON_SURNAMES, key=len, reverse=True))})"
                           rf"[ ]?{_KANJI}{{1,3}})(?![一-龯々〆])")
_NOT_GIVEN_NAME_ENDINGS = tuple("区市町村郡県都府道駅店社様殿氏君家屋所館園線口港寺院橋川山通条目号番地街台島岡谷沢野原田池湖海浜"
                                "坂丘森林宮神堂城校塾科部課署局庁庫場側方面産製版巻話編")
_JA_NAME_BEFORE_INTRO = re.compile(rf"(?<![一-龯々〆])({_KANJI}{{2,6}})(?=と申します|と言います|といいます)")
_EN_TITLE_NAME = re.compile(r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?[ \t]+([A-Z][a-z'’-]+(?:[ \t]+[A-Z][a-z'’-]+)?)")
_EN_NAME_AFTER_WORD = re.compile(r"(?<![A-Za-z])(?i:my\s+name\s+is|my\s+name's|name\s*:)\s+"
                                 r"([A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2})")
_ROMAJI_HONORIFIC = re.compile(r"(?<![A-Za-z])([A-Z][a-z]+)[- ](?i:san|sama|kun|chan|dono)(?![A-Za-z])")
# Romanized honorifics only after a common surname: "Yamada-san" is a person, "Kaguya-sama" and
# "Mieruko-chan" are titles.
_ROMAJI_SURNAMES = frozenset(
    "sato suzuki takahashi tanaka ito watanabe yamamoto nakamura kobayashi kato yoshida yamada sasaki yamaguchi "
    "matsumoto inoue kimura saito shimizu yamazaki ikeda hashimoto abe ishikawa yamashita nakajima ishii ogawa maeda "
    "okada hasegawa fujita goto kondo murakami endo aoki sakamoto fukuda ota ohta nishimura fujii kaneko okamoto "
    "fujiwara nakano miura harada nakagawa matsuda takeuchi ono tamura nakayama wada ishida morita ueda shibata sakai "
    "kudo yokoyama miyazaki miyamoto uchida takagi ando shimada taniguchi ohno ono takada maruyama imai kono fujimoto "
    "murata takeda ueno sugiyama masuda koyama otsuka hirano sugawara kubo matsui chiba iwasaki sakurai kinoshita "
    "noguchi matsuo kikuchi nomura arai mori hayashi hara".split())
# A bare full name is only taken where the text is about the shopper's own delivery, booking or identity.
_PERSONAL_CONTEXT = re.compile(r"住所|〒|電話|メール|予約|受取|受け取|名義|宛|届け先|送り先|配送先|お届け先|返品|注文者|購入者|"
                               r"本人|会員|申込|申し込|領収書|請求書")
# Runs ending in a role or relation word are not names (担当者様, 配達員さん, 店長さん, 息子さん, 王子様).
_NOT_NAME_ENDINGS = ("者", "員", "長", "屋", "社", "店", "局", "署", "師", "士", "族", "方", "達", "手", "王", "嬢", "姫",
                     "神", "家", "主人", "友人", "本人", "恋人", "管理人", "職人", "住人", "知人", "他人", "大人", "婦人",
                     "夫人", "新人", "名人", "商人", "老人", "隣人", "息子", "王子", "女神", "天使", "皇子", "彼女", "彼氏",
                     "旦那", "親父", "叔父", "叔母", "伯父", "伯母", "祖父", "祖母", "両親", "親戚", "先輩", "後輩", "同僚",
                     "上司", "部下", "先方", "相手", "得意", "各位", "先生", "兄", "姉", "弟", "妹", "娘", "孫", "客")
# 〜様 compounds that are not honorifics (仕様, 模様, 同様, 多様, 一様, 異様, 有様, 両様, 文様, 紋様).
_SAMA_COMPOUND_FIRST = frozenset("仕模同多一異有両文紋図")
_NOT_KATAKANA_NAMES = frozenset(
    "スタッフ ドライバー メーカー ショップ ユーザー オーナー ゲスト メンバー カスタマー サポート センター オペレーター ファン ママ "
    "パパ キャラ ヒロイン ヒーロー プレミアム クリエイター イラストレーター ライター デザイナー アシスタント マネージャー チーム "
    "ストア ヤマト サガワ クロネコ サンタ".split())
_TITLE_NAMES = ("dr stone", "dr slump", "dr mashirito", "mr osomatsu", "mr villain", "mr fullswing", "miss kobayashi",
                "mr bean", "dr house", "mr children")

KINDS = ("order_id", "email", "card", "my_number", "passport", "ip_address", "date_of_birth", "postal_code", "address",
         "phone", "name")
TOKENS = {"email": "[EMAIL]", "card": "[CARD]", "my_number": "[MY_NUMBER]", "passport": "[PASSPORT]",
          "ip_address": "[IP_ADDRESS]", "date_of_birth": "[DATE_OF_BIRTH]", "postal_code": "[POSTAL_CODE]",
          "address": "[ADDRESS]", "phone": "[PHONE]", "name": "[NAME]"}
_ID_TOKEN = {prefix: re.compile(rf"{prefix}[0-9a-f]{{16}}") for prefix in
             (ORDER_TOKEN_PREFIX, TURN_TOKEN_PREFIX, SESSION_TOKEN_PREFIX)}

# ---- page context: what the scorers read (relevance, consistency, claims, money), nothing else.
_SCALAR = "scalar"
_ORDER_ID = "order_id"
_ITEM = {"asin": _SCALAR, "title": _SCALAR, "price": _SCALAR, "qty": _SCALAR}
_ORDER = {"order_id": _ORDER_ID, "status": _SCALAR, "ship_date": _SCALAR, "eta": _SCALAR, "carrier": _SCALAR,
          "items": [{**_ITEM, "status": _SCALAR}]}
PAGE_CONTEXT_ALLOWED: dict[str, Any] = {
    "current_asin": _SCALAR,
    "store_section": _SCALAR,
    "order": _ORDER,
    "orders": [_ORDER],
    "cart": ({"items": [_ITEM]}, [_ITEM]),  # {"items": [...]} or the list of items itself
}
_DROP = object()
# HMAC domains: a turn id, a session id and an order id of the same text never share a token.
_TURN_DOMAIN = b"turn_id\x00"
_SESSION_DOMAIN = b"session_id\x00"


def luhn_valid(digits: str) -> bool:
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


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _before(norm: str, start: int, pattern: re.Pattern, window: int = 30) -> bool:
    return pattern.search(norm[max(0, start - window):start]) is not None


_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape_json_text(text: str) -> str:
    """JSON string escapes (``\\u7530``, surrogate pairs, ``\\n``) decoded in text that is not (or not
    entirely) valid JSON, so what is matched is what a reader would see."""
    out = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u"
                           else _SIMPLE_ESCAPES[m.group(1)], text)
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def decode_bytes(raw: bytes) -> str:
    """UTF-8 (the contract), else CP932 (a Windows/Shift_JIS producer), else UTF-8 with replacements."""
    for encoding in ("utf-8", "cp932"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", "replace")


class Redactor:
    """Replaces personal data in text and in captured turns. ``order_key`` is the HMAC key of the
    order-id, turn-id and session-id tokens (bytes or str); ``order_id_patterns`` overrides the order
    id formats."""

    def __init__(self, order_key: bytes | str, order_id_patterns: tuple[str, ...] = ORDER_ID_PATTERNS) -> None:
        if not order_key:
            raise RedactionKeyMissing("an order-id hashing key is required")
        self._key = order_key.encode("utf-8") if isinstance(order_key, str) else bytes(order_key)
        self._order_ids = [re.compile(p) for p in order_id_patterns]
        self._default_order_ids = order_id_patterns == ORDER_ID_PATTERNS

    # ---- keyed tokens

    def _hmac(self, domain: bytes, value: str) -> str:
        return hmac.new(self._key, domain + normalize_width(value).strip().encode("utf-8"), hashlib.sha256).hexdigest()[:16]

    def order_token(self, order_id: str) -> str:
        return f"{ORDER_TOKEN_PREFIX}{self._hmac(b'', order_id)}"

    def turn_token(self, turn_id: str) -> str:
        """``turn_<16 hex>``: the stored turn id (and so the sampled test_id); a token is kept as it is."""
        return turn_id if _ID_TOKEN[TURN_TOKEN_PREFIX].fullmatch(turn_id) else \
            TURN_TOKEN_PREFIX + self._hmac(_TURN_DOMAIN, turn_id)

    def session_token(self, session_id: str) -> str:
        """``sess_<16 hex>``: the stored session id; a token is kept as it is."""
        return session_id if _ID_TOKEN[SESSION_TOKEN_PREFIX].fullmatch(session_id) else \
            SESSION_TOKEN_PREFIX + self._hmac(_SESSION_DOMAIN, session_id)

    def _order_field_token(self, order_id: str) -> str:
        return order_id if _ID_TOKEN[ORDER_TOKEN_PREFIX].fullmatch(order_id) else self.order_token(order_id)

    # ---- text

    def redact_text(self, text: str, counts: Counter | None = None, protect: Iterable[str] = ()) -> str:
        """``text`` with every personal-data span replaced; ``counts`` (if given) gets +1 per span and
        kind. ``protect``: phrases (catalog titles) that are never taken for a person's name."""
        if not isinstance(text, str) or not text:
            return text
        norm = normalize_width(text)
        spans: list[tuple[int, int, str, str]] = []  # start, end, kind, replacement

        def claim(start: int, end: int, kind: str, replacement: str | None = None) -> bool:
            if start >= end or any(start < e and s < end for s, e, _, _ in spans):
                return False
            spans.append((start, end, kind, replacement or TOKENS[kind]))
            return True

        self._order_ids_in(norm, claim)
        for pattern in (_EMAIL, _EMAIL_SPOKEN):
            for m in pattern.finditer(norm):
                claim(*m.span(), "email")
        _cards_in(norm, claim)
        for m in _MY_NUMBER.finditer(norm):
            if _before(norm, m.start(), _MY_NUMBER_WORD) or (
                    not _before(norm, m.start(), _TRACKING_WORD) and my_number_valid(_digits(m.group()))):
                claim(*m.span(), "my_number")
        for m in _PASSPORT_AFTER_WORD.finditer(norm):
            claim(*m.span(1), "passport")
        for m in _PASSPORT.finditer(norm):
            claim(*m.span(), "passport")
        _ips_in(norm, claim)
        for pattern in (_DOB_BEFORE, _DOB_AFTER):
            for m in pattern.finditer(norm):
                claim(*m.span(1), "date_of_birth")
        for m in _JP_POSTAL.finditer(norm):
            claim(*m.span(), "postal_code")
        for m in _ZIP_AFTER_WORD.finditer(norm):
            claim(*m.span(1), "postal_code")
        _addresses_in(norm, claim)
        _phones_in(norm, claim)
        _names_in(norm, claim, [p for p in protect if isinstance(p, str) and p.strip()], bool(spans))
        if not spans:
            return text
        out: list[str] = []
        last = 0
        for start, end, kind, replacement in sorted(spans):
            out.append(text[last:start])
            out.append(replacement)
            last = end
            if counts is not None:
                counts[kind] += 1
        out.append(text[last:])
        return "".join(out)

    def _order_ids_in(self, norm: str, claim: Callable[..., bool]) -> None:
        for pattern in self._order_ids:
            for m in pattern.finditer(norm):
                claim(*m.span(), "order_id", self.order_token(m.group()))
        if not self._default_order_ids:
            return
        for m in _ORDER_ANY_CASE.finditer(norm):
            tail = m.group(1)
            if not any(c.isdigit() for c in tail):
                continue
            mixed = re.search(r"\d[A-Za-z]", tail) is not None  # a letter after a digit: maq7k29xb, not manga2024
            if mixed or _before(norm, m.start(), _ORDER_WORD):
                claim(*m.span(), "order_id", self.order_token(m.group().upper()))

    # ---- values and turns

    def redact_value(self, value: Any, counts: Counter | None = None, protect: Iterable[str] = ()) -> Any:
        """Every string inside nested dicts/lists redacted (keys kept)."""
        if isinstance(value, str):
            return self.redact_text(value, counts, protect)
        if isinstance(value, Mapping):
            return {k: self.redact_value(v, counts, protect) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(v, counts, protect) for v in value]
        return value

    def redact_number(self, value: Any, counts: Counter | None = None) -> Any:
        """An integer that reads as personal data (a card or phone sent as a number) becomes its token."""
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1_000_000:
            text = str(value)
            redacted = self.redact_text(text, counts)
            return redacted if redacted != text else value
        return value

    def filter_page_context(self, page: Any, counts: Counter | None = None,
                            protect: Iterable[str] = ()) -> dict[str, Any]:
        """The page context reduced to ``PAGE_CONTEXT_ALLOWED``: text redacted, the order id (any
        format) as its token, every other key dropped and counted under ``page_context_dropped``."""
        counts = counts if counts is not None else Counter()
        protect = list(protect) + _titles_in(page)
        if not isinstance(page, Mapping):
            counts[PAGE_CONTEXT_DROPPED] += 1
            return {}
        out = self._filter(page, PAGE_CONTEXT_ALLOWED, counts, protect)
        return {} if out is _DROP else out

    def _filter(self, value: Any, schema: Any, counts: Counter, protect: list[str]) -> Any:
        if isinstance(schema, tuple):  # alternatives by shape
            schema = next((s for s in schema if isinstance(value, list if isinstance(s, list) else Mapping)), schema[0])
        if schema == _SCALAR:
            if value is None or isinstance(value, (bool, float)):
                return value
            if isinstance(value, int):
                return self.redact_number(value, counts)
            if isinstance(value, str):
                return self.redact_text(value, counts, protect)
        elif schema == _ORDER_ID:
            if value is None:
                return None
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                token = self._order_field_token(str(value))
                if token != str(value):
                    counts["order_id"] += 1
                return token
        elif isinstance(schema, list):
            if isinstance(value, list):
                kept = [self._filter(v, schema[0], counts, protect) for v in value]
                return [v for v in kept if v is not _DROP]
        elif isinstance(value, Mapping):
            out = {}
            for key, inner in value.items():
                if isinstance(key, str) and key in schema:
                    kept = self._filter(inner, schema[key], counts, protect)
                    if kept is not _DROP:
                        out[key] = kept
                else:
                    counts[PAGE_CONTEXT_DROPPED] += 1
            return out
        counts[PAGE_CONTEXT_DROPPED] += 1
        return _DROP

    def redact_turn(self, turn: Mapping[str, Any]) -> tuple[dict[str, Any], Counter]:
        """A captured turn (a dict in the TurnRecord shape) with its free text redacted: query,
        history, response and retrieved chunks; ``turn_id`` and ``session_id`` as keyed tokens; the
        page context reduced to its allow-list (the order id as its token whatever its format).
        Timestamps, versions and the catalog (public product data) are kept as they are. Returns the
        new dict and the counts per kind (``page_context_dropped``: keys dropped from the page)."""
        counts: Counter = Counter()
        out = dict(turn)
        protect = _titles_in(out.get("catalog"))
        if isinstance(out.get("turn_id"), str) and out["turn_id"]:
            out["turn_id"] = self.turn_token(out["turn_id"])
        if isinstance(out.get("session_id"), str) and out["session_id"]:
            out["session_id"] = self.session_token(out["session_id"])
        for name in ("query", "response"):
            if isinstance(out.get(name), str):
                out[name] = self.redact_text(out[name], counts, protect)
        if isinstance(out.get("conversation_history"), list):
            out["conversation_history"] = [
                {**m, "content": self.redact_text(m.get("content", ""), counts, protect)} if isinstance(m, Mapping) else m
                for m in out["conversation_history"]
            ]
        if out.get("page_context") is not None:
            out["page_context"] = self.filter_page_context(out["page_context"], counts, protect)
        if isinstance(out.get("retrieved_chunks"), list):
            out["retrieved_chunks"] = self.redact_value(out["retrieved_chunks"], counts, protect)
        return out, counts

    def redact_loose(self, value: Any, counts: Counter | None = None) -> Any:
        """Anything decoded from a record the schema refused: every string (keys too) and every
        long integer redacted, ids hashed, the page context reduced to its allow-list."""
        counts = counts if counts is not None else Counter()
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, inner in value.items():
                name = self.redact_text(key, counts) if isinstance(key, str) else str(key)
                if key == "turn_id" and isinstance(inner, str) and inner:
                    out[name] = self.turn_token(inner)
                elif key == "session_id" and isinstance(inner, str) and inner:
                    out[name] = self.session_token(inner)
                elif key == "page_context" and inner is not None:
                    out[name] = self.filter_page_context(inner, counts)
                else:
                    out[name] = self.redact_loose(inner, counts)
            return out
        if isinstance(value, (list, tuple)):
            return [self.redact_loose(v, counts) for v in value]
        if isinstance(value, str):
            return self.redact_text(value, counts)
        return self.redact_number(value, counts)

    def redact_raw(self, text: str, counts: Counter | None = None) -> str:
        """Text that is not JSON (a record cut short, another format): JSON escapes decoded first,
        turn/session ids in ``"turn_id": "..."`` pairs hashed, then redacted as text."""
        decoded = unescape_json_text(text)
        decoded = re.sub(r'("turn_id"\s*:\s*")([^"\\]*)(")', lambda m: m.group(1) + self.turn_token(m.group(2)) + m.group(3)
                         if m.group(2) else m.group(0), decoded)
        decoded = re.sub(r'("session_id"\s*:\s*")([^"\\]*)(")',
                         lambda m: m.group(1) + self.session_token(m.group(2)) + m.group(3) if m.group(2) else m.group(0),
                         decoded)
        return self.redact_text(decoded, counts)


def _titles_in(value: Any) -> list[str]:
    """Titles (and authors) of catalog or page items: never taken for a person's name."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key in ("title", "title_ja", "title_romaji", "author") and isinstance(inner, str):
                found.append(inner)
            else:
                found += _titles_in(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            found += _titles_in(inner)
    return found


def _cards_in(norm: str, claim: Callable[..., bool]) -> None:
    """Card numbers, tried on every run of digit groups and on its sub-runs of whole groups (a CVV or
    a second number right after a card does not hide it)."""
    for run in _NUMBER_RUN.finditer(norm):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in re.finditer(r"\d+", run.group())]
        i = 0
        while i < len(groups):
            for j in range(len(groups) - 1, i - 1, -1):
                start, end = groups[i][0], groups[j][1]
                digits = _digits(norm[start:end])
                if not (13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)):
                    continue
                if len(digits) == 13 and ean13_valid(digits) and not _before(norm, start, _CARD_WORD):
                    continue  # a JAN/EAN barcode
                if _before(norm, start, _BARCODE_WORD, 12) and not _before(norm, start, _CARD_WORD, 12):
                    continue
                if claim(start, end, "card"):
                    i = j
                    break
            i += 1


def _ips_in(norm: str, claim: Callable[..., bool]) -> None:
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


def _addresses_in(norm: str, claim: Callable[..., bool]) -> None:
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


def _phones_in(norm: str, claim: Callable[..., bool]) -> None:
    for pattern, digits_ok in _PHONES:
        for m in pattern.finditer(norm):
            if digits_ok(_digits(m.group())):
                claim(*m.span(), "phone")
    for m in _US_JOINED.finditer(norm):
        if not _BOOK_WORD.search(norm[max(0, m.start() - 16):m.start()]):
            claim(*m.span(), "phone")


def _names_in(norm: str, claim: Callable[..., bool], protect: list[str], personal: bool) -> None:
    """Names (see the module docstring); ``personal``: other personal data was found in the text."""
    protected = [(m.start(), m.end()) for p in protect for m in re.finditer(re.escape(normalize_width(p)), norm)]

    def take(start: int, end: int) -> None:
        if not any(s <= start and end <= e for s, e in protected):
            claim(start, end, "name")

    for m in _JA_KANJI_NAME.finditer(norm):
        run = m.group(1).replace(" ", "")
        honorific = _HONORIFIC_AT.match(norm, m.end(1)).group()
        after = norm[m.end(1) + len(honorific):][:1]
        if run.endswith(_NOT_NAME_ENDINGS):
            continue
        if honorific[0] == "様" and (run[-1] in _SAMA_COMPOUND_FIRST or after in ("々", "式", "子")):
            continue
        if honorific[0] == "氏" and after in ("名", "族"):
            continue
        if honorific[0] == "殿" and (after in ("堂", "下") or run[-1] in "御宮神貴湯本"):
            continue
        take(*m.span(1))
    if personal or _PERSONAL_CONTEXT.search(norm):
        for m in _JA_BARE_NAME.finditer(norm):
            if not m.group(1).endswith(_NOT_GIVEN_NAME_ENDINGS):
                take(*m.span(1))
    for m in _JA_KATAKANA_NAME.finditer(norm):
        if m.group(1) not in _NOT_KATAKANA_NAMES:
            take(*m.span(1))
    for pattern in (_JA_NAME_AFTER_WORD, _JA_NAME_BEFORE_INTRO, _EN_NAME_AFTER_WORD):
        for m in pattern.finditer(norm):
            take(*m.span(1))
    for m in _ROMAJI_HONORIFIC.finditer(norm):
        if m.group(1).lower() in _ROMAJI_SURNAMES:
            take(*m.span(1))
    for m in _EN_TITLE_NAME.finditer(norm):
        said = re.sub(r"[.\s]+", " ", m.group().lower()).strip()
        if not any(said.startswith(t) for t in _TITLE_NAMES):
            take(*m.span(1))


def order_key_from_environment(environ: Mapping[str, str] | None = None, secrets_client: Any = None) -> bytes:
    """The order-id hashing key: the Secrets Manager secret named by ORDER_HASH_SECRET_ID (AWS; the
    client is passed in), else the FMQ_ORDER_HASH_KEY variable (local). Raises when neither is set."""
    env = os.environ if environ is None else environ
    secret_id = env.get(ORDER_KEY_SECRET_ENV)
    if secret_id:
        if secrets_client is None:
            raise RedactionKeyMissing(f"{ORDER_KEY_SECRET_ENV} is set but no Secrets Manager client was given")
        response = secrets_client.get_secret_value(SecretId=secret_id)
        value = response.get("SecretString") or response.get("SecretBinary")
        if not value:
            raise RedactionKeyMissing(f"secret {secret_id} is empty")
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    value = env.get(ORDER_KEY_ENV)
    if value:
        return value.encode("utf-8")
    raise RedactionKeyMissing(f"set {ORDER_KEY_SECRET_ENV} (Secrets Manager) or {ORDER_KEY_ENV} (local) to hash order ids")


def refused_envelope(raw: bytes, reasons: list[str], redactor: Redactor) -> tuple[str, Counter]:
    """What is kept of a record the schema refused: ``{"refused": [reasons], "record": ...}`` with the
    record decoded (JSON parsed, or its escapes decoded) and redacted, never the bytes as sent."""
    counts: Counter = Counter()
    text = decode_bytes(raw)
    try:
        record: Any = redactor.redact_loose(json.loads(text), counts)
    except ValueError:
        record = redactor.redact_raw(text, counts)
    safe_reasons = [redactor.redact_text(r, counts) for r in reasons]
    return json.dumps({"refused": safe_reasons, "record": record, "redactions": dict(sorted(counts.items()))},
                      ensure_ascii=False), counts
