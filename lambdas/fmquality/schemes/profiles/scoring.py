"""The one generic scoring path of every profile with a ``scorer`` module (research-agent, tool-use).

A profile dimension is planned like a MangaAssist dimension (``dimensions.base.DimensionPlan``): the
profile module's check for it (``CHECKS[dimension]``) either settles it with the evidence it found
(only the sub-scores the profile lists in ``check_settled``), finds that it does not apply (no tool
calls: ``not_applicable``, left out of the composite), or leaves it to the judge, with what it found
as hints. ``finish_dimension`` then weighs it exactly as it weighs a MangaAssist dimension. The
offline judge answers with the profile module's signal (``offline_verdict``); the Bedrock judge with
one of the dimension's levels (``judges.prompts.build_level_prompt``). Adding a profile adds a YAML
file and a module of checks, never a Lambda code path: the scorer Lambda calls ``score_one_dimension``
whatever the profile.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from fmquality.scoring.plan import CheckReport, DimensionPlan, response_text
from fmquality.judges.base import JudgeRequest, JudgeVerdict
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.domain.case import TestCase
from fmquality.schemes.profiles.common import DimensionFinding
from fmquality.schemes.profiles.fields import fields_of
from fmquality.config.profile import DimensionSpec, Profile

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

# What an ``applies_when`` condition needs in the case.
_PRESENT = {
    "tool_calls_present": ("tool_calls", "no tool calls"),
    "citations_present": ("citations", "no citations"),
    "sources_present": ("sources", "no sources"),
}


@cache
def scorer_module(name: str) -> ModuleType:
    module = importlib.import_module(name)
    if not isinstance(getattr(module, "CHECKS", None), dict) or not isinstance(getattr(module, "SIGNALS", None), dict):
        raise TypeError(f"{name}: a profile scorer module needs CHECKS and SIGNALS mappings")
    return module


def render_profile_case(case: TestCase) -> str:
    """The case as data for the judge, with the profile fields, in the frame of ``render_case``."""
    payload = {
        "category": case.intent,
        "locale": case.locale,
        "conversation_history": [m.model_dump() for m in case.conversation_history],
        "user_query": case.query,
        "retrieved_chunks": case.retrieved_chunks,
        "sources": [s.model_dump(exclude_none=True) for s in case.sources],
        "citations": [c.model_dump(exclude_none=True) for c in case.citations],
        "tool_calls": [c.model_dump(exclude_none=True) for c in case.tool_calls],
        "expected_tools": [t.model_dump(exclude_none=True) for t in case.expected_tools],
        "forbidden_tools": case.forbidden_tools,
        "required_facts": list(dict.fromkeys([*case.required_facts, *case.expected_facts])),
        "required_keywords": case.required_keywords,
        "reference_response": case.reference_response,
    }
    return (
        "<<<CASE_DATA_BEGIN>>>\n"
        + json.dumps(payload, ensure_ascii=False, indent=1, default=str)
        + "\n<<<CASE_DATA_END>>>\n<<<RESPONSE_UNDER_EVALUATION_BEGIN>>>\n"
        + response_text(case)
        + "\n<<<RESPONSE_UNDER_EVALUATION_END>>>"
    )


def _evidence(finding: DimensionFinding) -> list[str]:
    head = [f"level {finding.level}"] if finding.level else []
    return head + list(finding.evidence) or ["the check's finding"]


def _not_applicable(dimension: str, spec: DimensionSpec, why: str) -> DimensionScore:
    return DimensionScore(dimension=dimension, status="not_applicable", unscored_reason=f"does not apply ({why})",
                          not_applicable=list(spec.sub_scores))


def plan_profile_dimension(dimension: str, case: TestCase, rubric: "Rubric", case_text: str | None = None) -> DimensionPlan:
    profile = rubric.profile_spec
    spec = profile.dimension(dimension)
    if not response_text(case).strip():
        failures = ([HardFailure(rule="empty_response", dimension=dimension, detail="the response is empty")]
                    if rubric.hard_fail_enabled("empty_response") else [])
        return DimensionPlan(dimension=dimension, final=DimensionScore(
            dimension=dimension, status="scored", score=0.0, confidence=1.0,
            sub_scores={n: 0.0 for n in spec.sub_scores}, evidence=["the response is empty"], hard_failures=failures))
    condition = _PRESENT.get(spec.applies_when)
    if condition is not None and not getattr(case, condition[0]):
        return DimensionPlan(dimension=dimension, final=_not_applicable(dimension, spec, condition[1]))
    module = scorer_module(str(profile.scorer))
    check = module.CHECKS.get(dimension)
    finding: DimensionFinding | None = check(case, fields_of(case), profile) if check else None
    report = CheckReport()
    if finding is not None and finding.source == "not_applicable":
        return DimensionPlan(dimension=dimension, final=_not_applicable(dimension, spec, "; ".join(finding.evidence)))
    settles = (finding is not None and finding.source == "check" and finding.value is not None
               and bool(finding.sub_scores) and set(finding.sub_scores) <= set(spec.check_settled))
    if settles:
        assert finding is not None
        for name in spec.sub_scores:
            if name in finding.sub_scores:
                report.set(name, finding.sub_scores[name], *_evidence(finding))
            else:
                report.skip(name, "nothing of the kind in the case")
        return DimensionPlan(dimension=dimension, report=report)
    report.needs_judge = list(spec.sub_scores)
    report.findings = list(finding.evidence) if finding is not None else []
    request = JudgeRequest(
        dimension=dimension,
        sub_scores=report.needs_judge,
        case=case,
        rubric_version=rubric.version,
        guidance=rubric.judge_guidance.get(dimension, "") or spec.description,
        case_text=case_text if case_text is not None else render_profile_case(case),
        check_findings=report.findings,
    )
    return DimensionPlan(dimension=dimension, report=report, request=request)


def plan_profile_case(case: TestCase, rubric: "Rubric") -> dict[str, DimensionPlan]:
    case_text = render_profile_case(case)
    return {d: plan_profile_dimension(d, case, rubric, case_text) for d in rubric.dimensions}


def offline_verdict(case: TestCase, profile: Profile, dimension: str, sub_scores: list[str]) -> JudgeVerdict:
    """The offline judge on a profile dimension the checks left open: the module's signal, else the
    check's own reading when it found something it may not settle; else it abstains (no made-up score)."""
    module = scorer_module(str(profile.scorer))
    fields = fields_of(case)
    finding = None
    reason = "the offline judge has no signal for this dimension"
    for source in (module.SIGNALS, module.CHECKS):
        fn = source.get(dimension)
        if fn is None:
            continue
        candidate = fn(case, fields, profile)
        if candidate.value is not None:
            finding = candidate
            break
        reason = "; ".join(candidate.evidence) or "no signal"
    if finding is None:
        return JudgeVerdict(sub_scores={}, abstained={n: reason for n in sub_scores}, rationale=f"no signal: {reason}")
    assert finding.value is not None
    scores = {n: round(finding.sub_scores.get(n, finding.value), 4) for n in sub_scores}
    rationale = (f"level {finding.level} " if finding.level else "") + f"{finding.value:.2f} (offline judge)"
    return JudgeVerdict(sub_scores=scores, rationale=rationale, evidence=list(finding.evidence))
