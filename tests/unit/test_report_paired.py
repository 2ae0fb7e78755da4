"""build_report with a control arm: the paired intervals decide the regression rules, the item rules
still apply to the candidate, and a control that could not be scored fails the run closed."""

from __future__ import annotations

import random

from fmquality.domain.results import EvaluationResult
from fmquality.report.build import MAX_TEXT_IN_REPORT, build_report
from fmquality.config.rubric import load_rubric

RUBRIC = load_rubric()
INTENTS = ("faq", "recommendation", "order_tracking", "chitchat")


def _arm(arm, shift=lambda intent: 0.0, n_per_intent=20, seed=5, response=lambda tid: f"answer to {tid}"):
    rng = random.Random(seed)
    out = []
    for intent in INTENTS:
        for i in range(n_per_intent):
            test_id = f"{intent}-{i}"
            score = round(min(1.0, rng.uniform(0.93, 0.99) + shift(intent)), 4)
            threshold = RUBRIC.threshold_for(intent)
            passed = score >= threshold
            out.append(EvaluationResult(
                test_id=test_id, arm=arm, intent=intent, locale="en-US", status="scored", passed=passed,
                composite_score=score, threshold=threshold, rubric_version=RUBRIC.version,
                failure_reasons=[] if passed else [f"composite {score:.3f} below the {intent} threshold"],
                query=f"question {test_id}?", response=response(test_id),
            ))
    return out


def _report(candidate, control=None, baseline=None):
    return build_report(candidate, RUBRIC, run_id="r", dataset="d.jsonl", control_results=control, baseline=baseline)


def test_a_paired_run_passes_when_the_arms_agree():
    report = _report(_arm("candidate"), _arm("control"))
    assert report.gate.passed, report.gate.reasons
    assert report.paired is not None and report.paired.pairs == 80
    assert report.regression_flags == []


def test_a_dropped_intent_gives_one_reason_per_regressed_interval():
    candidate = _arm("candidate", shift=lambda intent: -0.06 if intent == "faq" else 0.0)
    report = _report(candidate, _arm("control"))
    regressed = [i.subset for i in [report.paired.overall, *report.paired.subsets] if i.regressed]
    assert "intent:faq" in regressed and "intent:chitchat" not in regressed
    paired_reasons = [r for r in report.gate.reasons if "candidate − control" in r]
    assert len(paired_reasons) == len(regressed)
    faq = next(r for r in paired_reasons if r.startswith("intent:faq:"))
    assert "−0.060" in faq and "95% CI" in faq and "below −0.020" in faq


def test_the_paired_rules_replace_the_baseline_mean_drop_rules():
    """A baseline whose means are far above the candidate's would flag every subset; with a control
    that agrees with the candidate the run has no regression reason."""
    baseline = _report(_arm("candidate", shift=lambda intent: 0.2))
    candidate, control = _arm("candidate", seed=8), _arm("control", seed=8)
    assert _report(candidate, baseline=baseline).regression_flags  # unpaired: the baseline flags it
    report = _report(candidate, control, baseline=baseline)
    assert report.regression_flags == []
    assert not any("baseline" in r or "candidate − control" in r for r in report.gate.reasons)
    assert report.gate.passed, report.gate.reasons


def test_the_item_rules_still_apply_to_the_candidate():
    candidate = _arm("candidate")
    candidate[0] = candidate[0].model_copy(update={"passed": False, "tags": ["regression"],
                                                  "failure_reasons": ["wrong return window"]})
    report = _report(candidate, _arm("control"))
    assert not report.gate.passed
    assert any("regression item faq-0 failed: wrong return window" in r for r in report.gate.reasons)


def test_an_unscored_control_arm_fails_closed():
    control = _arm("control")
    for i in range(0, 10):
        control[i] = control[i].model_copy(update={"status": "error", "composite_score": None, "passed": False,
                                                  "error": "control target timed out"})
    report = _report(_arm("candidate"), control)
    assert not report.gate.passed
    assert any(r.startswith("control arm: 10/80 items unscored or in error") and "failing closed" in r
               for r in report.gate.reasons)
    assert len(report.paired.unpaired) == 10


def test_failing_items_carry_query_answer_and_control_answer_clipped():
    long_answer = "word " * 400
    candidate = _arm("candidate", shift=lambda intent: -0.3 if intent == "faq" else 0.0,
                     response=lambda tid: long_answer if tid == "faq-1" else f"answer to {tid}")
    control = _arm("control", response=lambda tid: f"control answer to {tid}")
    report = _report(candidate, control)
    items = {x["test_id"]: x for x in report.failing_items}
    assert set(items) == {f"faq-{i}" for i in range(20)}
    first = items["faq-0"]
    assert first["query"] == "question faq-0?" and first["response"] == "answer to faq-0"
    assert first["control_response"] == "control answer to faq-0"
    assert len(items["faq-1"]["response"]) <= MAX_TEXT_IN_REPORT and items["faq-1"]["response"].endswith("…")


def test_an_unpaired_run_has_no_control_fields():
    candidate = _arm("candidate", shift=lambda intent: -0.3 if intent == "faq" else 0.0)
    report = _report(candidate)
    assert report.paired is None
    assert report.failing_items and all("control_response" not in x for x in report.failing_items)
    assert report.failing_items[0]["query"].startswith("question")


def test_a_paired_run_publishes_the_mean_difference_and_the_interval_low_end():
    from datetime import datetime, timezone

    from fmquality.adapters.cloudwatch import run_metric_data

    candidate = _arm("candidate", shift=lambda intent: -0.06 if intent == "faq" else 0.0)
    report = _report(candidate, _arm("control"))
    data = run_metric_data(report, candidate, RUBRIC.gate.min_pass_rate, datetime(2025, 1, 1, tzinfo=timezone.utc))
    paired = {(d["MetricName"], (d.get("Dimensions") or [{}])[0].get("Value")): d["Value"]
              for d in data if d["MetricName"].startswith("Paired")}
    assert paired[("PairedMeanDifference", None)] == report.paired.overall.mean_difference
    assert paired[("PairedCiLow", None)] == report.paired.overall.ci_low
    assert paired[("PairedMeanDifference", "faq")] == -0.06
    assert {intent for _, intent in paired} == {None, *INTENTS}
    unpaired = run_metric_data(_report(candidate), candidate, RUBRIC.gate.min_pass_rate)
    assert not any(d["MetricName"].startswith("Paired") for d in unpaired)
