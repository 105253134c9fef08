"""A Bayesian network classifier's count statistics: one context tree per conditional table.

Column ``d`` of the code matrix is the class; columns ``0..d-1`` are the attributes. Tree 0 is the
class prior ``P(Y)`` (a root only); tree ``1 + i`` is ``P(X_i | Y, parents(X_i))`` with the class on the
first level below the root and the attribute parents, in order, below it.
"""

import numpy as np

from bncbench.bnc.context_tree import ContextTree


class CountedNetwork:
    """Context trees of a fixed structure, filled by ``add`` (chunk by chunk if need be).

    Parameters
    ----------
    parents : list of list of int
        Ordered attribute parents of each attribute (the class is implicit).
    cards : array of int
        Number of values of each attribute.
    n_classes : int
        Number of class values.
    """

    def __init__(self, parents, cards, n_classes):
        self.parents = [list(p) for p in parents]
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.class_column = len(self.parents)
        class_tree = ContextTree(self.class_column, self.n_classes, (), ())
        attribute_trees = [
            ContextTree(
                child,
                int(self.cards[child]),
                (self.class_column, *parents_of_child),
                (self.n_classes, *(int(self.cards[p]) for p in parents_of_child)),
            )
            for child, parents_of_child in enumerate(self.parents)
        ]
        self.trees = [class_tree, *attribute_trees]

    def add(self, codes: np.ndarray, weight: float = 1.0) -> "CountedNetwork":
        """Count the rows of an (n, d + 1) int64 code matrix whose last column is the class."""
        columns = np.ascontiguousarray(codes.T, dtype=np.int64)
        for tree in self.trees:
            tree.add(columns, weight)
        return self

    def remove(self, codes: np.ndarray) -> "CountedNetwork":
        """Take back rows added before, e.g. to score them as held-out data."""
        return self.add(codes, weight=-1.0)

    def empty_copy(self) -> "CountedNetwork":
        return CountedNetwork(self.parents, self.cards, self.n_classes)

    def copy(self) -> "CountedNetwork":
        twin = self.empty_copy()
        twin.trees = [tree.copy() for tree in self.trees]
        return twin

    @property
    def n_rows(self) -> float:
        return float(self.trees[0].counts[0].sum())
