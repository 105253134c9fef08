"""The estimates the HDP sampler returns (HDP paper Sect. 4.5), numba kernels: the running mean of
each node's conditional probabilities over the iterations recorded after burn-in, the share of the
nodes whose counts never move (the leaves, and the nodes above only sparse leaves) recorded once per
concentration update."""

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def record_probabilities(recorded, n_values, forest, state, current, summed):
    """Add this iteration's probabilities of the ``recorded`` nodes (those whose counts move, in level
    order) by Eqs. 12-14, top-down (uniform base at the root), to ``summed``: their sums since the last
    concentration update, which ``record_static`` adds to the estimates.

    Cells are indexed by unsigned offsets: without numba's negative-index wrap-around, the loops over
    a node's values vectorise.
    """
    _, _, _, parent, cell, slot = forest
    n_cell, _, n_total, _, alpha = state
    for node in recorded:
        a = alpha[slot[node]]
        scale = 1.0 / (n_total[node] + a)
        first = np.uint64(cell[node])
        if parent[node] < 0:
            for k in range(n_values):
                i = first + np.uint64(k)
                current[i] = (n_cell[i] + a / n_values) * scale
                summed[i] += current[i]
        else:
            base = np.uint64(cell[parent[node]])
            for k in range(n_values):
                i = first + np.uint64(k)
                current[i] = (n_cell[i] + a * current[base + np.uint64(k)]) * scale
                summed[i] += current[i]


@njit(cache=True, error_model="numpy")
def record_static(static, first_leaf, recorded, n_values, forest, state, pending, summed, accumulated):
    """Add to the estimates the last ``pending`` recorded iterations: the ``recorded`` nodes' sums, and
    the ``static`` nodes' (in level order) computed at once; then clear the recorded nodes' sums.

    A node is static when its counts never move: a leaf (data counts), or a node whose children's
    cells all have data counts of at most 1 (their pseudo-counts are fixed, so are its counts, Eq. 10).
    Its counts and concentration stay the same between concentration updates, so Eq. 12 summed over
    those iterations is ``(pending * n + alpha * sum of the parent's probabilities) / (N + alpha)``,
    linear in the parent's sum: a recorded parent's is in ``summed``, a static parent's is written
    there first (top-down), and a static root's base is ``pending / n_values``. Most cells of a big
    tree are visited once per update instead of every iteration, and the others add to the estimates
    once per update too.
    """
    _, _, _, parent, cell, slot = forest
    n_cell, _, n_total, _, alpha = state
    if pending == 0:
        return
    for node in static:
        a = alpha[slot[node]]
        scale = 1.0 / (n_total[node] + a)
        first = np.uint64(cell[node])
        keep = node < first_leaf  # an internal static node: its children read its sum
        root = parent[node] < 0
        base = np.uint64(0 if root else cell[parent[node]])
        for k in range(n_values):
            i = first + np.uint64(k)
            base_sum = pending / n_values if root else summed[base + np.uint64(k)]
            node_sum = (pending * n_cell[i] + a * base_sum) * scale
            accumulated[i] += node_sum
            if keep:
                summed[i] = node_sum
    for node in recorded:
        first = np.uint64(cell[node])
        for k in range(n_values):
            i = first + np.uint64(k)
            accumulated[i] += summed[i]
            summed[i] = 0.0


@njit(cache=True, error_model="numpy")
def level_means(levels, slot, alpha, out):
    for level in range(levels.shape[0] - 1):
        total = 0.0
        for node in range(levels[level], levels[level + 1]):
            total += alpha[slot[node]]
        out[level] = total / max(1, levels[level + 1] - levels[level])
