"""A run's outcome: ``report.json`` (breakdowns, regression flags, the gate, agreement with labels,
the paired comparison of candidate and control)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from fmquality.domain.scores import RunJudgeUsage


class Breakdown(BaseModel):
    total: int
    passed: int
    pass_rate: float
    avg_score: float | None = None
    unscored: int = 0


class RegressionFlag(BaseModel):
    subset: str  # "overall", "intent:faq", "locale:ja-JP", "tag:regression"
    baseline_mean: float
    candidate_mean: float
    drop: float
    allowed_drop: float


class Kappa(BaseModel):
    """Cohen's kappa between the item verdicts (``passed``) and the labels (``label.acceptable``),
    with the 2x2 table it comes from. ``value`` is None, with ``undefined_reason``, when either side
    has a single class (kappa then says nothing about agreement) or nothing is labelled."""

    n: int
    value: float | None
    undefined_reason: str | None = None
    passed_acceptable: int = 0
    passed_defective: int = 0
    failed_acceptable: int = 0
    failed_defective: int = 0


class FamilyRecall(BaseModel):
    """The defective answers of one defect family (``domain.defects.family_of`` of ``label.defect``) and
    how many of them the gate failed."""

    family: str
    defective: int
    caught: int
    recall: float | None
    kinds: dict[str, int] = Field(default_factory=dict)  # label.defect -> defective answers of that kind
    missed_ids: list[str] = Field(default_factory=list)


class Calibration(BaseModel):
    """How the gate's item verdicts agree with human labels (cases carrying `label.acceptable`)."""

    labelled: int
    acceptable: int
    defective: int
    acceptable_failed: int
    defective_passed: int
    acceptable_failed_rate: float | None
    defective_passed_rate: float | None
    agreement: float | None
    acceptable_failed_ids: list[str] = Field(default_factory=list)
    defective_passed_ids: list[str] = Field(default_factory=list)
    # Absent from reports written before kappa was measured, hence the defaults.
    kappa: Kappa | None = None
    kappa_by_intent: dict[str, Kappa] = Field(default_factory=dict)
    kappa_by_locale: dict[str, Kappa] = Field(default_factory=dict)
    # Per defect family: the defective answers and how many failed (absent from older reports).
    families: list[FamilyRecall] = Field(default_factory=list)


class PairedInterval(BaseModel):
    """Candidate minus control over the cases of one subset that both arms scored: the mean of the
    per-case composite differences with its percentile-bootstrap interval."""

    subset: str  # "overall", "intent:faq", "locale:ja-JP", "tag:policy"
    n: int
    candidate_mean: float
    control_mean: float
    mean_difference: float
    ci_low: float
    ci_high: float
    allowed_drop: float
    regressed: bool  # the whole interval lies below -allowed_drop


class PairedItem(BaseModel):
    test_id: str
    intent: str
    locale: str
    candidate_score: float | None
    control_score: float | None
    difference: float | None  # None when either arm has no composite
    candidate_passed: bool
    control_passed: bool


class PairedComparison(BaseModel):
    confidence: float
    resamples: int
    seed: int
    pairs: int  # cases with a composite in both arms
    unpaired: list[str] = Field(default_factory=list)  # test ids missing a composite in an arm
    control_pass_rate: float
    control_mean_composite: float | None
    overall: PairedInterval | None
    subsets: list[PairedInterval] = Field(default_factory=list)
    items: list[PairedItem] = Field(default_factory=list)


class GateResult(BaseModel):
    passed: bool
    reasons: list[str] = Field(default_factory=list)


class RunReport(BaseModel):
    run_id: str
    trigger: str = "manual"
    dataset: str
    # The catalog the run resolved: an s3:// URI or dynamodb:<version> (None: the cases' own snapshots).
    catalog: str | None = None
    rubric_version: str
    judge: str
    # How the judge was asked: "per_dimension" or "combined" (None: the engine did not say).
    judge_mode: str | None = None
    engine: str = "direct"
    started_at: str | None = None
    finished_at: str | None = None
    total_cases: int
    passed_cases: int
    failed_cases: int
    unscored_cases: int
    error_cases: int = 0
    rejected_lines: int = 0
    pass_rate: float
    mean_composite: float | None = None
    dimension_averages: dict[str, float | None]
    intent_breakdown: dict[str, Breakdown]
    locale_breakdown: dict[str, Breakdown]
    tag_breakdown: dict[str, Breakdown]
    regression_flags: list[RegressionFlag] = Field(default_factory=list)
    baseline_run_id: str | None = None
    gate: GateResult
    judge_usage: RunJudgeUsage = Field(default_factory=RunJudgeUsage)
    failing_items: list[dict[str, Any]] = Field(default_factory=list)
    # Red-team runs: per attack class (tag attack:<class>), items, unsafe items, and against the labels
    # acceptable answers that failed and defective ones that passed (report.safety).
    adversarial: dict[str, dict[str, Any]] | None = None
    calibration: Calibration | None = None
    # The targets that answered (their spec, id and version); None for the candidate means recorded.
    target: dict[str, Any] | None = None
    control_target: dict[str, Any] | None = None
    paired: PairedComparison | None = None
    generation_summary: dict[str, Any] | None = None
    # A sampled production run (every case tagged "production"): healthy / warning / critical /
    # insufficient_data, overall and per intent x locale (fmquality.production.monitor.MonitorBlock).
    monitor: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    # The subset scored ("tag=policy: 3 of 60 cases", or "all cases (60)") and the dataset's spread,
    # before filtering, by tag, complexity, intent and locale (fmquality.run.subsets).
    filter: str | None = None
    distribution: dict[str, dict[str, int]] | None = None
    # Profiles with letter grades: {"cases": {grade: n}, "categories": {category: {cases, mean_total,
    # grade, grades}}, "mean_total", "grade"}; None otherwise.
    grades: dict[str, Any] | None = None
    # The dataset's content (sha256 of its bytes) and version: `baseline: auto` compares equal contents only.
    dataset_sha256: str | None = None
    dataset_version: str | None = None
    # Why an approved baseline was not compared with (another dataset content), when it was not.
    baseline_note: str | None = None
    # A failing gate run's failing items queued for human review: {"queued": n, "location": where}.
    review_queue: dict[str, Any] | None = None
