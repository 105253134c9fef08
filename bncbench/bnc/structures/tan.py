"""Tree-augmented naive Bayes (Friedman et al. 1997) and its forest with penalised edges (FAN)."""

import numpy as np

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.parameters import check_choice
from bncbench.bnc.structures.base import Structure, counted, statistics

#: Penalty of one parameter added by an edge, given the number of rows: none for TAN, AIC's, BIC's.
PENALTIES = {"likelihood": lambda n: 0.0, "aic": lambda n: 1.0, "bic": lambda n: np.log(n) / 2.0}


class TreeAugmentedStructure(Structure):
    """TAN: the Chow-Liu maximum spanning tree on ``I(X_i; X_j | Y)``; with an AIC or BIC ``score`` a
    forest (FAN) as in bnclassify.

    An edge's weight is its gain in log-likelihood, ``N * I(X_i; X_j | Y)``, less, for AIC and BIC, the
    penalty of the ``c (r_i - 1)(r_j - 1)`` parameters it adds (1 per parameter for AIC, ``log(N) / 2``
    for BIC); edges that do not pay their penalty are dropped. Each tree of the forest is rooted at its
    attribute with the highest ``I(X_i; Y)`` and every other attribute takes its neighbour towards the
    root as its single parent.

    Parameters
    ----------
    score : {"likelihood", "aic", "bic"}, default "likelihood"
        The edges' weight: the gain in log-likelihood (TAN), or that gain less the penalty (FAN).

    References
    ----------
    Friedman, N., Geiger, D. and Goldszmidt, M. (1997). Bayesian network classifiers. Machine Learning
    29(2-3), 131-163.
    Chow, C. K. and Liu, C. N. (1968). Approximating discrete probability distributions with dependence
    trees. IEEE Transactions on Information Theory 14, 462-467.
    bnclassify's methods vignette, Sect. "Chow-Liu for one-dependence estimators" (AIC and BIC).
    """

    name = "tan"
    presets = {
        "tan": {},
        "fan_aic": {"structure_params": {"score": "aic"}},
        "fan_bic": {"structure_params": {"score": "bic"}},
    }
    handles_missing = True  # available-case informations, as bnclassify (methods vignette, Sect. "Chow-Liu ...")

    def __init__(self, score: str = "likelihood"):
        self.score = check_choice("tan score", score, sorted(PENALTIES))

    def learn(self, data, cards, n_classes, memory_limit=None):
        from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

        found = statistics(data, cards, n_classes, memory_limit=memory_limit)
        d, n = len(cards), found.n_rows
        cmi = found.conditional_mutual_information()
        added = n_classes * np.outer(cards - 1, cards - 1)
        gain = n * cmi - PENALTIES[self.score](n) * added
        keep = gain > 0 if self.score != "likelihood" else np.ones_like(gain, dtype=bool)
        np.fill_diagonal(keep, False)
        # scipy treats a zero weight as a missing edge; a constant shift keeps every kept edge present and
        # does not change which spanning forest is minimal, since all have the same number of edges.
        weights = np.where(keep, gain.max() + 1.0 - gain, 0.0) if d > 1 else np.zeros((d, d))
        forest = minimum_spanning_tree(weights)
        mi = found.mutual_information_with_class()
        _, component = connected_components(forest, directed=False)
        parents: list[list[int]] = [[] for _ in range(d)]
        for label in np.unique(component):
            members = np.flatnonzero(component == label)
            root = int(members[np.argmax(mi[members])])
            _, predecessors = breadth_first_order(forest, root, directed=False, return_predecessors=True)
            for i in members:
                if i != root:
                    parents[i] = [int(predecessors[i])]
        return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}
