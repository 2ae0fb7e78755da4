"""Agreement of the judge's signals with the labels (``fmquality calibrate --signals-out``): the AUC
(``stats.ranks.auc``) of each judged sub-score between acceptable and defective answers, the weight
it earns, and the YAML file the offline judge reads its weights from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import is_labelled
from fmquality.stats.ranks import auc

MIN_ANSWERS_PER_SIDE = 10


class SignalAgreement(BaseModel):
    """One judged sub-score against the labels: its AUC (acceptable vs defective), the answers on each
    side, and the weight that agreement earns: max(0, 2 x AUC - 1), 0 below MIN_ANSWERS_PER_SIDE."""

    auc: float | None
    acceptable: int
    defective: int
    weight: float


class SignalReport(BaseModel):
    judge: str
    measured_on: list[str]
    signals: dict[str, SignalAgreement]


def signal_weight(value: float | None, acceptable: int, defective: int) -> float:
    if value is None or min(acceptable, defective) < MIN_ANSWERS_PER_SIDE:
        return 0.0
    return round(max(0.0, 2 * value - 1), 3)


def signal_agreement(results: Iterable[EvaluationResult], judge: str, measured_on: list[str]) -> SignalReport:
    """Pool the heuristic readings of every judged sub-score (those that count with an earned weight,
    ``DimensionScore.weights``; a finding graded as a verdict is not one) over the labelled
    ``results``, by label, and measure how they separate acceptable from defective answers. A
    sub-score is named by itself, or as ``dimension.sub_score`` when two dimensions have one of that
    name."""
    values: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for result in results:
        if not is_labelled(result):
            continue
        for dimension, scored in result.dimension_scores.items():
            for name in scored.judged:
                if name in scored.sub_scores and name in scored.weights:
                    values[(dimension, name)][0 if result.label["acceptable"] else 1].append(scored.sub_scores[name])
    bare = Counter(name for _, name in values)
    signals = {}
    for (dimension, name), (good, bad) in values.items():
        value = auc(good, bad)
        signals[name if bare[name] == 1 else f"{dimension}.{name}"] = SignalAgreement(
            auc=None if value is None else round(value, 3), acceptable=len(good), defective=len(bad),
            weight=signal_weight(value, len(good), len(bad)))
    return SignalReport(judge=judge, measured_on=measured_on, signals=dict(sorted(signals.items())))


def signals_yaml(report: SignalReport, command: str) -> str:
    """The agreement file the offline judge reads its weights from."""
    lines = [
        "# Agreement of the offline judge's signals with people: AUC of each sub-score's value, acceptable vs",
        "# defective answers, on the labelled sets below; weight = max(0, 2 x AUC - 1) "
        f"(0 below {MIN_ANSWERS_PER_SIDE} answers a side).",
        f"# Written by: {command}",
        f"judge: {report.judge}",
        f"measured_on: [{', '.join(report.measured_on)}]",
        "signals:" if report.signals else "signals: {}",
    ]
    for name, s in report.signals.items():
        value = "null" if s.auc is None else f"{s.auc:.3f}"
        lines.append(f"  {name}: {{auc: {value}, acceptable: {s.acceptable}, defective: {s.defective}, "
                     f"weight: {s.weight!r}}}")
    return "\n".join(lines) + "\n"
