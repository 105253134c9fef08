"""Dirichlet (Laplace / Lidstone) estimates: ``(n(x, ctx) + alpha) / (n(ctx) + r * alpha)``.

``alpha = 1`` is Laplace's rule, ``alpha = 0`` the maximum-likelihood estimate. The class prior is
smoothed the same way. Every node's own counts are used (no back-off beyond the unseen-context rule of
prediction).
"""

import numpy as np

from bncbench.bnc.estimators.base import Estimator
from bncbench.bnc.parameters import check_number


def smoothed(counts: np.ndarray, pseudo_count: float, row_totals: np.ndarray | None = None) -> np.ndarray:
    """Row-wise ``(counts + pseudo_count) / (row total + r * pseudo_count)``; all-zero rows stay zero.
    ``row_totals``: ``counts.sum(axis=1, keepdims=True)``, when the caller has it."""
    if row_totals is None:
        row_totals = counts.sum(axis=1, keepdims=True)
    totals = row_totals + counts.shape[1] * pseudo_count
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, (counts + pseudo_count) / totals, 0.0)


class DirichletEstimator(Estimator):
    """Posterior mean under a symmetric Dirichlet(alpha) prior on every table row.

    Parameters
    ----------
    alpha : float, default 1.0
        Pseudo-count added to every value (1 = Laplace).
    """

    name = "laplace"
    count_based = True
    handles_missing = True

    def __init__(self, alpha: float = 1.0):
        self.alpha = check_number("alpha", alpha)

    def tables(self, network, data, rng):
        return [[smoothed(counts, self.alpha) for counts in tree.counts] for tree in network.trees]


class MaximumLikelihood(DirichletEstimator):
    """Relative frequencies (Dirichlet with ``alpha = 0``); a zero count gives probability zero."""

    name = "mle"

    def __init__(self):
        super().__init__(alpha=0.0)
