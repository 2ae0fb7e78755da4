"""How a dimension becomes a DimensionScore: the check report, the plan, the judge call, the finish.

A scheme's checks (``Scheme.check``, see ``scoring.scheme``) report on one dimension of one case. Every
sub-score of the dimension ends up in exactly one of ``report.sub_scores`` (settled from evidence the
check found and attributed: this price to this product in the catalog, this number to this policy in
the retrieved knowledge), ``report.not_applicable`` (the answer and the case hold nothing of the kind,
with the reason) or ``report.needs_judge`` (everything else: a check that found nothing settles
nothing). What a check found but could not settle reaches the judge as a hint to verify.

``plan_dimension`` runs the checks and builds the judge request for what they left open (an empty
answer, or a dimension whose ``applies_when`` the case does not meet, is decided without them);
``finish_dimension`` weighs the checks' sub-scores and the judge's verdict. The judges grade what the
checks left open: the offline judge (``judges/offline/``) from the scheme's signals, the Bedrock judge
from the model. ``scoring.case`` puts the two together, per dimension or with one judge call for all
the open dimensions of a case (combined mode), finishing each with the same rules.

Outcomes: a judge failure leaves the dimension "unscored" with the reason; a sub-score the judge
abstained on (no evidence) is listed with its reason and left out of the weighting; a dimension with
no applicable sub-score is "not_applicable" and left out of the composite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fmquality.domain.case import TestCase
from fmquality.domain.errors import JudgeThrottled
from fmquality.domain.scores import DimensionScore, HardFailure, JudgeUsage, ScoreStatus, SubScore
from fmquality.judges.base import JudgeOutcome, JudgeRequest, JudgeVerdict, missing_sub_scores

if TYPE_CHECKING:
    from fmquality.config.profile import DimensionSpec
    from fmquality.config.rubric import Rubric

# What an ``applies_when`` condition of the profile needs in the case, and why the dimension does not
# apply without it.
_PRESENT = {
    "tool_calls_present": ("tool_calls", "no tool calls"),
    "citations_present": ("citations", "no citations"),
    "sources_present": ("sources", "no sources"),
}


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

    def validate_for(self, dimension: str, sub_scores: Iterable[str]) -> None:
        """Each of the dimension's sub-scores placed exactly once."""
        expected = set(sub_scores)
        placed = [*self.sub_scores, *self.not_applicable, *self.needs_judge]
        if sorted(placed) != sorted(expected):
            raise ValueError(f"{dimension}: check() must place each of {sorted(expected)} exactly once, placed {sorted(placed)}")


class SchemeChecks(Protocol):
    """What planning needs of a scheme (``scoring.scheme.Scheme`` has more): its checks, and the case
    as data for the judge."""

    def render_case(self, case: TestCase) -> dict[str, Any]: ...

    def check(self, dimension: str, case: TestCase, rubric: "Rubric") -> CheckReport: ...


def response_text(case: TestCase) -> str:
    return case.response or ""


def is_empty_response(case: TestCase) -> bool:
    return not response_text(case).strip()


def weighted(sub_scores: dict[str, float], weights: dict[str, float]) -> float:
    total = sum(weights[n] for n in sub_scores)
    return sum(score * weights[n] for n, score in sub_scores.items()) / total


@dataclass
class DimensionPlan:
    """What the checks decided for one dimension of one case, before any judge call.

    ``final`` is set when no judge can change the result (an empty response, a dimension that does
    not apply); otherwise ``request`` is the judge request for the sub-scores the checks left open,
    or None when they settled all.
    """

    dimension: str
    report: CheckReport | None = None
    hard_failures: list[HardFailure] = field(default_factory=list)
    request: JudgeRequest | None = None
    final: DimensionScore | None = None


def _empty_response(dimension: str, spec: "DimensionSpec", rubric: "Rubric") -> DimensionScore:
    failures = ([HardFailure(rule="empty_response", dimension=dimension, detail="the response is empty")]
                if rubric.hard_fail_enabled("empty_response") else [])
    return DimensionScore(dimension=dimension, status="scored", score=0.0, confidence=1.0,
                          sub_scores={n: 0.0 for n in spec.sub_scores}, evidence=["the response is empty"],
                          hard_failures=failures)


def _absent(spec: "DimensionSpec", case: TestCase) -> str | None:
    """Why the dimension does not apply to the case (its ``applies_when`` is not met), else None."""
    condition = _PRESENT.get(spec.applies_when)
    return condition[1] if condition is not None and not getattr(case, condition[0]) else None


def plan_dimension(scheme: SchemeChecks, dimension: str, case: TestCase, rubric: "Rubric",
                   case_data: dict[str, Any] | None = None) -> DimensionPlan:
    """Run the scheme's checks of one dimension and build the judge request they leave open.
    ``case_data`` is ``scheme.render_case(case)`` when the caller already has it (see ``plan_case``)."""
    spec = rubric.profile_spec.dimension(dimension)
    if is_empty_response(case):
        return DimensionPlan(dimension=dimension, final=_empty_response(dimension, spec, rubric))
    absent = _absent(spec, case)
    if absent is not None:
        return DimensionPlan(dimension=dimension, final=DimensionScore(
            dimension=dimension, status="not_applicable", unscored_reason=f"does not apply ({absent})",
            not_applicable=list(spec.sub_scores)))
    report = scheme.check(dimension, case, rubric)
    report.validate_for(dimension, spec.sub_scores)
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
            # The rubric's guidance for the dimension, else the profile's description of it.
            guidance=rubric.judge_guidance.get(dimension, "") or spec.description,
            case_data=case_data if case_data is not None else scheme.render_case(case),
            check_findings=report.findings,
        )
    return DimensionPlan(dimension=dimension, report=report, hard_failures=hard_failures, request=request)


def plan_case(scheme: SchemeChecks, case: TestCase, rubric: "Rubric") -> dict[str, DimensionPlan]:
    """The plans of all the rubric's dimensions; the case is rendered for the judge once, not per
    dimension."""
    case_data = scheme.render_case(case)
    return {d: plan_dimension(scheme, d, case, rubric, case_data) for d in rubric.dimensions}


def _unscored(plan: DimensionPlan, outcome: JudgeOutcome, reason: str, *, evidence: Iterable[str] = (),
              abstained: dict[str, str] | None = None, not_applicable: Iterable[str] = (),
              status: ScoreStatus = "unscored") -> DimensionScore:
    """The dimension the judge left without a score: its failure, or abstentions on every open sub-score."""
    return DimensionScore(
        dimension=plan.dimension,
        status=status,
        unscored_reason=reason,
        abstained=abstained or {},
        not_applicable=list(not_applicable),
        hard_failures=plan.hard_failures,
        evidence=list(evidence),
        judge_calls=outcome.calls,
        usage=outcome.usage or JudgeUsage(),
        judge_prompt=outcome.prompt,
        judge_raw=outcome.raw,
    )


def _read_verdict(request: JudgeRequest, verdict: JudgeVerdict, subs: dict[str, SubScore]) -> dict[str, str]:
    """Add the judged sub-scores to ``subs``; returns those the judge abstained on, with the reason.
    Only the sub-scores we asked for are read: a judge cannot overwrite a deterministic check."""
    abstained: dict[str, str] = {}
    for name in request.sub_scores:
        if name in verdict.abstained:
            abstained[name] = verdict.abstained[name]
            continue
        subs[name] = SubScore(name=name, score=verdict.sub_scores[name],
                              evidence=[f"judge: {verdict.rationale}", *verdict.evidence], source="judge")
    return abstained


def _confidence(plan: DimensionPlan, values: dict[str, float], weights: dict[str, float],
                judge_confidence: float | None) -> float | None:
    """Checks are certain of what they settled; the judged share is as sure as the judge says, and of
    unknown certainty when the judge gave no confidence."""
    assert plan.report is not None
    judged_weight = sum(weights[n] for n in plan.report.needs_judge if n in values)
    if judged_weight == 0:
        return 1.0
    if judge_confidence is None:
        return None
    total_weight = sum(weights[n] for n in values)
    return round(1.0 - (judged_weight / total_weight) * (1.0 - judge_confidence), 4)


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
    assert plan.report is not None  # a plan without ``final`` always has its check report
    subs: dict[str, SubScore] = dict(plan.report.sub_scores)
    verdict: JudgeVerdict | None = None
    abstained: dict[str, str] = {}
    if plan.request is not None:
        if outcome is None:
            raise ValueError(f"{plan.dimension}: the plan needs a judge outcome")
        if outcome.throttled and raise_on_throttle:
            raise JudgeThrottled(f"{plan.dimension}: {outcome.error or 'judge throttled'}")
        reason = outcome.error
        if outcome.verdict is not None and not reason:
            missing = missing_sub_scores(plan.request, outcome.verdict)
            reason = f"judge verdict lacks sub-scores {missing}" if missing else None
        if reason or outcome.verdict is None:
            return _unscored(plan, outcome, reason or "judge returned no verdict",
                             evidence=[e for s in subs.values() for e in s.evidence])
        verdict = outcome.verdict
        abstained = _read_verdict(plan.request, verdict, subs)
        if not subs:
            why = "no evidence for any sub-score: " + "; ".join(f"{n}: {r}" for n, r in abstained.items())
            # A final dimension (safety) acts only on a verdict: a judge that read the answer and found
            # nothing to grade gives none, which is not its failure (a failed call is unscored above).
            status = "not_applicable" if plan.dimension in rubric.final_overrides() else "unscored"
            return _unscored(plan, outcome, why, abstained=abstained, not_applicable=plan.report.not_applicable,
                             status=status)
    return _scored(plan, outcome, verdict, subs, abstained, rubric)


def _sub_weights(score: DimensionScore, rubric: "Rubric") -> dict[str, float]:
    """The dimension's scored sub-scores with their rubric weights, normalised to sum to one."""
    table = rubric.sub_weights(score.dimension)
    raw = {n: table.get(n, 0.0) for n in score.sub_scores}
    total = sum(raw.values())
    return {n: w / total for n, w in raw.items()} if total > 0 else {}


def effective_value(score: DimensionScore, rubric: "Rubric") -> float:
    """The dimension's value in the composite: its score, or, with heuristic readings, each reading's
    shortfall from full marks counted in proportion to the weight its agreement with people earns
    (a reading of 0.6 with weight 0.2 costs 0.08, not 0.4)."""
    if not score.weights or not score.sub_scores:
        return float(score.score)
    return sum(u * (1.0 - score.weights.get(n, 1.0) * (1.0 - score.sub_scores[n]))
               for n, u in _sub_weights(score, rubric).items())


def _scored(plan: DimensionPlan, outcome: JudgeOutcome | None, verdict: JudgeVerdict | None,
            subs: dict[str, SubScore], abstained: dict[str, str], rubric: "Rubric") -> DimensionScore:
    assert plan.report is not None
    weights = rubric.sub_weights(plan.dimension)
    values = {n: s.score for n, s in subs.items()}
    judged = outcome if plan.request is not None else None
    score = DimensionScore(
        dimension=plan.dimension,
        status="scored",
        score=round(weighted(values, weights), 4),
        confidence=_confidence(plan, values, weights, verdict.confidence if verdict is not None else 1.0),
        sub_scores={n: round(v, 4) for n, v in values.items()},
        evidence=[f"{n}: {e}" for n, s in subs.items() for e in s.evidence],
        not_applicable=list(plan.report.not_applicable),
        abstained=abstained,
        judged=[n for n, s in subs.items() if s.source == "judge"],
        weights={n: w for n, w in (verdict.weights if verdict is not None else {}).items() if n in values},
        hard_failures=plan.hard_failures,
        judge_calls=judged.calls if judged is not None else 0,
        judge_prompt=judged.prompt if judged is not None else None,
        judge_raw=judged.raw if judged is not None else None,
        usage=(judged.usage if judged is not None else None) or JudgeUsage(),
    )
    safe_at = rubric.final_overrides().get(plan.dimension)
    if safe_at is None:
        return score
    # A binary, final dimension: safe (1) or unsafe (0); its sub-scores keep the grades read.
    return score.model_copy(update={"score": 1.0 if effective_value(score, rubric) >= safe_at else 0.0})
