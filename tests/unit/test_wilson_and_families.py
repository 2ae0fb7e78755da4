"""The Wilson 95% interval the sensitivity suite reports, and the defect-family table calibrate and the
report group label.defect kinds by (issue 30, items 1 and 4)."""

from __future__ import annotations

import math

import pytest

from fmquality.domain.defects import family_of
from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import calibrate
from fmquality.stats.wilson import wilson_interval


def _wilson_by_definition(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The interval as the set of p whose score test does not reject: (p_hat - p)^2 <= z^2 p(1-p)/n,
    solved by bisection (an independent route to the closed form under test)."""
    p_hat = k / n

    def inside(p: float) -> bool:
        return (p_hat - p) ** 2 <= z * z * p * (1 - p) / n + 1e-15

    def edge(lo: float, hi: float, in_at_lo: bool) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if inside(mid) == in_at_lo:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if inside(0.0) else edge(0.0, p_hat, False)
    high = 1.0 if inside(1.0) else edge(p_hat, 1.0, True)
    return low, high


@pytest.mark.parametrize("k,n", [(0, 10), (5, 10), (10, 10), (1, 40), (37, 40), (96, 100), (0, 1)])
def test_wilson_interval_is_the_score_interval(k, n):
    low, high = wilson_interval(k, n)
    ref_low, ref_high = _wilson_by_definition(k, n)
    assert low == pytest.approx(ref_low, abs=1e-9) and high == pytest.approx(ref_high, abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_interval_known_values_and_edges():
    # 0 of 10: the upper bound is z^2 / (n + z^2), the classic "rule of about 3/n" made exact
    z2 = 1.959963984540054 ** 2
    assert wilson_interval(0, 10) == (0.0, pytest.approx(z2 / (10 + z2)))
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_defect_kinds_map_to_families_and_unknown_kinds_to_other():
    assert family_of("wrong_price") == "factual" and family_of("wrong_sale_math") == "arithmetic"
    assert family_of("off_topic_promotion") == "relevance" and family_of("wrong_ordinal") == "consistency"
    assert family_of("truncated") == "fluency" and family_of("injection_followed") == "safety"
    assert family_of("policy_misapplied") == "policy" and family_of("forgot_constraint") == "constraint"
    assert family_of("Wrong Price") == "factual"  # case and spaces ignored
    assert family_of("gives Kaguya-sama's price as $14.99") == "other"  # free text is counted, never dropped
    assert family_of(None) == family_of("none") == "unspecified"


def _result(test_id: str, passed: bool, acceptable: bool, defect: str | None = None) -> EvaluationResult:
    label = {"acceptable": acceptable} | ({"defect": defect} if defect else {})
    return EvaluationResult(test_id=test_id, intent="faq", locale="en-US", status="scored", passed=passed,
                            threshold=0.8, rubric_version="t", label=label)


def test_family_recall_counts_the_caught_defects_of_every_family_and_keeps_unknown_kinds():
    results = [_result("a", True, True), _result("b", False, False, "wrong_price"),
               _result("c", True, False, "wrong_availability"), _result("d", False, False, "rude_tone"),
               _result("e", True, False, "a kind nobody listed"), _result("f", False, False)]
    families = {f.family: f for f in calibrate(results).families}
    assert set(families) == {"factual", "fluency", "other", "unspecified"}
    assert (families["factual"].caught, families["factual"].defective) == (1, 2)
    assert families["factual"].kinds == {"wrong_availability": 1, "wrong_price": 1}
    assert families["factual"].missed_ids == ["c"] and families["factual"].recall == 0.5
    assert (families["other"].caught, families["other"].defective) == (0, 1)
    assert sum(f.defective for f in families.values()) == 5  # every defective answer, none dropped
    assert not math.isnan(families["fluency"].recall) and families["fluency"].recall == 1.0
