"""The store's vocabulary: words an online store's shoppers and staff use interchangeably, and the
content words of a text read through it.

``STORE_VOCABULARY`` groups words that mean one thing in a shop ("send it back" / "return", "sealed"
/ "unopened", "arrive" / "delivery"), English and Japanese. It is the general vocabulary of shop
policies and orders, not phrases taken from a dataset. ``concept_tokens`` is what alignment,
negation scope and relevance compare: store phrases as their concept, English words lightly
stemmed, Japanese words and character pairs. A new synonym goes into ``STORE_VOCABULARY``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from fmquality.language.numbers import UNIT_WORDS
from fmquality.language.text import ENGLISH_STOPWORDS, JAPANESE_STOPWORDS, has_japanese, is_hiragana, tokenize

STORE_VOCABULARY: dict[str, tuple[str, ...]] = {
    "return": ("return", "send back", "sent back", "send it back", "send them back", "返品", "返送"),
    "refund": ("refund", "money back", "reimburse", "返金", "払い戻"),
    "exchange": ("exchange", "replacement", "replace", "swap", "交換"),
    "deliver": ("deliver", "delivery", "arrive", "arrival", "reach", "eta", "get to you", "coming", "on its way",
                "お届け", "到着", "配達", "届"),
    "ship": ("ship", "shipped", "shipping", "dispatch", "send out", "sent out", "went out", "left our warehouse",
             "発送", "出荷", "配送"),
    "unopened": ("unopened", "sealed", "unread", "shrink-wrapped", "未開封", "未使用"),
    "opened": ("opened", "開封"),
    "damaged": ("damaged", "defective", "torn", "broken", "misprinted", "破損", "不良", "破れ", "汚損"),
    "cancel": ("cancel", "キャンセル", "取り消"),
    "price": ("price", "cost", "costs", "priced", "値段", "価格", "税込"),
    "stock": ("stock", "available", "availability", "在庫"),
    # Being charged and paying are one event for the shopper ("charged when it ships" / "payment
    # is taken when it ships").
    "charge": ("charge", "charged", "bill", "billed", "pay", "payment", "paid", "money", "請求", "課金", "引き落とし",
               "支払", "決済", "入金", "代金"),
    "free": ("free", "no charge", "無料"),
    "order": ("order", "purchase", "package", "parcel", "shipment", "注文", "購入", "荷物"),
    "item": ("item", "product", "book", "copy", "商品", "品物"),
    "point": ("point", "ポイント", "還元"),
    "discount": ("discount", "off", "sale", "割引", "オフ", "値引"),
    "preorder": ("pre-order", "preorder", "予約"),
    "volume": ("volume", "vol", "巻"),
    "author": ("author", "mangaka", "written by", "作者", "著者", "先生"),
    "combine": ("combine", "combined", "stack", "併用"),
    "code": ("code", "coupon", "クーポン", "コード"),
    "business_day": ("business day", "working day", "営業日"),
    "within": ("within", "up to", "inside", "以内", "まで"),
}
_PHRASES = sorted(((p, c) for c, ps in STORE_VOCABULARY.items() for p in ps if " " in p or "-" in p or has_japanese(p)),
                  key=lambda x: -len(x[0]))
_WORDS = {p: c for c, ps in STORE_VOCABULARY.items() for p in ps if " " not in p and "-" not in p and not has_japanese(p)}
# Kanji and katakana runs carry a Japanese sentence's content; hiragana mostly its grammar.
_CONTENT_CJK_RUN = re.compile(r"[\u30a0-\u30ff\u3400-\u9fffー々]+")


def stem(token: str) -> str:
    """A light suffix strip so "recommendations", "recommended" and "recommend" meet, and
    "cancelled"/"cancel", "shipped"/"ships", "placed"/"place" (doubled final consonant undone, final
    e dropped)."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix) and not token.endswith("ss"):
            token = token[: -len(suffix)] + ("y" if suffix == "ies" else "")
            if len(token) > 3 and token[-1] == token[-2] and token[-1] not in "aeiouls":
                token = token[:-1]
            break
    if len(token) > 5 and token.endswith("ll"):
        token = token[:-1]  # "cancell(ed)" -> "cancel" (Porter's step 5b)
    return token[:-1] if len(token) > 3 and token.endswith("e") else token


@lru_cache(maxsize=65536)
def concept_tokens(norm: str) -> frozenset[str]:
    """Content words of a normalized text: store-vocabulary phrases as their concept, English
    words stemmed, Japanese words from the segmenter (particles and inflection pieces dropped) plus
    character pairs of every Japanese run (steadier than the segmenter across rewordings)."""
    out: set[str] = set()
    text = norm
    for phrase, concept in _PHRASES:
        if phrase in text:
            out.add(concept)
            text = text.replace(phrase, " ")
    for token in tokenize(text):
        token = re.sub(r"'(?:s|re|ve|ll|d|m|t)$", "", token)  # "what's", "you're": the word itself
        if token in ENGLISH_STOPWORDS or token in JAPANESE_STOPWORDS:
            continue
        if has_japanese(token):
            if not is_hiragana(token) or len(token) >= 3:
                out.add(token)
        elif len(token) > 1 and not token.isdigit() and token not in UNIT_WORDS:
            # Numbers and their units are compared as numbers (Unit.numbers), not as words.
            out.add(_WORDS.get(token) or _WORDS.get(stem(token)) or stem(token))
    for run in _CONTENT_CJK_RUN.findall(text):
        out.update("~" + run[i:i + 2] for i in range(len(run) - 1))
    return frozenset(out)
