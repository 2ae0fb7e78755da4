"""Test-set subsets (issue 11, item 4): which cases a run scores, and how the dataset is spread.

Filter grammar (CLI ``--filter``)::

    filter  := clause (";" clause)*
    clause  := key "=" value ("," value)*
    key     := tag | tags | intent | intents | category | locale | locales | complexity | test_id | test_ids

Within a clause the values are alternatives (OR); the clauses must all hold (AND). A key given twice
is an error, as are an unknown key, an empty value and a complexity other than simple/medium/complex.
Values are compared exactly (tags, intents, locales and ids are case-sensitive identifiers), with
surrounding spaces ignored. ``tag=policy,retrieval;locale=ja-JP`` selects the Japanese cases tagged
policy or retrieval.

The execution input takes the same filter as an object:
``{"tags": [...], "intents": [...], "locales": [...], "complexity": [...], "test_ids": [...]}``.

A case's complexity is read from ``complexity`` (a field, once TestCase has it) or its metadata.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from fmquality.domain.errors import FilterError

Complexity = Literal["simple", "medium", "complex"]

# CLI keys (singular and plural spellings) -> Filter field. "category" is the profile-neutral name of
# a case's intent.
_CLI_KEYS = {
    "tag": "tags", "tags": "tags",
    "intent": "intents", "intents": "intents", "category": "intents", "categories": "intents",
    "locale": "locales", "locales": "locales",
    "complexity": "complexity",
    "test_id": "test_ids", "test_ids": "test_ids", "id": "test_ids",
}
# The knowledge-base refresh rule scores the cases about policies and retrieval (issue 11, item 4).
KB_REFRESH_FILTER = {"tags": ["policy", "retrieval"]}


class Filter(BaseModel):
    """Conditions on cases: each non-empty list is an OR of values, the lists are ANDed."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] = Field(default_factory=list)
    intents: list[str] = Field(default_factory=list)
    locales: list[str] = Field(default_factory=list)
    complexity: list[Complexity] = Field(default_factory=list)
    test_ids: list[str] = Field(default_factory=list)

    @field_validator("tags", "intents", "locales", "test_ids")
    @classmethod
    def _no_blank(cls, values: list[str]) -> list[str]:
        if any(not v.strip() for v in values):
            raise ValueError("values must not be blank")
        return [v.strip() for v in values]

    @property
    def empty(self) -> bool:
        return not any((self.tags, self.intents, self.locales, self.complexity, self.test_ids))

    def describe(self) -> str:
        """The filter in the CLI grammar (canonical key order), or "all cases"."""
        parts = [f"{key}={','.join(values)}" for key, values in (
            ("tag", self.tags), ("intent", self.intents), ("locale", self.locales),
            ("complexity", self.complexity), ("test_id", self.test_ids)) if values]
        return ";".join(parts) or "all cases"

    def matches(self, case: Any) -> bool:
        if self.tags and not set(self.tags) & set(getattr(case, "tags", None) or []):
            return False
        if self.intents and _intent(case) not in self.intents:
            return False
        if self.locales and getattr(case, "locale", None) not in self.locales:
            return False
        if self.complexity and complexity_of(case) not in self.complexity:
            return False
        if self.test_ids and getattr(case, "test_id", None) not in self.test_ids:
            return False
        return True


def _intent(case: Any) -> str | None:
    intent = getattr(case, "intent", None)
    return getattr(intent, "value", intent)


def complexity_of(case: Any) -> str | None:
    value = getattr(case, "complexity", None)
    if value is None:
        value = (getattr(case, "metadata", None) or {}).get("complexity")
    return value if isinstance(value, str) else None


def _validated(data: dict[str, Any], source: str) -> Filter:
    try:
        return Filter.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key {err['loc'][0]!r} (allowed: {', '.join(Filter.model_fields)})")
            else:
                problems.append(f"{key}: {err['msg']}" + (f" (got {err.get('input')!r})" if err["type"] == "literal_error" else ""))
        raise FilterError(f"{source}: " + "; ".join(problems)) from exc


def parse_filter(text: str | None) -> Filter:
    """A filter from the CLI grammar (module docstring). None or blank: no filter."""
    if text is None or not text.strip():
        return Filter()
    data: dict[str, list[str]] = {}
    for clause in (c.strip() for c in text.split(";")):
        if not clause:
            continue
        key, sep, raw_values = clause.partition("=")
        key = key.strip().lower()
        if not sep:
            raise FilterError(f"--filter: {clause!r} is not key=value[,value...]")
        if key not in _CLI_KEYS:
            raise FilterError(f"--filter: unknown key {key!r} (allowed: tag, intent, category, locale, complexity, test_id)")
        target = _CLI_KEYS[key]
        if target in data:
            raise FilterError(f"--filter: {key!r} given twice; put the alternatives in one clause ({key}=a,b)")
        values = [v.strip() for v in raw_values.split(",")]
        if not any(values) or not all(values):
            raise FilterError(f"--filter: {key!r} has an empty value")
        data[target] = values
    return _validated(data, "--filter")


def filter_from_input(value: Any) -> Filter:
    """The execution input's ``filter``: an object as in the module docstring, a CLI-grammar string,
    or absent (None)."""
    if value is None:
        return Filter()
    if isinstance(value, str):
        return parse_filter(value)
    if not isinstance(value, dict):
        raise FilterError(f"filter: expected an object or a string, got {type(value).__name__}")
    for key, values in value.items():
        if not isinstance(values, list):
            raise FilterError(f"filter: {key!r} must be a list of strings")
    return _validated(value, "filter")


def apply_filter(cases: Iterable[Any], flt: Filter | None) -> tuple[list[Any], str]:
    """The cases the filter selects (in order) and a description for the report."""
    cases = list(cases)
    if flt is None or flt.empty:
        return cases, f"all cases ({len(cases)})"
    selected = [c for c in cases if flt.matches(c)]
    return selected, f"{flt.describe()}: {len(selected)} of {len(cases)} cases"


def distribution(cases: Iterable[Any]) -> dict[str, dict[str, int]]:
    """Counts by tag (a case counts under each of its tags; "(untagged)" for none), complexity
    ("(unset)" when absent), intent and locale, each sorted by key."""
    by_tag: Counter[str] = Counter()
    by_complexity: Counter[str] = Counter()
    by_intent: Counter[str] = Counter()
    by_locale: Counter[str] = Counter()
    for case in cases:
        tags = getattr(case, "tags", None) or ["(untagged)"]
        by_tag.update(set(tags))
        by_complexity[complexity_of(case) or "(unset)"] += 1
        by_intent[str(_intent(case))] += 1
        by_locale[str(getattr(case, "locale", None))] += 1
    return {name: dict(sorted(counter.items())) for name, counter in (
        ("by_tag", by_tag), ("by_complexity", by_complexity), ("by_intent", by_intent), ("by_locale", by_locale))}
