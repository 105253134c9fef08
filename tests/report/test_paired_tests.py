"""5x2cv t and F tests and the Wilcoxon signed-rank test against hand computation."""

from math import sqrt

import numpy as np
import pytest
from scipy.stats import wilcoxon

from bncbench.report.paired_tests import (
    five_by_two_f_test,
    five_by_two_t_test,
    wilcoxon_signed_rank,
)

# Differences A - B of 5 repetitions x 2 folds. Repetition means 0.2, 0.2, 0.2, 0.1, 0.2, so
# s_i^2 = 0.02, 0, 0.08, 0, 0.02 (sum 0.12, mean 0.024); sum of squares 0.46.
DIFFERENCES = [[0.1, 0.3], [0.2, 0.2], [0.0, 0.4], [0.1, 0.1], [0.3, 0.1]]


def test_t_statistic_by_hand():
    t = five_by_two_t_test(DIFFERENCES)
    assert t.statistic == pytest.approx(0.1 / sqrt(0.024), rel=1e-12)  # p_1^(1) / sqrt(mean s^2)


def test_f_statistic_by_hand():
    f = five_by_two_f_test(DIFFERENCES)
    assert f.statistic == pytest.approx(0.46 / (2 * 0.12), rel=1e-12)


def test_flat_input_is_fold_index_order():
    flat = np.ravel(DIFFERENCES)  # fold index = 2 * repetition + fold
    assert five_by_two_t_test(flat) == five_by_two_t_test(DIFFERENCES)
    assert five_by_two_f_test(flat) == five_by_two_f_test(DIFFERENCES)


def test_t_p_value_at_the_tables_critical_value():
    """t(5) two-sided 5% point 2.5706 (Dietterich 1998, Sect. 3.5)."""
    # s_i^2 = 0, 0.5, 0, 0, 0: mean 0.1, so t = x / sqrt(0.1)
    x = 2.5706 * sqrt(0.1)
    t = five_by_two_t_test([[x, x], [0.5, -0.5], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert t.statistic == pytest.approx(2.5706, rel=1e-12)
    assert t.p_value == pytest.approx(0.05, abs=1e-5)


def test_f_p_value_at_the_tables_critical_value():
    """F(10, 5) 5% point 4.7351 (Alpaydin 1999)."""
    # s_i^2 = 0.5, 0.5, 0, 0, 0 (sum 1): f = (1 + 2 x^2) / 2
    x = sqrt((2 * 4.7351 - 1) / 2)
    f = five_by_two_f_test([[0.5, -0.5], [-0.5, 0.5], [x, x], [0.0, 0.0], [0.0, 0.0]])
    assert f.statistic == pytest.approx(4.7351, rel=1e-12)
    assert f.p_value == pytest.approx(0.05, abs=1e-5)


def test_no_difference_is_undefined_and_no_variance_is_infinite():
    assert np.isnan(five_by_two_t_test(np.zeros(10)).p_value)
    assert np.isnan(five_by_two_f_test(np.zeros(10)).statistic)
    constant = [[0.1, 0.1]] * 5
    assert five_by_two_t_test(constant).statistic == np.inf
    assert five_by_two_t_test(constant).p_value == 0.0
    assert five_by_two_f_test(constant).p_value == 0.0


def test_stacked_tests_equal_one_by_one():
    stack = np.random.default_rng(0).normal(size=(7, 5, 2))
    for test in (five_by_two_t_test, five_by_two_f_test):
        stacked = test(stack)
        for i, one in enumerate(stack):
            assert stacked.statistic[i] == pytest.approx(test(one).statistic, rel=1e-12)
            assert stacked.p_value[i] == pytest.approx(test(one).p_value, rel=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (9,), (4, 1)])
def test_not_two_fold_repetitions(shape):
    with pytest.raises(ValueError, match="r repetitions of 2-fold CV"):
        five_by_two_t_test(np.ones(shape))


def test_wilcoxon_by_hand():
    # ranks 1..5, negative rank 3: W+ = 12, W- = 3; P(W <= 3) = 5 / 32 (subsets {}, 1, 2, 3, 12)
    result = wilcoxon_signed_rank([1.0, 2.0, -3.0, 4.0, 5.0])
    assert result.statistic == 3.0
    assert result.p_value == pytest.approx(2 * 5 / 32, rel=1e-12)
    with_zero = wilcoxon_signed_rank([1.0, 2.0, -3.0, 0.0, 4.0, 5.0])  # zeros are dropped
    assert (with_zero.statistic, with_zero.p_value) == (result.statistic, result.p_value)


def test_wilcoxon_with_ties_by_hand():
    # |d| = 1, 1, 2: ranks 1.5, 1.5, 3; W+ = 4.5 (signs +, -, +); the 8 sign flips give rank sums
    # 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6: P(W+ >= 4.5) = 3 / 8, so p = 2 * 3 / 8
    result = wilcoxon_signed_rank([1.0, -1.0, 2.0])
    assert result.statistic == 1.5
    assert result.p_value == pytest.approx(0.75, rel=1e-12)


@pytest.mark.parametrize("n", [2, 5, 10, 13, 20, 60])
def test_wilcoxon_matches_scipy_with_ties_and_zeros(n):
    rows = 2 if n == 13 else 6  # scipy takes 0.6 s a test to enumerate 2^13 sign flips
    stack = np.round(np.random.default_rng(n).normal(0.01, 0.05, size=(rows, n)), 2)
    stack[1, : n // 2] = 0.0
    result = wilcoxon_signed_rank(stack)
    for i, differences in enumerate(stack):
        reference = wilcoxon(differences)
        assert result.statistic[i] == reference.statistic
        assert result.p_value[i] == pytest.approx(reference.pvalue, rel=1e-12)


def test_wilcoxon_without_difference_is_undefined():
    result = wilcoxon_signed_rank([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    assert np.isnan(result.statistic[0]) and np.isnan(result.p_value[0])
    assert result.p_value[1] == pytest.approx(0.25)
    assert np.isnan(wilcoxon_signed_rank(np.zeros(70)).p_value)
