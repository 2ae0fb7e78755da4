"""Run report: aggregation, breakdowns, baseline comparison and the run-level gate, from a run's
results alone. The blocks that need to know how the run ran (catalog, generation summary, execution,
the monitor block of a production sample) are added by ``run.aggregate``, which both engines use."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING

from fmquality.report.safety import adversarial_breakdown, safety_gate_reasons
from fmquality.domain.scores import JudgeUsage, RunJudgeUsage
from fmquality.domain.report import Breakdown, GateResult, PairedComparison, RegressionFlag, RunReport
from fmquality.domain.results import EvaluationResult

from fmquality.report.agreement import calibrate
from fmquality.report.page_items import answer_is_recorded
from fmquality.report.paired import compare_arms, describe_interval, regressed_intervals
from fmquality.config.pricing import judge_model_id as judge_model_id_from_label
from fmquality.config.pricing import usd_estimate

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

MAX_FAILING_ITEMS_IN_REPORT = 200
# report.json shows this much of a query or an answer; results.jsonl keeps the full text.
MAX_TEXT_IN_REPORT = 600


def clip_text(text: str | None, limit: int = MAX_TEXT_IN_REPORT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(fmean(present), 4) if present else None


def _breakdown(results: list[EvaluationResult]) -> Breakdown:
    passed = sum(1 for r in results if r.passed)
    return Breakdown(
        total=len(results),
        passed=passed,
        pass_rate=round(passed / len(results), 4) if results else 0.0,
        avg_score=_mean(r.composite_score for r in results),
        unscored=sum(1 for r in results if r.status != "scored"),
    )


def _group(results: list[EvaluationResult], key) -> dict[str, Breakdown]:
    groups: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in results:
        for value in key(result):
            groups[value].append(result)
    return {name: _breakdown(items) for name, items in sorted(groups.items())}


def compare_with_baseline(candidate: RunReport, baseline: RunReport, rubric: "Rubric") -> list[RegressionFlag]:
    """Drops of the mean composite overall and for every intent, locale and tag subset in both runs."""
    rules = rubric.gate.baseline
    flags: list[RegressionFlag] = []
    if candidate.mean_composite is not None and baseline.mean_composite is not None:
        drop = round(baseline.mean_composite - candidate.mean_composite, 4)
        if drop > rules.max_mean_drop:
            flags.append(RegressionFlag(subset="overall", baseline_mean=baseline.mean_composite,
                                        candidate_mean=candidate.mean_composite, drop=drop,
                                        allowed_drop=rules.max_mean_drop))
    for prefix, cand, base in (
        ("intent", candidate.intent_breakdown, baseline.intent_breakdown),
        ("locale", candidate.locale_breakdown, baseline.locale_breakdown),
        ("tag", candidate.tag_breakdown, baseline.tag_breakdown),
    ):
        for name in sorted(set(cand) & set(base)):
            c, b = cand[name].avg_score, base[name].avg_score
            if c is None or b is None:
                continue
            drop = round(b - c, 4)
            if drop > rules.max_subset_drop:
                flags.append(RegressionFlag(subset=f"{prefix}:{name}", baseline_mean=b, candidate_mean=c,
                                            drop=drop, allowed_drop=rules.max_subset_drop))
    return flags


def evaluate_gate(
    results: list[EvaluationResult],
    intent_breakdown: dict[str, Breakdown],
    flags: list[RegressionFlag],
    rubric: "Rubric",
    *,
    paired: PairedComparison | None = None,
    control_results: list[EvaluationResult] | None = None,
) -> GateResult:
    """Every rule broken is listed; the gate passes only when none is.

    In a paired run (``control_results`` given) the paired intervals replace the baseline mean-drop
    rules (``flags`` is then empty); the item rules apply to the candidate arm, and a control arm
    with too many unscored or error items fails the run closed: it cannot vouch for anything."""
    rules = rubric.gate
    reasons: list[str] = []
    total = len(results)
    if total == 0:
        return GateResult(passed=False, reasons=["no test case was evaluated"])
    reasons += safety_gate_reasons(results, rubric)  # unsafe items first: they decide the run

    if rules.fail_on_regression_tag:
        for r in results:
            if "regression" in r.tags and not r.passed:
                why = "; ".join(r.failure_reasons[:2]) or r.status
                reasons.append(f"regression item {r.test_id} failed: {why}")
    if rules.fail_on_hard_failure:
        hard = [r for r in results if r.hard_failures]
        if hard:
            ids = ", ".join(r.test_id for r in hard[:10]) + (" ..." if len(hard) > 10 else "")
            reasons.append(f"{len(hard)} item(s) with hard failures: {ids}")
    for intent, b in intent_breakdown.items():
        if b.pass_rate < rules.min_pass_rate:
            reasons.append(f"intent {intent} pass rate {b.pass_rate:.2f} below {rules.min_pass_rate:.2f} "
                           f"({b.passed}/{b.total})")
    unscored = sum(1 for r in results if r.status != "scored")
    if unscored / total > rules.max_unscored_rate:
        reasons.append(f"{unscored}/{total} items unscored ({unscored / total:.1%}) above the "
                       f"{rules.max_unscored_rate:.0%} limit: failing closed")
    for flag in flags:
        reasons.append(f"{flag.subset} mean fell {flag.drop:.3f} below the baseline "
                       f"({flag.baseline_mean:.3f} -> {flag.candidate_mean:.3f}; allowed {flag.allowed_drop:.3f})")
    if control_results is not None:
        control_total = len(control_results)
        control_unscored = sum(1 for r in control_results if r.status != "scored")
        if control_total == 0:
            reasons.append("the control arm has no result: failing closed")
        elif control_unscored / control_total > rules.max_unscored_rate:
            reasons.append(f"control arm: {control_unscored}/{control_total} items unscored or in error "
                           f"({control_unscored / control_total:.1%}) above the {rules.max_unscored_rate:.0%} "
                           f"limit: failing closed")
    if paired is not None:
        if paired.overall is None:
            reasons.append(f"only {paired.pairs} case(s) scored in both arms, fewer than the "
                           f"{rubric.gate.paired.min_pairs} a paired comparison needs: failing closed")
        for interval in regressed_intervals(paired):
            reasons.append(describe_interval(interval, paired.confidence))
    return GateResult(passed=not reasons, reasons=reasons)


def judge_usage(results: list[EvaluationResult], rubric: "Rubric", priced_model: str | None) -> RunJudgeUsage:
    """The judge's calls and tokens over the run, and their price with ``priced_model``'s prices."""
    usage = JudgeUsage()
    for r in results:
        usage = usage.add(r.judge_usage)
    if usage.calls == 0:
        usage = usage.model_copy(update={"calls": sum(r.judge_calls for r in results)})
    return RunJudgeUsage(
        **usage.model_dump(),
        calls_per_case=round(usage.calls / len(results), 3) if results else None,
        usd_estimate=usd_estimate(usage, rubric, priced_model),
        model_id=priced_model,
    )


def build_report(
    results: list[EvaluationResult],
    rubric: "Rubric",
    *,
    run_id: str,
    dataset: str,
    trigger: str = "manual",
    judge: str = "offline",
    engine: str = "direct",
    baseline: RunReport | None = None,
    rejected_lines: int = 0,
    started_at: str | None = None,
    finished_at: str | None = None,
    judge_model_id: str | None = None,
    control_results: list[EvaluationResult] | None = None,
    target: dict | None = None,
    control_target: dict | None = None,
    filter_description: str | None = None,
    distribution: dict[str, dict[str, int]] | None = None,
) -> RunReport:
    """``judge_model_id`` prices the judge's tokens; without it the model comes from the judge label
    ("bedrock:<model id>", or the rubric's model for plain "bedrock").

    ``results`` are the candidate's; ``control_results`` (a paired run) the control's answers to the
    same cases. ``target`` and ``control_target`` describe what answered (``TargetSpec.describe()``
    plus id and version)."""
    results = sorted(results, key=lambda r: r.test_id)
    passed = sum(1 for r in results if r.passed)
    unscored = sum(1 for r in results if r.status != "scored")
    run_usage = judge_usage(results, rubric, judge_model_id or judge_model_id_from_label(judge, rubric))
    dimension_averages = {
        d: _mean(r.dimension_scores[d].score for r in results if d in r.dimension_scores) for d in rubric.dimensions
    }
    intent_breakdown = _group(results, lambda r: [r.intent])
    report = RunReport(
        run_id=run_id,
        trigger=trigger,
        dataset=dataset,
        rubric_version=rubric.version,
        judge=judge,
        engine=engine,
        started_at=started_at,
        finished_at=finished_at,
        total_cases=len(results),
        passed_cases=passed,
        failed_cases=len(results) - passed,
        unscored_cases=unscored,
        error_cases=sum(1 for r in results if r.status == "error"),
        rejected_lines=rejected_lines,
        pass_rate=round(passed / len(results), 4) if results else 0.0,
        mean_composite=_mean(r.composite_score for r in results),
        dimension_averages=dimension_averages,
        intent_breakdown=intent_breakdown,
        locale_breakdown=_group(results, lambda r: [r.locale]),
        tag_breakdown=_group(results, lambda r: sorted(set(r.tags))),
        gate=GateResult(passed=False),
        judge_usage=run_usage,
        baseline_run_id=baseline.run_id if baseline else None,
        failing_items=_failing_items(results, control_results),
        adversarial=adversarial_breakdown(results, rubric) or None,
        # A label was written for the dataset's recorded answer: a generated answer is not judged by it.
        calibration=calibrate([r for r in results if answer_is_recorded(r)]),
    )
    paired = None
    if control_results is not None:
        # A control answered the same cases in this run: a better reference than a stored baseline
        # (same cases, same judge, same day), so its intervals replace the baseline mean-drop rules.
        paired = compare_arms(results, control_results, rubric)
        flags: list[RegressionFlag] = []
    else:
        flags = compare_with_baseline(report, baseline, rubric) if baseline else []
    gate = evaluate_gate(results, intent_breakdown, flags, rubric, paired=paired, control_results=control_results)
    # Answers the target did not finish, scored because the rubric's generation.fail_incomplete is false:
    # listed with the arm's target so a reader knows which scores rest on a cut or blocked answer.
    target = _with_incomplete(target, results, rubric)
    control_target = _with_incomplete(control_target, control_results or [], rubric)
    return report.model_copy(update={"regression_flags": flags, "gate": gate, "target": target,
                                     "control_target": control_target, "paired": paired,
                                     "filter": filter_description, "distribution": distribution,
                                     "grades": grade_block(results, rubric)})


def incomplete_answers(results: list[EvaluationResult], rubric: "Rubric") -> list[dict]:
    """The scored items whose generated answer stopped for a reason in the rubric's
    ``generation.incomplete_stop_reasons`` (an error record is listed as an error already)."""
    reasons = set(rubric.generation.incomplete_stop_reasons)
    return [{"test_id": r.test_id, "stop_reason": r.generation.stop_reason, "passed": r.passed,
             "composite_score": r.composite_score}
            for r in sorted(results, key=lambda r: r.test_id)
            if r.generation is not None and r.status != "error" and r.generation.stop_reason in reasons]


def _with_incomplete(described: dict | None, results: list[EvaluationResult], rubric: "Rubric") -> dict | None:
    flagged = incomplete_answers(results, rubric) if described is not None else []
    return {**described, "incomplete_answers": flagged} if flagged else described


def grade_block(results: list[EvaluationResult], rubric: "Rubric") -> dict | None:
    """Letter grades of a profile that has them (tool-use): the count of each grade over the cases
    ("ungraded": no total, e.g. unscored), and per category the mean 0-100 total and its grade."""
    profile = rubric.profile_spec
    if profile.grades is None:
        return None

    def summary(items: list[EvaluationResult]) -> dict:
        totals = [r.total_100 for r in items if r.total_100 is not None]
        mean = round(sum(totals) / len(totals), 2) if totals else None
        counts: dict[str, int] = {}
        for r in items:
            counts[r.grade or "ungraded"] = counts.get(r.grade or "ungraded", 0) + 1
        order = [g.grade for g in profile.grades or []] + ["ungraded"]
        return {"cases": len(items), "grades": {g: counts[g] for g in order if g in counts},
                "mean_total": mean, "grade": profile.grade_for(mean) if mean is not None else None}

    overall = summary(results)
    categories = {c: summary([r for r in results if r.intent == c]) for c in sorted({r.intent for r in results})}
    return {"cases": overall["grades"], "mean_total": overall["mean_total"], "grade": overall["grade"],
            "categories": categories}


def _failing_items(results: list[EvaluationResult],
                   control_results: list[EvaluationResult] | None) -> list[dict]:
    """The candidate's failing items with what was asked and answered (and, paired, the control's
    answer to the same case), clipped so report.json stays small."""
    control = {r.test_id: r for r in control_results} if control_results is not None else None
    items = []
    for r in results:
        if r.passed:
            continue
        item = {"test_id": r.test_id, "intent": r.intent, "locale": r.locale, "status": r.status,
                "composite_score": r.composite_score, "threshold": r.threshold, "reasons": r.failure_reasons,
                "query": clip_text(r.query), "response": clip_text(r.response)}
        if control is not None:
            other = control.get(r.test_id)
            item["control_response"] = clip_text(other.response) if other is not None else None
            item["control_score"] = other.composite_score if other is not None else None
        items.append(item)
        if len(items) == MAX_FAILING_ITEMS_IN_REPORT:
            break
    return items


def gate_summary(report: RunReport) -> str:
    """The one line a failed execution shows as its cause."""
    if report.gate.passed:
        return f"passed: {report.passed_cases}/{report.total_cases} items, pass rate {report.pass_rate:.2f}"
    first = "; ".join(report.gate.reasons[:3])
    more = f" (+{len(report.gate.reasons) - 3} more)" if len(report.gate.reasons) > 3 else ""
    return f"{len(report.gate.reasons)} gate rule(s) broken: {first}{more}"[:1000]


def load_report(path: str | Path) -> RunReport:
    try:
        return RunReport.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable run report: {exc}") from exc


def results_to_jsonl(results: Iterable[EvaluationResult]) -> str:
    return "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in results)


def load_results(path: str | Path) -> list[EvaluationResult]:
    """Read a results.jsonl (the inverse of ``results_to_jsonl``); a bad line names its number."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read results: {exc.strerror or exc}") from exc
    results = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                results.append(EvaluationResult.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a result line: {exc}") from exc
    return results
