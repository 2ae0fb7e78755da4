"""What every operator shares: the perturbed case it returns, its context (seeded randomness, the other
cases of the set) and what it reads of a case's evidence (catalog names, the order's fields)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fmquality.domain.case import CatalogItem, TestCase
from fmquality.sensitivity.text import Span, find_all, parse_iso


@dataclass(frozen=True)
class Perturbed:
    """The defective case an operator built, and one line saying what it changed."""

    case: TestCase
    change: str


@dataclass
class Context:
    """What an operator may use besides the case: its own seeded random source, and the set's other
    acceptable cases (the relevance operators answer one shopper with another's answer)."""

    rng: random.Random
    others: Sequence[TestCase] = field(default_factory=tuple)


Apply = Callable[[TestCase, Context], "Perturbed | None"]


@dataclass(frozen=True)
class Operator:
    name: str
    family: str
    summary: str  # what it changes and why the result is a defect (docs/sensitivity.md says more)
    apply: Apply
    locales: tuple[str, ...] = ("en", "ja")  # language parts of the locales it applies to

    def applies_to_locale(self, case: TestCase) -> bool:
        return case.locale.split("-")[0].lower() in self.locales


def with_response(case: TestCase, response: str, **updates: Any) -> TestCase:
    return case.model_copy(update={"response": response, **updates})


def pick(ctx: Context, options: Sequence[Any]) -> Any:
    return options[ctx.rng.randrange(len(options))]


def answer(case: TestCase) -> str:
    return case.response or ""


# ------------------------------------------------------------------ catalog

def item_names(item: CatalogItem) -> list[str]:
    """The names an answer calls a catalog entry by, longest first: its title and Japanese title, the
    title before a ", Vol." part, and the Japanese title without its trailing volume number."""
    import re

    names = {item.title, item.title_ja or "", item.title_romaji or ""}
    names.add(re.split(r",\s*(?:Vol\.|Volume)", item.title)[0])
    if item.title_ja:
        names.add(re.sub(r"\s*\d+\s*$", "", item.title_ja))
    return sorted({n.strip() for n in names if n and len(n.strip()) >= 2}, key=lambda n: (-len(n), n))


def mentions_of(text: str, item: CatalogItem) -> list[Span]:
    for name in item_names(item):
        spans = find_all(text, name)
        if spans:
            return spans
    return []


def authors_of(item: CatalogItem) -> list[str]:
    import re

    return [a.strip() for a in re.split(r"[,、/&]| and ", item.author or "") if a.strip()]


def catalog_prices(case: TestCase) -> list[tuple[float, str]]:
    return [(item.price, item.currency) for item in case.catalog]


# ------------------------------------------------------------------ the order(s) on the page

def orders_of(case: TestCase) -> list[dict[str, Any]]:
    """The page's order and its items (each a dict), and any ``orders`` list the page carries."""
    page = case.page_context.model_dump()
    found: list[dict[str, Any]] = []
    for order in [page.get("order")] + list(page.get("orders") or []):
        if isinstance(order, dict):
            found.append(order)
            found.extend(i for i in order.get("items") or [] if isinstance(i, dict))
    return found


def order_values(case: TestCase, key_test: Callable[[str], bool]) -> Iterator[Any]:
    for record in orders_of(case):
        for key, value in record.items():
            if key_test(key) and value not in (None, ""):
                yield value


def order_dates(case: TestCase) -> list[Any]:
    seen = []
    for value in order_values(case, lambda k: ("date" in k and k != "release_date") or k in ("eta", "original_eta")):
        parsed = parse_iso(value)
        if parsed and parsed not in seen:
            seen.append(parsed)
    return seen


def evidence_text(case: TestCase) -> str:
    """Every text the case gives as evidence or context (chunks, earlier turns, catalog, page)."""
    parts = list(case.retrieved_chunks) + [m.content for m in case.conversation_history]
    parts += [case.query] + [i.model_dump_json() for i in case.catalog] + [case.page_context.model_dump_json()]
    return "\n".join(parts)
