"""The scheme of a generic profile (research-agent, tool-use): a check and an offline signal per
dimension, each a function ``(case, profile) -> DimensionFinding``.

A check settles its dimension only with the evidence it found, and only the sub-scores the profile
lists in ``check_settled``; otherwise the whole dimension goes to the judge, with what the check found
as hints. A dimension without a check is the judge's. The offline judge reads a dimension as a whole
(``scoring.signal.DimensionSignal``): the dimension's signal, else the check's own reading when it found
something it may not settle; with neither it abstains. The Bedrock judge grades the dimension on the
profile's described levels (``judge_prompt = "profile_levels"``), one dimension per call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from fmquality.config.profile import DimensionSpec, Profile
from fmquality.domain.case import TestCase
from fmquality.schemes.profiles.common import DimensionFinding
from fmquality.scoring.plan import CheckReport
from fmquality.scoring.scheme import JudgePrompt
from fmquality.scoring.signal import Abstain, DimensionReading, DimensionSignal

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

FindingFn = Callable[[TestCase, Profile], DimensionFinding]


def render_profile_case(case: TestCase) -> dict[str, Any]:
    """The case as data for the judge, with the profile fields (as MangaAssist's ``render_case``)."""
    return {
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


def _evidence(finding: DimensionFinding) -> list[str]:
    head = [f"level {finding.level}"] if finding.level else []
    return head + list(finding.evidence) or ["the check's finding"]


def report_of(finding: DimensionFinding | None, spec: DimensionSpec) -> CheckReport:
    """A check's finding as the check report of its dimension."""
    report = CheckReport()
    if finding is not None and finding.source == "not_applicable":
        for name in spec.sub_scores:
            report.skip(name, "; ".join(finding.evidence))
        return report
    settles = (finding is not None and finding.source == "check" and finding.value is not None
               and bool(finding.sub_scores) and set(finding.sub_scores) <= set(spec.check_settled))
    if settles:
        assert finding is not None
        for name in spec.sub_scores:
            if name in finding.sub_scores:
                report.set(name, finding.sub_scores[name], *_evidence(finding))
            else:
                report.skip(name, "nothing of the kind in the case")
        return report
    for name in spec.sub_scores:
        report.ask_judge(name)
    report.findings = list(finding.evidence) if finding is not None else []
    return report


@dataclass(frozen=True)
class ProfileScheme:
    name: str
    checks: Mapping[str, FindingFn]
    offline_signals: Mapping[str, FindingFn]
    judge_prompt: JudgePrompt = "profile_levels"
    combined_judging: bool = False

    def render_case(self, case: TestCase) -> dict[str, Any]:
        return render_profile_case(case)

    def check(self, dimension: str, case: TestCase, rubric: "Rubric") -> CheckReport:
        profile = rubric.profile_spec
        check = self.checks.get(dimension)
        return report_of(check(case, profile) if check else None, profile.dimension(dimension))

    def signals(self, dimension: str) -> DimensionSignal:
        return DimensionSignal(partial(self._read, dimension))

    def _read(self, dimension: str, case: TestCase, rubric: "Rubric") -> DimensionReading:
        """The dimension's signal, else the check's own reading when it found something it may not
        settle; else Abstain (no made-up score)."""
        reason = "the offline judge has no signal for this dimension"
        for source in (self.offline_signals, self.checks):
            fn = source.get(dimension)
            if fn is None:
                continue
            finding = fn(case, rubric.profile_spec)
            if finding.value is not None:
                return DimensionReading(value=finding.value, evidence=list(finding.evidence),
                                        sub_scores=dict(finding.sub_scores), level=finding.level)
            reason = "; ".join(finding.evidence) or "no signal"
        raise Abstain(reason)
