"""Production-watch settings: the rubric's ``production`` section (sampling, monitor thresholds,
drift, review). The defaults below are the shipped rubric's values (a test keeps them equal). Where
the settings are read from (a rubric file, ``WATCH_CONFIG`` in a Lambda's environment):
``config/watch_loader.py``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
