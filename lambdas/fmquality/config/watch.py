"""Production-watch settings: the rubric's ``production`` section (sampling, monitor thresholds,
drift, review, online judging and drift on the stream). The defaults below are the shipped rubric's values (a test keeps them equal). Where
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


class StreamDriftSettings(_Strict):
    """Drift on the online stream (``production.stream_drift``). Two standardised one-sided CUSUMs per
    stratum over the judged items' composites, updated once per window with the window's items
    (``S = max(0, S + sum((mu - x) / sigma) - k * n)``, k and h in item standard deviations): a fast
    one for large drops, a slow one (small k) for small sustained drops; and a KS test per KS window.
    Tuned by ``python -m bench drift`` (docs/production-watch.md)."""

    window_minutes: int = Field(default=5, ge=1, le=240)
    # A window is read this long after it ends: online judgments arrive late (Firehose buffering, judging).
    lateness_minutes: int = Field(default=2, ge=0, le=60)
    fast_k: float = Field(default=0.25, ge=0.0)
    fast_h: float = Field(default=20.0, gt=0.0)
    slow_k: float = Field(default=0.05, ge=0.0)
    slow_h: float = Field(default=90.0, gt=0.0)
    ks_window_minutes: int = Field(default=60, ge=5, le=1440)
    ks_alpha: float = Field(default=1e-5, gt=0.0, lt=1.0)
    ks_min_items: int = Field(default=50, ge=2)
    ks_max_items: int = Field(default=600, ge=20)
    # After an alarm the stratum's sums restart and no new alarm is raised for this long.
    cooldown_minutes: int = Field(default=180, ge=0)
    reference_max_items: int = Field(default=3000, ge=50)  # composites kept in reference.json for KS
    top_items: int = Field(default=5, ge=1, le=50)

    @model_validator(mode="after")
    def _ks_whole_windows(self) -> "StreamDriftSettings":
        if self.ks_window_minutes % self.window_minutes:
            raise ValueError("ks_window_minutes must be a multiple of window_minutes")
        return self


class OnlineSettings(_Strict):
    """Online judging (``production.online``): the sampler's rate and per-cell quota per window (the
    weekly sample is the same policy over a 7-day window: ``sampling``)."""

    rate: float = Field(default=0.01, gt=0.0, le=1.0)
    # Minimum judged per cell (locale x intent x user tier) per sampling window, first come: small
    # cells keep statistical power (quota 30 per 5 minutes = 360 per hour per cell).
    quota_per_cell: int = Field(default=30, ge=0)
    window_minutes: int = Field(default=5, ge=1, le=1440)
    seed: int = 0


class WatchConfig(_Strict):
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    monitor: MonitorThresholds = Field(default_factory=MonitorThresholds)
    drift: DriftSettings = Field(default_factory=DriftSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    stream_drift: StreamDriftSettings = Field(default_factory=StreamDriftSettings)
    online: OnlineSettings = Field(default_factory=OnlineSettings)
