"""One module per quality dimension; ``DIMENSION_MODULES`` maps each name to its module."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from fmquality.domain.scores import DIMENSIONS


@cache
def dimension_module(name: str) -> ModuleType:
    if name not in DIMENSIONS:
        raise KeyError(f"unknown dimension {name!r}; expected one of {list(DIMENSIONS)}")
    return importlib.import_module(f"fmquality.schemes.mangaassist.{name}.check")
