"""Reading a YAML document into a pydantic model, with errors that name the file and every field.

Shared by the rubric, the rubric profiles and the prompt bundles."""

from __future__ import annotations

import math
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)


def validation_problems(exc: ValidationError) -> str:
    """Every problem of a YAML document's validation as `field.path: message`, on one line."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first on line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def _non_finite(data: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinite number in a parsed document, or None."""
    if isinstance(data, float) and not math.isfinite(data):
        return path or "<root>"
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _non_finite(value, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def yaml_mapping(text: str, source: str, error: type[Exception], what: str) -> dict[str, Any]:
    """The document as a mapping; ``error`` (naming ``source`` and the place) when it is not YAML,
    not a mapping, gives a key twice or holds a NaN or infinite number."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{source}: {what} must be a YAML mapping")
    bad = _non_finite(data)
    if bad:
        raise error(f"{source}: {bad}: not a finite number")
    return data


def parse_model(model: type[ModelT], data: dict[str, Any], source: str, error: type[Exception], what: str) -> ModelT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(f"{source}: invalid {what}: {validation_problems(exc)}") from exc
