"""Hierarchical Dirichlet process estimates (Petitjean, Buntine, Webb and Zaidi 2018, Sect. 4).

Each CPT ``P(X | y, parents)`` is its context tree: root, then the class, then the parents in the order
the structure lists them, which is Sect. 3.3's (TAN: the class, then the other parent; kDB: parents by
decreasing ``I(X; parent | Y)``; a dict structure: the order given). Every node's distribution is
drawn from a Dirichlet centred on its parent's (Sect. 4.1); the root's base is uniform. A collapsed
Gibbs sampler keeps, per node and value, the count ``n`` and the pseudo-count ``t`` passed to the
parent (Eqs. 7-11), resamples every ``t`` in a window around its value (Sect. 4.4.1) and the
concentrations by the Beta/Gamma augmentation (Sect. 4.4.2); each node's estimate is the mean, over
the iterations after burn-in, of Eqs. 12-14 computed top-down. The kernels are in
``bncbench.bnc.estimators.hdp.sampler``, the Stirling numbers in ``bncbench.bnc.estimators.hdp.stirling``.

Where the paper and the authors' Java implementation (github.com/fpetitjean/HDP: ProbabilityTree,
ProbabilityNode, Concentration), which produced the paper's results, differ, the defaults follow the
Java code:

* the root's pseudo-counts are ``t = min(n, 1)`` and its concentration stays at 2 (the paper instead
  integrates the root's Dirichlet out, Sect. 4.4.1, base case);
* concentrations have a Gamma(shape 2, rate 1) prior (the journal text: nu0 = mu0 = 0; the arXiv text:
  Gamma(1, 2) and a start at 2 |X|), start at 2, are capped at 4000 and are resampled every 5th
  iteration, at iterations 3, 8, 13, ..., each from ``q_j ~ Beta(alpha, n_j)`` floored at 1e-75;
* pseudo-counts start at Eq. 15 and are swept from the leaves up; a candidate is valid if it keeps
  ``1 <= t <= n`` at the node and ``t_p <= n_p`` at its parent;
* burn-in is ``min(1000, iterations // 10)`` and the estimate is the running mean of the probabilities
  over every later iteration (ProbabilityNode.addRecordedProbabilities).

The random numbers differ (a counter-based SplitMix64 here, a Mersenne Twister there), and the Beta
draws of the tied nodes with small counts are pooled (``concentration.sum_log_inverse_beta``), so the
chains are the same in law, not in their draws.

The class prior ``P(y)`` is the same model on a tree that is only a root holding the class counts: by
Eq. 12, ``(n(y) + alpha_0 / |Y|) / (N + alpha_0)`` with ``alpha_0 = initial_concentration`` (2: an
m-estimate with m = 2), or its posterior mean over the chain when ``sample_root_concentration``.
"""

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd
from numba import parallel_chunksize

from bncbench.bnc.estimators.base import Estimator
from bncbench.bnc.estimators.hdp.sampler import ROW_CACHE, run_chains
from bncbench.bnc.estimators.hdp.stirling import shared_table
from bncbench.bnc.parameters import check_integer, check_number
from bncbench.core.errors import ConfigError
from bncbench.bnc.progress import iteration_chunks

TYINGS = ("none", "single", "level", "same_parent")
#: Concentration updates kept in ``concentration_trace_`` (evenly spaced, the first included) and
#: in the trace that ``diagnostics`` reports.
TRACE_KEPT = 1000
TRACE_POINTS = 50
KERNELS = ("fast", "reference")
#: The active cells of a level are swept in this many interleaved streams of sibling groups.
ACTIVE_STREAMS = 2
#: The largest seed: the sampler keys its generator with a signed 64-bit integer.
MAX_SEED = 2**63 - 1


class HDPEstimator(Estimator):
    """HDP estimates of every table, by a collapsed Gibbs sampler per context tree.

    Parameters
    ----------
    iterations : int, default 5000
        Gibbs iterations (the paper's protocol uses 50000).
    burn_in : int or None
        Iterations discarded before averaging; None: ``min(1000, iterations // 10)``.
    window : int, default 10
        Pseudo-counts are resampled among ``t - window .. t + window``.
    tying : {"level", "single", "same_parent", "none"}
        Which nodes share a concentration (Sect. 4.4.2): all nodes of a level, all non-root nodes, the
        children of one node, or none.
    concentration_every : int, default 5
        Concentrations are resampled at iterations ``i`` with
        ``(i + concentration_every // 2) % concentration_every == 0``.
    initial_concentration : float, default 2.0
        Starting value of every concentration, and the fixed concentration of each root.
    prior_shape, prior_rate : float, default 2.0 and 1.0
        Gamma prior of the concentrations.
    max_concentration : float, default 4000
        Cap on a sampled concentration.
    sample_root_concentration : bool, default False
        Also sample each root's concentration (alone), instead of keeping it fixed.
    seed : int or None
        Seed of the sampler, 0..2**63 - 1; None draws one from the classifier's ``random_state``.
    kernel : {"fast", "reference"}
        Window sampler (``bncbench.bnc.estimators.hdp.sampler``): the fused one, or the plain one kept to check it.
        Both give identical results.

    Attributes
    ----------
    concentrations_ : list of ndarray
        Per tree, the mean concentration of each level (root first) at the last iteration.
    concentration_trace_ : ndarray
        ``(n_trees, n_kept, max_depth + 1)``: the level means after concentration updates, at most
        ``TRACE_KEPT`` of them evenly spaced (NaN beyond a tree's depth).
    trace_iterations_ : ndarray
        The iteration of each kept update.
    seed_ : int
        The seed used.
    """

    name = "hdp"
    count_based = True

    def __init__(
        self,
        iterations=5000,
        burn_in=None,
        window=10,
        tying="level",
        concentration_every=5,
        initial_concentration=2.0,
        prior_shape=2.0,
        prior_rate=1.0,
        max_concentration=4000.0,
        sample_root_concentration=False,
        seed=None,
        kernel="fast",
    ):
        self.iterations = check_integer("iterations", iterations)
        self.window = check_integer("window", window)
        self.concentration_every = check_integer("concentration_every", concentration_every)
        if burn_in is not None and check_integer("burn_in", burn_in, 0) >= iterations:
            raise ConfigError(
                f"burn_in ({burn_in}) must be smaller than iterations ({iterations}), "
                "or null for min(1000, iterations // 10)."
            )
        self.burn_in = min(1000, self.iterations // 10) if burn_in is None else int(burn_in)
        if tying not in TYINGS:
            raise ConfigError(f"tying must be one of {TYINGS}, got {tying!r}.")
        if kernel not in KERNELS:
            raise ConfigError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
        self.initial_concentration = check_number("initial_concentration", initial_concentration, low_open=True)
        self.prior_shape = check_number("prior_shape", prior_shape, low_open=True)
        self.prior_rate = check_number("prior_rate", prior_rate, low_open=True)
        self.max_concentration = check_number("max_concentration", max_concentration, low_open=True)
        if seed is not None:
            check_integer("seed", seed, 0, MAX_SEED)
        self.tying = tying
        self.sample_root_concentration = bool(sample_root_concentration)
        self.seed = seed
        self.kernel = kernel

    def tables(self, network, codes, rng):
        self.seed_ = int(self.seed) if self.seed is not None else int(rng.integers(MAX_SEED))
        forest = _Forest(
            network.trees, self.tying, self.initial_concentration, self.sample_root_concentration
        )
        table = shared_table.ensure(forest.max_count)
        updates = np.arange(self.iterations)
        updates = updates[(updates + self.concentration_every // 2) % self.concentration_every == 0]
        stride = max(1, -(-len(updates) // TRACE_KEPT))
        self.trace_iterations_ = updates[::stride]
        trace = np.full(
            (len(network.trees), len(self.trace_iterations_), forest.max_depth + 1), np.nan
        )
        estimates = (np.zeros(forest.n_cells), np.zeros(forest.n_cells))
        row_cache = forest.row_cache(table.bound)
        # one run of all the iterations, or on a terminal chunks with the progress between them
        with parallel_chunksize(1):  # trees differ in size: hand them out one at a time
            for start, stop in iteration_chunks(self.iterations, "HDP sampler"):
                run_chains(
                    self.kernel == "fast",
                    forest.layout,
                    forest.forest,
                    forest.state,
                    (table.ratio, table.inverse_ratio, table.rows, *row_cache),
                    (self.iterations, self.burn_in, self.window, self.concentration_every, stride),
                    (self.prior_shape, self.prior_rate, self.max_concentration),
                    self.seed_,
                    estimates,
                    trace,
                    start,
                    stop,
                )
        self.concentration_trace_ = trace
        self.concentrations_ = forest.level_concentrations()
        self.tree_variables_ = [(tree.child, tree.variables) for tree in network.trees]
        return forest.tables(estimates[0] / (self.iterations - self.burn_in))

    def diagnostics(self, column_names) -> dict:
        """The concentrations of the fit, for ``BNClassifier.diagnostics``.

        ``column_names`` as in :meth:`Estimator.diagnostics`. Returns a dict:
            ``hdp_concentration_level<L>``: the mean over the attribute trees of level L's final
            concentration (none for ``"direct"``, which has only the class's tree);
            ``hdp_concentrations``: trees (named ``child | parents``) by levels;
            ``hdp_concentration_trace``: (tree, level) by the iteration of a concentration update,
            ``TRACE_POINTS`` of the kept updates evenly spaced (no column when the chain ended before
            the first update).
        """
        labels = [
            f"{column_names[child]} | {', '.join(column_names[v] for v in variables)}"
            if variables
            else column_names[child]
            for child, variables in self.tree_variables_
        ]
        final = pd.DataFrame(
            [
                np.pad(c, (0, self.concentration_trace_.shape[2] - len(c)), constant_values=np.nan)
                for c in self.concentrations_
            ],
            index=pd.Index(labels, name="tree"),
        ).rename_axis(columns="level")
        attribute_trees = final.iloc[1:]
        found = {
            f"hdp_concentration_level{level}": float(attribute_trees.iloc[:, level].mean())
            for level in range(1, final.shape[1])
            if len(attribute_trees)  # "direct" has only the class's tree
        }
        kept = len(self.trace_iterations_)  # 0 when the chain ends before the first update
        updates = np.unique(np.linspace(0, kept - 1, min(kept, TRACE_POINTS)).astype(int))
        trace = self.concentration_trace_[:, updates, :].transpose(0, 2, 1)
        found["hdp_concentrations"] = final
        found["hdp_concentration_trace"] = pd.DataFrame(
            trace.reshape(trace.shape[0] * trace.shape[1], trace.shape[2]),
            index=pd.MultiIndex.from_product(
                [labels, range(trace.shape[1])], names=["tree", "level"]
            ),
            columns=pd.Index(self.trace_iterations_[updates], name="iteration"),
        ).dropna(how="all")
        return found


class _Forest:
    """The context trees of a network packed into the flat arrays of ``sampler.run_chains``."""

    def __init__(self, trees, tying, initial_concentration, sample_root):
        trees, self.node_order = zip(*map(_children_by_parent, trees)) if trees else ((), ())
        self.trees = trees
        tree_levels, levels, active_levels, parent, cell, slot = [0], [], [], [], [], []
        leaf_counts, active_cell, active_node, active_data = [], [], [], []
        sampled, tree_slots = [], [0]
        moving = []
        node_base = cell_base = n_active = 0
        self.max_count = 0
        for tree in trees:
            sizes = [p.shape[0] for p in tree.parent]
            starts = node_base + np.concatenate([[0], np.cumsum(sizes)])
            levels.append(starts)
            tree_levels.append(tree_levels[-1] + len(starts))
            active_levels.append(n_active)
            moving += tree.moving
            for level, size in enumerate(sizes):
                nodes = starts[level] + np.arange(size)
                parent.append(
                    np.full(size, -1) if level == 0 else starts[level - 1] + tree.parent[level]
                )
                cell.append(cell_base + (nodes - node_base) * tree.n_values)
                data = _integer_counts(tree.counts[level])
                self.max_count = max(self.max_count, int(data.max(initial=0)))
                leaf_counts.append(data if level == tree.depth else np.zeros_like(data))
                # a count of 0 or 1 fixes t = n for good (internal counts never exceed the data's)
                node, value = (
                    np.nonzero(data >= 2) if level > 0 else (np.zeros(0, int), np.zeros(0, int))
                )
                if level > 0:
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
        slot = np.concatenate(slot).astype(np.int64)
        by_slot = np.argsort(slot, kind="stable")
        ties = (
            np.searchsorted(slot[by_slot], np.arange(len(sampled) + 1)).astype(np.int64),
            by_slot.astype(np.int64),
            np.array(sampled, dtype=np.bool_),
        )
        tree_levels, active_levels = np.array(tree_levels), np.array(active_levels)
        moving = np.concatenate(moving)
        tree_of_node = np.repeat(np.arange(len(trees)), [tree.n_nodes for tree in trees])
        recording = (
            np.searchsorted(tree_of_node[moving], np.arange(len(trees) + 1)).astype(np.int64),
            np.flatnonzero(moving).astype(np.int64),
            np.searchsorted(tree_of_node[~moving], np.arange(len(trees) + 1)).astype(np.int64),
            np.flatnonzero(~moving).astype(np.int64),
        )
        n_active = active_levels[tree_levels[1:] - 1] - active_levels[tree_levels[:-1]]
        n_cells = [tree.n_nodes * tree.n_values for tree in trees]
        work = 10 * n_active + np.array(n_cells)  # a window costs about ten cells' recording
        self.layout = (
            tree_levels.astype(np.int64),
            np.concatenate(levels).astype(np.int64),
            active_levels.astype(np.int64),
            np.array([tree.n_values for tree in trees], dtype=np.int64),
            np.array(tree_slots, dtype=np.int64),
            ties,
            recording,
            np.argsort(-work, kind="stable").astype(np.int64),
        )
        active_cell = np.concatenate(active_cell).astype(np.int64)
        active_node = np.concatenate(active_node).astype(np.int64)
        parent, cell = (
            np.concatenate(parent).astype(np.int64),
            np.concatenate(cell).astype(np.int64),
        )
        active_parent_cell = cell[parent[active_node]] + active_cell - cell[active_node]
        self.forest = (active_cell, active_node, active_parent_cell, parent, cell, slot)
        # 32-bit counts: the sweep's scattered reads of big trees' state miss the caches half as often
        # (1.2-1.5x on kDB-5 trees); counts never exceed the rows of a fit
        n_cell = np.concatenate([c.ravel() for c in leaf_counts]).astype(np.int32)
        n_nodes = parent.shape[0]
        self.state = (
            n_cell,
            np.zeros_like(n_cell),
            np.zeros(n_nodes, dtype=np.int32),
            np.zeros(n_nodes, dtype=np.int32),
            np.full(len(sampled), initial_concentration),
        )
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
            for a, b in pairwise(self._tree_levels(i)):
                table = mean_probabilities[cell[a] : cell[a] + (b - a) * tree.n_values].reshape(
                    b - a, -1
                )
                tree_tables.append(table / table.sum(axis=1, keepdims=True))
            out.append([_reorder(table, order) for table, order in zip(tree_tables, self.node_order[i])])
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
    """What ``_Forest`` reads of a ``ContextTree``, its nodes renumbered (``_children_by_parent``)."""

    parent: list
    counts: list
    n_values: int
    depth: int
    n_nodes: int
    moving: list  # per level, whether each node's counts move (``_moving_nodes``)


def _children_by_parent(tree):
    """The tree with each level's nodes ordered by their parents' order (stable), those whose counts
    move first (``_moving_nodes``), and per level the tree's number of each renumbered node.

    A ``ContextTree`` numbers a level's nodes as the data first reach them; the sweep and the recording
    walk a level in order and read each node's parent, so with siblings together the parents' state is
    read in order too, not scattered over the level above; the nodes recorded every iteration
    (``estimates.record_probabilities``) lie together.
    """
    parent, counts, node_order = [tree.parent[0]], [tree.counts[0]], [np.arange(tree.parent[0].shape[0])]
    moving = _moving_nodes(tree)
    ordered_moving = [moving[0]]
    renumbered = np.zeros(1, dtype=np.int64)  # the new number of each node of the level above
    for level in range(1, tree.depth + 1):
        new_parent = renumbered[tree.parent[level]]
        order = np.lexsort((new_parent, ~moving[level]))
        parent.append(new_parent[order])
        counts.append(tree.counts[level][order])
        ordered_moving.append(moving[level][order])
        node_order.append(order)
        renumbered = np.empty_like(order)
        renumbered[order] = np.arange(order.shape[0])
    ordered = _OrderedTree(parent, counts, tree.n_values, tree.depth, tree.n_nodes, ordered_moving)
    return ordered, node_order


def _reorder(table, order):
    """Rows of ``table``, in a renumbered order, back in the tree's (row ``i`` is node ``order[i]``)."""
    out = np.empty_like(table)
    out[order] = table
    return out


def _tie(tree, tying, starts, first_slot):
    """Concentration slot of every node of one tree (``first_slot`` is the root's), and their count."""
    sizes = np.diff(starts)
    slot = [np.array([first_slot])]
    if tying == "level":
        slot += [np.full(size, first_slot + level) for level, size in enumerate(sizes) if level > 0]
        return np.concatenate(slot), len(sizes)
    if tying == "single":
        slot += [np.full(size, first_slot + 1) for size in sizes[1:]]
        return np.concatenate(slot), 1 + (len(sizes) > 1)
    if tying == "none":
        return first_slot + np.arange(starts[-1] - starts[0]), starts[-1] - starts[0]
    # same_parent: the children of a node share the slot numbered after that node
    return (
        np.concatenate(
            [slot[0]]
            + [
                first_slot + 1 + (starts[level - 1] - starts[0]) + tree.parent[level]
                for level in range(1, len(sizes))
            ]
        ),
        1 + starts[-2] - starts[0] if len(sizes) > 1 else 1,
    )
