"""Averaged one-dependence estimators (Webb, Boughton and Wang 2005).

``P(y, x) = mean over super-parents s of P(y) P(x_s | y) prod_{i != s} P(x_i | y, x_s)``, the mean
taken over the super-parents whose value ``x_s`` occurred at least ``frequency_limit`` times in training;
a row with no such super-parent is classified by naive Bayes. Every table is an ordinary context tree,
so any parameter estimator fills them.
"""

import numpy as np

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.parameters import check_integer
from bncbench.bnc.structures.base import Structure, counted


class AveragedOneDependence(CountedNetwork):
    """The trees of every SPODE (group s: ``P(x_s | y)`` and ``P(x_i | y, x_s)``) and of naive Bayes
    (the last group), sharing the class prior.

    Parameters
    ----------
    cards : array of int
        Number of values of each attribute.
    n_classes : int
    frequency_limit : int, default 1
        A super-parent counts for a row when its value occurred at least this often in training.
    memory_limit : memory.MemoryLimit, optional
    """

    def __init__(self, cards, n_classes, frequency_limit=1, memory_limit=None):
        d = len(cards)
        super().__init__([[] for _ in range(d)], cards, n_classes, memory_limit=memory_limit)  # the naive Bayes group
        self.frequency_limit = int(frequency_limit)
        # group s, the SPODE of super-parent s: P(x_s | y), and P(x_i | y, x_s) for every other i
        self.trees += [self._attribute_tree(i, [] if i == s else [s]) for s in range(d) for i in range(d)]
        self.super_parents = list(range(d))

    @property
    def tree_groups(self) -> np.ndarray:
        d = len(self.super_parents)
        naive_bayes = np.full(d, d)
        spodes = np.repeat(np.arange(d), d)
        return np.concatenate([[-1], naive_bayes, spodes]).astype(np.int64)

    def combine(self, grouped_log_joint: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Mean of the eligible SPODEs' joint probabilities (Webb et al. 2005, Eq. 8), in log space."""
        from scipy.special import logsumexp

        d = len(self.super_parents)
        value_counts = [self.trees[1 + s].counts[0][0] for s in self.super_parents]  # n(x_s), all classes
        eligible = np.column_stack(
            [(codes[:, s] >= 0) & (value_counts[s][np.maximum(codes[:, s], 0)] >= self.frequency_limit)
             for s in range(d)]
        ) if d else np.zeros((codes.shape[0], 0), dtype=bool)
        n_eligible = eligible.sum(axis=1)
        spodes = np.where(eligible[:, None, :], grouped_log_joint[:, :, :d], -np.inf)
        with np.errstate(divide="ignore"):
            averaged = logsumexp(spodes, axis=2) - np.log(np.maximum(n_eligible, 1))[:, None]
        return np.where((n_eligible > 0)[:, None], averaged, grouped_log_joint[:, :, d])


class AveragedOneDependenceStructure(Structure):
    """AODE: every attribute in turn is the super-parent of all the others (``AveragedOneDependence``).

    Parameters
    ----------
    frequency_limit : int, default 1
        A super-parent counts for a row when its value occurred at least this often in training (1 in the
        paper).

    References
    ----------
    Webb, G. I., Boughton, J. R. and Wang, Z. (2005). Not so naive Bayes: aggregating one-dependence
    estimators. Machine Learning 58(1), 5-24.
    """

    name = "aode"
    presets = {"aode": {"structure_params": {"frequency_limit": 1}}}
    product_of_attribute_tables = False

    def __init__(self, frequency_limit: int = 1):
        self.frequency_limit = check_integer("frequency_limit", frequency_limit, minimum=0)

    def learn(self, data, cards, n_classes, memory_limit=None):
        network = counted(AveragedOneDependence(cards, n_classes, self.frequency_limit, memory_limit), data)
        return network, {"super_parents": network.super_parents}

