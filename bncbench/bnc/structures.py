"""Structure learners: which attributes each attribute depends on, besides the class.

Each learner returns, for every attribute (column index), the ordered list of its attribute parents;
the class is an implicit parent of every attribute. The order is the order of the context tree's levels
below the class (HDP paper Sect. 3.3).
"""

from collections.abc import Callable

import numpy as np
from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree

from bncbench.bnc.information import conditional_mutual_information, mutual_information_with_class
from bncbench.errors import ConfigError


def naive_bayes(codes, y, cards, n_classes, k, params) -> list[list[int]]:
    """Naive Bayes: no attribute parents."""
    _reject_params("nb", params, set())
    return [[] for _ in range(codes.shape[1])]


def tree_augmented(codes, y, cards, n_classes, k, params) -> list[list[int]]:
    """TAN (Friedman et al. 1997): Chow-Liu maximum spanning tree on ``I(X_i; X_j | Y)``.

    The tree is rooted at the attribute with the highest ``I(X_i; Y)`` and every other attribute takes
    its neighbour towards the root as its single parent.
    """
    _reject_params("tan", params, set())
    d = codes.shape[1]
    if d < 2:
        return [[] for _ in range(d)]
    cmi = conditional_mutual_information(codes, y, cards, n_classes)
    # scipy treats a zero weight as a missing edge; a constant shift keeps every edge present and does
    # not change which spanning tree is minimal, since all spanning trees have d - 1 edges.
    weights = cmi.max() + 1.0 - cmi
    np.fill_diagonal(weights, 0.0)
    tree = minimum_spanning_tree(weights)
    root = int(np.argmax(mutual_information_with_class(codes, y, cards, n_classes)))
    _, predecessors = breadth_first_order(tree, root, directed=False, return_predecessors=True)
    return [[] if i == root else [int(predecessors[i])] for i in range(d)]


def k_dependence(codes, y, cards, n_classes, k, params) -> list[list[int]]:
    """kDB-k (Sahami 1996; SkDB paper Algorithm 2).

    Attributes are taken in decreasing ``I(X_i; Y)``; each takes as parents the ``min(i, k)`` earlier
    attributes with the highest ``I(X_i; X_j | Y)``, listed in decreasing order of it. Ties go to the
    earlier attribute in the order.
    """
    _reject_params("kdb", params, set())
    if int(k) < 0:
        raise ConfigError(f"kDB needs k >= 0, got k={k}.")
    order = attribute_order(codes, y, cards, n_classes)
    cmi = conditional_mutual_information(codes, y, cards, n_classes) if k > 0 else None
    parents: list[list[int]] = [[] for _ in range(codes.shape[1])]
    for position, attribute in enumerate(order):
        earlier = order[:position]
        if k > 0 and position > 0:
            ranked = earlier[np.argsort(-cmi[attribute, earlier], kind="stable")]
            parents[attribute] = [int(p) for p in ranked[: int(k)]]
    return parents


def attribute_order(codes, y, cards, n_classes) -> np.ndarray:
    """Attributes in decreasing ``I(X_i; Y)``, ties by column order."""
    mi = mutual_information_with_class(codes, y, cards, n_classes)
    return np.argsort(-mi, kind="stable")


def _reject_params(name: str, params, accepted: set) -> None:
    unknown = set(params) - accepted
    if unknown:
        raise ConfigError(
            f"structure {name!r} does not take structure_params {sorted(unknown)}; "
            f"accepted: {sorted(accepted) or 'none'}."
        )


StructureLearner = Callable[..., list[list[int]]]

STRUCTURES: dict[str, StructureLearner] = {"nb": naive_bayes, "tan": tree_augmented, "kdb": k_dependence}
