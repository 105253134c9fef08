"""The estimates the HDP sampler returns (HDP paper Sect. 4.5), numba kernels: the running mean of
each node's conditional probabilities over the iterations recorded after burn-in, the leaves' share
recorded once per concentration update."""

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def record_probabilities(levels, n_values, forest, state, current, accumulated, leaf_parent_sum):
    """Add this iteration's estimates above the leaves, top-down by Eqs. 12-14 (uniform base at the
    root), and the probabilities of the level above the leaves to ``leaf_parent_sum`` for
    ``record_leaves``; a tree that is only a root is recorded whole.

    Cells are indexed by unsigned offsets: without numba's negative-index wrap-around, the loops over
    a node's values vectorise.
    """
    _, _, _, parent, cell, slot = forest
    n_cell, _, n_total, _, alpha = state
    depth = levels.shape[0] - 2
    for level in range(max(depth, 1)):
        above_leaves = level == depth - 1
        for node in range(levels[level], levels[level + 1]):
            a = alpha[slot[node]]
            scale = 1.0 / (n_total[node] + a)
            first = np.uint64(cell[node])
            if level == 0:
                for k in range(n_values):
                    i = first + np.uint64(k)
                    current[i] = (n_cell[i] + a / n_values) * scale
                    accumulated[i] += current[i]
            else:
                base = np.uint64(cell[parent[node]])
                for k in range(n_values):
                    i = first + np.uint64(k)
                    current[i] = (n_cell[i] + a * current[base + np.uint64(k)]) * scale
                    accumulated[i] += current[i]
            if above_leaves:
                for k in range(n_values):
                    i = first + np.uint64(k)
                    leaf_parent_sum[i] += current[i]


@njit(cache=True, error_model="numpy")
def record_leaves(levels, n_values, forest, state, pending, leaf_parent_sum, accumulated):
    """Add the leaves' estimates of the last ``pending`` recorded iterations at once, and clear
    ``leaf_parent_sum``.

    A leaf's counts and concentration stay the same between concentration updates, so Eq. 12 summed
    over those iterations is ``(pending * n + alpha * sum of the parent's probabilities) / (N + alpha)``:
    the leaves, most of a big tree's cells, are visited once per update instead of every iteration.
    """
    _, _, _, parent, cell, slot = forest
    n_cell, _, n_total, _, alpha = state
    depth = levels.shape[0] - 2
    if depth == 0 or pending == 0:
        return
    for node in range(levels[depth], levels[depth + 1]):
        a = alpha[slot[node]]
        scale = 1.0 / (n_total[node] + a)
        first, base = np.uint64(cell[node]), np.uint64(cell[parent[node]])
        for k in range(n_values):
            i = first + np.uint64(k)
            accumulated[i] += (pending * n_cell[i] + a * leaf_parent_sum[base + np.uint64(k)]) * scale
    leaf_parent_sum[cell[levels[depth - 1]] : cell[levels[depth]]] = 0.0


@njit(cache=True, error_model="numpy")
def level_means(levels, slot, alpha, out):
    for level in range(levels.shape[0] - 1):
        total = 0.0
        for node in range(levels[level], levels[level + 1]):
            total += alpha[slot[node]]
        out[level] = total / max(1, levels[level + 1] - levels[level])
