"""Factual accuracy: is every claim backed by the catalog, the retrieved knowledge and the page context?

Everything here is deterministic when the case carries evidence: prices and stock statuses are read
next to the product they describe and compared with the catalog; policy numbers are compared with
the retrieved chunks (a stale "30 days" against a knowledge base that says 15 is a contradiction,
never "close enough"); expected facts need their exact numbers. Only ``no_hallucination`` on a case
without any evidence goes to the judge.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from fmquality.dimensions.base import CheckReport, response_text
from fmquality.dimensions.relevance import (
    product_mentions,
    stated_statuses,
    status_family,
)
from fmquality.judges.base import JudgeVerdict, NoEvidence
from fmquality.models import CatalogItem, HardFailure, TestCase
from fmquality.text import (
    Quantity,
    availability_mentions,
    content_tokens,
    extract_prices,
    extract_quantities,
    find_dates,
    has_japanese,
    loose_key,
    normalize,
    same_price,
    segment_spans,
)

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

NAME = "factual_accuracy"

_ASIN_RE = re.compile(r"\bB0[0-9A-Z]{8}\b")
_POLICY_UNITS = ("day", "week", "month", "hour", "percent", "usd", "jpy", "item")
_MONEY_UNITS = ("usd", "jpy")


# --------------------------------------------------------------------------------------------------
# Reading the response: segments, product attachment, numbers
# --------------------------------------------------------------------------------------------------

class _Answer:
    """The response read once: normalized text, segments, product mentions."""

    def __init__(self, case: TestCase, text: str) -> None:
        self.case = case
        self.norm = normalize(text)
        self.segments = segment_spans(text)
        self.mentions = product_mentions(case, text)
        self.by_asin = case.catalog_by_asin()
        self.products = {k for m in self.mentions for k in m.keys}

    def segment_of(self, pos: int) -> int:
        for index, (start, end) in enumerate(self.segments):
            if start <= pos < end:
                return index
        return len(self.segments) - 1

    def segment_has_product(self, index: int) -> bool:
        start, end = self.segments[index]
        return any(start <= m.start < end for m in self.mentions)

    def attach(self, pos: int) -> list[CatalogItem]:
        """The catalog item(s) a statement at ``pos`` is about: the nearest product named in the same
        sentence or list line (a card's follow-up lines look back two lines), else the only product
        in play. Several items when the nearest name is a series shared by several volumes."""
        if not self.segments:
            return []
        index = self.segment_of(pos)
        for look_back in range(0, 3):
            if index - look_back < 0:
                break
            start, end = self.segments[index - look_back]
            inside = [m for m in self.mentions if start <= m.start < end]
            if look_back:
                inside = [m for m in inside if m.end <= pos]
            if inside:
                # The name usually comes first ("Uzumaki ($22.99, in stock) and Tomie ..."): the nearest
                # name before the statement wins, a name after it only when none precedes.
                before = [m for m in inside if m.end <= pos]
                nearest = max(before, key=lambda m: m.end) if before else min(inside, key=lambda m: m.start)
                return [self.by_asin[k] for k in nearest.keys if k in self.by_asin]
            if look_back == 0 and self._collective(index):
                return [self.by_asin[a] for a in self.products if a in self.by_asin]
        if len(self.products) == 1:
            return [self.by_asin[a] for a in self.products if a in self.by_asin]
        if not self.products:
            current = self.by_asin.get(self.case.page_context.current_asin or "")
            if current is not None:
                return [current]
            if len(self.by_asin) == 1:
                return list(self.by_asin.values())
        return []

    def attach_one_market(self, pos: int) -> list[CatalogItem]:
        """Like ``attach``, but when a title is sold in both markets (a USD and a JPY listing with
        their own stock), keep the listing whose currency the sentence uses, else the locale's."""
        items = self.attach(pos)
        if len({i.currency for i in items}) < 2:
            return items
        start, end = self.segments[self.segment_of(pos)]
        stated = {p.currency for p in extract_prices(self.norm[start:end])}
        market = stated.pop() if len(stated) == 1 else ("JPY" if self.case.is_japanese else "USD")
        return [i for i in items if i.currency == market] or items

    def _collective(self, index: int) -> bool:
        start, end = self.segments[index]
        return re.search(r"\b(all|both|every|each of)\b|すべて|全て|どちらも|いずれも", self.norm[start:end]) is not None


# Words that make a money amount a threshold or a discount, not a product's price.
_NOT_A_PRICE_BEFORE = re.compile(
    r"(over|above|under|below|less than|more than|up to|off|save|saving|savings|discount|shipping|coupon|credit|"
    r"points?|total|subtotal|budget|fee|minimum|min\.?|spend|送料|合計|予算|最低)\W{0,3}$")
_NOT_A_PRICE_AFTER = re.compile(r"^\s*(以上|以下|未満|オフ|off|引き|割引|分|まで|or more|minimum|and up|\+)")


def _product_price(answer: _Answer, start: int, text_len: int) -> bool:
    before = answer.norm[max(0, start - 24):start]
    after = answer.norm[start + text_len:start + text_len + 10]
    return not (_NOT_A_PRICE_BEFORE.search(before) or _NOT_A_PRICE_AFTER.search(after))


def _item_prices(item: CatalogItem) -> list[float]:
    """The catalog price plus any other price field the snapshot carries (sale_price, list_price)."""
    extra = [v for k, v in (item.model_extra or {}).items() if "price" in k and isinstance(v, (int, float))]
    return [item.price, *extra]


def _evidence_text(case: TestCase) -> str:
    parts = [*case.retrieved_chunks, case.page_context.model_dump_json(exclude_none=True)]
    return "\n".join(parts)


def _numbers_of(text: str) -> set[float]:
    return {q.value for q in extract_quantities(text)}


def _blank_dates(norm: str) -> str:
    """Replace calendar dates with spaces (same length) so "5月12日" is not read as "12 days"."""
    chars = list(norm)
    for date in find_dates(norm):
        chars[date.start:date.end] = " " * (date.end - date.start)
    return "".join(chars)


_RANGE_RE = re.compile(r"(\d+)\s*(?:-|–|〜|~|～|to|から)\s*(\d+)\s*([a-z%％]+(?:\s+days?)?|[^\s\d]{1,3})", re.IGNORECASE)


def _quantities_with_ranges(text: str) -> list[Quantity]:
    """Quantities, plus the low end of ranges ("5-7 business days" also gives 5 days)."""
    found = extract_quantities(text)
    for match in _RANGE_RE.finditer(unicodedata.normalize("NFKC", text)):
        for q in extract_quantities(f"{match.group(2)} {match.group(3)}"):
            if q.unit:
                found.append(Quantity(float(match.group(1)), q.unit, match.group(0)))
    return found


def _unit_values(quantities: list[Quantity]) -> dict[str, set[float]]:
    table: dict[str, set[float]] = {}
    for q in quantities:
        if q.unit:
            table.setdefault(q.unit, set()).add(q.value)
    # A week is seven days: "two weeks" agrees with "14 days".
    if "week" in table:
        table.setdefault("day", set()).update(v * 7 for v in table["week"])
    if "day" in table:
        table.setdefault("week", set()).update(v / 7 for v in table["day"] if v % 7 == 0)
    return table


# --------------------------------------------------------------------------------------------------
# Sub-scores
# --------------------------------------------------------------------------------------------------

def _bigrams(text: str) -> set[str]:
    runs = re.findall(r"[\u3040-\u30ff\u3400-\u9fff]+", normalize(text))
    return {run[i:i + 2] for run in runs for i in range(max(1, len(run) - 1))}


def fact_is_covered(fact: str, response: str) -> tuple[bool, str]:
    """A fact is conveyed when each of its numbers appears with the same value (in words or digits,
    "fifteen days" = "15 days"; "30 days" never covers "15 days") and about half of its words do."""
    fact_q = [q for q in extract_quantities(_blank_dates(normalize(fact)))]
    fact_dates = find_dates(fact)
    resp_q = extract_quantities(_blank_dates(normalize(response)))
    resp_dates = find_dates(response)
    for q in fact_q:
        ok = any(r.value == q.value and (r.unit == q.unit or not r.unit or not q.unit
                                         or {r.unit, q.unit} == {"day", "week"}) for r in resp_q)
        if not ok and q.unit in ("day", "week"):
            ok = any(r.unit in ("day", "week") and r.value * (7 if r.unit == "week" else 1)
                     == q.value * (7 if q.unit == "week" else 1) for r in resp_q)
        if not ok:
            return False, f"number {q.text!r} not stated"
    for date in fact_dates:
        if not any(date.same_day(r) for r in resp_dates):
            return False, "date not stated"
    numeric = set().union(*(content_tokens(q.text) for q in fact_q)) if fact_q else set()
    words = content_tokens(_blank_dates(normalize(fact))) - numeric
    if not words:
        return True, "numbers stated"
    # A fact is conveyed inside one sentence or list line: words scattered over unrelated sentences
    # ("charged immediately ... cancel before it ships") do not make "charged when the item ships".
    norm = normalize(response)
    pieces = [norm[a:b] for a, b in segment_spans(response)] or [norm]
    fact_pairs = _bigrams(fact) if has_japanese(fact) else set()
    share = 0.0
    for piece in pieces:
        piece_share = len(words & content_tokens(piece)) / len(words)
        if fact_pairs:
            # TinySegmenter cuts a paraphrase differently; character pairs are a steadier measure.
            piece_share = max(piece_share, len(fact_pairs & _bigrams(piece)) / len(fact_pairs))
        share = max(share, piece_share)
    if share >= 0.5:
        return True, f"words covered {share:.0%}"
    return False, f"only {share:.0%} of its words"


def _fact_coverage(case: TestCase, text: str, report: CheckReport) -> None:
    if not case.expected_facts:
        report.skip("fact_coverage")
        return
    missing = []
    for fact in case.expected_facts:
        covered, why = fact_is_covered(fact, text)
        if not covered:
            missing.append(f"{fact!r} ({why})")
    covered_count = len(case.expected_facts) - len(missing)
    evidence = [f"{covered_count}/{len(case.expected_facts)} expected facts conveyed"]
    if missing:
        evidence.append("missing: " + "; ".join(missing))
        report.findings.append("expected facts not conveyed: " + "; ".join(missing))
    report.set("fact_coverage", covered_count / len(case.expected_facts), *evidence)


def _price_accuracy(case: TestCase, answer: _Answer, report: CheckReport) -> list[tuple[str, float]]:
    """Sets price_accuracy; returns the money amounts it attached to products (for the policy check)."""
    prices = extract_prices(answer.norm)
    if not prices:
        report.skip("price_accuracy")
        return []
    chunk_numbers = _numbers_of("\n".join(case.retrieved_chunks))
    attached: list[tuple[str, float]] = []
    right: list[str] = []
    wrong: list[str] = []
    for price in prices:
        if not _product_price(answer, price.start, len(price.text)):
            continue
        items = [i for i in answer.attach(price.start) if i.currency == price.currency]
        if not items:
            continue  # no product, or a currency the item is not sold in: we do not convert
        attached.append((price.currency.lower(), price.amount))
        if any(same_price(price.amount, p, price.currency) for i in items for p in _item_prices(i)):
            right.append(f"{price.text} = catalog price of {items[0].title}")
        elif price.amount in chunk_numbers:
            right.append(f"{price.text} for {items[0].title} is supported by the retrieved knowledge (promotion)")
        else:
            expected = ", ".join(f"{i.title}: {i.price:g} {i.currency}" for i in items)
            wrong.append(f"{price.text} stated, catalog says {expected}")
    if not right and not wrong:
        report.skip("price_accuracy")
        report.findings.append(f"{len(prices)} price(s) stated but none attached to a catalog product")
        return attached
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="price_contradiction", dimension=NAME,
                                                sub_score="price_accuracy", detail=detail))
    report.set("price_accuracy", len(right) / (len(right) + len(wrong)), *(right + wrong))
    if wrong:
        report.findings.append("price contradictions: " + "; ".join(wrong))
    return attached


# Stated vs catalog statuses that are not a contradiction ("only a few left" of an in-stock item;
# "not available yet" of a pre-order).
_COMPATIBLE_STOCK = {("limited", "in_stock"), ("in_stock", "limited"), ("out_of_stock", "preorder")}


def _availability_accuracy(case: TestCase, answer: _Answer, report: CheckReport) -> None:
    stated = availability_mentions(answer.norm)
    right: list[str] = []
    wrong: list[str] = []
    for status, pos in stated:
        items = answer.attach_one_market(pos)
        if not items:
            continue
        if any(i.availability == status or (status, i.availability) in _COMPATIBLE_STOCK for i in items):
            right.append(f"{items[0].title}: {status} agrees with the catalog")
        else:
            wrong.append(f"{items[0].title} said to be {status}, catalog says {items[0].availability}")
    if not right and not wrong:
        report.skip("availability_accuracy")
        return
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="availability_contradiction", dimension=NAME,
                                                sub_score="availability_accuracy", detail=detail))
    report.set("availability_accuracy", len(right) / (len(right) + len(wrong)), *(right + wrong))
    if wrong:
        report.findings.append("stock contradictions: " + "; ".join(wrong))


def _response_policy_quantities(case: TestCase, answer: _Answer, product_money: list[tuple[str, float]]) -> list[Quantity]:
    """Quantities with a unit in the response that can be policy statements: not dates, not the
    prices of catalog products, not volume counts or prices in a sentence about a product."""
    catalog_money = {(i.currency.lower(), p) for i in case.catalog for p in _item_prices(i)}
    blanked = _blank_dates(answer.norm)
    out: list[Quantity] = []
    for index, (start, end) in enumerate(answer.segments):
        about_product = answer.segment_has_product(index)
        for q in extract_quantities(blanked[start:end]):
            if not q.unit:
                continue
            if q.unit in _MONEY_UNITS and ((q.unit, q.value) in catalog_money or (q.unit, q.value) in product_money):
                continue
            if about_product and q.unit in (*_MONEY_UNITS, "item"):
                continue
            out.append(q)
    return out


def _policy_accuracy(case: TestCase, answer: _Answer, product_money: list[tuple[str, float]],
                     report: CheckReport) -> None:
    if not case.retrieved_chunks:
        report.skip("policy_accuracy")
        return
    knowledge = _unit_values(_quantities_with_ranges(_blank_dates(normalize("\n".join(case.retrieved_chunks)))))
    checked: list[str] = []
    wrong: list[str] = []
    for q in _response_policy_quantities(case, answer, product_money):
        allowed = knowledge.get(q.unit)
        if not allowed:
            continue  # the knowledge says nothing in this unit: no_hallucination looks at it
        if any(abs(q.value - v) < 1e-9 for v in allowed):
            checked.append(f"{q.text!r} matches the retrieved knowledge")
        else:
            shown = ", ".join(f"{v:g}" for v in sorted(allowed))
            wrong.append(f"{q.text!r} contradicts the retrieved knowledge ({q.unit}: {shown})")
    if not checked and not wrong:
        report.skip("policy_accuracy")
        return
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="policy_contradiction", dimension=NAME,
                                                sub_score="policy_accuracy", detail=detail))
    if wrong:
        report.findings.append("policy contradictions: " + "; ".join(wrong))
    # One stale policy number makes the answer wrong, however many others are right.
    report.set("policy_accuracy", 0.0 if wrong else 1.0, *(wrong + checked))


_BY_NAME = re.compile(r"(?<!published )(?<!translated )(?<!illustrated )(?<!sold )(?<!shipped )(?<!fulfilled )"
                      r"(?<!recommended )(?<!distributed )(?<!imprint )\bby\s+([A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3})")
_POSSESSIVE_NAME = re.compile(r"\b([A-Z][\w.-]+(?:\s+[A-Z][\w.-]+){0,3})'s\s+")
_AUTHOR_MARKER = re.compile(r"\bby\b|author|written|created|mangaka|作者|著者|著|作家|先生|原作|による")
_VOLUME_COUNT = re.compile(r"(\d+)\s*(?:volumes?|vols?\b|books? in (?:the|all))|全\s*(\d+)\s*巻|(\d+)\s*巻(?:完結|で完結|まで)")


def _author_names(author: str, item: CatalogItem) -> list[str]:
    names = [author, *(str(v) for k, v in (item.model_extra or {}).items() if k.startswith("author") and v)]
    parts = author.split()
    if len(parts) == 2:
        names += [f"{parts[1]} {parts[0]}", parts[1]]  # family-name-first order, and the family name alone
    return [n for n in names if n]


def _same_author(claimed: str, item: CatalogItem) -> bool:
    claimed_key = loose_key(claimed)
    return any(claimed_key and (claimed_key in loose_key(n) or loose_key(n) in claimed_key)
               for n in _author_names(item.author or "", item) if len(loose_key(n)) >= 3)


def _volume_count(item: CatalogItem) -> int | None:
    for key in ("volumes", "volume_count", "total_volumes", "volumes_total"):
        value = (item.model_extra or {}).get(key)
        if isinstance(value, int):
            return value
    return None


def _attribute_accuracy(case: TestCase, answer: _Answer, text: str, report: CheckReport) -> None:
    nfkc = unicodedata.normalize("NFKC", text)
    authors = {a: item for item in case.catalog if item.author for a in _author_names(item.author, item)}
    right: list[str] = []
    wrong: list[str] = []
    for index, (start, end) in enumerate(answer.segments):
        if not answer.segment_has_product(index):
            continue
        segment_norm = answer.norm[start:end]
        claims: list[tuple[str, int]] = [(m.group(1), start + m.start()) for m in _BY_NAME.finditer(nfkc[start:end])]
        possessive: list[tuple[str, list[CatalogItem]]] = []
        for m in _POSSESSIVE_NAME.finditer(nfkc[start:end]):
            # "Takehiko Inoue's Vinland Saga": the name is about the title right after it.
            after = next((x for x in answer.mentions if 0 <= x.start - (start + m.end()) <= 2), None)
            if after is not None and not set(after.keys) & {k for x in answer.mentions for k in x.keys
                                                             if x.start <= start + m.start() < x.end}:
                possessive.append((m.group(1), [answer.by_asin[k] for k in after.keys if k in answer.by_asin]))
        if _AUTHOR_MARKER.search(segment_norm):
            for name in authors:
                for hit in re.finditer(re.escape(normalize(name)), segment_norm):
                    if not any(c_start <= start + hit.start() < c_start + len(c) + 4 for c, c_start in claims):
                        claims.append((name, start + hit.start()))
        attributed = [(claimed, answer.attach_one_market(pos)) for claimed, pos in claims] + possessive
        for claimed, about in attributed:
            items = [i for i in about if i.author]
            if not items:
                continue
            if any(_same_author(claimed, i) for i in items):
                right.append(f"{items[0].title} by {claimed}: matches the catalog")
            elif any(_same_author(claimed, i) for i in case.catalog if i.author) or claimed in authors \
                    or len(claimed.split()) >= 2:
                wrong.append(f"{items[0].title} attributed to {claimed}; catalog author is {items[0].author}")
        for match in _VOLUME_COUNT.finditer(segment_norm):
            stated = int(next(g for g in match.groups() if g))
            items = [i for i in answer.attach(start + match.start()) if _volume_count(i) is not None]
            if not items:
                continue
            if any(_volume_count(i) == stated for i in items):
                right.append(f"{items[0].title}: {stated} volumes matches the catalog")
            else:
                wrong.append(f"{items[0].title}: {stated} volumes stated, catalog says {_volume_count(items[0])}")
    right, wrong = list(dict.fromkeys(right)), list(dict.fromkeys(wrong))
    if not right and not wrong:
        report.skip("attribute_accuracy")
        return
    if wrong:
        report.findings.append("attribute errors: " + "; ".join(wrong))
    report.set("attribute_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))


_TITLE_CANDIDATE = re.compile(r"『([^』]{2,60})』|「([^」]{2,60})」|\*\*([^*\n]{3,60})\*\*|(?<![\w*])\*([^*\n]{3,60})\*(?![\w*])")
_PRODUCT_CUE = re.compile(r"\$|¥|円|\bvol|\bvolume|巻|\bby\b|in stock|out of stock|pre-?order|在庫|予約|作者")
_NOT_A_TITLE = re.compile(r":$|^(note|tip|price|availability|status|return|refund|shipping|order|in stock|out of stock)\b")


def _unknown_titles(case: TestCase, answer: _Answer, text: str) -> list[str]:
    """Product-like titles (『…』, **bold** or *italic* next to a price, volume or author) that no
    catalog item carries and that the shopper did not bring up."""
    if not case.catalog:
        return []
    context = normalize(" ".join([case.query, *(m.content for m in case.conversation_history), *case.retrieved_chunks]))
    names = [loose_key(n) for item in case.catalog for n in (item.title, item.title_ja, item.title_romaji) if n]
    out = []
    nfkc = unicodedata.normalize("NFKC", text)
    for match in _TITLE_CANDIDATE.finditer(nfkc):
        title = next(g for g in match.groups() if g).strip()
        key = loose_key(title)
        if len(key) < 2 or _NOT_A_TITLE.search(normalize(title)):
            continue
        if any(key in n or (len(n) >= 3 and n in key) for n in names) or key in loose_key(context):
            continue
        start, end = answer.segments[answer.segment_of(match.start())] if answer.segments else (0, len(nfkc))
        if match.group(1) or _PRODUCT_CUE.search(answer.norm[start:end]):
            out.append(title)
    return list(dict.fromkeys(out))


def _order_claims(case: TestCase, answer: _Answer, text: str) -> tuple[list[str], int]:
    """Unsupported order statements (status, dates, order ids) and how many order facts were checked."""
    order = case.page_context.order
    problems: list[str] = []
    checked = 0
    known_dates = [d for source in (order.eta if order else None, order.ship_date if order else None,
                                     *case.retrieved_chunks, case.query,
                                     *(m.content for m in case.conversation_history),
                                     case.page_context.model_dump_json(exclude_none=True)) if source
                   for d in find_dates(source)]
    if order is not None or case.retrieved_chunks:
        for date in find_dates(text):
            checked += 1
            if known_dates and not any(date.same_day(k) for k in known_dates):
                problems.append(f"date {answer.norm[date.start:date.end]!r} is not in the order or the knowledge")
            elif not known_dates and order is not None:
                problems.append(f"date {answer.norm[date.start:date.end]!r} given with no date in the order")
    if order is None:
        return problems, checked
    family = status_family(order.status)
    if family:
        checked += 1
        claimed = stated_statuses(text) - {family}
        # "in transit" of a shipped order, "delayed" of any open order are not contradictions.
        if family == "shipped":
            claimed -= {"delayed"}
        if family == "processing":
            claimed -= {"delayed"}
        if claimed and family not in stated_statuses(text):
            problems.append(f"status stated as {sorted(claimed)}, the order is {order.status}")
    if order.order_id:
        shape = re.sub(r"[A-Za-z]", "[A-Za-z]", re.sub(r"\d", r"\\d", re.escape(order.order_id)))
        for match in re.finditer(rf"(?<![\w-]){shape}(?![\w-])", unicodedata.normalize("NFKC", text)):
            checked += 1
            if loose_key(match.group()) != loose_key(order.order_id):
                problems.append(f"order id {match.group()} differs from {order.order_id}")
    return problems, checked


def unsupported_claims(case: TestCase, answer: _Answer, text: str, product_money: list[tuple[str, float]]) -> tuple[list[str], int]:
    """Claims the evidence (catalog, chunks, page context) does not support, and how many were checked."""
    problems: list[str] = []
    checked = 0
    catalog_asins = set(answer.by_asin)
    for asin in dict.fromkeys(_ASIN_RE.findall(unicodedata.normalize("NFKC", text))):
        checked += 1
        if case.catalog and asin not in catalog_asins and asin not in case.query:
            problems.append(f"ASIN {asin} is not in the catalog")
    for title in _unknown_titles(case, answer, text):
        problems.append(f"title {title!r} is not in the catalog")
    checked += len(answer.mentions)

    support_text = "\n".join([_evidence_text(case), case.query, *(m.content for m in case.conversation_history)])
    supported_numbers = _numbers_of(support_text)
    knowledge_units = _unit_values(_quantities_with_ranges(_blank_dates(normalize("\n".join(case.retrieved_chunks)))))
    catalog_money = {(i.currency.lower(), p) for i in case.catalog for p in _item_prices(i)}
    for q in _response_policy_quantities(case, answer, product_money):
        if q.unit in knowledge_units:
            continue  # policy_accuracy compares it
        checked += 1
        if q.unit in _MONEY_UNITS and (q.unit, q.value) in catalog_money:
            continue
        if q.value not in supported_numbers:
            problems.append(f"{q.text!r} is not supported by the catalog, knowledge or page context")
    order_problems, order_checked = _order_claims(case, answer, text)
    return problems + order_problems, checked + order_checked


def _has_evidence(case: TestCase) -> bool:
    return bool(case.catalog or case.retrieved_chunks or case.page_context.model_dump(exclude_none=True))


def _no_hallucination(case: TestCase, answer: _Answer, text: str, product_money: list[tuple[str, float]],
                      report: CheckReport) -> None:
    if not _has_evidence(case):
        report.ask_judge("no_hallucination")
        return
    problems, checked = unsupported_claims(case, answer, text, product_money)
    if problems:
        report.findings.append("unsupported claims: " + "; ".join(problems))
        report.set("no_hallucination", max(0.0, 1.0 - 0.4 * len(problems)), *problems)
    else:
        report.set("no_hallucination", 1.0, f"no unsupported claim among {checked} checked (products, numbers, dates, ids)")


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    text = response_text(case)
    answer = _Answer(case, text)
    _fact_coverage(case, text, report)
    product_money = _price_accuracy(case, answer, report)
    _availability_accuracy(case, answer, report)
    _policy_accuracy(case, answer, product_money, report)
    _attribute_accuracy(case, answer, text, report)
    _no_hallucination(case, answer, text, product_money, report)
    return report


# --------------------------------------------------------------------------------------------------
# Offline judge: only no_hallucination on a case without evidence reaches it in practice
# --------------------------------------------------------------------------------------------------

def _specific_claims(text: str) -> list[str]:
    """Checkable specifics in an answer: numbers with units, prices, dates, ASINs, quoted titles."""
    norm = normalize(text)
    claims = [q.text for q in extract_quantities(_blank_dates(norm)) if q.unit]
    claims += [norm[d.start:d.end] for d in find_dates(text)]
    claims += _ASIN_RE.findall(unicodedata.normalize("NFKC", text))
    claims += [next(g for g in m.groups() if g) for m in _TITLE_CANDIDATE.finditer(unicodedata.normalize("NFKC", text))]
    return list(dict.fromkeys(claims))


def _no_hallucination_offline(case: TestCase, text: str) -> tuple[float, list[str], float]:
    claims = _specific_claims(text)
    if case.reference_response:
        reference = case.reference_response
        ref_numbers = _numbers_of(reference) | _numbers_of(case.query)
        ref_dates = find_dates(reference) + find_dates(case.query)
        unsupported = []
        for q in extract_quantities(_blank_dates(normalize(text))):
            if q.unit and q.value not in ref_numbers:
                unsupported.append(q.text)
        for date in find_dates(text):
            if not any(date.same_day(r) for r in ref_dates):
                unsupported.append(normalize(text)[date.start:date.end])
        for claim in claims:
            if claim not in unsupported and _ASIN_RE.fullmatch(claim) and claim not in reference:
                unsupported.append(claim)
        unsupported = list(dict.fromkeys(unsupported))
        score = max(0.0, 1.0 - 0.35 * len(unsupported))
        why = [f"{len(unsupported)} specific claim(s) not in the reference answer: {unsupported}" if unsupported
               else f"every specific claim ({len(claims)}) agrees with the reference answer"]
        return score, why, 0.6
    # No evidence and no reference: specifics that the shopper did not supply cannot be verified.
    # Each one is a risk; a general answer is probably safe. Low confidence either way.
    query_numbers = _numbers_of(case.query)
    # Bare numbers count too here ("25 degrees and sunny"): with nothing to check them against,
    # any figure the shopper did not give is a claim nobody can verify.
    bare = [q.text for q in extract_quantities(_blank_dates(normalize(text))) if not q.unit and q.value not in query_numbers]
    unverifiable = [c for c in claims if not (c[:1].isdigit() and _numbers_of(c) <= query_numbers)]
    unverifiable = list(dict.fromkeys(unverifiable + bare))
    score = max(0.3, 0.9 - 0.15 * len(unverifiable))
    return score, [f"{len(unverifiable)} unverifiable specific claim(s): {unverifiable[:5]}"], 0.3


def offline_verdict(case: TestCase, rubric: "Rubric", sub_scores: list[str]) -> JudgeVerdict:
    text = response_text(case)
    scores: dict[str, float] = {}
    evidence: list[str] = []
    confidences: list[float] = []
    settled: CheckReport | None = None
    for name in sub_scores:
        if name == "no_hallucination":
            value, why, confidence = _no_hallucination_offline(case, text)
        else:
            # The checks settle these whenever they apply; answer from them so the verdict is complete.
            settled = settled or check(case, rubric)
            sub = settled.sub_scores.get(name)
            if sub is None:
                raise NoEvidence(f"{name}: nothing in the case to check it against")
            value, why, confidence = sub.score, sub.evidence, 0.9
        scores[name] = round(value, 4)
        evidence.extend(f"{name}: {e}" for e in why)
        confidences.append(confidence)
    rationale = "; ".join(f"{n}={v:.2f}" for n, v in scores.items()) + " from numeric and lexical evidence (offline judge)"
    return JudgeVerdict(sub_scores=scores, rationale=rationale, evidence=evidence,
                        confidence=round(min(confidences), 2) if confidences else 0.5)
