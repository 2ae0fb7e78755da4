"""The sensitivity suite (``fmquality sensitivity``, a section of ``make calibrate``, part of the
judge-calibration ceremony): every operator of ``sensitivity.registry`` applied to the acceptable
answers of a labelled set, each perturbed answer scored by each judge mode, and per operator and per
locale the share each mode fails, with its count and Wilson 95% interval, beside the false alarms on
the unperturbed answers. An operator that does not apply to a case skips it: ``applicable`` counts the
cases it changed.

This module builds the cases and measures outcomes; who scores them (in-process, worker processes,
Bedrock) is the caller's choice (``cli/sensitivity.py``)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from fmquality.domain.case import TestCase
from fmquality.sensitivity.registry import OPERATORS, Operator, Perturbation, perturb_all
from fmquality.stats.wilson import wilson_interval

ALL = "all"
# The ceremony: a candidate judge holds the suite when no family's caught share drops, and the false
# alarms on the unperturbed answers do not rise, by more than this.
SUITE_TOLERANCE = 0.05


class Outcome(Protocol):
    """What the suite reads of a result (an EvaluationResult or a run's ResultSummary)."""

    test_id: str
    passed: bool
    status: str


class Share(BaseModel):
    """``hits`` of ``n`` (caught perturbations, or failed acceptable answers), with its 95% interval."""

    hits: int
    n: int
    share: float | None
    low: float | None
    high: float | None
    unscored: int = 0
    errors: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[Outcome | None]) -> "Share":
        hits = n = unscored = errors = 0
        for o in outcomes:
            if o is None or o.status == "error":
                errors += 1
                continue
            n += 1
            unscored += o.status == "unscored"
            hits += not o.passed
        interval = wilson_interval(hits, n)
        return cls(hits=hits, n=n, share=None if n == 0 else round(hits / n, 4),
                   low=None if interval is None else round(interval[0], 4),
                   high=None if interval is None else round(interval[1], 4), unscored=unscored, errors=errors)

    def cell(self) -> str:
        if self.n == 0:
            return "–"
        return f"{self.hits}/{self.n} {100 * self.share:.0f}% [{100 * self.low:.0f}–{100 * self.high:.0f}]"


class SuiteRow(BaseModel):
    """One operator (or one family, pooled over its operators) in one locale (or ``all``)."""

    name: str
    family: str
    locale: str
    applicable: int
    tried: int
    by_judge: dict[str, Share]
    example: str | None = None


class PerturbedCase(BaseModel):
    """One perturbed answer: where it came from, what the operator changed, and per judge mode whether
    it failed (None: an error record). The JSON file lists them, so a miss can be read."""

    test_id: str
    source: str
    operator: str
    locale: str
    change: str
    caught: dict[str, bool | None]


class SensitivityReport(BaseModel):
    generated_at: str
    dataset: str
    seed: int
    rubric_version: str | None = None
    judges: list[str]
    acceptable: int
    operators: list[SuiteRow]
    families: list[SuiteRow]
    false_alarms: list[SuiteRow]  # name "unperturbed": the acceptable answers as they are
    notes: list[str] = Field(default_factory=list)
    cases: list[PerturbedCase] = Field(default_factory=list)

    def row(self, name: str, locale: str = ALL) -> SuiteRow | None:
        return next((r for r in self.operators + self.families + self.false_alarms
                     if r.name == name and r.locale == locale), None)


def acceptable_cases(cases: Sequence[TestCase]) -> list[TestCase]:
    """The lines labelled acceptable that carry an answer: what the operators perturb."""
    return [c for c in cases if c.label is not None and c.label.acceptable and (c.response or "").strip()]


def build_suite(cases: Sequence[TestCase], operators: Sequence[Operator] = OPERATORS, seed: int = 0,
                per_operator: int | None = None) -> tuple[list[TestCase], list[Perturbation]]:
    """(the acceptable answers, their perturbations): every one, or at most ``per_operator`` of each
    operator, drawn with the seed (the judge ceremony keeps a paid judge's bill bounded)."""
    acceptable = acceptable_cases(cases)
    perturbations = perturb_all(acceptable, operators, seed)
    if per_operator is None:
        return acceptable, perturbations
    kept: list[Perturbation] = []
    for op in operators:
        mine = [p for p in perturbations if p.operator.name == op.name]
        if len(mine) > per_operator:
            chosen = set(random.Random(f"{seed}|sample|{op.name}").sample(range(len(mine)), per_operator))
            mine = [p for i, p in enumerate(mine) if i in chosen]
        kept += mine
    return acceptable, kept


def _locales(cases: Sequence[TestCase]) -> list[str]:
    return [ALL] + sorted({c.locale for c in cases})


def measure(acceptable: Sequence[TestCase], perturbations: Sequence[Perturbation], operators: Sequence[Operator],
            outcomes: Mapping[str, Mapping[str, Outcome]], *, dataset: str, seed: int, generated_at: str,
            rubric_version: str | None = None) -> SensitivityReport:
    """The report from every judge mode's outcomes (``mode -> test id -> outcome``) of the perturbed
    cases and of the unperturbed acceptable answers."""
    judges = list(outcomes)
    locales = _locales(acceptable)

    def in_locale(case: TestCase, locale: str) -> bool:
        return locale == ALL or case.locale == locale

    def shares(ids: list[str]) -> dict[str, Share]:
        return {j: Share.of(outcomes[j].get(i) for i in ids) for j in judges}

    rows, families = [], []
    for locale in locales:
        tried = sum(in_locale(c, locale) for c in acceptable)
        for op in operators:
            mine = [p for p in perturbations if p.operator.name == op.name and in_locale(p.source, locale)]
            eligible = sum(in_locale(c, locale) and op.applies_to_locale(c) for c in acceptable)
            rows.append(SuiteRow(name=op.name, family=op.family, locale=locale, applicable=len(mine), tried=eligible,
                                 by_judge=shares([p.case.test_id for p in mine]),
                                 example=mine[0].perturbed.change if mine else None))
        for family in dict.fromkeys(op.family for op in operators):
            mine = [p for p in perturbations if p.operator.family == family and in_locale(p.source, locale)]
            families.append(SuiteRow(name=family, family=family, locale=locale, applicable=len(mine), tried=tried,
                                     by_judge=shares([p.case.test_id for p in mine])))
    alarms = [SuiteRow(name="unperturbed", family="none", locale=locale,
                       applicable=sum(in_locale(c, locale) for c in acceptable),
                       tried=sum(in_locale(c, locale) for c in acceptable),
                       by_judge=shares([c.test_id for c in acceptable if in_locale(c, locale)])) for locale in locales]
    notes = [f"{op.name}: applies to no case of this set" for op in operators
             if not any(p.operator.name == op.name for p in perturbations)]
    def caught(judge: str, test_id: str) -> bool | None:
        o = outcomes[judge].get(test_id)
        return None if o is None or o.status == "error" else not o.passed

    cases = [PerturbedCase(test_id=p.case.test_id, source=p.source.test_id, operator=p.operator.name,
                           locale=p.source.locale, change=p.perturbed.change,
                           caught={j: caught(j, p.case.test_id) for j in judges}) for p in perturbations]
    return SensitivityReport(generated_at=generated_at, dataset=dataset, seed=seed, rubric_version=rubric_version,
                             judges=judges, acceptable=len(acceptable), operators=rows, families=families,
                             false_alarms=alarms, notes=notes, cases=cases)


# ------------------------------------------------------------------ the judge ceremony


class SuiteHold(BaseModel):
    held: bool
    reasons: list[str]


def suite_held(report: SensitivityReport, current: str, candidate: str,
               tolerance: float = SUITE_TOLERANCE) -> SuiteHold:
    """Whether the ``candidate`` judge holds the suite the ``current`` one holds (both columns of one
    report, scored on the same perturbed answers): per family (all locales), its caught share at most
    ``tolerance`` below the current's, and its false alarms on the unperturbed answers at most
    ``tolerance`` above."""
    reasons = []
    for row in report.families:
        if row.locale != ALL:
            continue
        now, new = row.by_judge[current], row.by_judge[candidate]
        if now.n == 0 or new.n == 0:
            continue
        if new.share < now.share - tolerance - 1e-9:  # type: ignore[operator]
            reasons.append(f"{row.name}: caught {new.hits}/{new.n} ({new.share:.0%}) against {now.hits}/{now.n} "
                           f"({now.share:.0%}), more than {tolerance:g} below")
    alarms = report.row("unperturbed")
    if alarms is not None:
        now, new = alarms.by_judge[current], alarms.by_judge[candidate]
        if now.n and new.n and new.share > now.share + tolerance + 1e-9:  # type: ignore[operator]
            reasons.append(f"false alarms on the unperturbed answers {new.hits}/{new.n} ({new.share:.0%}) against "
                           f"{now.hits}/{now.n} ({now.share:.0%}), more than {tolerance:g} above")
    return SuiteHold(held=not reasons, reasons=reasons)


def family_cells(report: SensitivityReport, judge: str) -> dict[str, str]:
    """family -> "caught/n" of one judge, all locales, plus the false alarms: what a decision records."""
    cells = {r.name: f"{r.by_judge[judge].hits}/{r.by_judge[judge].n}" for r in report.families if r.locale == ALL}
    alarms = report.row("unperturbed")
    if alarms is not None:
        cells["false_alarms"] = f"{alarms.by_judge[judge].hits}/{alarms.by_judge[judge].n}"
    return cells


# ------------------------------------------------------------------ rendering


def table_rows(report: SensitivityReport, *, locales: bool = True) -> list[list[str]]:
    """The console and Markdown table: per operator (per locale when asked), then per family, then the
    false alarms; the cells are "caught/n share [95% interval]" per judge mode."""
    out = []
    wanted = [ALL] + ([loc for loc in dict.fromkeys(r.locale for r in report.operators) if loc != ALL] if locales else [])
    for locale in wanted:
        for r in report.operators:
            if r.locale == locale:
                out.append([r.family, r.name, locale, f"{r.applicable}/{r.tried}",
                            *[r.by_judge[j].cell() for j in report.judges]])
    for r in report.families:
        if r.locale in wanted:
            out.append([r.family, "(family)", r.locale, str(r.applicable), *[r.by_judge[j].cell() for j in report.judges]])
    for r in report.false_alarms:
        if r.locale in wanted:
            out.append(["false alarms", "unperturbed", r.locale, str(r.applicable),
                        *[r.by_judge[j].cell() for j in report.judges]])
    return out


def columns(report: SensitivityReport) -> list[str]:
    return ["family", "operator", "locale", "applicable", *[f"{j}: caught" for j in report.judges]]


def render_markdown(report: SensitivityReport, command: str | None = None) -> str:
    lines = [f"# Sensitivity suite: {report.dataset}", "",
             f"{report.acceptable} acceptable answers, seed {report.seed}, rubric {report.rubric_version or '?'}, "
             f"judge modes: {', '.join(report.judges)}; generated {report.generated_at}.", ""]
    if command:
        lines += ["```", command, "```", ""]
    lines += ["Each cell: perturbed answers the mode fails / applicable, the share and its Wilson 95% interval. "
              "`applicable` is the cases the operator changed / the cases it was tried on. The false-alarm rows "
              "are the unperturbed acceptable answers that fail.", ""]
    head = columns(report)
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(report)]
    lines += [""] + [f"- note: {n}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"
