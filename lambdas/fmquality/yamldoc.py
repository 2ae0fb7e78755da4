"""Reading a YAML document into a pydantic model, with errors that name the file and every field.

Shared by the rubric, the rubric profiles and the prompt bundles."""

from __future__ import annotations

from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)


def validation_problems(exc: ValidationError) -> str:
    """Every problem of a YAML document's validation as `field.path: message`, on one line."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())


def yaml_mapping(text: str, source: str, error: type[Exception], what: str) -> dict[str, Any]:
    """The document as a mapping; ``error`` (naming ``source``) when it is not YAML or not a mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{source}: {what} must be a YAML mapping")
    return data


def parse_model(model: type[ModelT], data: dict[str, Any], source: str, error: type[Exception], what: str) -> ModelT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(f"{source}: invalid {what}: {validation_problems(exc)}") from exc
