"""Where the production-watch settings come from: a rubric file's ``production`` section, else
``WATCH_CONFIG`` (JSON, as the Lambdas receive it), else the shipped rubric's section, else the
defaults of ``config/watch.py``. Kept apart from the settings so that the rubric, which holds a
``WatchConfig``, and the loader, which reads the shipped rubric's file, do not import each other.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fmquality.config.rubric import DEFAULT_RUBRIC_CANDIDATES
from fmquality.config.watch import WatchConfig
from fmquality.config.yamldoc import validation_problems, yaml_mapping
from fmquality.domain.errors import WatchConfigError

WATCH_CONFIG_ENV = "WATCH_CONFIG"


def default_watch_path() -> Path | None:
    """The shipped rubric (packaged beside the core, or in the repository's datasets/)."""
    return next((p for p in DEFAULT_RUBRIC_CANDIDATES if p.is_file()), None)


def parse_watch_config(data: Any, source: str) -> WatchConfig:
    """The ``production`` section of a rubric (or of any YAML mapping that has one)."""
    if not isinstance(data, dict) or not isinstance(data.get("production"), dict):
        raise WatchConfigError(f"{source}: expected a mapping with a `production` section")
    try:
        return WatchConfig.model_validate(data["production"])
    except ValidationError as exc:
        raise WatchConfigError(f"{source}: invalid production settings: {validation_problems(exc)}") from exc


def load_watch_config(path: str | Path | None = None) -> WatchConfig:
    """A rubric file's ``production`` section; without a path, ``WATCH_CONFIG`` JSON (as the Lambdas
    receive it), else the shipped rubric's section, else the defaults."""
    if path is None:
        override = os.environ.get(WATCH_CONFIG_ENV)
        if override:
            return parse_watch_config({"production": json.loads(override)}, WATCH_CONFIG_ENV)
        candidate = default_watch_path()
        if candidate is None:
            return WatchConfig()
        path = candidate
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WatchConfigError(f"{path}: cannot read: {exc}") from exc
    # The strict reader: a key given twice (the shipped rubric once had `production` twice) is refused.
    return parse_watch_config(yaml_mapping(text, str(path), WatchConfigError, "a rubric"), str(path))
