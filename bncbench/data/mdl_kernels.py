"""Numba kernels of Fayyad & Irani's (1993) MDL discretisation over sorted class counts.

An attribute's training values are summarised as ``counts[j, c]``: the number of examples of
class ``c`` at the ``j``-th smallest distinct value. A cut ``j`` splits rows ``< j`` from
rows ``>= j``. Entropies are in bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bncbench.core.kernel_cache import key_on_package_source

key_on_package_source()  # before the kernels below are defined


@njit(cache=True)
def _n_entropy(counts):
    """``n * Ent`` of a class-count vector of total ``n`` (0 for an empty vector)."""
    n = 0.0
    s = 0.0
    for c in counts:
        if c > 0:
            n += c
            s += c * np.log2(c)
    return n * np.log2(n) - s if n > 0 else 0.0


@njit(cache=True)
def _single_class(row):
    """The class of a value whose examples all share one class, else -1."""
    found = -1
    for c in range(row.shape[0]):
        if row[c] > 0:
            if found >= 0:
                return -1
            found = c
    return found


@njit(cache=True)
def best_cut(counts, lo, hi):
    """Boundary cut of rows ``lo:hi`` minimising the class entropy ``E(A, T; S)``.

    Only boundary points are candidates (Fayyad & Irani 1993, Sect. 2: the minimum lies on
    one): a cut between two values whose examples all share one and the same class is
    skipped. Ties go to the lowest cut. Returns the cut ``j`` (``lo < j < hi``), or -1 when rows
    ``lo:hi`` have no boundary point.
    """
    total = np.zeros(counts.shape[1])
    for j in range(lo, hi):
        total += counts[j]
    left = np.zeros(counts.shape[1])
    best = -1
    best_entropy = 0.0
    for j in range(lo + 1, hi):
        left += counts[j - 1]
        before = _single_class(counts[j - 1])
        if before >= 0 and before == _single_class(counts[j]):
            continue
        entropy = _n_entropy(left) + _n_entropy(total - left)
        # A relative tolerance makes ties (equal in exact arithmetic) go to the lowest cut.
        if best < 0 or entropy < best_entropy * (1.0 - 1e-10):
            best = j
            best_entropy = entropy
    return best


@njit(cache=True)
def mdl_accepts(counts, lo, cut, hi):
    """Fayyad & Irani's MDL criterion (1993, Sect. 3) for cut ``cut`` of rows ``lo:hi``.

    Accept when ``Gain > log2(N - 1) / N + Delta / N`` with
    ``Delta = log2(3^k - 2) - [k Ent(S) - k1 Ent(S1) - k2 Ent(S2)]``.
    """
    s1 = counts[lo:cut].sum(axis=0).astype(np.float64)
    s2 = counts[cut:hi].sum(axis=0).astype(np.float64)
    n1 = s1.sum()
    n2 = s2.sum()
    n = n1 + n2
    ent = _n_entropy(s1 + s2) / n
    ent1 = _n_entropy(s1) / n1
    ent2 = _n_entropy(s2) / n2
    gain = ent - (n1 * ent1 + n2 * ent2) / n
    # the classes present: k, k1, k2 of the criterion
    k = np.count_nonzero(s1 + s2)
    k1 = np.count_nonzero(s1)
    k2 = np.count_nonzero(s2)
    # 3.0 ** k in floating point: an integer 3 ** k overflows int64 from 40 classes on.
    delta = np.log2(3.0**k - 2.0) - (k * ent - k1 * ent1 - k2 * ent2)
    return gain > (np.log2(n - 1.0) + delta) / n


@njit(cache=True)
def mdl_cut_indices(counts):
    """All accepted cuts, ascending, of the recursive binary splitting (Fayyad & Irani 1993, Sect. 3) of
    ``counts`` (n_values x n_classes, values ascending)."""
    accepted = np.zeros(counts.shape[0], dtype=np.bool_)
    stack = [(0, counts.shape[0])]  # intervals still to split, as (lo, hi) row ranges
    while len(stack) > 0:
        lo, hi = stack.pop()
        cut = best_cut(counts, lo, hi)
        if cut >= 0 and mdl_accepts(counts, lo, cut, hi):
            accepted[cut] = True
            stack.append((lo, cut))
            stack.append((cut, hi))
    return np.flatnonzero(accepted)
