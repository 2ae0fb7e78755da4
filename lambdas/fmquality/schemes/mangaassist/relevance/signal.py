"""Relevance signals: the answer aligned with the query, the request's products and the context.

- intent_relevance: the mean of what applies of (a) the query's topic words the answer takes up,
  (b) whether the answer is the kind of answer the intent calls for (a recommendation names
  products, an order question gets a status or a date, a policy question is answered from the
  retrieved knowledge), (c) whether it answers in the shopper's language; an answer that opens with
  a promotion nobody asked for, on another topic, is capped low (client incident 1).
- product_relevance: the genre of the products named against the genre asked for (the query, the
  page's section or product), and the expected products named or referred to.
- context_relevance: the page's order or product, the store section and the earlier turns, used.

``REQUEST_WORDS`` are the words of asking ("recommend", "looking for", "教えて") that carry no topic;
``GENRES`` is the manga-genre vocabulary of a store's shelves. Both are general, not from a dataset.
"""

from __future__ import annotations

import re
from functools import lru_cache

from fmquality.language import semantic
from fmquality.language.vocabulary import concept_tokens
from fmquality.language.alignment import is_claim, read_units
from fmquality.language.catalog_index import index_for
from fmquality.claims.reading import Reading, reading_of
from fmquality.language.negation import is_question
from fmquality.claims.ordinals import ordinal_reference
from fmquality.claims.orders import stated_order_statuses
from fmquality.schemes.mangaassist.relevance.check import ANAPHORA
from fmquality.language import japanese
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.scoring.signal import Abstain, Signal, SignalFn
from fmquality.language.numbers import ORDINAL_PHRASE, extract_prices, find_dates, same_price
from fmquality.language.text import has_japanese, japanese_share, normalize, segment_spans

REQUEST_WORDS = frozenset(
    """recommend recommendation suggest suggestion look looking want need help tell know find please give show
    something anything good great new any some like would could can read reading buy get me manga comic book
    books series title titles question おすすめ 教え 探し 欲しい 知り たい ください 何 か 漫画 マンガ 作品 本""".split()
)

GENRES: dict[str, tuple[str, ...]] = {
    "horror": ("horror", "scary", "creepy", "spooky", "terrifying", "frightening", "chilling", "eerie", "ホラー",
               "怖い", "恐怖", "怪奇", "怪談"),
    "romance": ("romance", "romantic", "love story", "rom-com", "romcom", "恋愛", "ラブコメ", "ロマンス"),
    "shonen": ("shonen", "shounen", "少年"),
    "shojo": ("shojo", "shoujo", "少女"),
    "seinen": ("seinen", "青年"),
    "josei": ("josei", "女性向け"),
    "isekai": ("isekai", "異世界", "reincarnat"),
    "sports": ("sports", "sport", "basketball", "volleyball", "soccer", "football", "baseball", "tennis", "boxing",
               "スポーツ", "バスケ", "バレー", "サッカー", "野球", "テニス"),
    "mystery": ("mystery", "mysteries", "detective", "whodunit", "ミステリー", "推理", "探偵"),
    "fantasy": ("fantasy", "ファンタジー", "magic", "魔法"),
    "scifi": ("sci-fi", "science fiction", "scifi", "cyberpunk", "mecha", "space opera", "sf"),
    "comedy": ("comedy", "funny", "humor", "humour", "gag", "コメディ", "ギャグ", "笑える"),
    "slice_of_life": ("slice of life", "slice-of-life", "iyashikei", "healing", "cozy", "日常", "癒し"),
    "action": ("action", "battle", "fighting", "アクション", "バトル"),
    "thriller": ("thriller", "suspense", "psychological", "サスペンス", "スリラー"),
    "historical": ("historical", "samurai", "period drama", "歴史", "時代劇", "侍"),
    "cooking": ("cooking", "food", "gourmet", "culinary", "グルメ", "料理"),
    "drama": ("drama", "ドラマ"),
    "adventure": ("adventure", "冒険"),
}
# Genres a shopper asking for one usually accepts for the other (shelf neighbours).
RELATED = {frozenset(p) for p in (("horror", "thriller"), ("mystery", "thriller"), ("fantasy", "isekai"),
                                  ("fantasy", "adventure"), ("shonen", "action"), ("shonen", "adventure"),
                                  ("romance", "shojo"), ("romance", "josei"), ("comedy", "slice_of_life"),
                                  ("action", "adventure"), ("drama", "slice_of_life"), ("seinen", "thriller"),
                                  ("seinen", "mystery"), ("seinen", "horror"))}
PROMOTION_WORDS = ("sale", "% off", "percent off", "promotion", "promo", "deal", "discount", "coupon", "limited-time",
                   "limited time", "bundle", "special offer", "セール", "キャンペーン", "割引", "オフ", "クーポン",
                   "特価", "ポイント", "お得")


@lru_cache(maxsize=4096)
def _term_pattern(term: str) -> re.Pattern[str]:
    """A term as a whole word (compiled once: the terms are few, the texts many)."""
    tail = "" if term.endswith("nat") else r"(?![a-z])"
    return re.compile(rf"(?<![a-z]){re.escape(term)}{tail}")


def _has_term(term: str, norm: str) -> bool:
    if has_japanese(term):
        return term in norm
    return _term_pattern(term).search(norm) is not None


def genres_in(text: str) -> set[str]:
    norm = normalize(text or "")
    return {g for g, terms in GENRES.items() if any(_has_term(t, norm) for t in terms)}


_CLAUSES = re.compile(r"[.!?;,、。！？]")
_AVOIDED = re.compile(r"\b(?:no|nothing|not|without|avoid|never|none|isn't|aren't|don't|doesn't|hate)\b|苦手|以外|なし|じゃない|ではない|避け|嫌")


def asked_genres(query: str) -> set[str]:
    """The genres the shopper asks for: those named in a clause that does not push them away
    ("Nothing scary please", 「ホラーは苦手」 names a genre to avoid)."""
    return set().union(*(genres_in(c) for c in _CLAUSES.split(normalize(query or "")) if not _AVOIDED.search(c)))


def item_genres(item: CatalogItem, case: TestCase | None = None) -> set[str]:
    """The genres of a product: its catalog genre, else what the retrieved knowledge about it (a
    chunk that names it) calls it."""
    if item.genre:
        return genres_in(item.genre.replace("_", " ")) or {item.genre.lower()}
    if case is None or not case.retrieved_chunks:
        return set()
    about = [c for c in case.retrieved_chunks if item.asin in index_for(case.catalog).named(c)]
    return set().union(*(genres_in(c) for c in about)) if about else set()


def genres_match(wanted: set[str], offered: set[str]) -> bool:
    return bool(wanted & offered) or any(frozenset((a, b)) in RELATED for a in wanted for b in offered)


_JA_WORD = re.compile(r"[\u4e00-\u9fff]|^[\u30a0-\u30ff]{2,}$")


def _topic_words(text: str) -> set[str]:
    """The words that say what a text is about: content words without the words of asking, without
    an ordinal reference ("the second one" points, it is not a topic), and, in Japanese, words with a
    kanji or katakana words (hiragana pieces are inflections the segmenter split off)."""
    norm = ORDINAL_PHRASE.sub(" ", normalize(text))
    tokens = concept_tokens(norm)
    nouns = _japanese_nouns(norm)
    return {t for t in tokens if not t.startswith("~") and t not in REQUEST_WORDS and not t.isdigit()
            and not re.fullmatch(r"[a-z]+ly|actual|real", t)  # adverbs say how, not about what
            and (not has_japanese(t) or (t in nouns if nouns is not None else _JA_WORD.search(t)))}


def _japanese_nouns(norm: str) -> set[str] | None:
    """The nouns of a Japanese text as concept tokens (a verb or an inflection is not a topic), or
    None when there is no Japanese or no analyser (then words with a kanji or katakana stand in)."""
    if not has_japanese(norm):
        return None
    try:
        words = japanese.words(norm)
    except japanese.AnalyzerMissing:
        return None
    return {t for w in words if w.pos1 == "名詞" and w.pos2 not in ("数詞", "助動詞語幹")
            for t in concept_tokens(w.surface)}


_CODE_SHAPE = re.compile(r"\b[A-Z][A-Z0-9]{3,15}\b")


def _takes_up(wanted: set[str], answer: str) -> set[str]:
    have = concept_tokens(normalize(answer))
    if _CODE_SHAPE.search(answer):
        have |= {"code"}  # "TAKE10" answers "is there a code?"
    norm = normalize(answer)
    return {w for w in wanted if w in have or (has_japanese(w) and w in norm)}


def _intent_kind(case: TestCase, reading: Reading) -> tuple[float, str] | None:
    intent = case.intent
    text = reading.text
    if intent == "recommendation":
        named = bool(reading.products) or bool(re.search(r"『[^』]+』|\*\*[^*]{3,}\*\*", text))
        return (1.0, "names products") if named else (0.0, "recommends no product")
    if intent == "order_tracking":
        said = stated_order_statuses(text) or find_dates(text) or re.search(r"your order|ご注文|注文", reading.norm)
        return (1.0, "gives the order's status or date") if said else (0.0, "says nothing about the order")
    if intent == "product_question":
        asked = set(reading_of(case, case.query).products) | ({case.page_context.current_asin} - {None})
        reference = ordinal_reference(case)
        if reference is not None:
            asked |= set(reference.target.asins)
        elif case.conversation_history and ANAPHORA.search(normalize(case.query)):
            asked |= set(reading_of(case, earlier_turn(case)).products)  # "which of those": the products just listed
        asked &= set(reading.by_asin)
        if not asked:
            return None
        refers = bool(asked & set(reading.products)) or ANAPHORA.search(reading.norm) is not None or any(
            same_price(p.amount, reading.by_asin[a].price, p.currency) for a in asked for p in extract_prices(text))
        return (1.0, "addresses the product asked about") if refers else (0.2, "does not address the product asked about")
    if case.retrieved_chunks and intent in ("faq", "return_request", "checkout_help", "promotion"):
        # The answer to a policy question rests on the knowledge retrieved for it: its best claim
        # sentence should be mostly the knowledge's words.
        knowledge = concept_tokens(normalize(" ".join(case.retrieved_chunks)))
        shares = [len(u.tokens & knowledge) / len(u.tokens) for u in read_units(text) if is_claim(u) and u.tokens]
        share = max(shares, default=0.0)
        return min(1.0, share / 0.5), f"its best claim sentence takes {share:.0%} of its words from the knowledge"
    return None


def _promotion_opening(case: TestCase, reading: Reading) -> str | None:
    query = normalize(case.query)
    if case.intent == "promotion" or any(_has_term(t, query) for t in PROMOTION_WORDS) or not reading.spans:
        return None
    first = reading.sentence(0)
    if len(reading.spans) > 1 and len(first.split()) <= 4 and len(first) < 25:
        first += " " + reading.sentence(1)  # a short greeting, then the real opening
    if not any(_has_term(t, first) for t in PROMOTION_WORDS):
        # No sales words, but the first thing offered is a product of another genre than was asked.
        wanted = asked_genres(case.query)
        start, end = reading.spans[0][0], reading.spans[0][1]
        asked = set(reading_of(case, case.query).products) | set(case.expected_products)
        opening = [a for m in reading.mentions if start <= m.start < end for a in m.asins if a not in asked]
        offered = {g for a in opening for g in item_genres(reading.by_asin[a])}
        if wanted and offered and not genres_match(wanted, offered):
            return f"opens with products of another genre ({sorted(offered)}) than asked ({sorted(wanted)})"
        return None
    wanted = asked_genres(case.query)
    asked = _topic_words(case.query)
    if _takes_up(asked, first) and not (wanted and genres_in(first) and not genres_match(wanted, genres_in(first))):
        return None
    return "opens with a promotion the shopper did not ask about"


# Small talk comes in adjacency pairs (Schegloff and Sacks, "Opening up closings", 1973): a greeting
# is answered by a greeting, thanks by an acknowledgement, a farewell by a farewell.
ADJACENCY_PAIRS: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    ("greeting", re.compile(r"\b(?:hi|hello|hey|good (?:morning|afternoon|evening))\b|こんにちは|こんばんは|おはよう|はじめまして"),
     re.compile(r"\b(?:hi|hello|hey|welcome|good (?:morning|afternoon|evening))\b|こんにちは|こんばんは|おはよう|いらっしゃいませ|ようこそ")),
    ("thanks", re.compile(r"\b(?:thanks|thank you|thx|appreciate)\b|ありがとう|助かり|感謝"),
     re.compile(r"\b(?:welcome|glad|pleasure|happy to|anytime|no problem)\b|どういたしまして|お役に立て|よかった|嬉し|うれし|光栄")),
    ("farewell", re.compile(r"\b(?:bye|goodbye|see you|good night|gotta go|that's all)\b|またね|さようなら|失礼します|おやすみ"),
     re.compile(r"\b(?:bye|goodbye|see you|take care|happy reading|enjoy|come back|good night)\b|またの|お待ちしております"
                r"|ありがとうございました|お楽しみ|おやすみ|さようなら")),
)


# A statement is answered by an acknowledgement or an assessment (response tokens: "great",
# "sounds good"; あいづち: 「ぜひ」「いいですね」「なるほど」).
ACKNOWLEDGEMENT = re.compile(r"\b(?:great|sounds good|sure|of course|good choice|nice|awesome|glad|enjoy|exciting|"
                             r"wonderful|fantastic|absolutely|got it|i see|understood)\b"
                             r"|ぜひ|いいですね|なるほど|そうですね|楽しみ|素敵|よかった|承知|かしこまり|嬉し|うれし")


def _adjacency(case: TestCase, reading: Reading) -> tuple[float, str] | None:
    query = normalize(case.query)
    for name, first, second in ADJACENCY_PAIRS:
        if first.search(query):
            answered = second.search(reading.norm) is not None
            return (1.0, f"answers the shopper's {name} in kind") if answered else (0.3, f"does not answer the {name}")
    if not any(first.search(query) for _, first, _ in ADJACENCY_PAIRS) and not is_question(query) \
            and ACKNOWLEDGEMENT.search(reading.norm):
        return 1.0, "acknowledges what the shopper said"
    if is_question(query):
        # A question is answered by an assertion, not by a question back or by nothing.
        answered = any(is_claim(u) and not is_question(u.text) for u in read_units(reading.text))
        return (1.0, "answers the shopper's question") if answered else (0.3, "does not answer the question")
    return None


def intent_relevance(case: TestCase) -> Signal:
    reading = reading_of(case)
    signals: list[tuple[float, str]] = []
    follow_up = bool(case.conversation_history) and (ANAPHORA.search(normalize(case.query)) is not None
                                                      or ORDINAL_PHRASE.search(normalize(case.query)) is not None)
    asked = _topic_words(case.query)
    social = _adjacency(case, reading) if case.intent == "chitchat" else None
    if social:
        signals.append(social)
    elif asked and not (follow_up and len(asked) <= 2):
        hit = _takes_up(asked, reading.text)
        wanted = asked_genres(case.query)
        offered = genres_in(reading.text) | {g for a in reading.products for g in item_genres(reading.by_asin[a])}
        if wanted and genres_match(wanted, offered):
            hit |= {w for w in asked if genres_in(w)}
        # Small talk is answered by taking up its topic at all; a request by taking up most of it.
        needed = 1 if case.intent == "chitchat" else max(1, round(len(asked) * 0.6))
        share = min(1.0, len(hit) / needed)
        signals.append((share, f"takes up {sorted(hit)} of the query's {sorted(asked)}"))
    kind = _intent_kind(case, reading)
    if kind:
        signals.append(kind)
    meaning = semantic.scaled_similarity(case.query, reading.text)
    if meaning:
        signals.append(meaning)
    shopper_japanese = case.is_japanese or japanese_share(case.query) > 0.3
    answer_share = japanese_share(reading.text)
    if shopper_japanese or answer_share > 0.3:
        same = (answer_share > 0.3) == shopper_japanese
        signals.append((1.0 if same else 0.2, "answers in the shopper's language" if same else "answers in another language"))
    if not signals:
        raise Abstain("the query carries no topic and the intent no expected kind of answer")
    score = sum(v for v, _ in signals) / len(signals)
    evidence = [why for _, why in signals]
    # Client incident 1 and its kin: a sale pushed on a shopper who asked about something else.
    pitch = _promotion_opening(case, reading) or unsolicited_pitch(case, reading)
    if pitch:
        return Signal(0.0, [*evidence, pitch], finding=True)
    ignored = ignored_question(case, reading)
    if ignored:
        # A heuristic reading, not a finding: which words of a question are its topic is a guess.
        return Signal(0.0, [*evidence, ignored])
    return Signal(score, evidence)


def ignored_question(case: TestCase, reading: Reading) -> str | None:
    """A question about something (two topic words or more) answered without any of them: the
    answer is about something else. Recommendations answer with products rather than the request's
    words, so they are not read this way."""
    query = normalize(case.query)
    if case.intent in ("recommendation", "chitchat") or not (is_question(query) or "?" in query):
        return None
    asked = _topic_words(case.query)
    if len(asked) < 2 or _takes_up(asked, reading.text):
        return None
    return f"answers none of the question's topics {sorted(asked)}"


# Sales pressure (urgency and upsell formulas of retail copy), English and Japanese.
PRESSURE = re.compile(
    r"\b(?:don'?t (?:wait|miss(?: out)?)|won'?t last|while (?:supplies|stocks?) last|(?:now'?s|now is) the (?:perfect|best) "
    r"time|stock up|act (?:fast|now)|hurry|last chance|before (?:it'?s|they'?re) gone|why not (?:grab|add|pick up|treat)|"
    r"(?:want|shall) (?:me|i) (?:to )?(?:add|put|throw) (?:some|a few|a couple|another|more)|grab another)\b"
    r"|お見逃しなく|お早めに|お早めの|この機会に|今がチャンス|売り切れ(?:る前|必至)|まとめてお買い求め|ぜひまとめて")
# Intents that serve a request about an order, a return, a policy, a checkout or small talk: a sales
# push there is unsolicited by the nature of the request.
SERVICE_INTENTS = frozenset({"order_tracking", "return_request", "faq", "checkout_help", "chitchat"})


def unsolicited_pitch(case: TestCase, reading: Reading) -> str | None:
    """A sale pushed with pressure on a shopper whose request is a service one and who asked about
    no deal: a paragraph with sales words and an urgency or upsell formula (not one urging the
    shopper's own request: a cancellation before it ships)."""
    if case.intent not in SERVICE_INTENTS or any(_has_term(t, normalize(case.query)) for t in PROMOTION_WORDS):
        return None
    for paragraph in re.split(r"\n\s*\n", reading.norm):
        pressure = next((m for m in PRESSURE.finditer(paragraph) if not _urges_the_service(paragraph, m.start())), None)
        if pressure and any(_has_term(t, paragraph) for t in PROMOTION_WORDS):
            return f"pushes a sale the shopper did not ask about: {pressure.group(0)!r} in {paragraph.strip()[:80]!r}"
    return None


# 「発送済みになるとキャンセルできなくなりますので、お早めにどうぞ」: the urgency is about the cancellation.
_SERVICE_ACTION = re.compile(r"\b(?:cancel\w*|return\w*|refund\w*|exchange\w*|report\w*|claim\w*)\b|キャンセル|返品|返金|交換")


def _urges_the_service(paragraph: str, at: int) -> bool:
    """Whether the sentence holding the urgency at ``at`` is about the shopper's own request."""
    return any(start <= at < end and _SERVICE_ACTION.search(paragraph[start:end]) for start, end in segment_spans(paragraph))


def product_relevance(case: TestCase) -> Signal:
    reading = reading_of(case)
    expected = [a for a in case.expected_products if a in reading.by_asin]
    if not reading.products:
        if not expected:
            raise Abstain("no product named")
        refers = re.search(r"\b(it|this one|that one|your (?:copy|book|order|item|volume)|the (?:book|volume|item|copy))\b"
                           r"|こちら|その商品|ご注文の|お手元", reading.norm)
        asked = set(reading_of(case, case.query).products) | ({case.page_context.current_asin} - {None})
        if refers and set(expected) & asked:
            return Signal(1.0, [f"refers to the product asked about as {refers.group(0)!r}"])
        return Signal(0.0, ["names none of the expected products: " + ", ".join(expected)])
    wanted = asked_genres(case.query)
    page_item = reading.by_asin.get(case.page_context.current_asin or "")
    if not wanted and page_item is not None:
        wanted = item_genres(page_item, case)
    if not wanted and case.page_context.store_section:
        wanted = genres_in(case.page_context.store_section.replace("_", " "))
    if not wanted and expected:
        wanted = {g for a in expected for g in item_genres(reading.by_asin[a], case)}
    # Products from the conversation so far are references ("as tense as Monster"), not new picks.
    earlier = {a for m in case.conversation_history for a in reading_of(case, m.content).products}
    picks = [a for a in reading.products if a not in earlier or a in expected]
    judged = [a for a in picks if item_genres(reading.by_asin[a], case)]
    if expected:
        hits = [a for a in picks if a in expected]
        listed = set(reading_of(case, earlier_turn(case)).products)
        if COLLECTIVE.search(reading.norm) and set(expected) <= listed:
            hits = list(dict.fromkeys(hits + expected))  # "both cost $12.99": the listed products, together
        fitting = [a for a in picks if a not in expected and wanted and a in judged
                   and genres_match(wanted, item_genres(reading.by_asin[a], case))]
        score = (len(hits) + len(fitting)) / len(set(expected) | set(picks))
        return Signal(score, [f"{len(hits)}/{len(expected)} expected products named, {len(fitting)} other fitting "
                              f"product(s) of {len(set(picks) - set(expected))}"])
    asked = asked_genres(case.query)
    # A query that names titles describes them ("Tomie is super scary"): its genre words are about
    # those titles, not a genre asked for.
    if asked and case.intent == "recommendation" and not reading_of(case, case.query).products:
        # The shopper named the genre: every pick of another genre (by the catalog or the knowledge
        # about it) is a recommendation that does not fit, a finding of its own.
        known = {a: item_genres(reading.by_asin[a], case) for a in picks}
        known = {a: g for a, g in known.items() if g}
        if known and not any(genres_match(asked, g) for g in known.values()):
            return Signal(0.0, [f"asked for {sorted(asked)}; every pick is another genre: "
                                + "; ".join(f"{reading.by_asin[a].title} {sorted(g)}" for a, g in known.items())], finding=True)
    if not wanted or not judged:
        raise Abstain("no genre asked for, or none known for the products named")
    fits = [a for a in judged if genres_match(wanted, item_genres(reading.by_asin[a], case))]
    return Signal(len(fits) / len(judged), [f"{len(fits)}/{len(judged)} named products fit {sorted(wanted)}"])


COLLECTIVE = re.compile(r"\b(?:both|all three|all of them|each of them|either)\b|両方|どちらも|いずれも|すべて|全て")


def earlier_turn(case: TestCase) -> str:
    return next((m.content for m in reversed(case.conversation_history) if m.role == "assistant"), "")


def context_relevance(case: TestCase) -> Signal:
    reading = reading_of(case)
    signals: list[tuple[float, str]] = []
    order = case.page_context.order
    if order is not None:
        status = bool(stated_order_statuses(reading.text))
        refers = re.search(r"your (?:order|package|parcel)|ご注文|お荷物", reading.norm) is not None
        value = 1.0 if status or find_dates(reading.text) else 0.5 if refers else 0.0
        signals.append((value, "states the order's status or dates" if value == 1.0 else
                        "mentions the order without its details" if refers else "ignores the order on the page"))
    current = reading.by_asin.get(case.page_context.current_asin or "")
    if current is not None:
        named = current.asin in reading.products
        implicit = ANAPHORA.search(reading.norm) is not None or any(
            same_price(p.amount, current.price, p.currency) for p in extract_prices(reading.text))
        value = 1.0 if named or implicit else 0.2
        signals.append((value, f"refers to the page's product {current.title}" if value == 1.0 else
                        f"ignores the page's product {current.title}"))
    section = case.page_context.store_section
    if section and case.intent in ("recommendation", "promotion") and not genres_in(case.query):
        wanted = genres_in(section.replace("_", " "))
        offered = genres_in(reading.text) | {g for a in reading.products for g in item_genres(reading.by_asin[a])}
        if wanted:
            fit = genres_match(wanted, offered)
            signals.append((1.0 if fit else 0.3, f"store section {section!r} {'reflected' if fit else 'not reflected'}"))
    if case.conversation_history and ANAPHORA.search(normalize(case.query)):
        # "Does that include ...?": the answer takes up what the last assistant turn was about.
        earlier = earlier_turn(case)
        earlier_products = set(reading_of(case, earlier).products)
        if earlier_products & set(reading.products):
            signals.append((1.0, "continues with a product from the earlier turns"))
        else:
            topic = _topic_words(earlier)
            hit = _takes_up(topic, reading.text)
            if topic:
                signals.append((min(1.0, len(hit) / max(1, round(len(topic) * 0.25))),
                                f"takes up {len(hit)} of {len(topic)} topic words of the last assistant turn"))
    if not signals:
        raise Abstain("no page context or earlier turn to compare with")
    return Signal(sum(v for v, _ in signals) / len(signals), [w for _, w in signals])


# The offline judge's reading of each sub-score the checks may leave open.
SIGNALS: dict[str, SignalFn] = {
    "intent_relevance": lambda case, rubric, hints: intent_relevance(case),
    "product_relevance": lambda case, rubric, hints: product_relevance(case),
    "context_relevance": lambda case, rubric, hints: context_relevance(case),
}
