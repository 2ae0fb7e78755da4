"""Which checks fire on the labelled answers of ``fmquality calibrate``'s sets: each hard-failure rule
and each sub-score a check settled below 1.0, counted on acceptable and on defective answers per set.
A check that fires on an acceptable answer is a false alarm, to be fixed or demoted.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel

from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import is_labelled

CheckKind = Literal["hard_failure", "sub_score"]


def checks_fired(result: EvaluationResult) -> dict[str, CheckKind]:
    """The checks that fired on one answer: each hard-failure rule (by its name), and each sub-score a
    check settled below 1.0 (``dimension.sub_score``: in ``sub_scores``, not ``judged``)."""
    fired: dict[str, CheckKind] = {failure.rule: "hard_failure" for failure in result.hard_failures}
    for dimension, scored in result.dimension_scores.items():
        for name, value in scored.sub_scores.items():
            if name not in scored.judged and value < 1.0:
                fired[f"{dimension}.{name}"] = "sub_score"
    return fired


class CheckFires(BaseModel):
    """How often one check fired on one labelled set: answers it fired on, of how many."""

    fired_acceptable: int = 0
    acceptable: int = 0
    fired_defective: int = 0
    defective: int = 0


class CheckRow(BaseModel):
    check: str  # a hard-failure rule, or dimension.sub_score
    kind: CheckKind
    by_set: dict[str, CheckFires]  # every set of the table, in its order
    fired_acceptable: int  # over every set
    fired_defective: int
    flagged: bool  # fired on an acceptable answer: to be fixed or demoted


class CheckTable(BaseModel):
    """Every check that fired on a labelled answer, most false alarms (acceptable answers) first."""

    sets: list[str]
    rows: list[CheckRow]


def check_table(labelled_sets: dict[str, list[EvaluationResult]]) -> CheckTable:
    """Per check and per labelled set, the acceptable and defective answers it fired on (a check counts
    once per answer). Only labelled results count."""
    sizes: dict[str, CheckFires] = {}
    fires: dict[str, dict[str, CheckFires]] = defaultdict(dict)
    kinds: dict[str, CheckKind] = {}
    for set_name, results in labelled_sets.items():
        labelled = [r for r in results if is_labelled(r)]
        good = sum(1 for r in labelled if r.label["acceptable"])
        sizes[set_name] = CheckFires(acceptable=good, defective=len(labelled) - good)
        for result in labelled:
            for check, kind in checks_fired(result).items():
                kinds[check] = kind
                counts = fires[check].setdefault(set_name, sizes[set_name].model_copy())
                if result.label["acceptable"]:
                    counts.fired_acceptable += 1
                else:
                    counts.fired_defective += 1
    rows = []
    for check, by_set in fires.items():
        full = {name: by_set.get(name, size) for name, size in sizes.items()}
        on_good = sum(c.fired_acceptable for c in full.values())
        rows.append(CheckRow(check=check, kind=kinds[check], by_set=full, fired_acceptable=on_good,
                             fired_defective=sum(c.fired_defective for c in full.values()), flagged=on_good > 0))
    rows.sort(key=lambda row: (-row.fired_acceptable, row.check))
    return CheckTable(sets=list(sizes), rows=rows)
