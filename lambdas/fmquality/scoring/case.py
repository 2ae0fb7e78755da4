"""Scoring one case with a scheme: size limits, every dimension planned, the judge asked for what the
checks left open, each dimension finished, the composite.

Judge modes (rubric ``judge.mode``, or the caller's ``mode``):
- ``per_dimension``: at most one judge call per dimension (the AWS state machine's shape: each
  dimension is its own scorer Lambda, which calls ``score_dimension``);
- ``combined``: ONE call for every dimension the checks left open, split back into the dimension
  scores with the per-dimension rules (``plan.finish_dimension``). Only for a scheme whose dimensions
  the Bedrock judge can grade together (``Scheme.combined_judging``) and a judge with
  ``judge_combined``; otherwise the dimensions are asked one by one.

``ask`` wraps each judge call; the run layer (``run.evaluate``) passes one that asks a throttled call
again after a pause. Running many cases (concurrency, generation) is the run layer's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from fmquality.claims.reading import readings_for_one_case
from fmquality.domain.case import TestCase
from fmquality.domain.errors import CaseTooLarge, RunNotDone
from fmquality.domain.results import EvaluationResult
from fmquality.domain.scores import DimensionScore
from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    split_combined,
    supports_combined,
)
from fmquality.scoring.composite import combine, error_result
from fmquality.scoring.plan import DimensionPlan, finish_dimension, plan_case, plan_dimension

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric
    from fmquality.judges.base import Judge
    from fmquality.scoring.scheme import Scheme

JudgeMode = Literal["per_dimension", "combined"]
JUDGE_MODES: tuple[str, ...] = ("per_dimension", "combined")

OutcomeT = TypeVar("OutcomeT", JudgeOutcome, CombinedJudgeOutcome)


def ask_once(call: Callable[[], OutcomeT]) -> OutcomeT:
    return call()


def evidence_chars(case: TestCase) -> int:
    """What the checks read besides the answer: query, conversation, chunks, reference, page, sources,
    tool calls (the catalog is the store's, indexed once per run, and not counted here)."""
    return len(case.model_dump_json(exclude={"response", "catalog", "label", "metadata"}))


def check_case_size(case: TestCase, rubric: "Rubric") -> None:
    """Raise CaseTooLarge when the answer or the evidence is past ``rubric.limits``: scoring time grows
    with both, and no answer of a shopping chatbot is this long."""
    limits = rubric.limits
    answer = len(case.response or "")
    if answer > limits.max_response_chars:
        raise CaseTooLarge(f"the response is {answer:,} characters, over the rubric's "
                           f"limits.max_response_chars ({limits.max_response_chars:,}): not scored")
    evidence = evidence_chars(case)
    if evidence > limits.max_evidence_chars:
        raise CaseTooLarge(f"the case's evidence is {evidence:,} characters, over the rubric's "
                           f"limits.max_evidence_chars ({limits.max_evidence_chars:,}): not scored")


def score_dimension(scheme: "Scheme", dimension: str, case: TestCase, rubric: "Rubric", judge: "Judge",
                    raise_on_throttle: bool = False) -> DimensionScore:
    """One dimension of one case (the scorer Lambda's whole job): checks, at most one judge call for
    the open sub-scores, weighting. Raises CaseTooLarge (the state machine's Catch records it as the
    item's error); with ``raise_on_throttle``, throttling that outlived the judge's retries raises
    ``JudgeThrottled`` so the state machine's Retry can back off."""
    check_case_size(case, rubric)
    with readings_for_one_case():  # the checks and the offline judge read the answer once
        plan = plan_dimension(scheme, dimension, case, rubric)
        if plan.final is not None:
            return plan.final
        outcome = judge.judge(plan.request, rubric) if plan.request is not None else None
    return finish_dimension(plan, outcome, rubric, raise_on_throttle=raise_on_throttle)


def _judge_open(scheme: "Scheme", plans: dict[str, DimensionPlan], rubric: "Rubric", judge: "Judge",
                mode: JudgeMode, ask: Callable) -> dict[str, JudgeOutcome]:
    """The judge's outcome for every plan with an open request: one combined call, or one per plan."""
    open_plans = [p for p in plans.values() if p.final is None and p.request is not None]
    if mode == "combined" and open_plans and supports_combined(judge) and scheme.combined_judging:
        combined = CombinedJudgeRequest(requests=[p.request for p in open_plans])
        return split_combined(combined, ask(lambda: judge.judge_combined(combined, rubric)))
    return {p.dimension: ask(lambda r=p.request: judge.judge(r, rubric)) for p in open_plans}


def score_dimensions(scheme: "Scheme", case: TestCase, rubric: "Rubric", judge: "Judge", *,
                     mode: JudgeMode = "per_dimension", ask: Callable = ask_once,
                     raise_on_throttle: bool = False) -> dict[str, DimensionScore]:
    """Every dimension of one case, before the composite (the ScoreCase Lambda's whole job in combined
    mode): checks per dimension, the judge asked for what they left open. Raises like
    ``score_dimension`` (CaseTooLarge; JudgeThrottled with ``raise_on_throttle``)."""
    check_case_size(case, rubric)
    with readings_for_one_case():  # every dimension's checks and signals read the answer once
        plans = plan_case(scheme, case, rubric)
        outcomes = _judge_open(scheme, plans, rubric, judge, mode, ask)
    return {d: finish_dimension(plans[d], outcomes.get(d), rubric, raise_on_throttle=raise_on_throttle)
            for d in rubric.dimensions}


def score_case(scheme: "Scheme", case: TestCase, rubric: "Rubric", judge: "Judge", *,
               mode: JudgeMode = "per_dimension", ask: Callable = ask_once,
               run_id: str | None = None) -> EvaluationResult:
    """Every dimension of one case and the composite. An unexpected exception becomes an explicit
    error record, not a score; ``RunNotDone`` (a judge that cannot be called as configured) is no
    item's error and propagates: the run stops."""
    try:
        scores = score_dimensions(scheme, case, rubric, judge, mode=mode, ask=ask)
        return combine(case, rubric, scores, run_id=run_id)
    except RunNotDone:
        raise
    except Exception as exc:  # noqa: BLE001 - every item must end with a result or an error record
        return error_result(case, rubric, f"{type(exc).__name__}: {exc}", run_id=run_id)
