"""Relevance: does the answer serve what the shopper asked, with the right products, in context?

Sub-scores:
- intent_relevance: judged (the offline judge reads query overlap, intent vocabulary, genre fit and
  whether the answer opens with an unrelated promotion). A forbidden phrase sets it to 0 here.
- product_relevance: deterministic when the case lists expected products; judged when the answer
  names catalog products nobody expected; not applicable otherwise.
- context_relevance: deterministic when there is page context or an earlier conversation the
  query leans on; not applicable otherwise.

The catalog helpers at the top (product names, mentions, genres) are shared with factual_accuracy.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from fmquality.dimensions.base import CheckReport, response_text
from fmquality.judges.base import JudgeVerdict, NoEvidence
from fmquality.models import CatalogItem, HardFailure, TestCase
from fmquality.text import (
    Mention,
    content_tokens,
    extract_prices,
    find_dates,
    find_mentions,
    find_ordinal,
    has_japanese,
    loose_key,
    normalize,
    phrase_in,
    same_price,
    segment_spans,
)

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

NAME = "relevance"

# --------------------------------------------------------------------------------------------------
# Catalog helpers (also used by factual_accuracy)
# --------------------------------------------------------------------------------------------------

# "Berserk Vol. 1", "Berserk, Volume 1", "Berserk #1", "ベルセルク 1巻", "ベルセルク（1）" -> the series name,
# so an answer that says just "Berserk" still names the product.
_VOLUME_SUFFIX = re.compile(
    r"[\s,:\-–(（]*(?:vol(?:ume)?s?\.?\s*\d+|#\s*\d+|第?\s*\d+\s*巻|\d+)\s*[)）]?\s*$", re.IGNORECASE
)
_EDITION_SUFFIX = re.compile(r"\s*[(（][^)）]*(?:edition|版|box|set)[^)）]*[)）]\s*$", re.IGNORECASE)


def title_variants(item: CatalogItem) -> list[str]:
    """Every name an answer may use for the item: ASIN, titles, series names without volume/edition."""
    names = [item.asin, item.title, item.title_ja or "", item.title_romaji or ""]
    for title in (item.title, item.title_ja, item.title_romaji):
        if not title:
            continue
        stem = _EDITION_SUFFIX.sub("", title)
        stem = _VOLUME_SUFFIX.sub("", stem).strip(" ,:-")
        names.append(stem)
        if ":" in stem and len(stem.split(":")[0].strip()) >= 4:
            names.append(stem.split(":")[0].strip())
    return [n for n in dict.fromkeys(names) if n]


def catalog_names(case: TestCase) -> dict[str, list[str]]:
    return {item.asin: title_variants(item) for item in case.catalog}


def product_mentions(case: TestCase, text: str) -> list[Mention]:
    """Catalog products named in the text (positions in ``normalize(text)``)."""
    return find_mentions(text, catalog_names(case)) if case.catalog else []


def mentioned_asins(mentions: list[Mention]) -> set[str]:
    return {key for m in mentions for key in m.keys}


_GENRE_LEXICON: dict[str, tuple[str, ...]] = {
    "horror": ("horror", "scary", "creepy", "spooky", "terrifying", "frightening", "chilling", "eerie",
               "ホラー", "怖い", "恐怖", "怪奇", "怪談"),
    "romance": ("romance", "romantic", "love story", "rom-com", "romcom", "恋愛", "ラブコメ", "ロマンス", "恋"),
    "shonen": ("shonen", "shounen", "少年"),
    "shojo": ("shojo", "shoujo", "少女"),
    "seinen": ("seinen", "青年"),
    "josei": ("josei", "女性向け"),
    "isekai": ("isekai", "異世界", "reincarnat"),
    "sports": ("sports", "sport", "basketball", "volleyball", "soccer", "football", "baseball", "tennis",
               "boxing", "スポーツ", "バスケ", "バレー", "サッカー", "野球", "テニス"),
    "mystery": ("mystery", "mysteries", "detective", "whodunit", "ミステリー", "推理", "探偵"),
    "fantasy": ("fantasy", "ファンタジー", "magic", "魔法"),
    "scifi": ("sci-fi", "science fiction", "scifi", "cyberpunk", "mecha", "space opera", "sf"),
    "comedy": ("comedy", "funny", "humor", "humour", "gag", "コメディ", "ギャグ", "笑える", "お笑い"),
    "slice_of_life": ("slice of life", "slice-of-life", "iyashikei", "healing", "cozy", "日常", "癒し"),
    "action": ("action", "battle", "fighting", "アクション", "バトル"),
    "thriller": ("thriller", "suspense", "psychological", "サスペンス", "スリラー"),
    "historical": ("historical", "samurai", "period drama", "歴史", "時代劇", "侍"),
    "cooking": ("cooking", "food", "gourmet", "culinary", "グルメ", "料理"),
    "drama": ("drama", "ドラマ"),
    "adventure": ("adventure", "冒険"),
}
# Genres a shopper asking for one usually accepts for the other.
_RELATED = {
    frozenset(p) for p in (("horror", "thriller"), ("mystery", "thriller"), ("fantasy", "isekai"),
                           ("fantasy", "adventure"), ("shonen", "action"), ("shonen", "adventure"),
                           ("romance", "shojo"), ("romance", "josei"), ("comedy", "slice_of_life"),
                           ("action", "adventure"), ("drama", "slice_of_life"),
                           # "seinen" is how the catalog files dark, mature stories.
                           ("seinen", "thriller"), ("seinen", "mystery"), ("seinen", "horror"))
}


def _has_term(term: str, norm_text: str) -> bool:
    if has_japanese(term):
        return term in norm_text
    # A trailing stem ("reincarnat") may continue; otherwise the term must be a whole word.
    tail = "" if term.endswith("nat") else r"(?![a-z])"
    return re.search(rf"(?<![a-z]){re.escape(term)}{tail}", norm_text) is not None


def genres_in(text: str) -> set[str]:
    """Canonical genres named in free text (query, answer or a catalog ``genre`` field)."""
    norm = normalize(text or "")
    return {g for g, terms in _GENRE_LEXICON.items() if any(_has_term(t, norm) for t in terms)}


def item_genres(item: CatalogItem) -> set[str]:
    if not item.genre:
        return set()
    spelled = item.genre.replace("_", " ")  # "slice_of_life" -> "slice of life"
    return genres_in(spelled) or {loose_key(item.genre)}


def genres_match(wanted: set[str], offered: set[str]) -> bool:
    if wanted & offered:
        return True
    return any(frozenset((a, b)) in _RELATED for a in wanted for b in offered)


# --------------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------------

_PROMO_TERMS = ("sale", "% off", "percent off", "promotion", "promo", "deal", "deals", "discount", "coupon",
                "limited-time", "limited time", "bogo", "buy one", "flash", "bundle offer", "special offer",
                "featured", "this week's", "big news", "spotlight", "don't miss", "must-have",
                "セール", "キャンペーン", "割引", "%オフ", "オフ", "クーポン", "特価", "ポイント還元", "値引き",
                "フェア", "お得", "開催中", "特集", "注目")

_INTENT_TERMS: dict[str, tuple[str, ...]] = {
    "order_tracking": ("order", "ship", "shipped", "shipping", "delivery", "deliver", "delivered", "arrive",
                       "arrives", "arriving", "tracking", "track", "transit", "package", "parcel", "eta",
                       "dispatch", "dispatched", "注文", "発送", "配送", "到着", "お届け", "追跡", "配達", "出荷", "届"),
    "return_request": ("return", "returns", "returned", "refund", "refunds", "refunded", "exchange", "send back",
                       "replacement", "返品", "返金", "交換", "返送", "払い戻し"),
    "promotion": _PROMO_TERMS + ("offer", "save", "savings", "points", "ポイント", "お得"),
    "checkout_help": ("checkout", "check out", "cart", "payment", "pay", "card", "purchase", "place your order",
                      "billing", "paypal", "gift card", "address", "charge", "charged", "billed", "order", "shipping",
                      "カート", "支払", "決済", "レジ", "購入", "クレジット", "注文", "送料", "請求"),
}

# Query words that say "help me shop" rather than what to find; they carry no topic.
_GENERIC_QUERY_TOKENS = frozenset(
    """recommend recommendation suggest suggestion manga comic comics book books series something anything
    want looking look like good great new read reading buy find need know tell give help show any some
    me title titles volume vol store おすすめ 漫画 マンガ まんが 教え 探し 欲しい 読み たい 本 作品 何 か
    i'm what' what's you're really mood someone anyth seri next finish finished already sound interest love lov
    loved haha just""".split()
)
_ANAPHORA = re.compile(
    r"(?<![a-z])(it|its|this|that|these|those|them|they|both|this one|that one|the same|same one)(?![a-z])"
    r"|これ|それ|あれ|この|その|あの|さっき|先ほど|前の"
)


def _any_term(terms: tuple[str, ...], norm_text: str) -> list[str]:
    return [t for t in terms if _has_term(t, norm_text)]


_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f]+$")


# Words a paraphrase swaps freely ("when will it arrive" / "delivery takes"): compared as one concept.
_CONCEPTS: dict[str, frozenset[str]] = {
    "ship": frozenset({"ship", "shipp", "shipment", "deliver", "delivery", "arrive", "arriv", "dispatch", "eta",
                       "package", "parcel", "coming", "発送", "配送", "届", "お届け", "到着", "配達", "出荷", "送料"}),
    "return": frozenset({"return", "refund", "exchange", "返品", "返金", "交換"}),
    "price": frozenset({"price", "cost", "much", "expensive", "cheap", "cheaper", "cheapest", "total", "値段", "価格",
                        "いくら", "円", "合計", "安い"}),
    "stock": frozenset({"stock", "available", "availability", "sold", "在庫", "品切れ", "入荷"}),
    "cancel": frozenset({"cancel", "cancell", "キャンセル"}),
    "pay": frozenset({"pay", "payment", "card", "checkout", "支払", "決済", "支払い"}),
    "volume": frozenset({"volume", "vol", "巻"}),
    "author": frozenset({"author", "wrote", "written", "mangaka", "作者", "著者", "作家"}),
    "duration": frozenset({"long", "take", "day", "week", "business", "soon", "time", "when", "いつ", "期間",
                           "何日", "日数", "以内"}),
}
_CONCEPT_OF = {word: concept for concept, words in _CONCEPTS.items() for word in words}
_JA_CONCEPT_WORDS = sorted(((w, c) for w, c in _CONCEPT_OF.items() if has_japanese(w)), key=lambda x: -len(x[0]))


def _concept(token: str) -> str:
    if token in _CONCEPT_OF:
        return _CONCEPT_OF[token]
    if has_japanese(token):
        # Segmenter pieces carry inflections ("届き", "返品し"): a concept word inside the token counts.
        for word, concept in _JA_CONCEPT_WORDS:
            if word in token:
                return concept
    return token


def concepts(tokens: set[str]) -> set[str]:
    return {_concept(t) for t in tokens}


def _answered(wanted: set[str], text: str) -> set[str]:
    """Query concepts the text contains; a Japanese word also counts when it occurs unsegmented."""
    have = concepts(content_tokens(text))
    if extract_prices(text):
        have.add("price")  # "¥450" answers "how much"
    norm = normalize(text)
    return {w for w in wanted if w in have or (has_japanese(w) and len(w) >= 2 and w in norm)}


def _query_tokens(case: TestCase) -> set[str]:
    # Pure-hiragana pieces are inflections and particles the segmenter split off ("く", "ださい"); single
    # kanji are mostly number words and fragments ("三", "千").
    return {t for t in content_tokens(case.query) if t not in _GENERIC_QUERY_TOKENS and not _HIRAGANA_ONLY.match(t)
            and not (has_japanese(t) and len(t) == 1)}


def referent_products(case: TestCase) -> set[str] | None:
    """The catalog products a follow-up query points at ("the second one", "those", "it"), if any."""
    if not case.conversation_history:
        return None
    ordinal = find_ordinal(case.query)
    anaphoric = bool(_ANAPHORA.search(normalize(case.query)))
    if ordinal is None and not anaphoric:
        return None
    last_assistant = next((m.content for m in reversed(case.conversation_history) if m.role == "assistant"), "")
    # One entry per product in listing order; repeated names of the same product collapse.
    ordered = list(dict.fromkeys(m.keys for m in product_mentions(case, last_assistant)))
    if not ordered:
        return None
    if ordinal is not None:
        if abs(ordinal) > len(ordered):
            return None
        return set(ordered[ordinal - 1] if ordinal > 0 else ordered[-1])
    return {k for keys in ordered for k in keys}


def _query_wants_promotions(case: TestCase) -> bool:
    return case.intent.value == "promotion" or bool(_any_term(_PROMO_TERMS, normalize(case.query)))


def _forbidden_hits(case: TestCase) -> list[str]:
    text = response_text(case)
    return [phrase for phrase in case.forbidden_content if phrase.strip() and phrase_in(phrase, text)]


# --------------------------------------------------------------------------------------------------
# Deterministic checks
# --------------------------------------------------------------------------------------------------

def _product_relevance(case: TestCase, mentions: list[Mention], report: CheckReport) -> None:
    by_asin = case.catalog_by_asin()
    mentioned = mentioned_asins(mentions)
    if case.expected_products:
        expected = list(dict.fromkeys(case.expected_products))
        # An ASIN not in the catalog can still be named by its id.
        id_hits = {a for a in expected if a not in by_asin and phrase_in(a, response_text(case))}
        hits = [a for a in expected if a in mentioned or a in id_hits]
        share = len(hits) / len(expected)
        wanted_genres = set().union(*(item_genres(by_asin[a]) for a in expected if a in by_asin)) | genres_in(case.query)
        off_genre = []
        for mention in mentions:
            if set(mention.keys) & set(expected):
                continue  # an ambiguous series name that includes an expected volume is fine
            genres = set().union(*(item_genres(by_asin[k]) for k in mention.keys if k in by_asin))
            if wanted_genres and genres and not genres_match(wanted_genres, genres):
                off_genre.append(mention.text)
        off_genre = list(dict.fromkeys(off_genre))
        score = max(0.0, share - 0.25 * len(off_genre))
        opening = _promo_opening(case, response_text(case), mentions)
        if opening:
            # The first thing the shopper sees is somebody else's products (incident 1).
            score = max(0.0, score - 0.5)
        evidence = [f"{len(hits)}/{len(expected)} expected products named"]
        missing = [a for a in expected if a not in hits]
        if missing:
            evidence.append("missing: " + ", ".join(f"{a} ({by_asin[a].title})" if a in by_asin else a for a in missing))
        if off_genre:
            evidence.append(f"products from another genre than {sorted(wanted_genres)}: {off_genre}")
        if opening:
            evidence.append(opening)
        report.set("product_relevance", score, *evidence)
    elif mentioned:
        report.findings.append("catalog products named: " + ", ".join(sorted(mentioned)))
        report.ask_judge("product_relevance")
    else:
        report.skip("product_relevance")


_STATUS_FAMILIES = {
    "delivered": "delivered",
    "shipped": "shipped", "in_transit": "shipped", "in transit": "shipped", "out_for_delivery": "shipped",
    "out for delivery": "shipped", "dispatched": "shipped", "on_the_way": "shipped",
    "processing": "processing", "pending": "processing", "preparing": "processing", "ordered": "processing",
    "confirmed": "processing", "not_shipped": "processing",
    "cancelled": "cancelled", "canceled": "cancelled",
    "delayed": "delayed",
}
# Phrases that state an order's status (not "once it ships"): used for "the answer uses the status"
# and, in factual_accuracy, for "the answer contradicts the status".
STATUS_CLAIMS: dict[str, tuple[str, ...]] = {
    "delivered": ("has been delivered", "was delivered", "is delivered", "already delivered", "配達済",
                  "配達完了", "お届け済", "配達されました", "お届けしました"),
    "shipped": ("has shipped", "has been shipped", "was shipped", "already shipped", "is on its way",
                "is on the way", "in transit", "out for delivery", "has been dispatched", "発送済", "発送しました",
                "発送されました", "出荷済", "配送中", "輸送中", "配達中"),
    "processing": ("being prepared", "still processing", "is processing", "being processed", "hasn't shipped",
                   "has not shipped", "not yet shipped", "not shipped yet", "hasn't been shipped",
                   "has not been shipped", "準備中", "未発送", "処理中", "まだ発送されていません"),
    "cancelled": ("has been cancelled", "has been canceled", "was cancelled", "was canceled", "is cancelled",
                  "is canceled", "キャンセルされ", "キャンセル済"),
    "delayed": ("delayed", "is running late", "遅延", "遅れて"),
}


def status_family(status: str | None) -> str | None:
    if not status:
        return None
    key = normalize(status).strip().replace("-", "_")
    return _STATUS_FAMILIES.get(key) or _STATUS_FAMILIES.get(key.replace("_", " "))


def stated_statuses(text: str) -> set[str]:
    norm = normalize(text)
    return {family for family, phrases in STATUS_CLAIMS.items() if any(p in norm for p in phrases)}


def _order_signal(case: TestCase, text: str) -> tuple[float, str] | None:
    order = case.page_context.order
    if order is None or not any((order.order_id, order.status, order.eta, order.ship_date)):
        return None
    intent = case.intent.value
    asks_order = bool(_any_term(_INTENT_TERMS["order_tracking"], normalize(case.query)))
    if intent not in ("order_tracking", "return_request", "checkout_help") and not asks_order:
        return None
    used: list[str] = []
    if order.order_id and phrase_in(order.order_id, text):
        used.append("order id")
    family = status_family(order.status)
    if order.status and (phrase_in(order.status.replace("_", " "), text) or (family and family in stated_statuses(text))):
        used.append("status")
    answer_dates = find_dates(text)
    for label, value in (("eta", order.eta), ("ship date", order.ship_date)):
        known = find_dates(value or "")
        if known and any(a.same_day(k) for a in answer_dates for k in known):
            used.append(label)
    refers = re.search(r"your order|ご注文|注文", normalize(text)) is not None
    if intent == "order_tracking":
        if {"status", "eta", "ship date"} & set(used):
            score = 1.0
        elif used:
            score = 0.6
        else:
            score = 0.3 if refers else 0.0
    else:
        score = 1.0 if used or refers else 0.5
    return score, f"order context: uses {used or 'nothing specific'}" + (" (mentions the order)" if refers and not used else "")


def _current_product_signal(case: TestCase, text: str, mentions: list[Mention]) -> tuple[float, str] | None:
    asin = case.page_context.current_asin
    item = case.catalog_by_asin().get(asin or "")
    if item is None:
        return None
    query_products = mentioned_asins(product_mentions(case, case.query))
    if query_products and asin not in query_products:
        return None  # the shopper asked about another product than the page's
    anaphoric = bool(_ANAPHORA.search(normalize(case.query)))
    if case.intent.value != "product_question" and not anaphoric:
        return None
    if asin in mentioned_asins(mentions):
        return 1.0, f"names the current product {item.title}"
    implicit = [
        label for label, ok in (
            ("price", any(p.currency == item.currency and same_price(p.amount, item.price, p.currency)
                          for p in extract_prices(text))),
            ("author", bool(item.author) and phrase_in(item.author or "", text)),
        ) if ok
    ]
    if implicit:
        return 0.9, f"refers to the current product through its {', '.join(implicit)}"
    return 0.2, f"does not refer to the current product {item.title} ({asin})"


def _history_signal(case: TestCase, text: str, mentions: list[Mention]) -> tuple[float, str] | None:
    if not case.conversation_history:
        return None
    ordinal = find_ordinal(case.query)
    anaphoric = bool(_ANAPHORA.search(normalize(case.query)))
    if ordinal is None and not anaphoric:
        return None  # a self-contained question does not need the earlier turns
    referent = referent_products(case)
    if ordinal is not None and referent:
        shown = sorted(referent)[0]
        if referent & mentioned_asins(mentions):
            return 1.0, f"resolves the ordinal reference to {shown}"
        return 0.0, f"the ordinal reference points to {shown}, which the answer does not name"
    history_products = set().union(*(mentioned_asins(product_mentions(case, m.content)) for m in case.conversation_history))
    if history_products & mentioned_asins(mentions):
        return 1.0, "continues with a product from the earlier turns"
    topic = set().union(*(content_tokens(m.content) for m in case.conversation_history[-2:])) - _GENERIC_QUERY_TOKENS
    overlap = topic & content_tokens(text)
    if not topic:
        return None
    score = min(1.0, len(overlap) / 3)
    return max(0.2, score), f"shares {len(overlap)} topic words with the earlier turns"


def _context_relevance(case: TestCase, mentions: list[Mention], report: CheckReport) -> None:
    text = response_text(case)
    signals = [s for s in (_order_signal(case, text), _current_product_signal(case, text, mentions),
                           _history_signal(case, text, mentions)) if s is not None]
    section = case.page_context.store_section
    if section and case.intent.value in ("recommendation", "promotion") and not genres_in(case.query):
        wanted = genres_in(section.replace("_", " ").replace("-", " ")) or content_tokens(section.replace("_", " "))
        offered = genres_in(text) | set().union(*(item_genres(i) for i in case.catalog if i.asin in mentioned_asins(mentions)))
        words = content_tokens(text)
        used = genres_match(wanted, offered) or bool(wanted & words)
        signals.append((1.0 if used else 0.4, f"store section {section!r} {'reflected' if used else 'not reflected'}"))
    if not signals:
        report.skip("context_relevance")
        return
    score = sum(s for s, _ in signals) / len(signals)
    report.set("context_relevance", score, *(why for _, why in signals))


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    text = response_text(case)
    mentions = product_mentions(case, text)

    forbidden = _forbidden_hits(case)
    if forbidden:
        detail = "forbidden content in the response: " + "; ".join(repr(f) for f in forbidden)
        report.hard_failures.append(HardFailure(rule="forbidden_content", dimension=NAME,
                                                sub_score="intent_relevance", detail=detail))
        report.set("intent_relevance", 0.0, detail)
    else:
        opening = _promo_opening(case, text, mentions)
        if opening:
            report.findings.append(opening)
        report.ask_judge("intent_relevance")

    _product_relevance(case, mentions, report)
    _context_relevance(case, mentions, report)
    return report


# --------------------------------------------------------------------------------------------------
# Offline judge
# --------------------------------------------------------------------------------------------------

def _opening_span(text: str) -> str:
    """The first sentence, or the first two when the first is only a short greeting."""
    spans = segment_spans(text)
    norm = normalize(text)
    if not spans:
        return ""
    first = norm[spans[0][0]:spans[0][1]]
    if len(spans) > 1 and len(first.split()) <= 4 and not _any_term(_PROMO_TERMS, first) and len(first) < 25:
        return norm[spans[0][0]:spans[1][1]]
    return first


def _promo_opening(case: TestCase, text: str, mentions: list[Mention]) -> str | None:
    """Why the answer opens with a promotion or products the shopper did not ask for, or None."""
    if _query_wants_promotions(case):
        return None
    opening = _opening_span(text)
    promo = _any_term(_PROMO_TERMS, opening)
    wanted = genres_in(case.query)
    norm = normalize(text)
    start = norm.find(opening)
    by_asin = case.catalog_by_asin()
    asked = mentioned_asins(product_mentions(case, case.query))
    opening_products = [m for m in mentions if start <= m.start < start + len(opening) and not set(m.keys) & asked]
    product_genres = set().union(*(item_genres(by_asin[k]) for m in opening_products for k in m.keys if k in by_asin))
    opening_genres = genres_in(opening) | product_genres
    if not promo:
        # No sales words, but the first thing offered is a product of another genre than asked.
        if wanted and product_genres and not genres_match(wanted, product_genres) and not genres_match(wanted, genres_in(opening)):
            return f"opens with unrelated products ({sorted(product_genres)}) when {sorted(wanted)} was asked"
        return None
    topical = bool(_answered(concepts(_query_tokens(case)), opening))
    if wanted and opening_genres and not genres_match(wanted, opening_genres):
        return f"opens with an unrelated promotion ({', '.join(promo)}) for {sorted(opening_genres)} when {sorted(wanted)} was asked"
    if not topical and not (wanted and genres_match(wanted, opening_genres)):
        return f"opens with a promotion ({', '.join(promo)}) that does not address the query"
    return None


def _names_a_product(case: TestCase, text: str, mentions: list[Mention]) -> bool:
    if mentions:
        return True
    # Titles outside the catalog: 『…』/「…」, **bold**, or list lines.
    return bool(re.search(r"『[^』]+』|「[^」]+」|\*\*[^*]{3,}\*\*|^\s*(?:\d+[.)]|[-*•])\s+\S", text, re.MULTILINE))


_SHOP_TALK = ("manga", "read", "reading", "series", "volume", "story", "stories", "book", "recommend", "help",
              "welcome", "thank", "glad", "happy", "enjoy", "store", "shop", "pick", "favorite", "漫画", "マンガ",
              "読", "作品", "おすすめ", "どういたしまして", "ありがとう", "お役", "うれしい", "嬉しい", "楽しみ", "ご相談",
              "お気軽", "お手伝い")


def _intent_relevance(case: TestCase, text: str, mentions: list[Mention]) -> tuple[float, list[str]]:
    norm = normalize(text)
    signals: list[tuple[str, float]] = []
    evidence: list[str] = []
    by_asin = case.catalog_by_asin()
    intent = case.intent.value
    asked_products = mentioned_asins(product_mentions(case, case.query))
    referents = referent_products(case)
    # Products the shopper named are the reference point, not the answer's picks.
    picks = [m for m in mentions if not set(m.keys) & asked_products]
    offered_genres = genres_in(text) | set().union(*(item_genres(by_asin[k]) for m in picks for k in m.keys if k in by_asin))

    wanted_tokens = concepts(_query_tokens(case))
    follow_up = referents is not None and len(wanted_tokens) <= 2
    if intent == "chitchat":
        # Small talk is not answered by echoing the words: it stays friendly and in the shop's world.
        shop = _any_term(_SHOP_TALK, norm) or bool(referents and referents & mentioned_asins(mentions))
        signals.append(("stays in the shop's world", 1.0 if shop else 0.1))
        evidence.append(f"shop/social vocabulary: {shop if isinstance(shop, list) else 'refers back to the history'}"
                        if shop else "talks about something outside the shop")
        same_language = has_japanese(case.query) == has_japanese(text) or case.is_japanese == has_japanese(text)
        signals.append(("answers in the shopper's language", 1.0 if same_language else 0.3))
    elif wanted_tokens and not follow_up:
        hit = _answered(wanted_tokens, text)
        hit |= {t for t in wanted_tokens if genres_match(genres_in(t), offered_genres)}
        needed = max(1, math.ceil(len(wanted_tokens) * 0.5))
        signals.append(("query overlap", 0.2 + 0.8 * min(1.0, len(hit) / needed)))
        evidence.append(f"query words answered: {sorted(hit)} of {sorted(wanted_tokens)}")

    if case.retrieved_chunks:
        # The knowledge was retrieved for this question: an answer built from it is on topic.
        answer_words = content_tokens(text)
        grounded = answer_words & content_tokens("\n".join(case.retrieved_chunks))
        share = len(grounded) / max(1, len(answer_words))
        signals.append(("uses the retrieved knowledge", min(1.0, share / 0.4)))
        evidence.append(f"{share:.0%} of the answer's words come from the retrieved knowledge")

    if intent in _INTENT_TERMS:
        found = _any_term(_INTENT_TERMS[intent], norm)
        signals.append(("intent vocabulary", 1.0 if found else 0.0))
        evidence.append(f"{intent} vocabulary: {found[:4] or 'none'}")
    if intent == "recommendation":
        named = _names_a_product(case, text, mentions)
        signals.append(("names products", 1.0 if named else 0.0))
        evidence.append("names at least one product" if named else "recommends no product")
    if intent == "product_question" or (follow_up and intent != "chitchat"):
        asked = asked_products or referents or ({case.page_context.current_asin} - {None})
        asked = set(asked or ()) & set(by_asin)
        if asked:
            ok = bool(asked & mentioned_asins(mentions)) or any(
                p.currency == by_asin[a].currency and same_price(p.amount, by_asin[a].price, p.currency)
                for a in asked for p in extract_prices(text))
            signals.append(("addresses the product asked about", 1.0 if ok else 0.2))
            evidence.append("addresses the product asked about" if ok else "does not name the product asked about")

    wanted_genres = genres_in(case.query)
    genre_share = None
    if wanted_genres and picks:
        judged = [m for m in picks if any(item_genres(by_asin[k]) for k in m.keys if k in by_asin)]
        if judged:
            fits = [m for m in judged if genres_match(wanted_genres, set().union(
                *(item_genres(by_asin[k]) for k in m.keys if k in by_asin)))]
            genre_share = len(fits) / len(judged)
            signals.append(("genre fit", genre_share))
            evidence.append(f"{len(fits)}/{len(judged)} named products fit {sorted(wanted_genres)}")
    elif wanted_genres and offered_genres:
        fit = genres_match(wanted_genres, offered_genres)
        signals.append(("genre fit", 1.0 if fit else 0.3))
        evidence.append(f"answer talks about {sorted(offered_genres)}; asked {sorted(wanted_genres)}")

    if not signals:
        signals.append(("engages", min(1.0, len(content_tokens(text)) / 5)))
        evidence.append("no topical words in the query; scored on engagement only")
    score = sum(v for _, v in signals) / len(signals)

    opening = _promo_opening(case, text, mentions)
    if opening:
        score = min(score, 0.15)
        evidence.append(opening)
    if genre_share is not None and genre_share < 0.5:
        score = min(score, 0.4)
        evidence.append("most named products are from another genre than asked")
    return score, evidence


def _product_relevance_offline(case: TestCase, mentions: list[Mention]) -> tuple[float, list[str], float]:
    by_asin = case.catalog_by_asin()
    wanted = genres_in(case.query)
    current = by_asin.get(case.page_context.current_asin or "")
    if not wanted and current is not None:
        wanted = item_genres(current)
    if not wanted and case.page_context.store_section:
        wanted = genres_in(case.page_context.store_section.replace("_", " "))
    asins = [k for m in mentions for k in m.keys if k in by_asin]
    if not asins:
        return 0.5, ["no catalog product could be read from the answer"], 0.3
    with_genre = [a for a in dict.fromkeys(asins) if item_genres(by_asin[a])]
    if not wanted or not with_genre:
        # No genre to compare: fall back to word overlap between the query and the product records.
        query_words = _query_tokens(case)
        asked = mentioned_asins(product_mentions(case, case.query)) | (referent_products(case) or set())
        overlaps = [a in asked or bool(query_words & content_tokens(" ".join(filter(None, (
                        by_asin[a].title, by_asin[a].title_ja, by_asin[a].title_romaji, by_asin[a].genre,
                        by_asin[a].author)))))
                    for a in dict.fromkeys(asins)]
        share = sum(overlaps) / len(overlaps)
        # No genre asked and no product named in the query: little to hold the picks against.
        return 0.7 + 0.3 * share, [f"{sum(overlaps)}/{len(overlaps)} named products share words with the query"], 0.3
    fits = [a for a in with_genre if genres_match(wanted, item_genres(by_asin[a]))]
    share = len(fits) / len(with_genre)
    return share, [f"{len(fits)}/{len(with_genre)} named products fit {sorted(wanted)}"], 0.7


def offline_verdict(case: TestCase, rubric: "Rubric", sub_scores: list[str]) -> JudgeVerdict:
    text = response_text(case)
    mentions = product_mentions(case, text)
    scores: dict[str, float] = {}
    evidence: list[str] = []
    confidences: list[float] = []
    for name in sub_scores:
        if name == "intent_relevance":
            value, why = _intent_relevance(case, text, mentions)
            confidence = 0.6
        elif name == "product_relevance":
            value, why, confidence = _product_relevance_offline(case, mentions)
            opening = _promo_opening(case, text, mentions)
            if opening:
                value, why = max(0.0, value - 0.5), [*why, opening]
        else:
            # Settled by the checks in practice; answered anyway so the verdict is complete.
            report = CheckReport()
            _context_relevance(case, mentions, report)
            sub = report.sub_scores.get(name)
            if sub is None:
                raise NoEvidence(f"{name}: no page context or history to compare with")
            value, why, confidence = sub.score, sub.evidence, 0.8
        scores[name] = round(value, 4)
        evidence.extend(f"{name}: {e}" for e in why)
        confidences.append(confidence)
    rationale = "; ".join(f"{n}={v:.2f}" for n, v in scores.items()) + " from lexical evidence (offline judge)"
    return JudgeVerdict(sub_scores=scores, rationale=rationale, evidence=evidence,
                        confidence=round(min(confidences), 2) if confidences else 0.5)
