"""Numba kernel of ancestral sampling from a discrete Bayesian network held in flat arrays.

Variable ``v`` (0 = the class, then the attributes, in a topological order) has ``cardinality[v]``
values and the parents ``parents[v, :n_parents[v]]`` (earlier variables). Its CPT is the block of
``cumulative`` starting at ``offset[v]``: one row of ``cardinality[v]`` cumulative probabilities per
context, the context index being the mixed-radix number of the parents' values (first parent most
significant). The uniform number of row ``r``, variable ``v`` is a hash of ``(seed, r, v)``
(splitmix64), so a row depends on its index alone: the rows do not depend on how they are chunked.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bncbench.core.kernel_cache import key_on_package_source

key_on_package_source()  # before the kernels below are defined

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True)
def _splitmix64(x):
    """Steele, Lea & Flood's (2014) splitmix64 finaliser of ``x + golden ratio``: a bijective mix."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _unit(key):
    """A float in [0, 1) from the top 53 bits of ``key``."""
    return np.float64(key >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def sample_rows(seed, start, n_rows, cardinality, parents, n_parents, offset, cumulative):
    """Rows ``start`` .. ``start + n_rows - 1`` of the sample of seed ``seed``: an int32 matrix of codes,
    one column per variable."""
    n_vars = cardinality.shape[0]
    out = np.empty((n_rows, n_vars), dtype=np.int32)
    seed_key = _splitmix64(np.uint64(seed))
    for i in range(n_rows):
        row_key = _splitmix64(seed_key ^ np.uint64(start + i))
        for v in range(n_vars):
            context = 0
            for j in range(n_parents[v]):
                p = parents[v, j]
                context = context * cardinality[p] + out[i, p]
            u = _unit(_splitmix64(row_key ^ np.uint64(v)))
            base = offset[v] + context * cardinality[v]
            value = cardinality[v] - 1  # the last value takes what rounding leaves above its cumulative
            for x in range(cardinality[v] - 1):
                if u < cumulative[base + x]:
                    value = x
                    break
            out[i, v] = value
    return out


@njit(cache=True)
def log_joints(attributes, cardinality, parents, n_parents, offset, log_tables):
    """``log P(y, x)`` of rows of attribute codes (column ``v - 1``: variable ``v``), one column per class value:
    the class's log prior, then each attribute's log CPT entry added in the variables' order. ``log_tables`` holds
    the CPTs' logs in ``cumulative``'s layout (one row per context)."""
    n_rows, n_vars, n_classes = attributes.shape[0], cardinality.shape[0], cardinality[0]
    out = np.empty((n_rows, n_classes))
    for i in range(n_rows):
        for y in range(n_classes):
            total = log_tables[offset[0] + y]
            for v in range(1, n_vars):
                context = y  # the class is every attribute's first parent
                for j in range(1, n_parents[v]):
                    p = parents[v, j]
                    context = context * cardinality[p] + attributes[i, p - 1]
                total += log_tables[offset[v] + context * cardinality[v] + attributes[i, v - 1]]
            out[i, y] = total
    return out
