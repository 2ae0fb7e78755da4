"""The gate's verdicts on the labelled sets, offline judge: the golden set and the paraphrase set
(the golden situations answered in other words, written apart from the checks). Every acceptable
answer must pass; defective answers may slip through only up to the issue's bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.offline import OfflineJudge

ROOT = Path(__file__).resolve().parents[2]
# Checks settle only what they read completely and the offline judge's heuristic readings count with
# the weight their agreement with people earns (issue 16): precision first. Measured on 2026-11-25:
# golden 8/63 defective pass (style lapses, meaning the offline signals cannot read), paraphrase 13/55.
MAX_DEFECTIVE_PASSED = {"golden": 0.14, "paraphrase": 0.25}


@pytest.fixture(scope="module", params=sorted(MAX_DEFECTIVE_PASSED))
def scored(request, rubric):
    catalog = load_catalog(ROOT / "datasets/mangaassist/catalog.json")
    cases = load_dataset(ROOT / f"datasets/mangaassist/{request.param}.jsonl", catalog).cases
    return request.param, cases, evaluate_cases(cases, rubric, OfflineJudge())


def test_acceptable_answers_that_fail_stay_within_the_target(scored):
    """At most 5 % of acceptable answers fail (README target). Measured: golden 0/96, paraphrase 0/80."""
    _, cases, results = scored
    acceptable = [c for c in cases if c.label.acceptable]
    failed = {r.test_id: r.failure_reasons for c, r in zip(cases, results) if c.label.acceptable and not r.passed}
    assert len(failed) <= 0.05 * len(acceptable), failed


def test_defective_answers_that_pass_stay_within_bounds(scored):
    name, cases, results = scored
    defective = [(c, r) for c, r in zip(cases, results) if not c.label.acceptable]
    passed = [c.test_id for c, r in defective if r.passed]
    assert len(passed) <= MAX_DEFECTIVE_PASSED[name] * len(defective), passed


def test_nothing_is_unscored_or_an_error(scored):
    _, _, results = scored
    assert [r.test_id for r in results if r.status != "scored"] == []
