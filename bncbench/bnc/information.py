"""Mutual information between attributes and the class, from counts (natural logarithms).

``I(X_i; Y)`` orders the attributes of kDB and ``I(X_i; X_j | Y)`` weighs TAN's spanning tree and chooses
kDB's parents (SkDB paper Algorithm 2, lines 1-2). Both are plug-in (maximum likelihood) estimates
computed from joint counts that ``StructureStatistics`` accumulates chunk by chunk (the first pass of
kDB and SkDB over the data, SkDB paper Sect. 2.1), so memory grows with the cardinalities, not the rows.
A missing value (a negative code, ``encoding.MISSING``) leaves its row out of the counts that involve
its attribute, and each information is computed from the rows that count in it: available-case analysis,
as bnclassify approximates its scores on incomplete data (methods vignette, Sect. "Chow-Liu for
one-dependence estimators").
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def _accumulate_pairs(columns, y, cards, n_classes, offsets, counts):
    """counts[offsets[i, j] + (x_i * r_j + x_j) * c + y] += 1 for every pair i < j (rows of ``columns``
    where both are observed)."""
    d, n = columns.shape
    for i in prange(d):
        for j in range(i + 1, d):
            base = offsets[i, j]
            for r in range(n):
                if columns[i, r] >= 0 and columns[j, r] >= 0:
                    counts[base + (columns[i, r] * cards[j] + columns[j, r]) * n_classes + y[r]] += 1.0


@njit(cache=True, parallel=True)
def _conditional_mutual_information(counts, offsets, cards, n_classes):
    d = cards.shape[0]
    cmi = np.zeros((d, d))
    for i in prange(d):
        for j in range(i + 1, d):
            ri, rj = cards[i], cards[j]
            joint = counts[offsets[i, j] : offsets[i, j] + ri * rj * n_classes].reshape((ri, rj, n_classes))
            xi_y = joint.sum(axis=1)
            xj_y = joint.sum(axis=0)
            ny = xi_y.sum(axis=0)
            n_rows = ny.sum()  # the rows observing both
            value = 0.0
            for a in range(ri):
                for b in range(rj):
                    for c in range(n_classes):
                        if joint[a, b, c] > 0:
                            value += joint[a, b, c] / n_rows * np.log(
                                joint[a, b, c] * ny[c] / (xi_y[a, c] * xj_y[b, c])
                            )
            cmi[i, j] = value
            cmi[j, i] = value
    return cmi


class StructureStatistics:
    """Counts of ``(X_i, Y)`` and of ``(X_i, X_j, Y)`` for every pair, added chunk by chunk.

    Parameters
    ----------
    cards : array of int
        Number of values of each attribute.
    n_classes : int
    pairs : bool, default True
        Whether to keep the pairwise counts (only ``I(X_i; Y)`` is needed otherwise).
    memory_limit : memory.MemoryLimit, optional
        Bound that the pairwise counts are checked against before they are allocated.
    """

    def __init__(self, cards, n_classes, pairs=True, memory_limit=None):
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.pairs = pairs
        self.n_rows = 0.0
        self.attribute_class = [np.zeros((r, self.n_classes)) for r in self.cards]
        d = len(self.cards)
        self.offsets = np.zeros((d, d), dtype=np.int64)
        size = 0
        for i in range(d if pairs else 0):
            for j in range(i + 1, d):
                self.offsets[i, j] = size
                size += self.cards[i] * self.cards[j] * self.n_classes
        if pairs and memory_limit is not None:
            memory_limit.check_pair_counts(self.cards, self.n_classes)
        self.pair_counts = np.zeros(size) if pairs else None

    def add(self, codes: np.ndarray) -> "StructureStatistics":
        """Count the rows of an (n, d + 1) code matrix whose last column is the class."""
        columns = np.ascontiguousarray(codes[:, :-1].T)  # the codes keep their type (int8 in memory)
        y = np.ascontiguousarray(codes[:, -1], dtype=np.int64)
        for i, table in enumerate(self.attribute_class):
            observed = columns[i] >= 0
            cells = columns[i].astype(np.int64) * self.n_classes + y
            table += np.bincount(cells if observed.all() else cells[observed], minlength=table.size).reshape(table.shape)
        if self.pair_counts is not None:
            _accumulate_pairs(columns, y, self.cards, self.n_classes, self.offsets, self.pair_counts)
        self.n_rows += codes.shape[0]
        return self

    def empty_copy(self) -> "StructureStatistics":
        """No counts, of the same shape (the memory limit was checked when this one was made)."""
        return StructureStatistics(self.cards, self.n_classes, self.pairs)

    def merge(self, other: "StructureStatistics") -> "StructureStatistics":
        """Add the counts of ``other``, an ``empty_copy`` counted on other rows."""
        for table, counted in zip(self.attribute_class, other.attribute_class, strict=True):
            table += counted
        if self.pair_counts is not None:
            self.pair_counts += other.pair_counts
        self.n_rows += other.n_rows
        return self

    def mutual_information_with_class(self) -> np.ndarray:
        """``I(X_i; Y)`` for every attribute."""
        out = np.zeros(len(self.attribute_class))
        for i, joint in enumerate(self.attribute_class):
            n_rows = joint.sum()  # the rows observing X_i
            seen = joint > 0
            if not seen.any():
                continue
            expected = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True) / n_rows
            out[i] = np.sum(joint[seen] / n_rows * np.log(joint[seen] / expected[seen]))
        return out

    def conditional_mutual_information(self) -> np.ndarray:
        """Symmetric (d, d) matrix of ``I(X_i; X_j | Y)``, zero on the diagonal."""
        return _conditional_mutual_information(self.pair_counts, self.offsets, self.cards, self.n_classes)

    def attribute_order(self) -> np.ndarray:
        """Attributes in decreasing ``I(X_i; Y)``, ties by column order."""
        return np.argsort(-self.mutual_information_with_class(), kind="stable")


def mutual_information_with_class(codes: np.ndarray, y: np.ndarray, cards: np.ndarray, n_classes: int) -> np.ndarray:
    """``I(X_i; Y)`` for every column of an integer code matrix."""
    return StructureStatistics(cards, n_classes, pairs=False).add(np.column_stack([codes, y])).mutual_information_with_class()


def conditional_mutual_information(codes: np.ndarray, y: np.ndarray, cards: np.ndarray, n_classes: int) -> np.ndarray:
    """Symmetric (d, d) matrix of ``I(X_i; X_j | Y)``, zero on the diagonal."""
    return StructureStatistics(cards, n_classes).add(np.column_stack([codes, y])).conditional_mutual_information()
