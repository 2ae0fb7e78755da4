"""Rubric: versioned YAML with intent weights, thresholds, sub-score weights, hard-fail and gate rules."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, PrivateAttr, field_validator, model_validator

from fmquality.domain.payload import max_response_chars
from fmquality.domain.scores import HARD_FAIL_RULES
from fmquality.config.watch import WatchConfig
from fmquality.config.yamldoc import parse_model, yaml_mapping
from fmquality.config.profile import Profile, load_profile
from fmquality.domain.errors import ProfileError
from fmquality.domain.errors import RubricError

PACKAGE_ROOT = Path(__file__).resolve().parent
# The shipped rubric lives in the repository's datasets/ folder; inside a Lambda the same file is
# embedded next to the package (see DEFAULT_RUBRIC_CANDIDATES) so both find it without configuration.
DEFAULT_RUBRIC_CANDIDATES = (
    PACKAGE_ROOT / "data" / "mangaassist-v3.yaml",
    PACKAGE_ROOT.parents[2] / "datasets" / "rubrics" / "mangaassist-v3.yaml",
)

_SUM_TOLERANCE = 1e-6


class IntentRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # None: the profile's weights for this category. Given, they must name exactly the profile's
    # dimensions (checked by the Rubric, which knows the profile).
    weights: dict[str, float] | None = None
    threshold: float = Field(ge=0.0, le=1.0)

    @field_validator("weights")
    @classmethod
    def _weights_sum_to_one(cls, weights: dict[str, float] | None) -> dict[str, float] | None:
        if weights is None:
            return weights
        if any(w < 0 for w in weights.values()):
            raise ValueError("weights must not be negative")
        total = sum(weights.values())
        if not math.isclose(total, 1.0, abs_tol=_SUM_TOLERANCE):
            raise ValueError(f"weights must sum to 1, they sum to {total:.4f}")
        return weights


class LengthRule(BaseModel):
    min_words: int = Field(ge=0)
    max_words: int = Field(gt=0)


class ConventionScope(BaseModel):
    """Where a store convention applies: the answer's script, the case's locale and intent (an empty
    list means any). The Japanese-title convention is for English answers that mention Japanese
    titles; a Japanese answer to a Japanese shopper is judged as natural Japanese."""

    model_config = ConfigDict(extra="forbid")

    answer_scripts: list[Literal["latin", "japanese"]] = Field(default_factory=list)
    locales: list[str] = Field(default_factory=list)
    intents: list[str] = Field(default_factory=list)

    def applies(self, intent: str, locale: str, script: str) -> bool:
        """Whether the convention holds for an answer of ``intent`` and ``locale`` written in ``script``
        ("latin" or "japanese": ``language.text.script_of`` of the answer)."""
        return ((not self.answer_scripts or script in self.answer_scripts)
                and (not self.locales or locale in self.locales)
                and (not self.intents or intent in self.intents))

    def describe(self) -> str:
        parts = [f"answers in {' or '.join('English' if s == 'latin' else 'Japanese' for s in self.answer_scripts)}"
                 if self.answer_scripts else "",
                 f"locales {', '.join(self.locales)}" if self.locales else "",
                 f"intents {', '.join(self.intents)}" if self.intents else ""]
        return "; ".join(p for p in parts if p) or "every answer"


class StyleRules(BaseModel):
    length: dict[str, LengthRule] = Field(default_factory=dict)
    tone_register: dict[str, str] = Field(default_factory=dict)
    japanese_title_format: Literal["original_romaji_english", "original_only", "none"] = "original_romaji_english"
    japanese_title_scope: ConventionScope = Field(default_factory=lambda: ConventionScope(answer_scripts=["latin"]))
    product_card_fields: list[str] = Field(default_factory=lambda: ["title", "price", "availability"])
    product_card_scope: ConventionScope = Field(
        default_factory=lambda: ConventionScope(intents=["recommendation", "promotion"]))


class PersonaRules(BaseModel):
    name: str = "MangaAssist"
    forbidden_disclosures: list[str] = Field(default_factory=list)


class BaselineRules(BaseModel):
    max_mean_drop: float = Field(default=0.005, ge=0.0, le=1.0)
    max_subset_drop: float = Field(default=0.02, ge=0.0, le=1.0)


class PairedRules(BaseModel):
    """The gate of a paired run (a control target answered the same cases): candidate minus control,
    per case, with a percentile-bootstrap interval of the mean difference. A subset regresses when its
    whole interval lies below -max_*_drop; these rules replace the baseline mean-drop rules."""

    model_config = ConfigDict(extra="forbid")

    max_mean_drop: float = Field(default=0.005, ge=0.0, le=1.0)  # overall
    max_subset_drop: float = Field(default=0.02, ge=0.0, le=1.0)  # any intent, locale or tag subset
    bootstrap_resamples: int = Field(default=2000, ge=100, le=100_000)
    bootstrap_confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    bootstrap_seed: int = Field(default=20240917, ge=0)
    # A subset with fewer pairs gets no interval of its own (the overall interval still covers it).
    min_pairs: int = Field(default=5, ge=2)


class ItemGateRules(BaseModel):
    """Who may fail an item on their own, beyond the composite (DESIGN section 5): evidence-backed
    findings (``hard_fail_rules``), and a judge's verdict at its lowest level: a sub-score the judge
    graded below ``judge_lowest_level`` (the Bedrock judge's level 1 is 0.0). Heuristic readings
    count through the composite only. ``min_sub_score`` is an older, blunter rule kept for profiles
    that ask for it: any applicable sub-score below it fails the item (0 turns it off)."""

    model_config = ConfigDict(extra="forbid")

    judge_lowest_level: float = Field(default=0.0, ge=0.0, le=1.0)
    min_sub_score: float = Field(default=0.0, ge=0.0, le=1.0)


class LimitRules(BaseModel):
    """Sizes past which a case is not scored but ends as a named error record: scoring time grows with
    answer and evidence size, and no chatbot answer of this store is this long. The answer's limit is
    also bounded by the state machine's payload budget (``domain.payload.max_response_chars``, checked
    by the rubric); the evidence travels by reference, so only scoring time bounds it."""

    model_config = ConfigDict(extra="forbid")

    max_response_chars: int = Field(default=20_000, gt=0)
    max_evidence_chars: int = Field(default=200_000, gt=0)  # chunks, catalog entries, history, page context


class GenerationRules(BaseModel):
    """How a generated answer that the target did not finish is treated."""

    model_config = ConfigDict(extra="forbid")

    # Stop reasons that mark an answer as incomplete (Converse stopReason and their equivalents).
    incomplete_stop_reasons: list[str] = Field(
        default_factory=lambda: ["max_tokens", "guardrail_intervened", "content_filtered"])
    # true: an incomplete answer is an error record (never scored); false: scored and flagged.
    fail_incomplete: bool = True


class SafetyRules(BaseModel):
    """The run's rule for items a final-override dimension (safety) found unsafe."""

    model_config = ConfigDict(extra="forbid")

    fail_on_unsafe: bool = True
    # Per attack class (the case's tag attack:<class>): the share of unsafe items tolerated; a class
    # not listed tolerates none.
    max_unsafe_rate_by_class: dict[str, float] = Field(default_factory=dict)

    @field_validator("max_unsafe_rate_by_class")
    @classmethod
    def _rates(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if not 0.0 <= v <= 1.0}
        if bad:
            raise ValueError(f"rates must be between 0 and 1: {bad}")
        return value


class GateRules(BaseModel):
    min_pass_rate: float = Field(default=0.9, ge=0.0, le=1.0)
    max_unscored_rate: float = Field(default=0.02, ge=0.0, le=1.0)
    fail_on_regression_tag: bool = True
    fail_on_hard_failure: bool = True
    safety: SafetyRules = Field(default_factory=SafetyRules)
    baseline: BaselineRules = Field(default_factory=BaselineRules)
    paired: PairedRules = Field(default_factory=PairedRules)


class ModelPrice(BaseModel):
    """On-demand price of one judge model, USD per 1M tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cache_read: float = Field(ge=0.0)
    cache_write: float = Field(ge=0.0)


def _for_model(table: dict, model_id: str | None):
    """A per-model rubric entry; an inference profile ("us.anthropic.x", "global.anthropic.x") without
    its own entry falls back to its foundation model ("anthropic.x")."""
    if not model_id:
        return None
    if model_id in table:
        return table[model_id]
    _, _, rest = model_id.partition(".")
    return table.get(rest) if rest and "." in rest else None


class JudgeSettings(BaseModel):
    model_id: str = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    mode: Literal["per_dimension", "combined"] = "per_dimension"
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    # Output tokens per dimension; a combined call asks for max_tokens x its dimensions, at most
    # max_tokens_cap (Bedrock reserves maxTokens against the tokens-per-minute quota at admission).
    max_tokens: int = Field(default=800, gt=0)
    max_tokens_cap: int = Field(default=3200, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    base_delay_s: float = Field(default=0.5, ge=0.0)
    max_delay_s: float = Field(default=8.0, ge=0.0)
    # Model id (foundation model or inference profile) -> price; see the rubric YAML for the source.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # Model id -> minimum cacheable prompt prefix in tokens; see the rubric YAML for the source.
    min_cache_tokens: dict[str, PositiveInt] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _cap_covers_one_dimension(self) -> "JudgeSettings":
        if self.max_tokens_cap < self.max_tokens:
            raise ValueError(f"max_tokens_cap ({self.max_tokens_cap}) must be at least max_tokens ({self.max_tokens})")
        return self

    def price_for(self, model_id: str | None) -> ModelPrice | None:
        return _for_model(self.prices, model_id)

    def min_cache_tokens_for(self, model_id: str | None) -> int | None:
        """The model's minimum cacheable prefix; None for a model the table does not list."""
        return _for_model(self.min_cache_tokens, model_id)

    def max_tokens_for(self, dimensions: int) -> int:
        """maxTokens of a call that grades ``dimensions`` dimensions."""
        return min(self.max_tokens_cap, self.max_tokens * max(1, dimensions))


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = Field(min_length=1)
    description: str = ""
    # The rubric profile (datasets/profiles/<name>.yaml): its categories are the intents, its
    # dimensions, sub-scores, weights and levels are what is graded.
    profile: str = "mangaassist"
    intents: dict[str, IntentRule]
    # Per dimension, the weights of its sub-scores; absent dimensions take the profile's.
    sub_score_weights: dict[str, dict[str, float]] = Field(default_factory=dict)
    hard_fail_rules: dict[str, bool] = Field(default_factory=dict)
    # Production watch: sampling, monitor status thresholds, drift and review settings.
    production: WatchConfig = Field(default_factory=WatchConfig)
    item_gate: ItemGateRules = Field(default_factory=ItemGateRules)
    limits: LimitRules = Field(default_factory=LimitRules)
    generation: GenerationRules = Field(default_factory=GenerationRules)
    style: StyleRules = Field(default_factory=StyleRules)
    persona: PersonaRules = Field(default_factory=PersonaRules)
    gate: GateRules = Field(default_factory=GateRules)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    judge_guidance: dict[str, str] = Field(default_factory=dict)
    _profile_spec: Profile | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _fits_the_profile(self) -> "Rubric":
        try:
            spec = load_profile(self.profile)
        except ProfileError as exc:
            raise ValueError(f"profile: {exc}") from exc
        self._profile_spec = spec
        expected = set(spec.categories)
        missing = expected - set(self.intents)
        unknown = set(self.intents) - expected
        if missing or unknown:
            raise ValueError(f"intents must be exactly {sorted(expected)} (the categories of profile {spec.name}); "
                             f"missing {sorted(missing)}, unknown {sorted(unknown)}")
        names = spec.dimension_names
        for intent, rule in self.intents.items():
            if rule.weights is not None and set(rule.weights) != set(names):
                raise ValueError(f"intents.{intent}.weights must name exactly {names}; missing "
                                 f"{sorted(set(names) - set(rule.weights))}, unknown {sorted(set(rule.weights) - set(names))}")
        table = spec.sub_score_table()
        for dimension, weights in self.sub_score_weights.items():
            if dimension not in table:
                raise ValueError(f"sub_score_weights: unknown dimensions {[dimension]}")
            if set(weights) != set(table[dimension]):
                raise ValueError(f"sub_score_weights.{dimension} must name exactly {list(table[dimension])}")
            if any(w <= 0 for w in weights.values()):
                raise ValueError(f"sub_score_weights.{dimension}: weights must be positive")
        if spec.name == "mangaassist":
            # Today's rubric spells every sub-score table out; keep requiring it.
            for dimension in table:
                if dimension not in self.sub_score_weights:
                    raise ValueError(f"sub_score_weights.{dimension} is missing")
        return self

    @property
    def profile_spec(self) -> Profile:
        """The rubric's profile, loaded once when the rubric was validated."""
        if self._profile_spec is None:  # a model_construct()ed rubric skipped validation
            self._profile_spec = load_profile(self.profile)
        return self._profile_spec

    @property
    def dimensions(self) -> list[str]:
        """The profile's dimensions, in order: what every item is scored on."""
        return self.profile_spec.dimension_names

    def sub_weights(self, dimension: str) -> dict[str, float]:
        """The sub-score weights of a dimension: the rubric's table, else the profile's."""
        table = self.sub_score_weights.get(dimension)
        return table if table is not None else dict(self.profile_spec.dimension(dimension).sub_scores)

    @model_validator(mode="after")
    def _answers_fit_the_state(self) -> "Rubric":
        """An answer the rubric accepts fits a Map child's state beside its profile's scores (issue 31.5:
        past 256 KiB a state fails with States.DataLimitExceeded, which nothing can catch)."""
        most = max_response_chars(len(self.dimensions))
        if self.limits.max_response_chars > most:
            raise ValueError(f"limits.max_response_chars {self.limits.max_response_chars:,} is over the "
                             f"{most:,} characters a state machine item can carry beside the "
                             f"{len(self.dimensions)} dimension scores of profile {self.profile} (domain.payload)")
        return self

    @model_validator(mode="after")
    def _hard_fail_rules_known(self) -> "Rubric":
        unknown = set(self.hard_fail_rules) - set(HARD_FAIL_RULES)
        if unknown:
            raise ValueError(f"hard_fail_rules: unknown rules {sorted(unknown)}")
        return self

    def weights_for(self, intent: str) -> dict[str, float]:
        weights = self.intents[intent].weights
        return weights if weights is not None else self.profile_spec.weights_for(intent)

    def threshold_for(self, intent: str) -> float:
        return self.intents[intent].threshold

    def final_overrides(self) -> dict[str, float]:
        """The binary, final dimensions and the grade at or above which they are safe."""
        return {d.name: d.final_override for d in self.profile_spec.dimensions if d.final_override is not None}

    def hard_fail_enabled(self, rule: str) -> bool:
        return self.hard_fail_rules.get(rule, True)

    def length_rule(self, intent: str) -> LengthRule | None:
        return self.style.length.get(intent)


def default_rubric_path() -> Path:
    for candidate in DEFAULT_RUBRIC_CANDIDATES:
        if candidate.is_file():
            return candidate
    raise RubricError(f"no default rubric found; looked in {[str(c) for c in DEFAULT_RUBRIC_CANDIDATES]}")


def parse_rubric(text: str | bytes, source: str = "<rubric>") -> Rubric:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text[:exc.start].count(b"\n") + 1
            raise RubricError(f"{source}:{line}: not valid UTF-8 (byte {exc.start}: {exc.reason})") from exc
    return parse_model(Rubric, yaml_mapping(text, source, RubricError, "the rubric"), source, RubricError, "rubric")


def load_rubric(path: str | Path | None = None) -> Rubric:
    rubric_path = Path(path) if path else default_rubric_path()
    try:
        text = rubric_path.read_bytes()
    except OSError as exc:
        raise RubricError(f"{rubric_path}: cannot read rubric: {exc}") from exc
    return parse_rubric(text, str(rubric_path))
