"""``fmquality calibrate``'s orchestration in the core: the calibration plan (``datasets/calibration.yaml``:
which data sets, catalogs and (score, human rating) pairs are measured) and the measurement of one
set from its lines and its results. The statistics live in ``stats/``, the report's blocks in
``report/calibration.py`` and its neighbours, the page in ``report/html.py``.
"""

from __future__ import annotations

import os
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from fmquality.config.yamldoc import validation_problems, yaml_mapping
from fmquality.domain.case import TestCase
from fmquality.domain.errors import PlanError
from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import calibrate
from fmquality.report.calibration import SetCalibration, check_score_name, correlate
from fmquality.run.sensitivity import SensitivityReport, family_cells, suite_held

# --------------------------------------------------------------------------------------------------
# One set: its lines joined to its results
# --------------------------------------------------------------------------------------------------


def with_line_labels(cases: list[TestCase], results: list[EvaluationResult]) -> list[EvaluationResult]:
    """The results of the data set's lines (joined by test_id, in the lines' order), each carrying its
    line's label, whatever a results file recorded."""
    by_id = {r.test_id: r for r in results}
    return [by_id[case.test_id].model_copy(
                update={"label": case.label.model_dump(exclude_none=True) if case.label else None})
            for case in cases if case.test_id in by_id]


def measure_set(name: str, dataset: str, cases: list[TestCase], results: list[EvaluationResult],
                pairs: Iterable[tuple[str, str, bool]], **provenance: Any) -> SetCalibration:
    """Join results to the data set's lines by test_id; the line's own label and ratings are the
    human side, whatever a results file recorded. ``pairs`` are (score, human field, info)."""
    by_id = {r.test_id: r for r in results}
    joined = [(case, by_id.get(case.test_id)) for case in cases]
    verdicts = with_line_labels(cases, results)
    return SetCalibration(
        name=name, dataset=dataset, items=len(cases), missing_results=len(cases) - len(verdicts),
        correlations=[correlate(joined, score, human, info) for score, human, info in pairs],
        calibration=calibrate(verdicts), **provenance,
    )


# --------------------------------------------------------------------------------------------------
# The calibration plan
# --------------------------------------------------------------------------------------------------


class PlanPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: str
    human: str
    info: bool = False

    @field_validator("score")
    @classmethod
    def _score_known(cls, value: str) -> str:
        return check_score_name(value)


class PlanSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    dataset: str
    catalog: str | None = None
    pairs: list[PlanPair] = Field(default_factory=list)


class CalibrationPlan(BaseModel):
    """``base``: the folder relative paths start from, itself relative to the plan file's folder.
    ``vars``: defaults of the ``${NAME}`` variables the paths use; the environment overrides them."""

    model_config = ConfigDict(extra="forbid")

    base: str = "."
    vars: dict[str, str] = Field(default_factory=dict)
    sets: list[PlanSet] = Field(min_length=1)
    # The labelled sets the judge's signals are measured on (--signals-out); None: every labelled set.
    agreement_sets: list[str] | None = None
    _root: Path = PrivateAttr(default_factory=Path.cwd)

    @model_validator(mode="after")
    def _names_unique(self) -> "CalibrationPlan":
        names = [s.name for s in self.sets]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"set names must be unique: {duplicates}")
        unknown = [n for n in self.agreement_sets or [] if n not in names]
        if unknown:
            raise ValueError(f"agreement_sets names sets the plan does not have: {unknown}")
        return self

    def path(self, raw: str) -> Path:
        """A plan path with its ``${NAME}`` variables filled in. A value from the environment that is
        relative is read from the current folder; anything else relative from ``base``. Shown relative
        to the current folder when it lies below it."""
        template = string.Template(raw)
        values: dict[str, str] = {}
        for name in template.get_identifiers():
            if name in os.environ:
                values[name] = os.path.abspath(os.environ[name])
            elif name in self.vars:
                values[name] = self.vars[name]
            else:
                raise PlanError(f"{raw}: ${{{name}}} is neither in the environment nor under vars")
        path = Path(os.path.normpath(self._root / Path(template.substitute(values)).expanduser()))
        return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def load_plan(path: str | Path) -> CalibrationPlan:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the calibration plan: {exc.strerror or exc}") from exc
    data = yaml_mapping(text, str(path), PlanError, "the calibration plan")
    try:
        plan = CalibrationPlan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(f"{path}: invalid calibration plan: {validation_problems(exc)}") from exc
    plan._root = (path.parent / plan.base).resolve()
    return plan


# --------------------------------------------------------------------------------------------------
# The judge ceremony: a candidate judge replaces the current one only if it agrees better with people
# and holds the sensitivity suite (catches the perturbed defects the current judge catches)
# --------------------------------------------------------------------------------------------------

# Seed 004's ceremony: the candidate's Cohen's kappa must beat the current judge's by MORE than this.
REQUIRED_KAPPA_IMPROVEMENT = 0.05
JUDGE_HISTORY_FILE = "judge-history.jsonl"


class JudgeCalibrationDecision(BaseModel):
    """One judge-calibration: both judges' kappa against the labels on the same items, and the decision.
    A line of the run history (``append_judge_decision``)."""

    decided_at: str
    rubric_version: str
    labels: str
    labelled_items: int
    current_judge: str
    candidate_judge: str
    current_kappa: float | None
    candidate_kappa: float | None
    improvement: float | None
    required_improvement: float = REQUIRED_KAPPA_IMPROVEMENT
    accepted: bool
    reason: str
    # The sensitivity suite on the same set's acceptable answers (run.sensitivity.suite_held): per
    # family "caught/n" of each judge, whether the candidate holds it, and why not. None: not measured.
    suite_held: bool | None = None
    suite_reasons: list[str] = Field(default_factory=list)
    suite_current: dict[str, str] = Field(default_factory=dict)
    suite_candidate: dict[str, str] = Field(default_factory=dict)


def _kappa_of(results: list[EvaluationResult], cases: list[TestCase]) -> tuple[float | None, str | None, int]:
    """(kappa, why it is undefined, labelled items) of one judge's results against the lines' labels."""
    measured = calibrate(with_line_labels(cases, results))
    if measured is None or measured.kappa is None:
        return None, "no labelled item", 0
    return measured.kappa.value, measured.kappa.undefined_reason, measured.labelled


def decide_judge(cases: list[TestCase], current: list[EvaluationResult], candidate: list[EvaluationResult], *,
                 current_judge: str, candidate_judge: str, rubric_version: str, labels: str, decided_at: str,
                 required: float = REQUIRED_KAPPA_IMPROVEMENT, suite: "SensitivityReport | None" = None
                 ) -> JudgeCalibrationDecision:
    """Accept the candidate only if its kappa exceeds the current judge's by more than ``required`` and,
    when the sensitivity ``suite`` was measured (columns ``current`` and ``candidate``), it holds the
    suite (``run.sensitivity.suite_held``); an undefined kappa on either side decides nothing, so the
    current judge stays."""
    now_kappa, now_undefined, labelled = _kappa_of(current, cases)
    new_kappa, new_undefined, _ = _kappa_of(candidate, cases)
    improvement = None if now_kappa is None or new_kappa is None else round(new_kappa - now_kappa, 4)
    if improvement is None:
        why = now_undefined if now_kappa is None else new_undefined
        reason = f"kappa undefined ({'current' if now_kappa is None else 'candidate'} judge: {why}); current judge kept"
        accepted = False
    else:
        accepted = improvement > required
        reason = (f"kappa {now_kappa:.4f} -> {new_kappa:.4f} ({improvement:+.4f}); "
                  f"{'more' if accepted else 'not more'} than +{required:g}: "
                  f"{'candidate accepted' if accepted else 'current judge kept'}")
    held = None
    extra: dict[str, Any] = {}
    if suite is not None:
        hold = suite_held(suite, "current", "candidate")
        held = hold.held
        extra = {"suite_reasons": hold.reasons, "suite_current": family_cells(suite, "current"),
                 "suite_candidate": family_cells(suite, "candidate")}
        if not hold.held:
            reason += f"; the candidate does not hold the sensitivity suite ({'; '.join(hold.reasons)})"
            if accepted:
                reason = reason.replace("candidate accepted", "kappa alone would accept")
            accepted = False
        else:
            reason += "; the candidate holds the sensitivity suite"
    return JudgeCalibrationDecision(
        decided_at=decided_at, rubric_version=rubric_version, labels=labels, labelled_items=labelled,
        current_judge=current_judge, candidate_judge=candidate_judge, current_kappa=now_kappa,
        candidate_kappa=new_kappa, improvement=improvement, required_improvement=required, accepted=accepted,
        reason=reason, suite_held=held, **extra)


def append_judge_decision(path: str | Path, decision: JudgeCalibrationDecision) -> Path:
    """One JSON line appended to the run history (a decision is never rewritten)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as history:
        history.write(decision.model_dump_json() + "\n")
    return path
