"""Structure learners: which attributes each attribute depends on, besides the class.

A learner takes the integer code matrix (class in the last column), the attributes' cardinalities, the
number of classes, ``k`` and its ``structure_params``, and returns the counted network of the structure
(``CountedNetwork``: for every attribute in the model the ordered list of its attribute parents, the
class being an implicit parent of each, and the counts) with a dict of what else it learned. The parent
order is the order of the context tree's levels below the class (HDP paper Sect. 3.3).
"""

from collections.abc import Callable

import numpy as np
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

from bncbench.bnc.information import conditional_mutual_information, mutual_information_with_class
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc import selective_kdb
from bncbench.bnc.aode import AveragedOneDependence
from bncbench.errors import ConfigError


def counted(parents, codes, cards, n_classes) -> CountedNetwork:
    """The network of a given structure, counted on ``codes``."""
    return CountedNetwork(parents, cards, n_classes).add(codes)


def naive_bayes(codes, cards, n_classes, k, params):
    """Naive Bayes: no attribute parents."""
    _reject_params("nb", params, set())
    return counted([[] for _ in cards], codes, cards, n_classes), {}


def tree_augmented(codes, cards, n_classes, k, params):
    """TAN (Friedman et al. 1997): Chow-Liu maximum spanning tree on ``I(X_i; X_j | Y)``; with
    ``structure_params={"score": "aic" | "bic"}`` a forest (FAN) as in bnclassify.

    An edge's weight is its gain in log-likelihood, ``N * I(X_i; X_j | Y)``, less, for AIC and BIC,
    the penalty of the ``c (r_i - 1)(r_j - 1)`` parameters it adds (1 per parameter for AIC,
    ``log(N) / 2`` for BIC); edges that do not pay their penalty are dropped. Each tree of the
    forest is rooted at its attribute with the highest ``I(X_i; Y)`` and every other attribute takes
    its neighbour towards the root as its single parent.
    """
    _reject_params("tan", params, {"score"})
    score = params.get("score", "likelihood")
    if score not in TAN_PENALTIES:
        raise ConfigError(f"tan score must be one of {sorted(TAN_PENALTIES)}, got {score!r}.")
    attributes, y = _split(codes)
    d, n = attributes.shape[1], attributes.shape[0]
    cmi = conditional_mutual_information(attributes, y, cards, n_classes)
    added = n_classes * np.outer(cards - 1, cards - 1)
    gain = n * cmi - TAN_PENALTIES[score](n) * added
    keep = gain > 0 if score != "likelihood" else np.ones_like(gain, dtype=bool)
    np.fill_diagonal(keep, False)
    # scipy treats a zero weight as a missing edge; a constant shift keeps every kept edge present and
    # does not change which spanning forest is minimal, since all have the same number of edges.
    weights = np.where(keep, gain.max() + 1.0 - gain, 0.0) if d > 1 else np.zeros((d, d))
    forest = minimum_spanning_tree(weights)
    mi = mutual_information_with_class(attributes, y, cards, n_classes)
    _, component = connected_components(forest, directed=False)
    parents: list[list[int]] = [[] for _ in range(d)]
    for label in np.unique(component):
        members = np.flatnonzero(component == label)
        root = int(members[np.argmax(mi[members])])
        _, predecessors = breadth_first_order(forest, root, directed=False, return_predecessors=True)
        for i in members:
            if i != root:
                parents[i] = [int(predecessors[i])]
    return counted(parents, codes, cards, n_classes), {}


TAN_PENALTIES = {"likelihood": lambda n: 0.0, "aic": lambda n: 1.0, "bic": lambda n: np.log(n) / 2.0}


def k_dependence(codes, cards, n_classes, k, params):
    """kDB-k (Sahami 1996; SkDB paper Algorithm 2).

    Attributes are taken in decreasing ``I(X_i; Y)``; each takes as parents the ``min(i, k)`` earlier
    attributes with the highest ``I(X_i; X_j | Y)``, listed in decreasing order of it. Ties go to the
    earlier attribute in the order.
    """
    _reject_params("kdb", params, set())
    parents, _ = _kdb_parents(codes, cards, n_classes, 1 if k is None else k)
    return counted(parents, codes, cards, n_classes), {}


def _kdb_parents(codes, cards, n_classes, k):
    k = int(k)
    if k < 0:
        raise ConfigError(f"kDB needs k >= 0, got k={k}.")
    attributes, y = _split(codes)
    order = attribute_order(attributes, y, cards, n_classes)
    cmi = conditional_mutual_information(attributes, y, cards, n_classes) if k > 0 else None
    parents: list[list[int]] = [[] for _ in range(attributes.shape[1])]
    for position, attribute in enumerate(order):
        earlier = order[:position]
        if k > 0 and position > 0:
            ranked = earlier[np.argsort(-cmi[attribute, earlier], kind="stable")]
            parents[attribute] = [int(p) for p in ranked[:k]]
    return parents, order


def selective_k_dependence(codes, cards, n_classes, k, params):
    """Selective kDB (SkDB paper Algorithm 4): kDB-``k`` (default 5), then the top-l attributes and the
    k' <= k with the lowest leave-one-out loss (``selective_kdb``).

    ``structure_params``: ``loss`` ("rmse" default, "zero_one_loss", "log_loss") and ``m`` (the
    m-estimate's m used for selection, default 1 as in the SkDB paper's Appendix B).
    """
    _reject_params("skdb", params, {"loss", "m"})
    k_max = 5 if k is None else int(k)
    parents, order = _kdb_parents(codes, cards, n_classes, k_max)
    network = counted(parents, codes, cards, n_classes)
    selection = selective_kdb.select(network, codes, order, k_max, params.get("m", 1.0), params.get("loss", "rmse"))
    return network.restricted(selection.attributes, selection.k), {"selection": selection}


def attribute_order(codes, y, cards, n_classes) -> np.ndarray:
    """Attributes in decreasing ``I(X_i; Y)``, ties by column order."""
    mi = mutual_information_with_class(codes, y, cards, n_classes)
    return np.argsort(-mi, kind="stable")


def averaged_one_dependence(codes, cards, n_classes, k, params):
    """AODE (Webb et al. 2005): every attribute in turn is the super-parent of all the others;
    ``structure_params={"frequency_limit": 1}`` as in the paper."""
    _reject_params("aode", params, {"frequency_limit"})
    limit = params.get("frequency_limit", 1)
    if not (isinstance(limit, int) and limit >= 0):
        raise ConfigError(f"aode frequency_limit must be an integer >= 0, got {limit!r}.")
    network = AveragedOneDependence(cards, n_classes, limit).add(codes)
    return network, {"super_parents": network.super_parents}


def direct(codes, cards, n_classes, k, params):
    """The class given all the attributes (HPB paper's "Direct BN Structure"): one table
    ``P(Y | X_1..X_d)`` and no attribute tables.

    The attributes are the class's context in decreasing ``I(X_i; Y)``, ties by column order, so that
    an estimator that backs an unseen context off to its deepest seen prefix keeps the most
    informative attributes; HPB (``estimator="hpb"``) uses every subset and does not depend on the
    order. ``k`` is ignored.
    """
    _reject_params("direct", params, set())
    attributes, y = _split(codes)
    order = [int(a) for a in attribute_order(attributes, y, cards, n_classes)]
    network = CountedNetwork([[] for _ in cards], cards, n_classes, attributes=[], class_parents=order)
    return network.add(codes), {}


def _split(codes):
    return codes[:, :-1], np.ascontiguousarray(codes[:, -1])


def _reject_params(name: str, params, accepted: set) -> None:
    unknown = set(params) - accepted
    if unknown:
        raise ConfigError(
            f"structure {name!r} does not take structure_params {sorted(unknown)}; "
            f"accepted: {sorted(accepted) or 'none'}."
        )


StructureLearner = Callable[..., tuple[CountedNetwork, dict]]

STRUCTURES: dict[str, StructureLearner] = {
    "nb": naive_bayes,
    "tan": tree_augmented,
    "kdb": k_dependence,
    "skdb": selective_k_dependence,
    "aode": averaged_one_dependence,
    "direct": direct,
}
