"""Class posteriors of a Bayesian network classifier from its filled context trees.

All trees are packed into flat arrays so that one numba kernel walks them: for each row and class, each
table is read at the deepest context of the row that occurred in training (an unseen parent combination,
or one whose rows were all removed, backs off to its deepest seen ancestor). A value never seen in training for the child of a table (code
``UNSEEN``) carries no evidence and that table is skipped for the row. Everything is in log space and the
posterior is normalised with log-sum-exp.
"""


import numpy as np
from numba import njit, prange

from bncbench.bnc.encoding import MISSING
from bncbench.core.errors import NotApplicableError


#: Rows a kernel's thread takes at a time (its scratch arrays are allocated once per block).
ROW_BLOCK = 256


@njit(cache=True, inline="always")
def _entries(row, t, class_column, roots, depths, variables, child_columns, level_first_node, level_child_start,
             level_width, children, table_first, n_values, node, entry):
    """Into ``node[c]``, for every class c, the node of tree ``t`` at the deepest context the row reached in
    training under class c, and into ``entry[c]`` the index in the flat tables of its child's value there;
    False, and nothing filled, when the child's value was never seen in training (``UNSEEN``: the tree carries no
    evidence for the row).

    The classes' walks go down level by level together: their reads of ``children`` are independent, so the
    processor overlaps them (a walk per class, one after the other, took twice as long for kDB-5). A walk stops
    at a missing parent value (every class's) or an unseen combination (its class's, ``entry`` marking it -1 on
    the way); a node's children are found from its number (the nodes of a level are consecutive)."""
    is_class = child_columns[t] == class_column
    x = 0 if is_class else row[child_columns[t]]
    if x < 0:
        return False
    n_walking = node.shape[0]
    for c in range(n_walking):
        node[c], entry[c] = roots[t], 0
    for level in range(depths[t]):
        parent = variables[t, level]
        value = row[parent] if parent != class_column else 0
        if value < 0:
            break
        first, start, width = level_first_node[t, level], level_child_start[t, level], level_width[t, level]
        for c in range(node.shape[0]):
            if entry[c] == 0:
                child = children[start + (node[c] - first) * width + (c if parent == class_column else value)]
                if child < 0:
                    entry[c] = -1
                    n_walking -= 1
                else:
                    node[c] = child
        if n_walking == 0:
            break
    for c in range(node.shape[0]):
        entry[c] = table_first[t] + (node[c] - roots[t]) * n_values[t] + (c if is_class else x)
    return True


@njit(cache=True, parallel=True)
def _log_joint(codes, n_classes, class_column, roots, depths, variables, child_columns, level_first_node,
               level_child_start, level_width, children, table_first, n_values, tree_groups, n_groups, log_tables):
    """(n, n_classes, n_groups) sums of the log tables of each group of trees (group -1 is in all) at
    the entries ``_entries`` finds."""
    out = np.empty((codes.shape[0], n_classes, n_groups))
    for block in prange((codes.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        node, entry = np.empty(n_classes, dtype=np.int64), np.empty(n_classes, dtype=np.int64)
        row_sums = np.empty((n_classes, n_groups))  # a row's sums, added up here rather than in ``out`` (1.8x for NB)
        for i in range(block * ROW_BLOCK, min(codes.shape[0], (block + 1) * ROW_BLOCK)):
            row_sums[:] = 0.0
            for t in range(roots.shape[0]):
                if not _entries(codes[i], t, class_column, roots, depths, variables, child_columns, level_first_node,
                                level_child_start, level_width, children, table_first, n_values, node, entry):
                    continue
                group = tree_groups[t]
                for c in range(n_classes):
                    if group < 0:
                        for g in range(n_groups):
                            row_sums[c, g] += log_tables[entry[c]]
                    else:
                        row_sums[c, group] += log_tables[entry[c]]
            out[i] = row_sums
    return out


@njit(cache=True, parallel=True)
def _cells(codes, n_classes, class_column, roots, depths, variables, child_columns, level_first_node,
           level_child_start, level_width, children, table_first, n_values):
    """(n, n_classes, n_trees) index in the flat tables of the entry of each tree for each row and class
    (the child's value in the row's deepest context seen in training), or -1 where the child's value
    was never seen in training; and alike, the node whose table row holds that entry."""
    cells = np.full((codes.shape[0], n_classes, roots.shape[0]), -1, dtype=np.int64)
    nodes = np.full((codes.shape[0], n_classes, roots.shape[0]), -1, dtype=np.int64)
    for i in prange(codes.shape[0]):
        for t in range(roots.shape[0]):
            _entries(codes[i], t, class_column, roots, depths, variables, child_columns, level_first_node,
                     level_child_start, level_width, children, table_first, n_values, nodes[i, :, t], cells[i, :, t])
    return cells, nodes


def posterior(log_joint: np.ndarray) -> np.ndarray:
    """Normalise log joint probabilities, each row shifted by its largest value before ``exp`` (what
    scipy's ``logsumexp`` does, at a fifth of its cost on two classes); a row where every class has
    probability zero gets the uniform distribution, and a NaN stays NaN."""
    top = log_joint[:, :1].copy()
    for c in range(1, log_joint.shape[1]):  # a column at a time: max(axis=1) is slow over a few classes
        np.maximum(top[:, 0], log_joint[:, c], out=top[:, 0])  # NaN wins, as in max
    impossible = np.isneginf(top[:, 0])
    top[impossible] = 0.0
    proba = np.exp(log_joint - top)
    proba[impossible] = 1.0
    return proba / proba.sum(axis=1, keepdims=True)


def grouped_sums(log_p: np.ndarray, tree_groups: np.ndarray) -> np.ndarray:
    """(n, classes, groups) sums over the trees of ``log_p`` (n, classes, trees), by group of trees (-1: in
    every group), added tree by tree as ``_log_joint`` adds them."""
    sums = np.zeros(log_p.shape[:2] + (max(int(np.max(tree_groups)) + 1, 1),))
    for t, group in enumerate(tree_groups):
        if group < 0:
            sums += log_p[:, :, t, None]
        else:
            sums[:, :, group] += log_p[:, :, t]
    return sums


def flat_log_tables(tables) -> np.ndarray:
    """The tables of every tree and level, logged and concatenated in packing order."""
    with np.errstate(divide="ignore"):
        return np.concatenate([np.log(table).ravel() for tree_tables in tables for table in tree_tables])


class PackedNetwork:
    """Flat arrays of a network's trees and its probability tables, ready for the kernel.

    Parameters
    ----------
    network : CountedNetwork
    tables : list of list of ndarray, optional
        For each tree, for each level, the (n_nodes, n_values) probability table; without them, only
        ``cells`` can be used.

    Attributes
    ----------
    table_start : ndarray
        Index in the flat tables of each node's row (nodes numbered tree by tree, level by level, so that
        tree t's node j has its row at ``table_first[t] + (j - roots[t]) * n_values[t]``).
    children : ndarray
        The children of every node below which the tree goes on, each node's row of ``level_width[t, level]``
        entries (the number of values of the level's variable; -1: a value never seen there) starting at
        ``level_child_start[t, level] + (j - level_first_node[t, level]) * level_width[t, level]``.
    node_parent, node_level : ndarray
        Each node's parent (-1 at a root) and level.
    """

    def __init__(self, network, tables=None):
        trees = network.trees
        self.n_classes = network.n_classes
        self.class_column = network.class_column
        self.tree_groups = np.asarray(network.tree_groups, dtype=np.int64)
        self.n_groups = max(int(self.tree_groups.max()) + 1, 1)
        self.combine = network.combine
        max_depth = max(tree.depth for tree in trees)
        self.depths = np.array([tree.depth for tree in trees], dtype=np.int64)
        self.child_columns = np.array([tree.child for tree in trees], dtype=np.int64)
        self.variables = np.full((len(trees), max(max_depth, 1)), -1, dtype=np.int64)
        self.level_first_node, self.level_child_start, self.level_width = (np.zeros_like(self.variables) for _ in range(3))
        self.n_values = np.array([tree.n_values for tree in trees], dtype=np.int64)
        roots, table_first, children, table_start, node_parent, node_level = [], [], [], [], [], []
        n_nodes = n_children = n_table = 0
        for t, tree in enumerate(trees):
            self.variables[t, : tree.depth] = tree.variables
            roots.append(n_nodes)
            table_first.append(n_table)
            level_offsets = np.cumsum([0] + [p.shape[0] for p in tree.parent]) + n_nodes
            for level, parent in enumerate(tree.parent):
                n_level = parent.shape[0]
                table_start.append(n_table + np.arange(n_level, dtype=np.int64) * tree.n_values)
                n_table += n_level * tree.n_values
                node_parent.append(parent + level_offsets[level - 1] if level > 0 else parent)
                node_level.append(np.full(n_level, level, dtype=np.int64))
                if level < tree.depth:
                    level_children = tree.children[level]
                    self.level_first_node[t, level] = level_offsets[level]
                    self.level_child_start[t, level] = n_children
                    self.level_width[t, level] = level_children.shape[1]
                    n_children += level_children.size
                    seen = np.append(tree.counts[level + 1].sum(axis=1) > 0, False)  # index -1 -> False
                    children.append(np.where(seen[level_children], level_children + level_offsets[level + 1], -1).ravel())
            n_nodes = level_offsets[-1]
        self.roots = np.array(roots, dtype=np.int64)
        self.table_first = np.array(table_first, dtype=np.int64)
        self.children = np.concatenate(children) if children else np.empty(0, dtype=np.int64)
        self.table_start = np.concatenate(table_start)
        self.node_parent = np.concatenate(node_parent)
        self.node_level = np.concatenate(node_level)
        self.log_tables = None if tables is None else flat_log_tables(tables)

    def cells(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, classes, trees)`` index in the flat tables of each tree's entry for each row and class,
        the entry prediction reads (-1 where the tree is skipped: a value unseen in training), and the
        node whose table row holds it (-1 alike)."""
        return _cells(np.ascontiguousarray(codes, dtype=np.int64), self.n_classes, self.class_column, *self.walk_arrays())

    def walk_arrays(self) -> tuple:
        """The arrays the kernels read to walk down the trees (``_entries``) and find the entries, in order."""
        return (self.roots, self.depths, self.variables, self.child_columns, self.level_first_node,
                self.level_child_start, self.level_width, self.children, self.table_first, self.n_values)

    def log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes) array of ``log P(y, x)`` up to the tables skipped for unseen values."""
        return self.combine(self.grouped_log_joint(codes), codes)

    def grouped_log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes, n_groups) sums of the log tables by group of trees, before ``combine``."""
        return _log_joint(
            np.ascontiguousarray(codes, dtype=np.int64), self.n_classes, self.class_column, *self.walk_arrays(),
            self.tree_groups, self.n_groups, self.log_tables,
        )

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        return posterior(self.log_joint(codes))


#: Most assignments of the missing attributes of one row that ``MissingSummedOut`` enumerates.
MAX_ASSIGNMENTS = 1_000_000
_ROWS_TIMES_ASSIGNMENTS = 1_000_000  # rows x assignments packed in one call of the kernel


class MissingSummedOut:
    """Exact class posteriors of rows with missing values (code ``MISSING``): the missing attributes
    summed out of the joint, ``P(y, x_obs) = sum_{x_mis} P(y, x_obs, x_mis)`` (bnclassify's methods
    vignette, Sect. "Prediction": exact inference with incomplete data).

    A missing attribute none of whose descendants is observed sums to one with them and is dropped (its
    table skipped, as the kernel skips a negative child). The others, those with an observed
    descendant, are enumerated: every assignment of their values is a complete row for ``predictor``'s
    log joint, and the assignments are summed by log-sum-exp. The cost of a row is the product of those
    attributes' numbers of values: one assignment for naive Bayes (no attribute is another's parent),
    ``r`` for each missing parent of an observed attribute in TAN, more in kDB when several parents of
    one attribute are missing; a row above ``MAX_ASSIGNMENTS`` is refused. Rows are grouped by which
    attributes they miss, so each pattern is worked out once.

    Parameters
    ----------
    predictor : PackedNetwork
        With ``log_joint(codes)``.
    network : CountedNetwork
    """

    def __init__(self, predictor, network):
        self.predictor = predictor
        self.attributes = np.asarray(network.attributes, dtype=np.int64)
        self.cards = network.cards
        children = {a: [c for c in network.attributes if a in network.parents[c]] for a in network.attributes}
        self.descendants = {a: _reachable(a, children) for a in network.attributes}

    def summed_out(self, missing: np.ndarray) -> list[int]:
        """The missing attributes (columns) that have an observed descendant, given which are missing."""
        missing_set = {int(a) for a in self.attributes[missing]}
        return [a for a in sorted(missing_set) if self.descendants[a] - missing_set]

    def log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes) ``log P(y, x_obs)``."""
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        missing = codes[:, self.attributes] == MISSING
        if not missing.any():
            return self.predictor.log_joint(codes)
        patterns, pattern_of = np.unique(missing, axis=0, return_inverse=True)
        out = np.empty((len(codes), self.predictor.n_classes))
        for p, pattern in enumerate(patterns):
            rows = np.flatnonzero(pattern_of.ravel() == p)
            out[rows] = self._summed(codes[rows], self.summed_out(pattern))
        return out

    def _summed(self, codes, enumerated):
        from scipy.special import logsumexp

        cards = [int(self.cards[a]) for a in enumerated]
        n_assignments = int(np.prod(cards, dtype=float)) if cards else 1
        if n_assignments > MAX_ASSIGNMENTS:
            raise NotApplicableError(
                f"summing out the missing attributes {enumerated} of {len(codes)} rows takes {n_assignments} "
                f"assignments of their values, more than {MAX_ASSIGNMENTS}: with missing='ignore' use a "
                "structure with fewer parents (nb, tan) or missing='value'."
            )
        assignments = np.indices(cards).reshape(len(cards), -1).T if cards else np.zeros((1, 0), dtype=np.int64)
        block = max(1, _ROWS_TIMES_ASSIGNMENTS // n_assignments)
        out = np.empty((len(codes), self.predictor.n_classes))
        for start in range(0, len(codes), block):
            rows = codes[start : start + block]
            completed = np.repeat(rows, n_assignments, axis=0)
            completed[:, enumerated] = np.tile(assignments, (len(rows), 1))
            log_joint = self.predictor.log_joint(completed).reshape(len(rows), n_assignments, -1)
            out[start : start + len(rows)] = logsumexp(log_joint, axis=1)
        return out

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        return posterior(self.log_joint(codes))


def _reachable(start, children) -> set:
    """The nodes below ``start`` in ``children`` (node -> its children)."""
    found, stack = set(), list(children[start])
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            stack.extend(children[node])
    return found
