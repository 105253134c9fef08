"""Paired significance tests of two models: across datasets, and per dataset from 5x2 CV folds.

The per-dataset tests read the ten fold scores of a 5x2 cross-validation in the order the runner
logs them (fold index = 2 * repetition + fold) and work on the differences ``A - B``, one row per
repetition: ``p[i, j]`` is the difference on fold ``j`` of repetition ``i``.

References
----------
.. [1] T. G. Dietterich (1998). Approximate statistical tests for comparing supervised
   classification learning algorithms. Neural Computation 10(7), 1895-1923 (the 5x2cv t-test).
.. [2] E. Alpaydin (1999). Combined 5 x 2 cv F test for comparing supervised classification
   learning algorithms. Neural Computation 11(8), 1885-1892.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import f as f_distribution
from scipy.stats import rankdata, wilcoxon
from scipy.stats import t as t_distribution

#: Up to this many differences scipy enumerates every sign flip (2^13 < its 9999 resamples).
_ENUMERATED = 13


@dataclass(frozen=True)
class PairedTestResult:
    """Outcome of a paired test, or of one per row of a stack of them.

    Attributes
    ----------
    statistic : float or ndarray
    p_value : float or ndarray
        Two-sided; NaN, like the statistic, where the test is undefined (e.g. no difference).
    """

    statistic: float | np.ndarray
    p_value: float | np.ndarray


def five_by_two_t_test(differences) -> PairedTestResult:
    """Dietterich's 5x2cv paired t-test.

    ``t = p[0, 0] / sqrt(mean_i s_i^2)`` with ``s_i^2 = sum_j (p[i, j] - mean_j p[i, j])^2``, under
    the null hypothesis t-distributed with as many degrees of freedom as repetitions (5) [1]_.

    Parameters
    ----------
    differences : array-like
        The differences A - B, shape ``(..., repetitions, 2)`` (one test per leading index), or
        flat in fold-index order (``2 * repetition + fold``).

    Returns
    -------
    PairedTestResult
        NaN where every ``s_i^2`` is 0 and so is ``p[0, 0]`` (0 / 0); an infinite statistic with
        p-value 0 where every ``s_i^2`` is 0 but ``p[0, 0]`` is not.
    """
    p = _by_repetition(differences)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = p[..., 0, 0] / np.sqrt(_variances(p).mean(axis=-1))
    return _result(t, 2 * t_distribution.sf(np.abs(t), df=p.shape[-2]))


def five_by_two_f_test(differences) -> PairedTestResult:
    """Alpaydin's combined 5x2cv F-test.

    ``f = sum_ij p[i, j]^2 / (2 sum_i s_i^2)``, under the null hypothesis F-distributed with
    ``(2 r, r)`` degrees of freedom for ``r`` (= 5) repetitions [2]_. Large values reject; the test
    has no sign, read the direction from the mean difference.

    Parameters
    ----------
    differences : array-like
        As in :func:`five_by_two_t_test`.

    Returns
    -------
    PairedTestResult
        NaN where every difference is 0; an infinite statistic with p-value 0 where every
        ``s_i^2`` is 0 but some difference is not.
    """
    p = _by_repetition(differences)
    r = p.shape[-2]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.sum(p**2, axis=(-2, -1)) / (2 * _variances(p).sum(axis=-1))
    return _result(f, f_distribution.sf(f, 2 * r, r))


def wilcoxon_signed_rank(differences) -> PairedTestResult:
    """Two-sided Wilcoxon signed-rank test of paired differences.

    Zero differences are dropped (Wilcoxon's convention) and ties share their mean rank; the
    statistic is the smaller of the two rank sums. The p-value is that of
    :func:`scipy.stats.wilcoxon` with its default method: for up to 13 differences the exact
    distribution over all 2^n sign flips of the ranks (computed here, for a whole stack at once:
    scipy enumerates them one call and one flip at a time, 0.05 s a test); beyond, scipy's (exact
    without ties up to 50, normal otherwise).

    Parameters
    ----------
    differences : array-like
        Shape ``(n,)``, e.g. the mean loss of A minus that of B on each dataset, or ``(..., n)``
        for one test per leading index (e.g. the 10 fold differences of each dataset).

    Returns
    -------
    PairedTestResult
        NaN where no difference is non-zero.
    """
    d = np.asarray(differences, dtype=float)
    defined = np.any(d != 0, axis=-1)
    statistic, p_value = np.full(d.shape[:-1], np.nan), np.full(d.shape[:-1], np.nan)
    if d.shape[-1] <= _ENUMERATED:
        statistic[defined], p_value[defined] = _enumerated_signed_rank(d[defined])
    else:
        for index in np.ndindex(defined.shape):
            if defined[index]:
                result = wilcoxon(d[index], zero_method="wilcox")
                statistic[index], p_value[index] = result.statistic, result.pvalue
    return _result(statistic, p_value)


def _enumerated_signed_rank(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Statistic and exact two-sided p-value of each row of ``d`` (m, n) by all 2^n sign flips."""
    absolute = np.where(d != 0, np.abs(d), np.nan)
    ranks = np.nan_to_num(rankdata(absolute, axis=-1, nan_policy="omit"))  # zeros: rank 0
    r_plus = np.sum(np.where(d > 0, ranks, 0.0), axis=-1)
    flips = (np.arange(2 ** d.shape[-1])[:, None] >> np.arange(d.shape[-1])) & 1
    null = flips @ ranks.T  # (2^n, m): the rank sum of the positive signs under each flip
    p_value = 2 * np.minimum(np.mean(null <= r_plus, axis=0), np.mean(null >= r_plus, axis=0))
    return np.minimum(r_plus, ranks.sum(axis=-1) - r_plus), np.minimum(p_value, 1.0)


def _result(statistic, p_value) -> PairedTestResult:
    """Plain floats for a single test, arrays for a stack."""
    if np.ndim(statistic) == 0:
        return PairedTestResult(float(statistic), float(p_value))
    return PairedTestResult(np.asarray(statistic, float), np.asarray(p_value, float))


def _by_repetition(differences) -> np.ndarray:
    p = np.asarray(differences, dtype=float)
    if p.ndim == 1 and p.size % 2 == 0:
        p = p.reshape(-1, 2)
    if p.ndim < 2 or p.shape[-1] != 2 or p.shape[-2] < 1:
        raise ValueError(f"a 5x2cv test needs the differences of r repetitions of 2-fold CV, shape (..., r, 2) "
                         f"or (2 r,), got shape {np.shape(differences)}")
    return p


def _variances(p: np.ndarray) -> np.ndarray:
    """``s_i^2``: the (unnormalised) variance of the two differences of each repetition."""
    return np.sum((p - p.mean(axis=-1, keepdims=True)) ** 2, axis=-1)
