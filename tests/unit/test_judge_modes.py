"""Judge modes of the direct engine: per_dimension (a call per open dimension) and combined (one call
per case), and how a combined verdict is split back into the four dimension scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.scoring.plan import plan_case
from fmquality.run.evaluate import evaluate_case, evaluate_cases
from fmquality.judges.base import CombinedJudgeRequest, JudgeOutcome, JudgeVerdict
from fmquality.judges.offline import OfflineJudge
from fmquality.judges.scripted import COMBINED, ScriptedJudge
from fmquality.schemes.mangaassist import DIMENSIONS, MANGAASSIST

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def golden():
    loaded = load_dataset(ROOT / "datasets/mangaassist/golden.jsonl",
                          load_catalog(ROOT / "datasets/mangaassist/catalog.json"))
    return loaded.cases


def open_dimensions(case, rubric) -> dict[str, list[str]]:
    plans = list(plan_case(MANGAASSIST, case, rubric).values())
    return {p.dimension: list(p.request.sub_scores) for p in plans if p.final is None and p.request is not None}


def case_with_settled_and_open_dimensions(cases, rubric):
    """A case where the checks settle at least one dimension and leave at least two to the judge."""
    for case in cases:
        opened = open_dimensions(case, rubric)
        if 2 <= len(opened) < len(DIMENSIONS):
            return case, opened
    raise AssertionError("the golden set should hold such a case")


def test_combined_mode_makes_one_call_per_case_and_scores_like_per_dimension(golden, rubric):
    cases = golden[:8]
    opened = {c.test_id: open_dimensions(c, rubric) for c in cases}
    per_dim_judge, combined_judge = ScriptedJudge(), ScriptedJudge()
    per_dim = evaluate_cases(cases, rubric, per_dim_judge, mode="per_dimension")
    combined = evaluate_cases(cases, rubric, combined_judge, mode="combined")

    assert len(per_dim_judge.calls) == sum(len(o) for o in opened.values())
    assert sorted(combined_judge.calls) == sorted((t, COMBINED) for t, o in opened.items() if o)
    for a, b in zip(per_dim, combined):
        assert a.test_id == b.test_id and a.status == b.status == "scored"
        assert a.composite_score == b.composite_score
        assert {d: s.sub_scores for d, s in a.dimension_scores.items()} == \
            {d: s.sub_scores for d, s in b.dimension_scores.items()}
        assert b.judge_calls == (1 if opened[b.test_id] else 0)


def test_offline_judge_gives_the_same_scores_in_both_modes(golden, rubric):
    cases = golden[::20]
    per_dim = evaluate_cases(cases, rubric, OfflineJudge(), mode="per_dimension")
    combined = evaluate_cases(cases, rubric, OfflineJudge(), mode="combined")
    assert [r.model_dump(exclude={"run_id"}) for r in per_dim] == [r.model_dump(exclude={"run_id"}) for r in combined]


def test_rubric_mode_is_the_default(golden, rubric):
    combined_rubric = rubric.model_copy(update={"judge": rubric.judge.model_copy(update={"mode": "combined"})})
    case, _ = case_with_settled_and_open_dimensions(golden, rubric)
    judge = ScriptedJudge()
    evaluate_case(case, combined_rubric, judge)
    assert judge.calls == [(case.test_id, COMBINED)]


def test_only_the_requested_sub_scores_are_read_from_a_combined_verdict(golden, rubric):
    case, opened = case_with_settled_and_open_dimensions(golden, rubric)
    baseline = evaluate_case(case, rubric, ScriptedJudge(), mode="combined")

    def greedy(request: CombinedJudgeRequest):
        # Scores for every sub-score of every dimension, including those the checks settled.
        from fmquality.schemes.mangaassist import SUB_SCORES

        return {d: JudgeVerdict(sub_scores={n: (1.0 if n in opened.get(d, []) else 0.0) for n in SUB_SCORES[d]},
                                rationale="greedy") for d in DIMENSIONS}

    judge = ScriptedJudge(script={(case.test_id, COMBINED): greedy})
    result = evaluate_case(case, rubric, judge, mode="combined")
    assert result.status == "scored"
    # The greedy 0.0s for check-settled sub-scores were ignored: every sub-score is as before.
    for dimension, score in result.dimension_scores.items():
        assert score.sub_scores == baseline.dimension_scores[dimension].sub_scores


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("judge failed after 5 attempts: ThrottlingException", "judge failed after 5 attempts"),
        ("drop-one-dimension", "lacks sub-scores"),
        ("drop-one-sub-score", "lacks sub-scores"),
    ],
)
def test_a_failed_combined_call_leaves_every_judged_dimension_unscored(golden, rubric, answer, reason):
    case, opened = case_with_settled_and_open_dimensions(golden, rubric)
    victim = next(iter(opened))

    def reply(request: CombinedJudgeRequest):
        verdicts = {d: JudgeVerdict(sub_scores={n: 0.9 for n in names}, rationale="ok")
                    for d, names in request.sub_scores().items()}
        if answer == "drop-one-dimension":
            verdicts.pop(victim)
        elif answer == "drop-one-sub-score":
            verdicts[victim] = JudgeVerdict(sub_scores={n: 0.9 for n in opened[victim][1:]} or {"other": 0.5},
                                            rationale="partial")
        else:
            return answer
        return verdicts

    judge = ScriptedJudge(script={(case.test_id, COMBINED): reply})
    result = evaluate_case(case, rubric, judge, mode="combined")

    assert result.status == "unscored" and result.composite_score is None and not result.passed
    for dimension, score in result.dimension_scores.items():
        if dimension in opened:
            assert score.status == "unscored" and score.score is None and reason in score.unscored_reason
        else:  # settled by the checks (scored, or found not to apply): the judge's failure does not touch it
            assert score.status in ("scored", "not_applicable") and score.unscored_reason != reason
    assert result.judge_calls == 1  # the one call is counted once


def test_a_combined_call_is_counted_once_with_its_tokens(golden, rubric):
    from fmquality.judges.base import CombinedJudgeOutcome
    from fmquality.domain.scores import JudgeUsage

    case, opened = case_with_settled_and_open_dimensions(golden, rubric)

    class Metered(ScriptedJudge):
        def judge_combined(self, request, rubric):
            outcome = super().judge_combined(request, rubric)
            usage = JudgeUsage(calls=1, input_tokens=1000, output_tokens=100, cache_read_tokens=900)
            return CombinedJudgeOutcome(**{**outcome.model_dump(exclude={"verdicts", "usage"}),
                                           "verdicts": outcome.verdicts, "usage": usage})

    result = evaluate_case(case, rubric, Metered(), mode="combined")
    assert result.judge_calls == 1
    assert result.judge_usage.input_tokens == 1000 and result.judge_usage.cache_read_tokens == 900
    carriers = [d for d, s in result.dimension_scores.items() if s.judge_calls]
    assert len(carriers) == 1 and carriers[0] in opened


def test_a_judge_without_combined_mode_is_asked_per_dimension(golden, rubric):
    case, opened = case_with_settled_and_open_dimensions(golden, rubric)

    class PerDimensionOnly:
        name, model_id = "minimal", "minimal-v1"

        def __init__(self):
            self.asked = []

        def judge(self, request, rubric):
            self.asked.append(request.dimension)
            return JudgeOutcome(verdict=JudgeVerdict(sub_scores={n: 1.0 for n in request.sub_scores},
                                                     rationale="ok"), calls=1)

    judge = PerDimensionOnly()
    result = evaluate_case(case, rubric, judge, mode="combined")
    assert result.status == "scored" and sorted(judge.asked) == sorted(opened)


def test_an_unknown_mode_is_refused(golden, rubric):
    with pytest.raises(ValueError, match="unknown judge mode"):
        evaluate_case(golden[0], rubric, ScriptedJudge(), mode="batch")
