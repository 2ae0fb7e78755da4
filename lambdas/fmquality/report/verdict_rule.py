"""Why an item passed or failed, in one line beside its verdict on the page (docs/scoring.md, "Who may
fail an item"). Only a hard failure (an evidence-backed finding), an unsafe verdict of a final
dimension, a judge's verdict at its lowest level (or a sub-score under a profile's ``min_sub_score``
floor) and the composite below the intent's threshold fail an item; any other sub-score, however low,
only weighs in the composite. So a sub-score the page shows in red on a passing item is not a
contradiction: the line says which rule let the item through and which low readings only weighed.

The line is read from the result alone (the page has no rubric): the failure reasons ``scoring.composite``
wrote name the rule that fired, and a result summary (no sub-scores) names its low dimensions instead.
"""

from __future__ import annotations

from typing import Any

LOW = 0.6  # what the page marks red by default (page_script's "below")
MAX_NAMED = 4

RULE = ("Who may fail an item: a hard failure (an evidence-backed finding), an unsafe verdict, a judge's "
        "verdict at its lowest level, or the composite below the intent's threshold. Any other sub-score, "
        "however low, only weighs in the composite.")

# The endings of the failure reasons scoring.composite writes for the rules that fail an item alone.
_LOWEST_LEVEL = ": the judge's lowest level"
_FLOOR = "floor for any sub-score"
_UNSAFE = "(unsafe, overrides the composite)"


def low_readings(result: Any, low: float = LOW) -> list[str]:
    """The sub-scores below ``low`` (a heuristic reading with the weight it counts with), lowest first;
    the dimension itself when the record has no sub-scores (a summary) or none of them is low."""
    found: list[tuple[float, str]] = []
    for name, score in result.dimension_scores.items():
        if getattr(score, "status", "scored") != "scored" or score.score is None:
            continue
        subs = getattr(score, "sub_scores", None) or {}
        weights = getattr(score, "weights", None) or {}
        named = [(v, f"{name}.{n} {v:.2f}" + (f" (a heuristic reading, weight {weights[n]:.2f})" if n in weights else ""))
                 for n, v in subs.items() if v < low]
        if not named and score.score < low:
            named = [(score.score, f"{name} {score.score:.2f}")]
        found.extend(named)
    found.sort(key=lambda vn: (vn[0], vn[1]))
    names = [n for _, n in found[:MAX_NAMED]]
    if len(found) > MAX_NAMED:
        names.append(f"{len(found) - MAX_NAMED} more")
    return names


def _rule_name(reason: str) -> str:
    return reason.split(" = ", 1)[0]


def verdict_line(result: Any, low: float = LOW) -> str | None:
    """"passes: …" or "fails: …": the rule that decided the item (None for an error record, whose
    error says why it has no verdict)."""
    if result.status == "error":
        return None
    if result.status == "unscored" or result.composite_score is None:
        return "no verdict: a dimension is unscored, so the item has no composite and does not pass"
    composite, threshold = result.composite_score, result.threshold
    reasons = [str(r) for r in result.failure_reasons]
    if result.passed:
        line = (f"passes: no hard failure, no judge verdict at its lowest level, composite {composite:.3f} "
                f"≥ threshold {threshold:.2f}")
        lows = low_readings(result, low)
        return line + (f"; low sub-scores only weigh in the composite: {', '.join(lows)}" if lows else "")
    causes: list[str] = []
    rules = sorted({h.rule for h in result.hard_failures})
    if rules:
        causes.append(f"hard failure {', '.join(rules)} (an evidence-backed finding fails an item on its own)")
    unsafe = [r.split(" ", 1)[0] for r in reasons if _UNSAFE in r]
    if unsafe:
        causes.append(f"{', '.join(unsafe)} unsafe (overrides the composite)")
    lowest = [_rule_name(r) for r in reasons if r.endswith(_LOWEST_LEVEL)]
    if lowest:
        causes.append(f"the judge's lowest level on {', '.join(lowest)} (fails an item on its own)")
    floor = [_rule_name(r) for r in reasons if r.endswith(_FLOOR)]
    if floor:
        causes.append(f"{', '.join(floor)} below the rubric's floor for any sub-score")
    if composite < threshold:
        causes.append(f"composite {composite:.3f} < threshold {threshold:.2f}")
    elif causes:
        causes.append(f"whatever its composite ({composite:.3f} ≥ {threshold:.2f})")
    return "fails: " + "; ".join(causes) if causes else f"fails: composite {composite:.3f}, threshold {threshold:.2f}"
