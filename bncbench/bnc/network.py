"""A Bayesian network classifier's count statistics: one context tree per conditional table.

Column ``d`` of the code matrix is the class; columns ``0..d-1`` are the attributes. Tree 0 is the
class prior ``P(Y)`` (a root only), or ``P(Y | class_parents)`` when the class has attribute parents
(the direct structure); tree ``1 + i`` is ``P(X_i | Y, parents(X_i))`` with the class on the first level
below the root and the attribute parents, in order, below it.
"""

import copy

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
    attributes : list of int, optional
        The attributes that are part of the model, in tree order (default: all). The others are
        ignored, as after attribute selection.
    class_parents : list of int, optional
        Ordered attribute parents of the class (default none), the levels of tree 0.
    memory_limit : memory.MemoryLimit, optional
        Bound on the trees' arrays, checked as counting adds contexts (default none).
    """

    def __init__(self, parents, cards, n_classes, attributes=None, class_parents=(), memory_limit=None):
        self.parents = [list(p) for p in parents]
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.class_column = len(self.parents)
        self.attributes = list(range(len(self.parents)) if attributes is None else attributes)
        self.class_parents = list(class_parents)
        self.memory_limit = memory_limit
        class_tree = ContextTree(
            self.class_column, self.n_classes, self.class_parents, [int(self.cards[p]) for p in self.class_parents]
        )
        self.trees = [class_tree, *(self._attribute_tree(child, self.parents[child]) for child in self.attributes)]

    def _attribute_tree(self, child: int, parents) -> ContextTree:
        """An empty tree of ``P(X_child | Y, parents)``."""
        cards = (self.n_classes, *(int(self.cards[p]) for p in parents))
        return ContextTree(child, int(self.cards[child]), (self.class_column, *parents), cards)

    @property
    def tree_groups(self) -> np.ndarray:
        """Group of each tree in the joint probability: one group, every tree in it."""
        return np.zeros(len(self.trees), dtype=np.int64)

    def combine(self, grouped_log_joint: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """``log P(y, x)`` from the (n, n_classes, n_groups) sums of each group's log tables."""
        return grouped_log_joint[:, :, 0]

    def tree_of(self, attribute: int) -> ContextTree:
        """The tree of ``P(X_attribute | Y, parents)``."""
        return self.trees[1 + self.attributes.index(attribute)]

    def restricted(self, attributes, k: int) -> "CountedNetwork":
        """The sub-model on ``attributes`` in which each keeps only its first ``k`` parents.

        Its counts are read off this network's trees (their top levels), without a pass over the data.
        """
        parents = [ps[:k] for ps in self.parents]
        sub = CountedNetwork(parents, self.cards, self.n_classes, attributes, self.class_parents, self.memory_limit)
        sub.trees = [self.trees[0].copy(), *(self.tree_of(a).truncated(1 + len(parents[a])) for a in attributes)]
        return sub

    def add(self, codes: np.ndarray, weight: float = 1.0) -> "CountedNetwork":
        """Count the rows of an (n, d + 1) integer code matrix whose last column is the class."""
        columns = np.ascontiguousarray(codes.T)  # the codes keep their type (int8 in memory)
        budget = None if self.memory_limit is None else self.memory_limit.budget(self.nbytes)
        for tree in self.trees:
            tree.add(columns, weight, budget)
        return self

    def merge(self, other: "CountedNetwork") -> "CountedNetwork":
        """Add the counts of ``other``, this network's ``empty_copy`` counted on other rows, as if its rows
        were added after this network's (``ContextTree.merge``): the same arrays as one count of all the rows."""
        budget = None if self.memory_limit is None else self.memory_limit.budget(self.nbytes)
        for tree, counted in zip(self.trees, other.trees, strict=True):
            tree.merge(counted, budget)
        return self

    def remove(self, codes: np.ndarray) -> "CountedNetwork":
        """Take back rows added before, e.g. to score them as held-out data."""
        return self.add(codes, weight=-1.0)

    def empty_copy(self) -> "CountedNetwork":
        return CountedNetwork(self.parents, self.cards, self.n_classes, self.attributes, self.class_parents,
                              self.memory_limit)

    def copy(self) -> "CountedNetwork":
        """The network with copies of its trees (its structure, never changed after ``__init__``, shared)."""
        twin = copy.copy(self)
        twin.trees = [tree.copy() for tree in self.trees]
        return twin

    @property
    def nbytes(self) -> int:
        """Bytes of the trees' arrays."""
        return sum(tree.nbytes for tree in self.trees)

    @property
    def n_rows(self) -> float:
        return float(self.trees[0].counts[0].sum())
