"""The statistics of ``fmquality.stats`` against values computed by hand (the working is in the
comments), by brute force, or by scipy where it is installed."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from fmquality.stats.bootstrap import BootstrapMeans, percentile
from fmquality.stats.cusum import cusum_down
from fmquality.stats.kappa import cohen_kappa, quadratic_weighted_kappa
from fmquality.stats.ks import kolmogorov_sf, ks_2samp
from fmquality.stats.ranks import auc, average_ranks, kendall_tau_b, rank_correlation, spearman_rho

# Wikipedia's Spearman example: IQ against hours of TV a week, no ties.
IQ = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
TV = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]


def test_average_ranks_share_the_mean_rank_of_a_tie():
    assert average_ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert average_ranks([3, 3, 3]) == [2, 2, 2]
    assert average_ranks([0.5, 0.1, 0.9, 0.1]) == [3, 1.5, 4, 1.5]
    assert average_ranks([]) == []


def test_spearman_and_kendall_without_ties():
    # Ranks of IQ: 7 4 1 5 3 6 2 10 9 8; of TV: 2 7 1 10 8 9 6 4 3 5.
    # d^2 = 25+9+0+25+25+9+16+36+36+9 = 194, rho = 1 - 6*194 / (10*(100-1)) = -29/165.
    assert spearman_rho(IQ, TV) == pytest.approx(-29 / 165)
    # Of the 45 pairs 20 are concordant and 25 discordant: tau = (20 - 25) / 45 = -1/9.
    assert kendall_tau_b(IQ, TV) == pytest.approx(-1 / 9)


def test_spearman_and_kendall_with_ties():
    # x = 1..5, y = 5 6 7 8 7: y's two 7s share rank 3.5, so ranks y = 1 2 3.5 5 3.5.
    # Deviations from the mean rank 3: x -2 -1 0 1 2; y -2 -1 .5 2 .5.
    # sxy = 4+1+0+2+1 = 8, sxx = 10, syy = 4+1+.25+4+.25 = 9.5: rho = 8 / sqrt(95).
    x, y = [1, 2, 3, 4, 5], [5, 6, 7, 8, 7]
    assert spearman_rho(x, y) == pytest.approx(8 / math.sqrt(95))
    # Of n0 = 10 pairs, 8 concordant, 1 discordant (4,5), 1 tied in y (3,5): n1 = 0, n2 = 1.
    # tau-b = (8 - 1) / sqrt((10 - 0) (10 - 1)) = 7 / sqrt(90).
    assert kendall_tau_b(x, y) == pytest.approx(7 / math.sqrt(90))


def test_ties_on_both_sides():
    # x = 1 1 2 2, y = 1 2 1 2: the two tied pairs in x and in y, and the other four pairs
    # (1,1)-(2,2) concordant, (1,2)-(2,1) discordant, twice each: C - D = 0.
    assert kendall_tau_b([1, 1, 2, 2], [1, 2, 1, 2]) == 0
    assert spearman_rho([1, 1, 2, 2], [1, 2, 1, 2]) == 0
    # x = 1 1 2, y = 1 1 2 (a pair tied in both): C = 2, D = 0, n0 = 3, n1 = n2 = 1: 2 / 2 = 1.
    assert kendall_tau_b([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)


def test_monotone_and_reversed():
    x = [0.1, 0.4, 0.5, 0.9]
    assert spearman_rho(x, [1, 8, 27, 64]) == pytest.approx(1.0)
    assert kendall_tau_b(x, [1, 8, 27, 64]) == pytest.approx(1.0)
    assert spearman_rho(x, [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau_b(x, [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_kendall_matches_counting_every_pair():
    rng = random.Random(7)

    def by_pairs(x, y):
        c = d = tied_x = tied_y = 0
        for i, j in itertools.combinations(range(len(x)), 2):
            dx, dy = x[i] - x[j], y[i] - y[j]
            tied_x += dx == 0
            tied_y += dy == 0
            c += dx * dy > 0
            d += dx * dy < 0
        n0 = len(x) * (len(x) - 1) // 2
        return (c - d) / math.sqrt((n0 - tied_x) * (n0 - tied_y))

    for _ in range(200):
        n = rng.randint(2, 25)
        x = [rng.randint(0, 4) / 4 for _ in range(n)]
        y = [rng.randint(1, 6) / 2 for _ in range(n)]
        if len(set(x)) > 1 and len(set(y)) > 1:
            assert kendall_tau_b(x, y) == pytest.approx(by_pairs(x, y))


def test_constant_and_empty_inputs_are_undefined_with_a_reason():
    assert spearman_rho([0.5, 0.5, 0.5], [1, 2, 3]) is None
    assert kendall_tau_b([1, 2, 3], [4, 4, 4]) is None
    constant = rank_correlation([0.5, 0.5, 0.5], [1, 2, 3])
    assert (constant.n, constant.rho, constant.tau_b) == (3, None, None)
    assert constant.undefined_reason == "every score is the same"
    assert rank_correlation([1, 2], [3, 3]).undefined_reason == "every rating is the same"
    empty = rank_correlation([], [])
    assert (empty.n, empty.rho, empty.tau_b) == (0, None, None) and "at least 2" in empty.undefined_reason
    assert rank_correlation([1], [1]).undefined_reason.startswith("1 paired item")
    with pytest.raises(ValueError):
        rank_correlation([1, 2], [1])


def test_rank_correlation_rounds_and_keeps_n():
    r = rank_correlation(IQ, TV)
    assert (r.n, r.rho, r.tau_b, r.undefined_reason) == (10, -0.1758, -0.1111, None)


def test_cohen_kappa_textbook_table():
    # Wikipedia's example: 20 both yes, 5 + 10 disagreements, 15 both no (n = 50).
    # p_o = 35/50 = 0.7; yes-marginals 25/50 and 30/50: p_e = .5*.6 + .5*.4 = 0.5; kappa = .2/.5 = 0.4.
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    k = cohen_kappa(pairs)
    assert (k.n, k.value, k.undefined_reason) == (50, 0.4, None)
    assert (k.passed_acceptable, k.passed_defective, k.failed_acceptable, k.failed_defective) == (20, 5, 10, 15)


def test_cohen_kappa_perfect_chance_and_inverse():
    assert cohen_kappa([(True, True), (False, False)]).value == 1.0
    # 1 1 / 1 1: p_o = .5, p_e = .5 -> 0.
    assert cohen_kappa([(True, True), (True, False), (False, True), (False, False)]).value == 0.0
    assert cohen_kappa([(True, False), (False, True)]).value == -1.0


def test_cohen_kappa_is_undefined_when_a_side_has_one_class():
    assert cohen_kappa([]).undefined_reason == "no labelled item"
    all_passed = cohen_kappa([(True, True), (True, False)])
    assert all_passed.value is None and all_passed.undefined_reason == "every item passed"
    assert all_passed.passed_acceptable == 1 and all_passed.passed_defective == 1
    assert cohen_kappa([(False, True), (False, False)]).undefined_reason == "every item failed"
    assert cohen_kappa([(True, True), (False, True)]).undefined_reason == "every label is acceptable"
    assert cohen_kappa([(True, False), (False, False)]).undefined_reason == "every label is defective"


def test_auc_hand_computed():
    # Acceptable .9 .8 against defective .1 .8: (.9,.1) 1, (.9,.8) 1, (.8,.1) 1, (.8,.8) a tie 1/2 -> 3.5/4.
    assert auc([0.9, 0.8], [0.1, 0.8]) == 0.875
    # Acceptable 1 2 3 against defective 2: 0 + 1/2 + 1 over 3 pairs.
    assert auc([1, 2, 3], [2]) == 0.5
    # Acceptable .2 .6 against defective .4 .5 .9: .2 beats none, .6 beats .4 and .5: 2/6.
    assert auc([0.2, 0.6], [0.4, 0.5, 0.9]) == pytest.approx(1 / 3)


def test_auc_separation_chance_and_undefined():
    assert auc([0.7, 0.9], [0.1, 0.2, 0.3]) == 1.0
    assert auc([0.1, 0.2], [0.7, 0.9]) == 0.0
    assert auc([0.5] * 4, [0.5] * 3) == 0.5  # every pair tied
    assert auc([], [0.5]) is None and auc([0.5], []) is None


def test_auc_matches_counting_every_pair():
    rng = random.Random(11)
    for _ in range(200):
        good = [rng.randint(0, 4) / 4 for _ in range(rng.randint(1, 15))]
        bad = [rng.randint(0, 4) / 4 for _ in range(rng.randint(1, 15))]
        by_pairs = sum(1.0 if g > b else 0.5 if g == b else 0.0 for g in good for b in bad) / (len(good) * len(bad))
        assert auc(good, bad) == pytest.approx(by_pairs)


def test_ks_statistic_by_hand():
    result = ks_2samp([1, 2, 3], [1, 2, 3])
    assert result.statistic == 0 and result.p_value == 1.0
    assert ks_2samp([0.1, 0.2], [0.8, 0.9]).statistic == 1.0
    assert kolmogorov_sf(1.36) == pytest.approx(0.0494, abs=1e-3)


def test_ks_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    special = pytest.importorskip("scipy.special")
    rng = random.Random(5)
    for _ in range(20):
        x = [round(rng.random(), 2) for _ in range(rng.randint(10, 80))]
        y = [round(rng.random() ** 1.4, 2) for _ in range(rng.randint(10, 200))]
        ours, ref = ks_2samp(x, y), stats.ks_2samp(x, y, method="asymp")
        assert ours.statistic == pytest.approx(ref.statistic, abs=1e-6)
        assert ours.p_value == pytest.approx(ref.pvalue, abs=0.05)  # Stephens vs finite-n
    for lam in (0.3, 0.5, 1.0, 1.5, 2.5):
        assert kolmogorov_sf(lam) == pytest.approx(float(special.kolmogorov(lam)), abs=1e-9)


def test_weighted_kappa():
    assert quadratic_weighted_kappa([(1, 1), (3, 3), (5, 5)]).value == 1.0
    near = quadratic_weighted_kappa([(1, 2), (3, 3), (5, 4), (2, 2)]).value
    far = quadratic_weighted_kappa([(1, 5), (3, 3), (5, 1), (2, 2)]).value
    assert near > 0.5 > far
    assert quadratic_weighted_kappa([(3, 3), (3, 3)]).value is None


def test_percentile_interpolates_between_the_closest_ranks():
    # numpy's default: position q (n - 1); 0.25 of 1 2 3 4 5 is rank 1 exactly, 0.1 lies .4 of the way 1 -> 2.
    assert percentile([1, 2, 3, 4, 5], 0.25) == 2
    assert percentile([1, 2, 3, 4, 5], 0.1) == pytest.approx(1.4)
    assert percentile([7.0], 0.975) == 7.0
    assert (percentile([1, 2], 0.0), percentile([1, 2], 1.0)) == (1, 2)


def test_bootstrap_draws_depend_on_seed_and_size_only():
    one, other = BootstrapMeans(200, seed=3, label="t"), BootstrapMeans(200, seed=3, label="t")
    other.means([9.0] * 7)  # another size drawn first changes nothing for size 5
    values = [0.1, 0.4, 0.2, 0.9, 0.5]
    assert one.means(values) == other.means(values)
    assert one.means(values) != BootstrapMeans(200, seed=4, label="t").means(values)
    low, high = one.interval(values, 0.95)
    assert min(values) <= low <= sum(values) / 5 <= high <= max(values)
    assert one.interval([0.5] * 4, 0.9) == (0.5, 0.5)


def test_cusum_accumulates_drops_beyond_the_slack_and_never_goes_negative():
    # target 0.9, slack 0.05: 0.8 adds .05, 0.82 adds .03, 1.0 takes .15 off (floored at 0).
    total = cusum_down(0.0, 0.8, 0.9, 0.05)
    assert total == pytest.approx(0.05)
    total = cusum_down(total, 0.82, 0.9, 0.05)
    assert total == pytest.approx(0.08)
    assert cusum_down(total, 1.0, 0.9, 0.05) == 0.0
