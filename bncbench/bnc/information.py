"""Mutual information between attributes and the class, from counts (natural logarithms).

``I(X_i; Y)`` orders the attributes of kDB and ``I(X_i; X_j | Y)`` weighs TAN's spanning tree and chooses
kDB's parents (SkDB paper Algorithm 2, lines 1-2). Both are plug-in (maximum likelihood) estimates.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _mutual_information(x, y, n_x, n_y):
    n = x.shape[0]
    joint = np.zeros((n_x, n_y))
    for r in range(n):
        joint[x[r], y[r]] += 1.0
    px = joint.sum(axis=1)
    py = joint.sum(axis=0)
    mi = 0.0
    for a in range(n_x):
        for b in range(n_y):
            if joint[a, b] > 0:
                mi += joint[a, b] / n * np.log(joint[a, b] * n / (px[a] * py[b]))
    return mi


@njit(cache=True, parallel=True)
def _conditional_mutual_information_matrix(columns, y, cards, n_classes):
    d, n = columns.shape
    cmi = np.zeros((d, d))
    for i in prange(d):
        for j in range(i + 1, d):
            ri, rj = cards[i], cards[j]
            joint = np.zeros((ri, rj, n_classes))
            for r in range(n):
                joint[columns[i, r], columns[j, r], y[r]] += 1.0
            xi_y = joint.sum(axis=1)
            xj_y = joint.sum(axis=0)
            ny = xi_y.sum(axis=0)
            value = 0.0
            for a in range(ri):
                for b in range(rj):
                    for c in range(n_classes):
                        if joint[a, b, c] > 0:
                            value += joint[a, b, c] / n * np.log(
                                joint[a, b, c] * ny[c] / (xi_y[a, c] * xj_y[b, c])
                            )
            cmi[i, j] = value
            cmi[j, i] = value
    return cmi


def mutual_information_with_class(codes: np.ndarray, y: np.ndarray, cards: np.ndarray, n_classes: int) -> np.ndarray:
    """``I(X_i; Y)`` for every column of an integer code matrix."""
    return np.array(
        [_mutual_information(np.ascontiguousarray(codes[:, i]), y, cards[i], n_classes) for i in range(codes.shape[1])]
    )


def conditional_mutual_information(codes: np.ndarray, y: np.ndarray, cards: np.ndarray, n_classes: int) -> np.ndarray:
    """Symmetric (d, d) matrix of ``I(X_i; X_j | Y)``, zero on the diagonal."""
    return _conditional_mutual_information_matrix(np.ascontiguousarray(codes.T), y, cards, n_classes)
