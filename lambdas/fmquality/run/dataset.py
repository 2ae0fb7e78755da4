"""Load and validate a JSON Lines dataset. Every bad line is reported with file, line, field and reason."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fmquality.language.catalog_index import CatalogIndex, resolve_catalog
from fmquality.domain.case import CatalogItem, Intent, TestCase
from fmquality.domain.errors import DatasetError, LineError

# The categories a case's intent may name when no rubric says otherwise: MangaAssist's intents.
DEFAULT_CATEGORIES: tuple[str, ...] = tuple(i.value for i in Intent)


@dataclass
class LoadedDataset:
    source: str
    cases: list[TestCase] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    # 1-based line number of each valid case, for messages later on.
    line_of: dict[str, int] = field(default_factory=dict)


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<line>"


def intent_error(intent: str, categories: tuple[str, ...] | list[str]) -> str | None:
    """Why an intent is not one of the profile's categories (None when it is)."""
    if intent in categories:
        return None
    allowed = ", ".join(repr(c) for c in categories)
    return f"Input should be one of {allowed} (got {intent!r})"


class _NotJson(ValueError):
    """A JSON text Python would read but no other reader would: NaN, Infinity."""


def _refuse_constant(name: str) -> float:
    raise _NotJson(f"{name} is not a JSON number")


def read_json(raw: str) -> Any:
    """Strict JSON: NaN and Infinity refused, nesting beyond Python's recursion refused (ValueError)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def lone_surrogate(data: Any, path: str = "") -> str | None:
    """The field path of a string holding a lone surrogate ("\\ud800": valid JSON, not text any
    output can be written in), or None."""
    stack = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if any("\ud800" <= c <= "\udfff" for c in value):
                return where or "<line>"
        elif isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
            stack.extend((f"{where}.<key>" if where else "<key>", k) for k in value)
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
    return None


def parse_lines(lines: list[bytes], source: str, catalog: list[CatalogItem] | CatalogIndex | None = None,
                categories: tuple[str, ...] | list[str] | None = None) -> LoadedDataset:
    """Validate raw lines. Blank lines are skipped; everything else is a case or an error. With a run
    catalog (a snapshot file or a store-sized index), each case gets the catalog entries of the
    products in play (``catalog_index.resolve_catalog``), not the whole catalog. ``categories``: the
    rubric profile's categories, which a case's intent must name (default: MangaAssist's intents)."""
    allowed = tuple(categories) if categories is not None else DEFAULT_CATEGORIES
    result = LoadedDataset(source=source)
    index = CatalogIndex(catalog) if isinstance(catalog, list) and catalog else catalog or None
    seen: dict[str, int] = {}
    for number, raw_bytes in enumerate(lines, start=1):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            result.errors.append(LineError(file=source, line=number, field="<line>",
                                           reason=f"not valid UTF-8 (byte {exc.start}: {exc.reason})",
                                           raw=raw_bytes.decode("utf-8", "replace")[:500]))
            continue
        raw = raw.lstrip("\ufeff").strip()
        if not raw:
            continue
        try:
            data = read_json(raw)
        except json.JSONDecodeError as exc:
            result.errors.append(LineError(file=source, line=number, field="<line>",
                                           reason=f"not valid JSON: {exc.msg} at column {exc.colno}", raw=raw[:500]))
            continue
        except ValueError as exc:
            result.errors.append(LineError(file=source, line=number, field="<line>", reason=f"not valid JSON: {exc}",
                                           raw=raw[:500]))
            continue
        if not isinstance(data, dict):
            result.errors.append(LineError(file=source, line=number, field="<line>",
                                           reason="each line must be a JSON object", raw=raw[:500]))
            continue
        surrogate = lone_surrogate(data)
        if surrogate:
            result.errors.append(LineError(file=source, line=number, field=surrogate,
                                           reason="holds a lone surrogate (an escape like \\ud800 that encodes no character)",
                                           raw=raw[:500].encode("utf-8", "replace").decode("utf-8")))
            continue
        try:
            case = TestCase.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                reason = err["msg"]
                if err["type"] in ("enum", "literal_error"):
                    reason = f"{reason} (got {err.get('input')!r})"
                result.errors.append(LineError(file=source, line=number, field=_field_path(err["loc"]),
                                               reason=reason, raw=raw[:500]))
            continue
        bad_intent = intent_error(case.intent, allowed)
        if bad_intent:
            result.errors.append(LineError(file=source, line=number, field="intent", reason=bad_intent, raw=raw[:500]))
            continue
        if case.test_id in seen:
            result.errors.append(LineError(file=source, line=number, field="test_id",
                                           reason=f"duplicate test_id {case.test_id!r} (first on line {seen[case.test_id]})",
                                           raw=raw[:500]))
            continue
        seen[case.test_id] = number
        if index is not None:
            case = case.model_copy(update={"catalog": resolve_catalog(case, index)})
        result.cases.append(case)
        result.line_of[case.test_id] = number
    return result


def load_dataset(path: str | Path, catalog: list[CatalogItem] | CatalogIndex | None = None,
                 categories: tuple[str, ...] | list[str] | None = None) -> LoadedDataset:
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(f"{source}: cannot read dataset: {exc.strerror or exc}") from exc
    loaded = parse_lines(data.splitlines(), source, catalog, categories)
    if not loaded.cases and not loaded.errors:
        raise DatasetError(f"{source}: the dataset has no test cases")
    return loaded


def parse_catalog(raw: bytes, source: str) -> list[CatalogItem]:
    """A catalog snapshot: a JSON array of catalog items (or {"items": [...]}). Every bad item is
    listed in the DatasetError's ``errors``."""
    try:
        data = read_json(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(f"{source}: cannot read catalog: {exc}") from exc
    items = data.get("items") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise DatasetError(f"{source}: the catalog must be a JSON array of items")
    if not items:
        raise DatasetError(f"{source}: the catalog has no items")
    surrogate = lone_surrogate(items)
    if surrogate:
        raise DatasetError(f"{source}: {surrogate}: holds a lone surrogate (an escape that encodes no character)")
    out: list[CatalogItem] = []
    errors: list[LineError] = []
    for index, item in enumerate(items):
        try:
            out.append(CatalogItem.model_validate(item))
        except ValidationError as exc:
            for err in exc.errors():
                errors.append(LineError(file=source, line=index + 1, field=f"[{index}]." + _field_path(err["loc"]),
                                        reason=err["msg"]))
    first: dict[str, int] = {}
    for index, item in enumerate(out):
        if item.asin in first:
            errors.append(LineError(file=source, line=index + 1, field=f"[{index}].asin",
                                    reason=f"duplicate ASIN {item.asin!r} (first at item {first[item.asin] + 1})"))
        first.setdefault(item.asin, index)
    if errors:
        raise DatasetError(f"{source}: invalid catalog items", errors)
    return out


def load_catalog(path: str | Path) -> list[CatalogItem]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read catalog: {exc.strerror or exc}") from exc
    return parse_catalog(raw, str(path))


def dataset_json_schema() -> dict[str, Any]:
    from fmquality.config.profile import available_profiles, load_profile

    schema = TestCase.model_json_schema()
    schema["title"] = "Evaluation test case (one JSON object per line)"
    # The intent is a category of the rubric's profile, checked by the loader against that profile.
    schema["$defs"]["Intent"] = {"title": "Intent", "type": "string", "enum": list(DEFAULT_CATEGORIES),
                                 "description": "the MangaAssist intents (profile mangaassist)"}
    schema["properties"]["intent"] = {
        "title": "Intent", "type": "string", "minLength": 1,
        "description": "a category of the rubric's profile: " + "; ".join(
            f"{name}: {', '.join(load_profile(name).categories)}" for name in available_profiles()),
    }
    # Unknown fields are accepted and kept in `metadata` (see TestCase._keep_unknown_fields).
    schema["additionalProperties"] = True
    return schema
