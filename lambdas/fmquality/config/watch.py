"""Production-watch settings: the rubric's ``production`` section (sampling, monitor thresholds,
drift, review). The defaults below are the shipped rubric's values (a test keeps them equal);
``WATCH_CONFIG`` (JSON) overrides them in a Lambda's environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fmquality.config.yamldoc import validation_problems, yaml_mapping
from fmquality.domain.errors import WatchConfigError

WATCH_CONFIG_ENV = "WATCH_CONFIG"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingSettings(_Strict):
    rate: float = Field(default=0.01, gt=0.0, le=1.0)
    min_per_stratum: int = Field(default=30, ge=0)
    window_days: int = Field(default=7, ge=1, le=31)
    seed: int = 0


class MonitorThresholds(_Strict):
    warning_pass_rate: float = Field(default=0.85, gt=0.0, le=1.0)
    critical_pass_rate: float = Field(default=0.70, gt=0.0, le=1.0)
    min_items_per_stratum: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> "MonitorThresholds":
        if self.critical_pass_rate > self.warning_pass_rate:
            raise ValueError("critical_pass_rate must not be above warning_pass_rate")
        return self


class DriftSettings(_Strict):
    cusum_k_sigma: float = Field(default=0.5, ge=0.0)
    cusum_h_sigma: float = Field(default=4.0, gt=0.0)
    min_sigma: float = Field(default=0.01, gt=0.0)
    ks_alpha: float = Field(default=0.001, gt=0.0, lt=1.0)
    min_items: int = Field(default=10, ge=2)
    worst_items: int = Field(default=5, ge=1, le=50)


class ReviewSettings(_Strict):
    confidence_below: float = Field(default=0.4, ge=0.0, le=1.0)
    composite_margin: float = Field(default=0.05, ge=0.0, le=1.0)
    passing_share: float = Field(default=0.05, ge=0.0, le=1.0)
    seed: int = 0
    kappa_alarm_below: float = Field(default=0.6, ge=-1.0, le=1.0)
    min_reviewed: int = Field(default=10, ge=2)


class WatchConfig(_Strict):
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    monitor: MonitorThresholds = Field(default_factory=MonitorThresholds)
    drift: DriftSettings = Field(default_factory=DriftSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)


def default_watch_path() -> Path | None:
    """The shipped rubric (packaged beside the core, or in the repository's datasets/)."""
    from fmquality.config.rubric import DEFAULT_RUBRIC_CANDIDATES  # noqa: PLC0415 - the rubric imports this module

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
