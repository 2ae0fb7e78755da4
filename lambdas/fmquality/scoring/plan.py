"""What every dimension module provides, and how a dimension becomes a DimensionScore.

A dimension module (relevance.py, factual_accuracy.py, consistency.py, fluency.py) exposes:

    NAME: str
    def check(case: TestCase, rubric: Rubric) -> CheckReport
        Deterministic checks. Every sub-score of the dimension ends up in exactly one of
        ``report.sub_scores`` (settled from evidence the check found and attributed: this price to
        this product in the catalog, this number to this policy in the retrieved knowledge),
        ``report.not_applicable`` (the answer and the case hold nothing of the kind, with the reason)
        or ``report.needs_judge`` (everything else: a check that found nothing settles nothing).
        What a check found but could not settle reaches the judge as a hint to verify.

The judges grade what the checks left open: the offline judge (``judges/offline/``) from general
signals, the Bedrock judge from the model. ``score_dimension`` runs the checks, makes at most one
judge call for the open sub-scores, and weights what was scored. It is ``plan_dimension`` (checks,
judge request) + one judge call + ``finish_dimension`` (weighting): the direct engine's combined
mode plans all four dimensions, makes ONE call for all of them and finishes each with the same rules.

Outcomes: a judge failure leaves the dimension "unscored" with the reason; a sub-score the judge
abstained on (no evidence) is listed with its reason and left out of the weighting; a dimension with
no applicable sub-score is "not_applicable" and left out of the composite.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from fmquality.judges.base import JudgeOutcome, JudgeRequest, missing_sub_scores
from fmquality.domain.errors import JudgeThrottled
from fmquality.domain.scores import DIMENSIONS, SUB_SCORES, DimensionScore, HardFailure, JudgeUsage, SubScore
from fmquality.domain.case import TestCase

if TYPE_CHECKING:
    from fmquality.judges.base import Judge
    from fmquality.config.rubric import Rubric


@dataclass
class CheckReport:
    sub_scores: dict[str, SubScore] = field(default_factory=dict)
    not_applicable: list[str] = field(default_factory=list)
    needs_judge: list[str] = field(default_factory=list)
    hard_failures: list[HardFailure] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    skip_reasons: dict[str, str] = field(default_factory=dict)

    def set(self, name: str, score: float, *evidence: str) -> None:
        """Settle a sub-score from evidence; a check that found nothing calls ``ask_judge`` instead."""
        if not evidence:
            raise ValueError(f"{name}: a check settles a sub-score only with the evidence it found")
        self.sub_scores[name] = SubScore(name=name, score=max(0.0, min(1.0, score)), evidence=list(evidence))

    def skip(self, name: str, why: str) -> None:
        self.not_applicable.append(name)
        self.skip_reasons[name] = why

    def ask_judge(self, name: str, *hints: str) -> None:
        self.needs_judge.append(name)
        self.findings.extend(hints)

    def validate_for(self, dimension: str) -> None:
        expected = set(SUB_SCORES[dimension])
        placed = [*self.sub_scores, *self.not_applicable, *self.needs_judge]
        if sorted(placed) != sorted(expected):
            raise ValueError(f"{dimension}: check() must place each of {sorted(expected)} exactly once, placed {sorted(placed)}")


def response_text(case: TestCase) -> str:
    return case.response or ""


def is_empty_response(case: TestCase) -> bool:
    return not response_text(case).strip()


def render_case(case: TestCase) -> str:
    """The case as data for the judge (the same for every dimension). Everything inside the markers
    is content to evaluate, never instructions; the judge prompt says so."""
    payload = {
        "intent": case.intent,
        "locale": case.locale,
        "conversation_history": [m.model_dump() for m in case.conversation_history],
        "page_context": case.page_context.model_dump(exclude_none=True),
        "user_query": case.query,
        "catalog": [c.model_dump(exclude_none=True) for c in case.catalog],
        "retrieved_chunks": case.retrieved_chunks,
        "expected_facts": case.expected_facts,
        "expected_products": case.expected_products,
        "reference_response": case.reference_response,
    }
    return (
        "<<<CASE_DATA_BEGIN>>>\n"
        + json.dumps(payload, ensure_ascii=False, indent=1)
        + "\n<<<CASE_DATA_END>>>\n<<<RESPONSE_UNDER_EVALUATION_BEGIN>>>\n"
        + response_text(case)
        + "\n<<<RESPONSE_UNDER_EVALUATION_END>>>"
    )


def _empty_response_score(dimension: str, case: TestCase) -> DimensionScore:
    names = SUB_SCORES[dimension]
    return DimensionScore(
        dimension=dimension,
        status="scored",
        score=0.0,
        confidence=1.0,
        sub_scores={n: 0.0 for n in names},
        evidence=["the response is empty"],
        hard_failures=[HardFailure(rule="empty_response", dimension=dimension, detail="the response is empty")],
    )


def weighted(sub_scores: dict[str, float], weights: dict[str, float]) -> float:
    total = sum(weights[n] for n in sub_scores)
    return sum(score * weights[n] for n, score in sub_scores.items()) / total


@dataclass
class DimensionPlan:
    """What the checks decided for one dimension of one case, before any judge call.

    ``final`` is set when no judge can change the result (an empty response); otherwise ``request``
    is the judge request for the sub-scores the checks left open, or None when they settled all.
    """

    dimension: str
    report: CheckReport | None = None
    hard_failures: list[HardFailure] = field(default_factory=list)
    request: JudgeRequest | None = None
    final: DimensionScore | None = None


def plan_dimension(module: ModuleType, case: TestCase, rubric: "Rubric", case_text: str | None = None) -> DimensionPlan:
    """Run the dimension's deterministic checks and build the judge request they leave open.
    ``case_text`` is ``render_case(case)`` when the caller already has it (see ``plan_case``)."""
    dimension: str = module.NAME
    if is_empty_response(case):
        return DimensionPlan(dimension=dimension, final=_empty_response_score(dimension, case))
    report: CheckReport = module.check(case, rubric)
    report.validate_for(dimension)
    hard_failures = [f for f in report.hard_failures if rubric.hard_fail_enabled(f.rule)]
    if not report.sub_scores and not report.needs_judge:
        why = "; ".join(f"{n}: {report.skip_reasons.get(n, 'does not apply')}" for n in report.not_applicable)
        return DimensionPlan(dimension=dimension, report=report, hard_failures=hard_failures, final=DimensionScore(
            dimension=dimension, status="not_applicable", unscored_reason=f"no sub-score applies ({why})",
            not_applicable=list(report.not_applicable), hard_failures=hard_failures))
    request = None
    if report.needs_judge:
        request = JudgeRequest(
            dimension=dimension,
            sub_scores=report.needs_judge,
            case=case,
            rubric_version=rubric.version,
            guidance=rubric.judge_guidance.get(dimension, ""),
            case_text=case_text if case_text is not None else render_case(case),
            check_findings=report.findings,
        )
    return DimensionPlan(dimension=dimension, report=report, hard_failures=hard_failures, request=request)


def plan_case(case: TestCase, rubric: "Rubric") -> dict[str, DimensionPlan]:
    """The plans of all the rubric's dimensions; the case is rendered for the judge once, not per
    dimension. A profile with a scorer module goes through ``profiles.scoring`` (the one generic path)."""
    from fmquality.schemes.mangaassist import dimension_module

    if rubric.profile_spec.scorer is not None:
        from fmquality.schemes.profiles.scoring import plan_profile_case

        return plan_profile_case(case, rubric)

    case_text = render_case(case)
    return {d: plan_dimension(dimension_module(d), case, rubric, case_text) for d in DIMENSIONS}


def finish_dimension(
    plan: DimensionPlan,
    outcome: JudgeOutcome | None,
    rubric: "Rubric",
    raise_on_throttle: bool = False,
) -> DimensionScore:
    """Weigh the checks' sub-scores and the judge's verdict (``outcome``, None when the plan needed
    no judge) into the DimensionScore. A judge failure leaves the dimension unscored with the reason;
    only the requested sub-scores are read from a verdict."""
    if plan.final is not None:
        return plan.final
    report = plan.report
    assert report is not None  # a plan without ``final`` always has its check report
    dimension = plan.dimension
    hard_failures = plan.hard_failures
    subs: dict[str, SubScore] = dict(report.sub_scores)
    calls = 0
    usage = None
    prompt = raw = None
    judge_confidence: float | None = 1.0
    judge_weights: dict[str, float] | None = None
    abstained: dict[str, str] = {}

    if plan.request is not None:
        request = plan.request
        if outcome is None:
            raise ValueError(f"{dimension}: the plan needs a judge outcome")
        if outcome.throttled and raise_on_throttle:
            raise JudgeThrottled(f"{dimension}: {outcome.error or 'judge throttled'}")
        calls, usage, prompt, raw = outcome.calls, outcome.usage, outcome.prompt, outcome.raw
        reason = outcome.error
        if outcome.verdict is not None and not reason:
            missing = missing_sub_scores(request, outcome.verdict)
            if missing:
                reason = f"judge verdict lacks sub-scores {missing}"
        if reason or outcome.verdict is None:
            return DimensionScore(
                dimension=dimension,
                status="unscored",
                unscored_reason=reason or "judge returned no verdict",
                hard_failures=hard_failures,
                evidence=[e for s in subs.values() for e in s.evidence],
                judge_calls=calls,
                usage=usage or JudgeUsage(),
                judge_prompt=prompt,
                judge_raw=raw,
            )
        verdict = outcome.verdict
        judge_confidence = verdict.confidence
        judge_weights = verdict.weights
        # Only the sub-scores we asked for are read: a judge cannot overwrite a deterministic check.
        for name in request.sub_scores:
            if name in verdict.abstained:
                abstained[name] = verdict.abstained[name]
                continue
            subs[name] = SubScore(
                name=name,
                score=verdict.sub_scores[name],
                evidence=[f"judge: {verdict.rationale}", *verdict.evidence],
                source="judge",
            )
        if not subs:
            return DimensionScore(
                dimension=dimension,
                status="unscored",
                unscored_reason="no evidence for any sub-score: " + "; ".join(f"{n}: {r}" for n, r in abstained.items()),
                abstained=abstained,
                not_applicable=list(report.not_applicable),
                hard_failures=hard_failures,
                judge_calls=calls,
                usage=usage or JudgeUsage(),
                judge_prompt=prompt,
                judge_raw=raw,
            )

    weights = rubric.sub_weights(dimension)
    values = {n: s.score for n, s in subs.items()}
    judged_weight = sum(weights[n] for n in report.needs_judge if n in values)
    total_weight = sum(weights[n] for n in values)
    # Checks are certain of what they settled; the judged share is as sure as the judge says, and of
    # unknown certainty when the judge gave no confidence.
    if judged_weight == 0:
        confidence: float | None = 1.0
    elif judge_confidence is None:
        confidence = None
    else:
        confidence = 1.0 - (judged_weight / total_weight) * (1.0 - judge_confidence)
    evidence = [f"{n}: {e}" for n, s in subs.items() for e in s.evidence]
    return DimensionScore(
        dimension=dimension,
        status="scored",
        score=round(weighted(values, weights), 4),
        confidence=None if confidence is None else round(confidence, 4),
        sub_scores={n: round(v, 4) for n, v in values.items()},
        evidence=evidence,
        not_applicable=list(report.not_applicable),
        abstained=abstained,
        judged=[n for n, s in subs.items() if s.source == "judge"],
        weights={n: w for n, w in (judge_weights or {}).items() if n in values},
        hard_failures=hard_failures,
        judge_calls=calls,
        judge_prompt=prompt,
        judge_raw=raw,
        usage=usage or JudgeUsage(),
    )


def score_dimension(
    module: "ModuleType | DimensionPlan",
    case: TestCase,
    rubric: "Rubric",
    judge: "Judge",
    raise_on_throttle: bool = False,
) -> DimensionScore:
    """Score one dimension: checks, at most one judge call for the open sub-scores, weighting.
    ``module`` is a dimension module, or a plan already made (the generic profile path).
    With ``raise_on_throttle`` (the Lambda scorers), throttling that outlived the judge's retries
    raises ``JudgeThrottled`` so the state machine's Retry can back off."""
    plan = module if isinstance(module, DimensionPlan) else plan_dimension(module, case, rubric)
    if plan.final is not None:
        return plan.final
    outcome = judge.judge(plan.request, rubric) if plan.request is not None else None
    return finish_dimension(plan, outcome, rubric, raise_on_throttle=raise_on_throttle)
