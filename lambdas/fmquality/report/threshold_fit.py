"""Per-intent pass thresholds fitted to a target false-alarm rate on the labelled sets
(``fmquality calibrate --fit``), with the rubric edit they imply as a unified diff (never applied).

For each intent the rubric knows: the highest threshold at which at most floor(target x acceptable)
acceptable items fail, searched over the intent's composites rounded down to 2 decimals and its
current threshold. Items failing for another reason than the composite (a hard failure, a floor, no
score) fail whatever the threshold and are counted as fixed failures.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import defaultdict

import yaml
from pydantic import BaseModel, Field

from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import is_labelled

# The reason combine() gives a composite below the threshold, and the weak sub-scores it names after
# it ("fluency.tone = 0.60", nothing more): both go when the threshold is lowered. Any other reason (a
# hard failure, a sub-score below the floor or at the judge's lowest level, unscored, an error) fails
# the item whatever the threshold.
_COMPOSITE_REASON = "composite "
_NAMED_WEAK_SUB_SCORE = re.compile(r"^[\w-]+\.[\w-]+ = -?\d+(?:\.\d+)?$")


def fails_whatever_the_threshold(result: EvaluationResult) -> bool:
    """True when the item fails for a reason other than its composite: a hard failure, no composite
    (unscored or error), a failure reason other than the composite's, or a failed verdict with the
    composite at or above the threshold it was scored with."""
    if result.status != "scored" or result.composite_score is None or result.hard_failures:
        return True
    if result.passed:
        return False
    if result.composite_score >= result.threshold:
        return True
    return any(not (reason.startswith(_COMPOSITE_REASON) or _NAMED_WEAK_SUB_SCORE.match(reason))
               for reason in result.failure_reasons)


def fails_at(result: EvaluationResult, threshold: float) -> bool:
    """The item's verdict were its intent's threshold ``threshold``."""
    return fails_whatever_the_threshold(result) or result.composite_score < threshold


def round_down_2(value: float) -> float:
    """Down to two decimals (0.8567 -> 0.85; 0.29 stays 0.29 despite 0.29 * 100 = 28.999...)."""
    return math.floor(round(value * 100, 6)) / 100


class FitCounts(BaseModel):
    """Labelled items of one subset and their verdicts at the current and at the proposed thresholds."""

    name: str
    acceptable: int = 0
    defective: int = 0
    acceptable_failed_now: int = 0
    acceptable_failed_proposed: int = 0
    defective_passed_now: int = 0  # misses
    defective_passed_proposed: int = 0


class IntentFit(FitCounts):
    current: float
    proposed: float
    changed: bool
    allowed: int  # floor(target_fpr x acceptable): the acceptable items allowed to fail
    fixed_failures: int  # acceptable items failing whatever the threshold
    note: str | None = None


class ThresholdFit(BaseModel):
    """Per-intent thresholds proposed from the labelled sets, pooled: the highest threshold at which
    at most floor(target_fpr x acceptable) acceptable items of the intent fail (or, when the items
    failing whatever the threshold are already more, none more), searched over the intent's composites
    rounded down to 2 decimals and its current threshold. ``diff``: the rubric edit, never applied."""

    target_fpr: float
    sets: list[str]
    rubric: str
    rubric_version: str | None = None
    intents: list[IntentFit]
    locales: list[FitCounts]
    overall: FitCounts
    diff: str = ""
    notes: list[str] = Field(default_factory=list)


def _propose(items: list[EvaluationResult], current: float, target_fpr: float) -> tuple[float, int, int, str | None]:
    """(proposed threshold, allowed, fixed failures, note) for one intent's labelled items."""
    good = [r for r in items if r.label["acceptable"]]
    if not good:
        return current, 0, 0, "no acceptable item: threshold kept"
    allowed = math.floor(target_fpr * len(good) + 1e-9)
    fixed = sum(1 for r in good if fails_whatever_the_threshold(r))
    if fixed == len(good):
        return current, allowed, fixed, (f"every acceptable item fails whatever the threshold ({fixed} fixed "
                                         "failure(s)): threshold kept")
    candidates = {round_down_2(current)} | {round_down_2(r.composite_score) for r in items
                                            if r.composite_score is not None}
    limit = max(allowed, fixed)
    proposed = max((t for t in candidates if sum(1 for r in good if fails_at(r, t)) <= limit), default=current)
    note = None
    if fixed > allowed:
        note = (f"the target cannot be met because of {fixed} fixed failure(s) (allowed {allowed}): proposed "
                "the highest threshold that adds no false alarm, just below the lowest acceptable composite")
    return proposed, allowed, fixed, note


def _tally(counts: FitCounts, result: EvaluationResult, now: float, proposed: float) -> None:
    if result.label["acceptable"]:
        counts.acceptable += 1
        counts.acceptable_failed_now += fails_at(result, now)
        counts.acceptable_failed_proposed += fails_at(result, proposed)
    else:
        counts.defective += 1
        counts.defective_passed_now += not fails_at(result, now)
        counts.defective_passed_proposed += not fails_at(result, proposed)


def fit_thresholds(results: list[EvaluationResult], current: dict[str, float], target_fpr: float,
                   sets: list[str], rubric: str, rubric_version: str | None = None) -> ThresholdFit:
    """Propose a threshold per intent of ``current`` (the rubric's) from the labelled ``results``.
    Items of an intent the rubric does not know are left out, with a note."""
    if not 0 <= target_fpr < 1:
        raise ValueError(f"the target false-alarm rate must lie in [0, 1), not {target_fpr}")
    labelled = [r for r in results if is_labelled(r)]
    by_intent: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in labelled:
        by_intent[result.intent].append(result)
    notes = [f"{len(items)} item(s) of intent {name!r}, which the rubric does not know, left out"
             for name, items in sorted(by_intent.items()) if name not in current]
    intents: list[IntentFit] = []
    proposals: dict[str, float] = {}
    for name, items in sorted(by_intent.items()):
        if name not in current:
            continue
        proposed, allowed, fixed, note = _propose(items, current[name], target_fpr)
        proposals[name] = proposed
        row = IntentFit(name=name, current=current[name], proposed=proposed,
                        changed=round(proposed, 6) != round(current[name], 6), allowed=allowed,
                        fixed_failures=fixed, note=note)
        for result in items:
            _tally(row, result, current[name], proposed)
        intents.append(row)
    locales: dict[str, FitCounts] = {}
    overall = FitCounts(name="all")
    for result in labelled:
        if result.intent not in proposals:
            continue
        locale = locales.setdefault(result.locale, FitCounts(name=result.locale))
        for counts in (locale, overall):
            _tally(counts, result, current[result.intent], proposals[result.intent])
    return ThresholdFit(target_fpr=target_fpr, sets=sets, rubric=rubric, rubric_version=rubric_version,
                        intents=intents, locales=[locales[k] for k in sorted(locales)], overall=overall, notes=notes)


_YAML_KEY = re.compile(r"""^(?P<indent> *)(?P<q>["']?)(?P<key>[^\s"':#][^"':#]*?)(?P=q)\s*:(?:\s|$)""")
_THRESHOLD_VALUE = re.compile(r"(?<![\w-])(?P<head>threshold\s*:\s*)(?P<value>[-+]?(?:\d+\.?\d*|\.\d+))")


def _code_part(line: str) -> str:
    """The line without its comment (a # after a blank or at the start; rubric values hold no #)."""
    match = re.search(r"(^|\s)#", line)
    return line[:match.start()] if match else line


def edit_thresholds(text: str, thresholds: dict[str, float], source: str = "<rubric>") -> str:
    """The rubric text with ``intents.<name>.threshold`` set for the given intents and every other
    character as it was (flow or block style). Raises ValueError when an intent or its threshold
    cannot be found, or the edited text does not parse to the same rubric with only those changed."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"^intents\s*:\s*(#.*)?$", line.rstrip("\r\n"))),
                 None)
    if start is None:
        raise ValueError(f"{source}: no top-level 'intents:' block to edit")
    end = next((i for i in range(start + 1, len(lines))
                if _code_part(lines[i]).strip() and not lines[i].startswith((" ", "\t"))), len(lines))
    entries: list[tuple[str, int]] = []  # (intent, first line) at the block's child indentation
    child_indent = None
    for i in range(start + 1, end):
        match = _YAML_KEY.match(_code_part(lines[i]))
        if not match:
            continue
        indent = len(match["indent"])
        if child_indent is None:
            child_indent = indent
        if indent == child_indent:
            entries.append((match["key"].strip(), i))
    spans = {key: (first, entries[k + 1][1] if k + 1 < len(entries) else end) for k, (key, first) in enumerate(entries)}
    edited = list(lines)
    for intent, value in sorted(thresholds.items()):
        if intent not in spans:
            raise ValueError(f"{source}: intent {intent!r} not found under intents")
        first, stop = spans[intent]
        for i in range(first, stop):
            code = _code_part(edited[i])
            match = _THRESHOLD_VALUE.search(code)
            if match:
                edited[i] = edited[i][:match.start("value")] + f"{value:.2f}" + edited[i][match.end("value"):]
                break
        else:
            raise ValueError(f"{source}: no threshold found for intent {intent!r}")
    new_text = "".join(edited)
    before, after = yaml.safe_load(text), yaml.safe_load(new_text)
    for intent, value in thresholds.items():
        before["intents"][intent]["threshold"] = round(value, 2)
    if before != after:
        raise ValueError(f"{source}: editing the thresholds changed something else; no diff written")
    return new_text


def threshold_diff(text: str, path: str, thresholds: dict[str, float]) -> str:
    """A unified diff of the rubric file with only the given intents' thresholds changed ("" when
    none is)."""
    new_text = edit_thresholds(text, thresholds, path)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))
