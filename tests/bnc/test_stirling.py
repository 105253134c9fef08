"""Unsigned Stirling numbers of the first kind: the exact table, its ratios, and the values beyond it."""

import math

import numpy as np
import pytest
from scipy.special import digamma as scipy_digamma

from bncbench.bnc.estimators.hdp.stirling import (
    EXACT_ROWS,
    SERIES_MAX_T,
    LogStirlingTable,
    digamma,
    log_stirling_large,
    stirling_inverse_ratio,
    stirling_ratio,
)


def exact_stirling(n_max):
    """S(n, t) for n <= n_max, in Python integers."""
    rows = [[1]]
    for n in range(1, n_max + 1):
        previous = rows[-1] + [0]
        rows.append([0] + [previous[t - 1] + (n - 1) * previous[t] for t in range(1, n + 1)])
    return rows


@pytest.fixture(scope="module")
def exact():
    return exact_stirling(80)


@pytest.fixture(scope="module")
def recurrence():
    """A table running the exact log-space recurrence to n = 3100, beyond the default bound."""
    return LogStirlingTable(bound=3100).ensure(3100)


def test_table_matches_exact_small_values(exact):
    table = LogStirlingTable(bound=80)
    for n in range(1, 81):
        for t in range(1, n + 1):
            assert table.log(n, t) == pytest.approx(math.log(exact[n][t]), rel=1e-13, abs=1e-12)
    assert table.log(0, 0) == 0.0
    assert table.log(5, 0) == -np.inf and table.log(5, 6) == -np.inf


def test_ratios_are_neighbouring_quotients(exact):
    table = LogStirlingTable(bound=50).ensure(50)
    for n in (2, 17, 50):
        for u in range(1, n):
            expected = exact[n][u + 1] / exact[n][u]
            assert stirling_ratio(table.ratio, table.rows, n, u) == pytest.approx(
                expected, rel=1e-12
            )
            assert stirling_inverse_ratio(table.inverse_ratio, table.rows, n, u) == pytest.approx(
                1 / expected, rel=1e-12
            )
    assert stirling_inverse_ratio(table.inverse_ratio, table.rows, 7, 0) == 0.0  # S(7, 0) = 0


@pytest.mark.parametrize("n", [EXACT_ROWS + 1, 3100])
def test_beyond_the_table_against_the_recurrence(recurrence, n):
    """Exact series for t <= SERIES_MAX_T, saddle point above it (module docstring: < 1e-7). The
    series loses digits as n gets smaller (only rows beyond EXACT_ROWS use it)."""
    for t in [1, 2, 3, 5, 10, 20, SERIES_MAX_T]:
        assert log_stirling_large(n, t) == pytest.approx(recurrence.log(n, t), abs=2e-9)
    for t in [SERIES_MAX_T + 1, 40, 60, 100, 300, 1000, n - 100]:
        assert log_stirling_large(n, t) == pytest.approx(recurrence.log(n, t), abs=1e-7)
    for t in [n - 2, n - 1, n]:
        assert log_stirling_large(n, t) == pytest.approx(recurrence.log(n, t), abs=1e-9)


def test_ratios_beyond_the_table_come_from_the_large_values(recurrence):
    small = LogStirlingTable(bound=100).ensure(100)
    n, u = 2500, 37
    expected = math.exp(recurrence.log(n, u + 1) - recurrence.log(n, u))
    assert stirling_ratio(small.ratio, small.rows, n, u) == pytest.approx(expected, rel=1e-7)
    assert stirling_inverse_ratio(small.inverse_ratio, small.rows, n, u) == pytest.approx(
        1 / expected, rel=1e-7
    )
    assert small.log(n, u) == pytest.approx(recurrence.log(n, u), abs=1e-7)


def test_table_grows_lazily_and_stays_within_its_bound():
    table = LogStirlingTable(bound=400)
    assert table.rows == 0
    table.ensure(50)
    assert table.rows == 50
    table.ensure(60)
    assert table.rows == 75  # geometric growth; Q moves to the new column layout
    for n in range(2, 76):
        for u in range(1, n):
            product = stirling_ratio(table.ratio, 75, n, u) * stirling_inverse_ratio(
                table.inverse_ratio, 75, n, u
            )
            assert product == pytest.approx(1.0, rel=1e-12)
    table.ensure(10**7)
    assert table.rows == 400
    assert table.ratio.shape == (400 * 401 // 2,)
    # at the default bound the two triangles take 72 MB, whatever the data
    assert 2 * 8 * EXACT_ROWS * (EXACT_ROWS + 1) // 2 < 73e6


def test_digamma():
    x = np.array([1e-3, 0.1, 0.5, 1.0, 3.7, 10.0, 250.0, 1e5])
    np.testing.assert_allclose([digamma(v) for v in x], scipy_digamma(x), rtol=1e-13, atol=1e-12)
