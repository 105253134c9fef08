"""Class posteriors of a Bayesian network classifier from its filled context trees.

All trees are packed into flat arrays so that one numba kernel walks them: for each row and class, each
table is read at the deepest context of the row that occurred in training (an unseen parent combination,
or one whose rows were all removed, backs off to its deepest seen ancestor). A value never seen in training for the child of a table (code
``UNSEEN``) carries no evidence and that table is skipped for the row. Everything is in log space and the
posterior is normalised with log-sum-exp.
"""

import numpy as np
from numba import njit, prange
from scipy.special import logsumexp


@njit(cache=True)
def _table_cell(codes, i, c, t, class_column, roots, depths, variables, child_columns, child_start, children,
                table_start):
    """Index in the flat tables of ``P(x_t | context)`` for row i under class c, or -1 to skip."""
    column = child_columns[t]
    x = c if column == class_column else codes[i, column]
    if x < 0:
        return -1
    node = roots[t]
    for level in range(depths[t]):
        column = variables[t, level]
        value = c if column == class_column else codes[i, column]
        if value < 0:
            break
        child = children[child_start[node] + value]
        if child < 0:
            break
        node = child
    return table_start[node] + x


@njit(cache=True, parallel=True)
def _log_joint(codes, n_classes, class_column, roots, depths, variables, child_columns, child_start,
               children, table_start, log_tables):
    out = np.zeros((codes.shape[0], n_classes))
    for i in prange(codes.shape[0]):
        for c in range(n_classes):
            total = 0.0
            for t in range(roots.shape[0]):
                cell = _table_cell(codes, i, c, t, class_column, roots, depths, variables, child_columns,
                                   child_start, children, table_start)
                if cell >= 0:
                    total += log_tables[cell]
            out[i, c] = total
    return out


@njit(cache=True, parallel=True)
def _table_cells(codes, n_classes, class_column, roots, depths, variables, child_columns, child_start,
                 children, table_start):
    out = np.empty((codes.shape[0], n_classes, roots.shape[0]), dtype=np.int64)
    for i in prange(codes.shape[0]):
        for c in range(n_classes):
            for t in range(roots.shape[0]):
                out[i, c, t] = _table_cell(codes, i, c, t, class_column, roots, depths, variables,
                                           child_columns, child_start, children, table_start)
    return out


def posterior(log_joint: np.ndarray) -> np.ndarray:
    """Normalise log joint probabilities with log-sum-exp; a row where every class has probability
    zero gets the uniform distribution."""
    log_joint = log_joint.copy()
    log_joint[np.isneginf(log_joint).all(axis=1)] = 0.0
    return np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))


def flat_log_tables(tables) -> np.ndarray:
    """The tables of every tree and level, logged and concatenated in packing order."""
    with np.errstate(divide="ignore"):
        return np.concatenate([np.log(table).ravel() for tree_tables in tables for table in tree_tables])


class PackedNetwork:
    """Flat arrays of a network's trees and its probability tables, ready for the kernel.

    Parameters
    ----------
    network : CountedNetwork
    tables : list of list of ndarray
        For each tree, for each level, the (n_nodes, n_values) probability table.
    """

    def __init__(self, network, tables):
        trees = network.trees
        self.n_classes = network.n_classes
        self.class_column = network.class_column
        max_depth = max(tree.depth for tree in trees)
        self.depths = np.array([tree.depth for tree in trees], dtype=np.int64)
        self.child_columns = np.array([tree.child for tree in trees], dtype=np.int64)
        self.variables = np.full((len(trees), max(max_depth, 1)), -1, dtype=np.int64)
        roots, child_start, children, table_start = [], [], [], []
        n_nodes = n_children = n_table = 0
        for t, (tree, tree_tables) in enumerate(zip(trees, tables)):
            self.variables[t, : tree.depth] = tree.variables
            roots.append(n_nodes)
            level_offsets = np.cumsum([0] + [p.shape[0] for p in tree.parent]) + n_nodes
            for level, table in enumerate(tree_tables):
                n_level = table.shape[0]
                table_start.append(n_table + np.arange(n_level, dtype=np.int64) * tree.n_values)
                n_table += table.size
                if level < tree.depth:
                    level_children = tree.children[level]
                    width = level_children.shape[1]
                    child_start.append(n_children + np.arange(n_level, dtype=np.int64) * width)
                    n_children += level_children.size
                    seen = np.append(tree.counts[level + 1].sum(axis=1) > 0, False)  # index -1 -> False
                    children.append(np.where(seen[level_children], level_children + level_offsets[level + 1], -1).ravel())
                else:
                    child_start.append(np.full(n_level, -1, dtype=np.int64))
            n_nodes = level_offsets[-1]
        self.roots = np.array(roots, dtype=np.int64)
        self.child_start = np.concatenate(child_start)
        self.children = np.concatenate(children) if children else np.empty(0, dtype=np.int64)
        self.table_start = np.concatenate(table_start)
        self.log_tables = flat_log_tables(tables)

    def _structure(self):
        return (self.n_classes, self.class_column, self.roots, self.depths, self.variables, self.child_columns,
                self.child_start, self.children, self.table_start)

    def log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes) array of ``log P(y, x)`` up to the tables skipped for unseen values."""
        return _log_joint(np.ascontiguousarray(codes, dtype=np.int64), *self._structure(), self.log_tables)

    def table_cells(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes, n_trees) indices into the flat tables that ``log_joint`` sums (-1: skipped).

        They depend on the counts only, so tables estimated in several ways (e.g. for each candidate
        m) can be scored on the same rows by ``log_joint_at`` without walking the trees again.
        """
        return _table_cells(np.ascontiguousarray(codes, dtype=np.int64), *self._structure())

    @staticmethod
    def log_joint_at(cells: np.ndarray, log_tables: np.ndarray) -> np.ndarray:
        return np.where(cells >= 0, log_tables[cells], 0.0).sum(axis=2)

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        return posterior(self.log_joint(codes))
