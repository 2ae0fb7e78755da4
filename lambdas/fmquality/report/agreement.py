"""Agreement of the gate's verdicts with the human labels: the ``calibration`` block of report.json
(a run's report and each labelled set of ``fmquality calibrate``).

A result is labelled when its ``label.acceptable`` is a boolean. Per labelled run: the acceptable
answers that failed and the defective ones that passed (counts, rates, ids), the share of verdicts
that agree, Cohen's kappa (``stats.kappa``) overall, per intent and per locale, and per defect family
(``domain.defects``) how many defective answers failed.
"""

from __future__ import annotations

from collections import defaultdict

from fmquality.domain.defects import FAMILIES, family_of
from fmquality.domain.report import Calibration, FamilyRecall, Kappa
from fmquality.domain.results import EvaluationResult
from fmquality.stats.kappa import cohen_kappa


def is_labelled(result: EvaluationResult) -> bool:
    """The result carries a yes/no human label (``label.acceptable``)."""
    return bool(result.label) and isinstance(result.label.get("acceptable"), bool)


def _kappa_by(labelled: list[EvaluationResult], key: str) -> dict[str, Kappa]:
    groups: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in labelled:
        groups[getattr(result, key)].append(result)
    return {name: cohen_kappa((r.passed, r.label["acceptable"]) for r in items)
            for name, items in sorted(groups.items())}


def calibrate(results: list[EvaluationResult]) -> Calibration | None:
    """Agreement of pass/fail with the human labels; None when no case is labelled. An unscored or
    failed item counts with the verdict the gate gave it: failed."""
    labelled = [r for r in results if is_labelled(r)]
    if not labelled:
        return None
    good = [r for r in labelled if r.label["acceptable"]]
    bad = [r for r in labelled if not r.label["acceptable"]]
    good_failed = [r.test_id for r in good if not r.passed]
    bad_passed = [r.test_id for r in bad if r.passed]
    return Calibration(
        labelled=len(labelled),
        acceptable=len(good),
        defective=len(bad),
        acceptable_failed=len(good_failed),
        defective_passed=len(bad_passed),
        acceptable_failed_rate=round(len(good_failed) / len(good), 4) if good else None,
        defective_passed_rate=round(len(bad_passed) / len(bad), 4) if bad else None,
        agreement=round(1 - (len(good_failed) + len(bad_passed)) / len(labelled), 4),
        acceptable_failed_ids=good_failed,
        defective_passed_ids=bad_passed,
        kappa=cohen_kappa((r.passed, r.label["acceptable"]) for r in labelled),
        kappa_by_intent=_kappa_by(labelled, "intent"),
        kappa_by_locale=_kappa_by(labelled, "locale"),
        families=family_recall(bad),
    )


def family_recall(defective: list[EvaluationResult]) -> list[FamilyRecall]:
    """Per defect family (in ``FAMILIES`` order; a kind the table does not know counts as ``other``):
    the defective answers and how many the gate failed (an unscored or error item counts as failed,
    the verdict the gate gave it)."""
    groups: dict[str, list[EvaluationResult]] = defaultdict(list)
    for r in defective:
        groups[family_of(r.label.get("defect"))].append(r)
    out = []
    for family in sorted(groups, key=lambda f: FAMILIES.index(f) if f in FAMILIES else len(FAMILIES)):
        items = groups[family]
        kinds: dict[str, int] = defaultdict(int)
        for r in items:
            kinds[str(r.label.get("defect") or "unspecified")] += 1
        caught = sum(not r.passed for r in items)
        out.append(FamilyRecall(family=family, defective=len(items), caught=caught,
                                recall=round(caught / len(items), 4), kinds=dict(sorted(kinds.items())),
                                missed_ids=[r.test_id for r in items if r.passed]))
    return out


def kappa_subsets(cal: Calibration) -> list[tuple[str, Kappa]]:
    """("all", kappa), then ("intent <name>", kappa) and ("locale <name>", kappa): the rows shown."""
    return ([("all", cal.kappa)] if cal.kappa else []) + \
        [(f"intent {name}", k) for name, k in cal.kappa_by_intent.items()] + \
        [(f"locale {name}", k) for name, k in cal.kappa_by_locale.items()]
