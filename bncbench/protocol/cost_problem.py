"""The fit of the cost model (``bncbench.protocol.cost``) as one penalised least-squares problem: every
group's coefficients at once, each shrunk towards its parent group's by a ridge penalty, the
conditions' shifts shrunk towards 0, solved by a sparse LU of the normal equations, with the slopes
kept non-negative by active-set refits.
"""

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import splu

#: The ridge penalty of the root group's coefficients (towards 0): the root alone has no parent.
_ROOT_RIDGE = 1e-6

class Problem:
    """The penalised least squares of the law's coefficients, for any iteration offsets.

    Unknowns: each group's ``beta`` (the groups are every prefix of the cells' keys, the root ``()``
    first), then each fitted condition's shift. Rows: one per cell, its leaf group's ``x`` and a 1 for
    its shift; then ``sqrt(shrinkage) * (beta_group - beta_parent)`` for every group but the root, a
    vanishing ridge on the root and ``sqrt(condition_shrinkage) * shift``. Solved by the normal
    equations, whose matrix does not depend on the offsets and is sparse (a group's unknowns meet
    only its parent's, its children's and the shifts'): slopes that come out negative are set to 0 and
    the others solved again, until none is negative. (``c`` is chosen on the fits without that bound:
    each set of slopes set to 0 costs a factorisation of the matrix.)
    """

    def __init__(self, keys, design, conditions, shrinkage, condition_shrinkage):
        self.nodes = sorted({key[:depth] for key in keys for depth in range(len(key) + 1)}, key=group_order)
        self.conditions = sorted({c for c in conditions if c is not None})
        node_index = {node: i for i, node in enumerate(self.nodes)}
        n, p = design.shape
        self.p = p
        n_beta = len(self.nodes) * p
        n_unknowns = n_beta + len(self.conditions)
        leaf_columns = np.array([node_index[key] for key in keys])[:, None] * p + np.arange(p)
        shifted = np.array([i for i, c in enumerate(conditions) if c is not None], dtype=int)
        shift_columns = [n_beta + self.conditions.index(conditions[i]) for i in shifted]
        values = np.concatenate([design.ravel(), np.ones(len(shifted))])
        rows = np.concatenate([np.repeat(np.arange(n), p), shifted])
        columns = np.concatenate([leaf_columns.ravel(), shift_columns])
        self.cell_rows = sparse.csr_matrix((values, (rows, columns)), shape=(n, n_unknowns))
        children = [node_index[node] * p + j for node in self.nodes[1:] for j in range(p)]
        parents = [node_index[node[:-1]] * p + j for node in self.nodes[1:] for j in range(p)]
        difference = sparse.identity(n_unknowns, format="csr") - sparse.csr_matrix(
            (np.ones(len(children)), (children, parents)), shape=(n_unknowns, n_unknowns)
        )
        weights = np.repeat([_ROOT_RIDGE, shrinkage, condition_shrinkage], [p, n_beta - p, len(self.conditions)])
        penalty = difference.T @ sparse.diags(weights) @ difference
        self.gram = (self.cell_rows.T @ self.cell_rows + penalty).tocsc()
        self.slopes = np.concatenate([np.tile(np.arange(p) > 0, len(self.nodes)), np.zeros(len(self.conditions), bool)])
        self._factors = {}

    def solve(self, target: np.ndarray, bounded: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The unknowns for the cells' ``target`` log seconds, and the cells' residuals; ``bounded``:
        with the slopes kept non-negative."""
        right = self.cell_rows.T @ target
        free = np.ones(len(right), dtype=bool)
        while True:
            solution = np.zeros(len(right))
            solution[free] = self._factor(free).solve(right[free])
            negative = self.slopes & (solution < 0)
            if not bounded or not negative.any():
                return solution, target - self.cell_rows @ solution
            free &= ~negative

    def _factor(self, free: np.ndarray):
        """The sparse LU factors of the normal equations of the ``free`` unknowns, computed once."""
        key = free.tobytes()
        if key not in self._factors:
            self._factors[key] = splu(self.gram[free][:, free].tocsc())
        return self._factors[key]

    def coefficients(self, solution: np.ndarray) -> dict:
        """Each group's ``beta`` in ``solution``."""
        return {node: solution[i * self.p : (i + 1) * self.p].copy() for i, node in enumerate(self.nodes)}

    def shifts(self, solution: np.ndarray) -> dict:
        """Each fitted condition's shift in ``solution``."""
        start = len(self.nodes) * self.p
        return {condition: float(solution[start + i]) for i, condition in enumerate(self.conditions)}


def group_order(group: tuple) -> tuple:
    """Groups by depth (the root first), then by their levels, None before any value."""
    return (len(group), [(value is not None, str(value)) for value in group])
