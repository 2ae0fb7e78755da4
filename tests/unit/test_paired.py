"""Paired comparison of a candidate arm with a control arm: per-case differences and their bootstrap
intervals, overall and per subset."""

from __future__ import annotations

import random

import pytest

from fmquality.domain.results import EvaluationResult
from fmquality.report.paired import compare_arms
from fmquality.config.rubric import PairedRules, load_rubric

RUBRIC = load_rubric()
INTENTS = ("faq", "recommendation", "order_tracking", "chitchat")


def _result(test_id, score, *, arm="candidate", intent="faq", locale="en-US", tags=(), status="scored"):
    return EvaluationResult(
        test_id=test_id, arm=arm, intent=intent, locale=locale, status=status,
        passed=score is not None and score >= 0.8, composite_score=score if status == "scored" else None,
        threshold=0.8, rubric_version="t", tags=list(tags),
    )


def _control(n_per_intent=20, seed=3):
    """Control scores that vary from case to case, as real composites do."""
    rng = random.Random(seed)
    return [
        _result(f"{intent}-{i}", round(rng.uniform(0.6, 0.95), 4), arm="control", intent=intent,
                locale="ja-JP" if i % 2 else "en-US", tags=["policy"] if i % 4 == 0 else [])
        for intent in INTENTS for i in range(n_per_intent)
    ]


def _shifted(control, shift_for):
    return [r.model_copy(update={"arm": "candidate",
                                 "composite_score": round(r.composite_score + shift_for(r), 4)})
            for r in control]


def _by_subset(comparison):
    return {s.subset: s for s in comparison.subsets}


def test_a_constant_drop_on_one_intent_is_flagged_there_only():
    control = _control()
    candidate = _shifted(control, lambda r: -0.1 if r.intent == "faq" else 0.0)
    comparison = compare_arms(candidate, control, RUBRIC)
    subsets = _by_subset(comparison)
    faq = subsets["intent:faq"]
    assert faq.regressed and faq.mean_difference == pytest.approx(-0.1, abs=1e-3)
    assert faq.ci_high < -RUBRIC.gate.paired.max_subset_drop
    for intent in INTENTS[1:]:
        assert not subsets[f"intent:{intent}"].regressed
        assert subsets[f"intent:{intent}"].mean_difference == pytest.approx(0.0, abs=1e-3)
    # A quarter of the cases dropped by 0.1: the overall mean falls 0.025, well past its 0.005 line.
    assert comparison.overall.regressed and comparison.overall.mean_difference == pytest.approx(-0.025, abs=1e-3)
    assert comparison.pairs == len(control) and not comparison.unpaired


def test_identical_arms_are_never_flagged():
    control = _control()
    candidate = [r.model_copy(update={"arm": "candidate"}) for r in control]
    comparison = compare_arms(candidate, control, RUBRIC)
    intervals = [comparison.overall, *comparison.subsets]
    assert intervals and not any(i.regressed for i in intervals)
    assert all(i.mean_difference == 0 and i.ci_low == 0 and i.ci_high == 0 for i in intervals)


def test_the_interval_covers_the_true_shift_in_simulation():
    """Noisy differences around a known shift: a 95% interval should cover it about 95% of the time."""
    rules = PairedRules(bootstrap_resamples=500)
    true_shift, covered, runs = -0.03, 0, 40
    for run in range(runs):
        rng = random.Random(run)
        control = [_result(f"c{i}", round(rng.uniform(0.5, 0.9), 4), arm="control") for i in range(60)]
        candidate = [r.model_copy(update={"arm": "candidate",
                                          "composite_score": r.composite_score + true_shift + rng.gauss(0, 0.05)})
                     for r in control]
        overall = compare_arms(candidate, control, rules=rules).overall
        covered += overall.ci_low <= true_shift <= overall.ci_high
    assert covered / runs >= 0.85


def test_unpaired_ids_are_listed_and_left_out_of_the_intervals():
    control = _control(n_per_intent=6)
    candidate = _shifted(control, lambda r: 0.0)
    candidate[0] = candidate[0].model_copy(update={"status": "unscored", "composite_score": None})
    dropped = candidate.pop()  # answered only by the control
    candidate.append(_result("only-candidate", 0.9))
    comparison = compare_arms(candidate, control, RUBRIC)
    assert set(comparison.unpaired) == {candidate[0].test_id, dropped.test_id, "only-candidate"}
    assert comparison.pairs == len(control) - 2
    assert comparison.overall.n == comparison.pairs
    unscored = next(i for i in comparison.items if i.test_id == candidate[0].test_id)
    assert unscored.difference is None and comparison.items[-1] is unscored  # no difference: listed last


def test_items_are_sorted_worst_difference_first():
    control = _control(n_per_intent=5)
    candidate = _shifted(control, lambda r: -0.2 if r.test_id == "chitchat-3" else 0.01)
    items = compare_arms(candidate, control, RUBRIC).items
    assert items[0].test_id == "chitchat-3"
    differences = [i.difference for i in items]
    assert differences == sorted(differences)


def test_the_same_seed_gives_the_same_intervals_and_another_seed_other_ones():
    control = _control()
    rng = random.Random(9)
    candidate = _shifted(control, lambda r: rng.gauss(0, 0.05))
    first = compare_arms(candidate, control, RUBRIC)
    assert compare_arms(candidate, control, RUBRIC) == first
    other = compare_arms(candidate, control, rules=RUBRIC.gate.paired.model_copy(update={"bootstrap_seed": 7}))
    assert (other.overall.ci_low, other.overall.ci_high) != (first.overall.ci_low, first.overall.ci_high)
    assert other.overall.mean_difference == first.overall.mean_difference


def test_an_interval_does_not_depend_on_which_other_subsets_exist():
    control = _control()
    rng = random.Random(4)
    candidate = _shifted(control, lambda r: rng.gauss(0, 0.05))
    full = _by_subset(compare_arms(candidate, control, RUBRIC))
    untagged = _by_subset(compare_arms([r.model_copy(update={"tags": []}) for r in candidate], control, RUBRIC))
    assert "tag:policy" in full and "tag:policy" not in untagged
    assert untagged["intent:faq"] == full["intent:faq"]


def test_subsets_below_min_pairs_are_skipped():
    control = _control(n_per_intent=6)  # "policy" holds 2 cases per intent: 8 in all
    candidate = _shifted(control, lambda r: 0.0)
    rules = RUBRIC.gate.paired.model_copy(update={"min_pairs": 6})
    names = set(_by_subset(compare_arms(candidate, control, rules=rules)))
    assert {"intent:faq", "locale:en-US", "locale:ja-JP", "tag:policy"} <= names
    rules = RUBRIC.gate.paired.model_copy(update={"min_pairs": 9})
    names = set(_by_subset(compare_arms(candidate, control, rules=rules)))
    assert "tag:policy" not in names and "intent:faq" not in names  # 6 faq pairs
    assert {"locale:en-US", "locale:ja-JP"} <= names


def test_fewer_pairs_than_min_pairs_give_no_overall_interval():
    control = _control(n_per_intent=1)
    comparison = compare_arms(_shifted(control, lambda r: 0.0), control, RUBRIC)
    assert comparison.pairs == 4 and comparison.overall is None and comparison.subsets == []


def test_control_summary():
    control = _control(n_per_intent=5)
    comparison = compare_arms(_shifted(control, lambda r: 0.0), control, RUBRIC)
    scores = [r.composite_score for r in control]
    assert comparison.control_mean_composite == pytest.approx(sum(scores) / len(scores), abs=1e-4)
    assert comparison.control_pass_rate == pytest.approx(sum(s >= 0.8 for s in scores) / len(scores), abs=1e-4)
    assert comparison.resamples == RUBRIC.gate.paired.bootstrap_resamples
    assert comparison.confidence == RUBRIC.gate.paired.bootstrap_confidence


def test_rubric_without_a_paired_block_gets_the_defaults(tmp_path):
    from pathlib import Path

    import yaml

    from fmquality.config.rubric import load_rubric as load

    source = Path(__file__).resolve().parents[2] / "datasets" / "rubrics" / "mangaassist-v3.yaml"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    del data["gate"]["paired"]
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load(path).gate.paired == PairedRules()
    data["gate"]["paired"] = {"bootstrap_confidence": 1.5}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(Exception, match="bootstrap_confidence"):
        load(path)
