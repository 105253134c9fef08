"""Count statistics of one conditional probability table, as a context tree stored level by level.

The CPT ``P(X | c_1, ..., c_D)`` is a prefix tree over its conditioning variables (for an attribute:
the class, then its attribute parents in order; HDP paper Sect. 3.3, SkDB paper Appendix B). Level 0 is
the root (no context); a node at level ``L`` is one combination of values of ``c_1..c_L`` seen in the
training data. Each level is a set of flat arrays:

``parent[L]``   (n_L,)          index of each node's parent in level L-1 (-1 at the root)
``children[L]`` (n_L, r(c_L+1)) index of each child in level L+1, -1 where that value was never seen
``counts[L]``   (n_L, r(X))     how often each value of X occurred in the node's context

Only contexts that occur are stored, so memory grows with the data, not with the product of the
cardinalities. Counts accumulate chunk by chunk (``add``), which is what makes learning out-of-core.
"""

from dataclasses import dataclass, field

import numpy as np
from numba import njit


@njit(cache=True)
def _descend_or_create(prev_nodes, values, children, n_nodes, new_parents):
    """Move every row one level down, creating the children that do not exist yet.

    ``children[prev_nodes[i], values[i]]`` is the row's node at the next level; a missing child gets
    the next free index ``n_nodes`` and its parent is recorded in ``new_parents``. Returns the rows'
    nodes and the new number of nodes.
    """
    nodes = np.empty(prev_nodes.shape[0], dtype=np.int64)
    n_new = 0
    for i in range(prev_nodes.shape[0]):
        child = children[prev_nodes[i], values[i]]
        if child < 0:
            child = n_nodes + n_new
            children[prev_nodes[i], values[i]] = child
            new_parents[n_new] = prev_nodes[i]
            n_new += 1
        nodes[i] = child
    return nodes, n_nodes + n_new


@njit(cache=True)
def _accumulate(nodes, values, counts, weight):
    for i in range(nodes.shape[0]):
        counts[nodes[i], values[i]] += weight


def _grow_rows(array: np.ndarray, n_rows: int, fill: float) -> np.ndarray:
    if array.shape[0] >= n_rows:
        return array
    extra = np.full((n_rows - array.shape[0],) + array.shape[1:], fill, dtype=array.dtype)
    return np.concatenate([array, extra])


@dataclass
class ContextTree:
    """Counts of one CPT ``P(X | variables)`` over integer-coded data.

    Parameters
    ----------
    child : int
        Column of X in the code matrix.
    n_values : int
        Number of values of X.
    variables : tuple of int
        Columns of the conditioning variables, root to leaf.
    cards : tuple of int
        Their numbers of values.
    """

    child: int
    n_values: int
    variables: tuple
    cards: tuple
    parent: list = field(init=False)
    children: list = field(init=False)
    counts: list = field(init=False)

    def __post_init__(self):
        self.variables = tuple(int(v) for v in self.variables)
        self.cards = tuple(int(c) for c in self.cards)
        self.parent = [np.full(1, -1, dtype=np.int64)]
        self.children = [np.full((1, card), -1, dtype=np.int64) for card in self.cards[:1]]
        self.counts = [np.zeros((1, self.n_values))]

    @property
    def depth(self) -> int:
        """Number of conditioning variables (levels below the root)."""
        return len(self.variables)

    def empty_copy(self) -> "ContextTree":
        return ContextTree(self.child, self.n_values, self.variables, self.cards)

    def copy(self) -> "ContextTree":
        return self.truncated(self.depth)

    def add(self, columns: np.ndarray, weight: float = 1.0, budget=None) -> "ContextTree":
        """Add data to the counts, given column-major as an (n_columns, n_rows) int64 array.

        A row whose child is ``MISSING`` (negative) is not counted, and one missing a conditioning
        variable counts only in the levels above it: available-case analysis (bnclassify's methods
        vignette, Sect. "Bayesian parameter estimation"). ``weight=-1`` removes rows that were added
        before (incremental cross-validation); a context
        whose count drops to zero stays in the tree and is treated as unseen at prediction. A
        ``memory.CountingBudget`` is charged for the new contexts of each level, and may refuse them,
        before their arrays are allocated.
        """
        if (columns[self.child] < 0).any():
            columns = columns[:, columns[self.child] >= 0]
        values = columns[self.child]
        nodes = np.zeros(columns.shape[1], dtype=np.int64)
        _accumulate(nodes, values, self.counts[0], weight)
        for level, column in enumerate(self.variables, start=1):
            observed = columns[column] >= 0
            if not observed.all():  # available cases: a row stops at the level of its first missing variable
                columns, nodes, values = columns[:, observed], nodes[observed], values[observed]
            nodes = self._descend(level, nodes, columns[column], budget)
            _accumulate(nodes, values, self.counts[level], weight)
        return self

    def merge(self, other: "ContextTree", budget=None) -> "ContextTree":
        """Add the counts of ``other``, the same table counted on other rows, as if those rows were added
        (``add``) after this tree's: the contexts new here are numbered in ``other``'s order, the order in
        which its rows met them, so that counting chunks apart and merging them in order gives the arrays of
        one count over all the rows. ``budget`` as in ``add``."""
        self.counts[0] += other.counts[0]
        nodes = np.zeros(1, dtype=np.int64)
        for level in range(1, len(other.parent)):
            values = np.empty(len(other.parent[level]), dtype=np.int64)  # the value that leads to each context
            parents, found = np.nonzero(other.children[level - 1] >= 0)
            values[other.children[level - 1][parents, found]] = found
            nodes = self._descend(level, nodes[other.parent[level]], values, budget)
            self.counts[level][nodes] += other.counts[level]
        return self

    def _descend(self, level: int, nodes: np.ndarray, values: np.ndarray, budget) -> np.ndarray:
        """The contexts of ``level`` below ``nodes`` (those of the level above) by ``values``, the new ones
        created (``budget`` charged first) with their arrays."""
        n_nodes = self.parent[level].shape[0] if level < len(self.parent) else 0
        new_parents = np.empty(len(nodes), dtype=np.int64)
        nodes, n_total = _descend_or_create(nodes, values, self.children[level - 1], n_nodes, new_parents)
        if budget is not None and n_total > n_nodes:
            budget.take(self, level, n_total, n_total - n_nodes)
        if level == len(self.parent):
            self.parent.append(new_parents[:n_total].copy())  # not a view, which would keep all the rows
            self.counts.append(np.zeros((n_total, self.n_values)))
            if level < self.depth:
                self.children.append(np.full((n_total, self.cards[level]), -1, dtype=np.int64))
        else:
            self.parent[level] = np.concatenate([self.parent[level], new_parents[: n_total - n_nodes]])
            self.counts[level] = _grow_rows(self.counts[level], n_total, 0.0)
            if level < self.depth:
                self.children[level] = _grow_rows(self.children[level], n_total, -1)
        return nodes

    def truncated(self, depth: int) -> "ContextTree":
        """A copy keeping the first ``depth`` conditioning variables (levels 0..depth)."""
        twin = ContextTree(self.child, self.n_values, self.variables[:depth], self.cards[:depth])
        twin.parent = [a.copy() for a in self.parent[: depth + 1]]
        twin.children = [a.copy() for a in self.children[:depth]]
        twin.counts = [a.copy() for a in self.counts[: depth + 1]]
        return twin

    @property
    def n_nodes(self) -> int:
        return sum(p.shape[0] for p in self.parent)

    def node_bytes(self, level: int) -> int:
        """Bytes of one context of ``level``: its parent index, counts and, above the leaves, child index."""
        width = 1 + self.n_values + (self.cards[level] if level < self.depth else 0)
        return 8 * width

    @property
    def nbytes(self) -> int:
        """Bytes of the tree's arrays."""
        return sum(a.nbytes for arrays in (self.parent, self.children, self.counts) for a in arrays)
