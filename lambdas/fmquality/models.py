"""The quality model: test cases, dimension scores, item results and run reports.

These pydantic models are the contracts between the dataset loader, the scorers, the judges, the
Lambda handlers and the reports. Field names here are the output contract of the README.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from fmquality.profiles.fields import Citation, Complexity, ExpectedTool, Source, ToolCall


class Intent(str, Enum):
    RECOMMENDATION = "recommendation"
    PRODUCT_QUESTION = "product_question"
    FAQ = "faq"
    ORDER_TRACKING = "order_tracking"
    RETURN_REQUEST = "return_request"
    PROMOTION = "promotion"
    CHECKOUT_HELP = "checkout_help"
    CHITCHAT = "chitchat"


class Dimension(str, Enum):
    RELEVANCE = "relevance"
    FACTUAL_ACCURACY = "factual_accuracy"
    CONSISTENCY = "consistency"
    FLUENCY = "fluency"


DIMENSIONS: tuple[str, ...] = tuple(d.value for d in Dimension)

SUB_SCORES: dict[str, tuple[str, ...]] = {
    "relevance": ("intent_relevance", "product_relevance", "context_relevance"),
    "factual_accuracy": (
        "fact_coverage",
        "no_hallucination",
        "price_accuracy",
        "availability_accuracy",
        "policy_accuracy",
        "attribute_accuracy",
    ),
    "consistency": ("intra_turn", "cross_turn", "persona"),
    "fluency": ("grammar", "tone", "formatting"),
}


# --------------------------------------------------------------------------------------------------
# Dataset (DESIGN section 4)
# --------------------------------------------------------------------------------------------------


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class OrderContext(BaseModel):
    model_config = ConfigDict(extra="allow")

    order_id: str | None = None
    status: str | None = None
    ship_date: str | None = None
    eta: str | None = None


class PageContext(BaseModel):
    model_config = ConfigDict(extra="allow")

    current_asin: str | None = None
    store_section: str | None = None
    order: OrderContext | None = None


class CatalogItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    asin: str = Field(min_length=1)
    title: str = Field(min_length=1)
    price: float = Field(ge=0, allow_inf_nan=False)
    currency: Literal["USD", "JPY"] = "USD"
    availability: Literal["in_stock", "out_of_stock", "preorder", "limited"] = "in_stock"
    author: str | None = None
    title_ja: str | None = None
    title_romaji: str | None = None
    genre: str | None = None


class Label(BaseModel):
    model_config = ConfigDict(extra="allow")

    acceptable: StrictBool  # "yes" or 1 is not a label: the line is refused, naming the field
    defect: str | None = None
    notes: str | None = None


def check_locale(value: str) -> str:
    """A language-region tag such as 'en-US' or 'ja-JP' (test cases and captured turns alike)."""
    parts = value.split("-")
    if len(parts) != 2 or not parts[0].isalpha() or not parts[1].isalnum():
        raise ValueError(f"locale must look like 'en-US' or 'ja-JP', got {value!r}")
    return value


class TestCase(BaseModel):
    """One line of the JSON Lines dataset. Unknown fields are moved into ``metadata``.

    ``intent`` is a category of the rubric's profile (for MangaAssist one of ``Intent``); the dataset
    loader checks it against the profile's categories. The profile fields (``citations`` ...
    ``complexity``) are optional and empty by default; the research-agent and tool-use checks read
    them (``profiles.fields.fields_of``)."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    test_id: str = Field(min_length=1)
    intent: str = Field(min_length=1)
    locale: str = "en-US"
    query: str
    response: str | None = None
    conversation_history: list[Message] = Field(default_factory=list)
    page_context: PageContext = Field(default_factory=PageContext)
    expected_products: list[str] = Field(default_factory=list)
    expected_facts: list[str] = Field(default_factory=list)
    forbidden_content: list[str] = Field(default_factory=list)
    reference_response: str | None = None
    retrieved_chunks: list[str] = Field(default_factory=list)
    catalog: list[CatalogItem] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    label: Label | None = None
    # Profile fields (research-agent, tool-use): what the agent cited, retrieved and called, and what
    # the case expects of it.
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    expected_tools: list[ExpectedTool] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    required_keywords: list[str] = Field(default_factory=list)
    required_facts: list[str] = Field(default_factory=list)
    complexity: Complexity | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields)
        unknown = {k: v for k, v in data.items() if k not in known}
        if not unknown:
            return data
        kept = {k: v for k, v in data.items() if k in known}
        metadata = dict(kept.get("metadata") or {})
        metadata.update(unknown)
        kept["metadata"] = metadata
        return kept

    @field_validator("intent", mode="before")
    @classmethod
    def _intent_value(cls, value: Any) -> Any:
        return value.value if isinstance(value, Enum) else value

    @field_validator("required_keywords", "required_facts", "forbidden_tools")
    @classmethod
    def _entries_not_blank(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("entries must not be blank")
        return value

    @model_validator(mode="after")
    def _unique_source_ids(self) -> "TestCase":
        ids = [s.id for s in self.sources]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"sources: duplicate id(s) {dupes}")
        return self

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be empty")
        return value

    @field_validator("locale")
    @classmethod
    def _locale_shape(cls, value: str) -> str:
        return check_locale(value)

    @property
    def is_japanese(self) -> bool:
        return self.locale.lower().startswith("ja")

    def catalog_by_asin(self) -> dict[str, CatalogItem]:
        return {item.asin: item for item in self.catalog}


# --------------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------------

ScoreStatus = Literal["scored", "unscored", "not_applicable"]
ResultStatus = Literal["scored", "unscored", "error"]


class SubScore(BaseModel):
    """One sub-score with the evidence for it. ``source`` says who computed it."""

    name: str
    score: float = Field(ge=0.0, le=1.0)
    evidence: list[str] = Field(default_factory=list)
    source: Literal["check", "judge"] = "check"


# Evidence-backed findings that fail an item whatever its composite (DESIGN section 5, "Who may fail
# an item"): each is a claim the checks read completely and found contradicted by the catalog, the
# knowledge, the page or the answer itself, or a defect of the text as a whole.
HARD_FAIL_RULES: tuple[str, ...] = (
    "forbidden_content",  # a string the case forbids (a spoiler, a stale policy) is in the answer
    "price_contradiction",  # a product's price differs from its catalog price
    "arithmetic_error",  # a sale price, total or written sum that does not follow from its own numbers
    "availability_contradiction",  # a product's stock status differs from the catalog's
    "policy_contradiction",  # a policy number the knowledge gives another value, appearing nowhere in it
    "attribute_contradiction",  # an author or a volume count differs from the catalog's
    "expected_facts_missing",  # not one part of any fact the case says the answer must convey
    "order_contradiction",  # an order's id, status, carrier or dates differ from the order on the page
    "self_contradiction",  # one subject given two values in one answer
    "turn_contradiction",  # a value differs from what an earlier assistant turn said, unacknowledged
    "wrong_reference",  # "the second one" answered about another listed item
    "persona_break",  # the answer says it is an AI model or names another assistant
    "grader_address",  # the answer addresses its evaluator (a note to the grader is part of the answer)
    "unfit_for_age",  # a product recommended to a reader younger than its age rating
    "constraint_ignored",  # a product offered against the shopper's stated budget, completed-only or in-stock-only wish
    "injection_followed",  # the answer grants what an instruction injected into the shopper's message asked for
    "unsupported_code",  # a coupon or promo code presented as one that no evidence carries
    "wrong_language",  # the answer (or a sentence of it) is in another language than the shopper's
    "truncated_response",  # the answer stops mid-sentence
    "length_out_of_range",  # longer or shorter than the rubric's length rule for the intent
    "empty_response",
)
HardFailRule = Literal[HARD_FAIL_RULES]  # type: ignore[valid-type]


class HardFailure(BaseModel):
    """A rule that fails the item whatever its composite score."""

    rule: HardFailRule
    dimension: str
    sub_score: str | None = None
    detail: str


class JudgeUsage(BaseModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cached_verdicts: int = 0

    def add(self, other: "JudgeUsage") -> "JudgeUsage":
        return JudgeUsage(**{k: getattr(self, k) + getattr(other, k) for k in JudgeUsage.model_fields})


class RunJudgeUsage(JudgeUsage):
    """A run's judge usage in report.json: the summed counters plus what they mean per case and in
    money. ``usd_estimate`` is None when the judge model has no entry in the rubric's
    ``judge.prices`` (an unknown price is not zero); a run without tokens costs 0."""

    calls_per_case: float | None = None
    usd_estimate: float | None = None
    model_id: str | None = None


class DimensionScore(BaseModel):
    """The score of one quality dimension for one test case.

    ``score`` is None exactly when ``status`` is not "scored": a judge failure ("unscored") is never
    a number, and a dimension none of whose sub-scores applies to the answer ("not_applicable",
    e.g. consistency of a one-line greeting) is left out of the composite, not given full marks.
    ``sub_scores`` holds only the sub-scores that were scored; the others are listed in
    ``not_applicable`` (nothing of the kind in the case) or ``abstained`` (the judge found no
    evidence to grade it, with the reason).
    """

    dimension: str
    status: ScoreStatus
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    sub_scores: dict[str, float] = Field(default_factory=dict)
    evidence: list[str] = Field(default_factory=list)
    not_applicable: list[str] = Field(default_factory=list)
    abstained: dict[str, str] = Field(default_factory=dict)
    # The sub-scores a judge graded (the rest were settled by the checks from evidence they found).
    judged: list[str] = Field(default_factory=list)
    # Of the judged sub-scores, those whose reading is heuristic: the weight in the composite its
    # measured agreement with people earns (0..1). A heuristic reading never fails an item alone.
    weights: dict[str, float] = Field(default_factory=dict)
    hard_failures: list[HardFailure] = Field(default_factory=list)
    unscored_reason: str | None = None
    judge_calls: int = 0
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    judge_prompt: str | None = None
    judge_raw: str | None = None

    @model_validator(mode="after")
    def _score_matches_status(self) -> "DimensionScore":
        if self.status == "scored" and self.score is None:
            raise ValueError("a scored dimension needs a score")
        if self.status != "scored" and self.score is not None:
            raise ValueError(f"a dimension that is {self.status} must not carry a score")
        if self.status != "scored" and not self.unscored_reason:
            raise ValueError(f"a dimension that is {self.status} needs a reason (unscored_reason)")
        return self


Arm = Literal["candidate", "control"]
ARMS: tuple[str, ...] = ("candidate", "control")


class GenerationUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class Generation(BaseModel):
    """How the answer of one case was obtained from a target (``recorded``: the dataset line's own).

    ``response`` is exactly what the target returned; None (with ``error``) when generation failed
    after its retries, and such an item is an error record, never scored."""

    target_id: str
    target_kind: str
    target_version: str | None = None
    response: str | None = None
    latency_ms: float | None = None
    usage: GenerationUsage = Field(default_factory=GenerationUsage)
    cost_usd: float | None = None
    citations: list[Any] = Field(default_factory=list)
    tool_calls: list[Any] = Field(default_factory=list)
    attempts: int = 1
    error: str | None = None
    # Why the target stopped: "end_turn" for a complete answer; "max_tokens", "guardrail_intervened",
    # "content_filtered" for one it cut or blocked (the rubric's ``generation.incomplete_stop_reasons``).
    stop_reason: str | None = None


class EvaluationResult(BaseModel):
    """The result of one test case: the ``results.jsonl`` line (``control_results.jsonl`` for the
    control arm of a paired run)."""

    run_id: str | None = None
    test_id: str
    arm: Arm = "candidate"
    intent: str
    locale: str
    status: ResultStatus
    passed: bool
    composite_score: float | None = None
    threshold: float
    dimension_scores: dict[str, DimensionScore] = Field(default_factory=dict)
    hard_failures: list[HardFailure] = Field(default_factory=list)
    failure_reasons: list[str] = Field(default_factory=list)
    judge_calls: int = 0
    judge_usage: JudgeUsage = Field(default_factory=JudgeUsage)
    rubric_version: str
    tags: list[str] = Field(default_factory=list)
    label: dict[str, Any] | None = None  # the case's label as given, for calibration
    # Profiles with letter grades (tool-use): 100 x the composite and its grade; None otherwise.
    total_100: float | None = None
    grade: str | None = None
    # The catalog entries the case was scored with (its own snapshot and the products in play), so a
    # reviewer sees what the checks and the judge were given.
    catalog_asins: list[str] = Field(default_factory=list)
    # What was said: the shopper's last query and the answer that was scored (None: no answer).
    query: str | None = None
    response: str | None = None
    generation: Generation | None = None
    error: str | None = None


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
    # before filtering, by tag, complexity, intent and locale (fmquality.subsets).
    filter: str | None = None
    distribution: dict[str, dict[str, int]] | None = None
    # Profiles with letter grades: {"cases": {grade: n}, "categories": {category: {cases, mean_total,
    # grade, grades}}, "mean_total", "grade"}; None otherwise.
    grades: dict[str, Any] | None = None
