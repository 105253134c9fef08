"""The context trees of a network packed into the flat arrays the sampler's kernels read
(``sampler.run_chains``): levels, parents, cells, the slots of tied concentrations (HDP paper Sect.
4.3), and the order in which a level's active cells are swept.
"""

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from bncbench.bnc.estimators.hdp.sampler import ROW_CACHE

#: The active cells of a level are swept in this many interleaved streams of sibling groups.
ACTIVE_STREAMS = 2


class Forest:
    """The context trees of a network packed into the flat arrays of ``sampler.run_chains``."""

    def __init__(self, trees, tying, initial_concentration, sample_root):
        trees, self.renumbered = zip(*map(_children_by_parent, trees)) if trees else ((), ())
        self.trees = trees
        levels, active_levels, parent, cell, slot, sampled, tree_slots = [], [], [], [], [], [], [0]
        leaf_counts, active_cell, active_node, active_data = [], [], [], []
        node_base = cell_base = n_active = 0
        self.max_count = 0
        for tree in trees:
            starts = node_base + np.concatenate([[0], np.cumsum([p.shape[0] for p in tree.parent])])
            levels.append(starts)
            active_levels.append(n_active)
            for level, counts in enumerate(tree.counts):
                nodes = np.arange(starts[level], starts[level + 1])
                parent.append(starts[level - 1] + tree.parent[level] if level > 0 else tree.parent[0])
                cell.append(cell_base + (nodes - node_base) * tree.n_values)
                data = _integer_counts(counts)
                self.max_count = max(self.max_count, int(data.max(initial=0)))
                leaf_counts.append(data if level == tree.depth else np.zeros_like(data))
                # t moves only below the root (t = min(n, 1) there) and where n >= 2 (0 or 1 fixes t = n for good:
                # internal counts never exceed the data's)
                node, value = np.nonzero((data >= 2) & (level > 0))
                order = interleaved(tree.parent[level][node], ACTIVE_STREAMS)
                node, value = node[order], value[order]
                active_data.append(data[node, value])
                active_node.append(nodes[node])
                active_cell.append(cell[-1][node] + value)
                n_active += node.shape[0]
                active_levels.append(n_active)
            tree_slot, n_slots = _tie(tree, tying, starts, len(sampled))
            slot.append(tree_slot)
            sampled += [sample_root] + [True] * (n_slots - 1)
            tree_slots.append(len(sampled))
            node_base = starts[-1]
            cell_base += (starts[-1] - starts[0]) * tree.n_values
        if self.max_count > np.iinfo(np.int32).max:
            raise ValueError(
                f"HDP estimates hold counts in 32 bits, and a count of this fit is {self.max_count}: "
                "fit on fewer rows (at most 2147483647 per context), or use another estimator."
            )
        slot, parent, cell = (np.concatenate(arrays).astype(np.int64) for arrays in (slot, parent, cell))
        tree_levels = np.cumsum([0, *map(len, levels)])
        active_levels = np.array(active_levels, dtype=np.int64)
        moving = np.concatenate([level_moving for tree in trees for level_moving in tree.moving])
        tree_of_node = np.repeat(np.arange(len(trees)), [tree.n_nodes for tree in trees])
        n_active = active_levels[tree_levels[1:] - 1] - active_levels[tree_levels[:-1]]
        n_cells = np.array([tree.n_nodes * tree.n_values for tree in trees])
        work = 10 * n_active + n_cells  # a window costs about ten cells' recording
        self.layout = (
            tree_levels.astype(np.int64),
            np.concatenate(levels).astype(np.int64),
            active_levels,
            np.array([tree.n_values for tree in trees], dtype=np.int64),
            np.array(tree_slots, dtype=np.int64),
            (*_grouped(slot, len(sampled), np.arange(slot.shape[0])), np.array(sampled, dtype=np.bool_)),
            (*_grouped(tree_of_node[moving], len(trees), np.flatnonzero(moving)),
             *_grouped(tree_of_node[~moving], len(trees), np.flatnonzero(~moving))),
            np.argsort(-work, kind="stable").astype(np.int64),
        )
        active_cell = np.concatenate(active_cell).astype(np.int64)
        active_node = np.concatenate(active_node).astype(np.int64)
        active_parent_cell = cell[parent[active_node]] + active_cell - cell[active_node]
        self.forest = (active_cell, active_node, active_parent_cell, parent, cell, slot)
        # 32-bit counts: the sweep's scattered reads of big trees' state miss the caches half as often
        # (1.2-1.5x on kDB-5 trees); counts never exceed the rows of a fit
        n_cell = np.concatenate([c.ravel() for c in leaf_counts]).astype(np.int32)
        n_nodes = parent.shape[0]
        self.state = (n_cell, np.zeros_like(n_cell), np.zeros(n_nodes, dtype=np.int32),
                      np.zeros(n_nodes, dtype=np.int32), np.full(len(sampled), initial_concentration))
        self.n_cells = n_cell.shape[0]
        self.active_data = np.concatenate(active_data).astype(np.int64)
        self.max_depth = max(tree.depth for tree in trees)

    def row_cache(self, bound):
        """``sampler``'s cache of Stirling rows beyond a table of ``bound`` rows: one row per active
        cell whose data count exceeds it (the only ones whose count can)."""
        beyond = self.active_data > bound
        row_of = np.where(beyond, np.cumsum(beyond) - 1, -1).astype(np.int64)
        n_rows = int(beyond.sum())
        return (row_of, np.full(n_rows, -1, dtype=np.int64), np.zeros(n_rows, dtype=np.int64),
                np.zeros((n_rows, ROW_CACHE)))  # fmt: skip

    def level_concentrations(self):
        """Per tree, the mean concentration of the nodes of each level (root first)."""
        _, _, _, _, _, slot = self.forest
        alpha = self.state[4]
        return [
            np.array([alpha[slot[a:b]].mean() for a, b in pairwise(self._tree_levels(i))])
            for i in range(len(self.trees))
        ]

    def _tree_levels(self, i):
        tree_levels, levels = self.layout[:2]
        return levels[tree_levels[i] : tree_levels[i + 1]]

    def tables(self, mean_probabilities):
        """Per tree and level, the ``(n_nodes, n_values)`` estimates, rows renormalised."""
        cell = self.forest[4]
        out = []
        for i, tree in enumerate(self.trees):
            tree_tables = []
            for (a, b), renumbered in zip(pairwise(self._tree_levels(i)), self.renumbered[i]):
                table = mean_probabilities[cell[a] : cell[a] + (b - a) * tree.n_values].reshape(b - a, -1)
                tree_tables.append((table / table.sum(axis=1, keepdims=True))[renumbered])  # in the tree's order
            out.append(tree_tables)
        return out


def interleaved(parent, streams):
    """An order in which to sweep a level's active cells, given their ``parent`` nodes: the parents
    split into ``streams`` runs (by number) of about equal numbers of cells, the runs taken in turn,
    one cell each, each run in the cells' order.

    A window reads and writes its parent's totals (Eq. 10) and nothing of a node under another
    parent, and its uniform number is drawn by cell, so any order that keeps each parent's cells in
    their order gives the same chain, to the last bit. In this one, successive windows are under
    different parents, so the CPU overlaps each with the next instead of waiting for the parent's
    totals that the one before updates (2-10% on the big kDB-3..5 and SkDB trees).
    """
    n = parent.shape[0]
    if streams <= 1 or n == 0:
        return np.arange(n)
    sizes = np.bincount(parent)
    stream = np.minimum((np.cumsum(sizes) - sizes) * streams // n, streams - 1)[parent]
    rank = np.empty(n, dtype=np.int64)  # each cell's position in its stream
    for s in range(streams):
        mine = stream == s
        rank[mine] = np.arange(np.count_nonzero(mine))
    return np.lexsort((stream, rank))


def _moving_nodes(tree):
    """Per level, whether each node's counts can move during the chain: a node with a child cell whose
    data count is at least 2 (that cell's pseudo-count moves, and with it the node's count, Eq. 10).
    The others, leaves included, are the static nodes of ``estimates.record_static``."""
    moving = [np.zeros(tree.counts[tree.depth].shape[0], dtype=np.bool_)]
    for level in range(tree.depth - 1, -1, -1):
        active_child = _integer_counts(tree.counts[level + 1]).max(axis=1, initial=0) >= 2
        level_moving = np.zeros(tree.counts[level].shape[0], dtype=np.bool_)
        level_moving[tree.parent[level + 1][active_child]] = True
        moving.insert(0, level_moving)
    return moving


def _integer_counts(counts):
    rounded = np.rint(counts)
    if np.any(rounded < 0) or not np.allclose(rounded, counts):
        raise ValueError("HDP estimates need non-negative integer counts.")
    return rounded.astype(np.int64)


@dataclass(frozen=True)
class _OrderedTree:
    """What ``Forest`` reads of a ``ContextTree``, its nodes renumbered (``_children_by_parent``)."""

    parent: list
    counts: list
    n_values: int
    depth: int
    n_nodes: int
    moving: list  # per level, whether each node's counts move (``_moving_nodes``)


def _children_by_parent(tree):
    """The tree with each level's nodes ordered by their parents' order (stable), those whose counts
    move first (``_moving_nodes``), and per level the new number of each node of the tree.

    A ``ContextTree`` numbers a level's nodes as the data first reach them; the sweep and the recording
    walk a level in order and read each node's parent, so with siblings together the parents' state is
    read in order too, not scattered over the level above; the nodes recorded every iteration
    (``estimates.record_probabilities``) lie together.
    """
    parent, counts, renumbered = [tree.parent[0]], [tree.counts[0]], [np.zeros(1, dtype=np.int64)]
    moving = _moving_nodes(tree)
    ordered_moving = [moving[0]]
    for level in range(1, tree.depth + 1):
        new_parent = renumbered[-1][tree.parent[level]]
        order = np.lexsort((new_parent, ~moving[level]))
        parent.append(new_parent[order])
        counts.append(tree.counts[level][order])
        ordered_moving.append(moving[level][order])
        renumbered.append(np.argsort(order))
    ordered = _OrderedTree(parent, counts, tree.n_values, tree.depth, tree.n_nodes, ordered_moving)
    return ordered, renumbered


def _tie(tree, tying, starts, first_slot):
    """Concentration slot of every node of one tree (``first_slot`` is the root's), and their count."""
    n_nodes, depth = starts[-1] - starts[0], len(starts) - 2
    if tying == "none":
        return first_slot + np.arange(n_nodes), n_nodes
    level = np.repeat(np.arange(depth + 1), np.diff(starts))
    if tying == "level":
        return first_slot + level, depth + 1
    if tying == "single":
        return first_slot + np.minimum(level, 1), 1 + (depth > 0)
    # same_parent: the children of a node share the slot numbered after that node (the root's parent: -1)
    parents = [[-1], *(starts[level - 1] - starts[0] + tree.parent[level] for level in range(1, depth + 1))]
    return first_slot + 1 + np.concatenate(parents), 1 + (starts[-2] - starts[0] if depth > 0 else 0)


def _grouped(keys, n_groups, items):
    """``items`` grouped by their ``keys`` (in ``0..n_groups - 1``), in order within a group: where each
    group starts, and the items."""
    order = np.argsort(keys, kind="stable")
    return np.searchsorted(keys[order], np.arange(n_groups + 1)).astype(np.int64), items[order].astype(np.int64)
