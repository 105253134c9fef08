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


@njit(cache=True, parallel=True)
def _log_joint(codes, n_classes, class_column, roots, depths, variables, child_columns, child_start,
               children, table_start, log_tables):
    n = codes.shape[0]
    out = np.zeros((n, n_classes))
    for i in prange(n):
        for c in range(n_classes):
            total = 0.0
            for t in range(roots.shape[0]):
                column = child_columns[t]
                x = c if column == class_column else codes[i, column]
                if x < 0:
                    continue
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
                total += log_tables[table_start[node] + x]
            out[i, c] = total
    return out


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
        roots, child_start, children, table_start, log_tables = [], [], [], [], []
        n_nodes = n_children = n_table = 0
        for t, (tree, tree_tables) in enumerate(zip(trees, tables)):
            self.variables[t, : tree.depth] = tree.variables
            roots.append(n_nodes)
            level_offsets = np.cumsum([0] + [p.shape[0] for p in tree.parent]) + n_nodes
            for level, table in enumerate(tree_tables):
                n_level = table.shape[0]
                table_start.append(n_table + np.arange(n_level, dtype=np.int64) * tree.n_values)
                n_table += table.size
                with np.errstate(divide="ignore"):
                    log_tables.append(np.log(table).ravel())
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
        self.log_tables = np.concatenate(log_tables)

    def log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes) array of ``log P(y, x)`` up to the tables skipped for unseen values."""
        return _log_joint(
            np.ascontiguousarray(codes, dtype=np.int64), self.n_classes, self.class_column, self.roots,
            self.depths, self.variables, self.child_columns, self.child_start, self.children,
            self.table_start, self.log_tables,
        )

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        """Class posteriors; a row where every class has probability zero gets the uniform distribution."""
        joint = self.log_joint(codes)
        impossible = np.isneginf(joint).all(axis=1)
        joint[impossible] = 0.0
        return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
