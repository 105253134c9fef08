"""Structure learners: which attributes each attribute depends on, besides the class.

A learner takes the training data (``training_data``: passes over chunks of the integer code matrix,
class in the last column), the attributes' cardinalities, the number of classes, ``k`` and its
``structure_params``, and returns the counted network of the structure
(``CountedNetwork``: for every attribute in the model the ordered list of its attribute parents, the
class being an implicit parent of each, and the counts) with a dict of what else it learned. The parent
order is the order of the context tree's levels below the class (HDP paper Sect. 3.3). A learner also
takes a ``memory.MemoryLimit`` (or None), which its pairwise counts and the network's trees are checked
against before they are allocated.
"""

from collections.abc import Callable

import numpy as np
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

from bncbench.bnc.information import StructureStatistics
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.structures import selective_kdb
from bncbench.bnc.structures.aode import AveragedOneDependence
from bncbench.core.errors import ConfigError


def counted(network, data):
    """``network`` with the counts of one pass over the training data."""
    for chunk in data.chunks():
        network.add(chunk)
    return network


def statistics(data, cards, n_classes, pairs=True, memory_limit=None) -> StructureStatistics:
    """The mutual-information counts of one pass over the training data."""
    found = StructureStatistics(cards, n_classes, pairs, memory_limit)
    for chunk in data.chunks():
        found.add(chunk)
    return found


def naive_bayes(data, cards, n_classes, k, params, memory_limit=None):
    """Naive Bayes: no attribute parents."""
    _reject_params("nb", params, set())
    return counted(CountedNetwork([[] for _ in cards], cards, n_classes, memory_limit=memory_limit), data), {}


def tree_augmented(data, cards, n_classes, k, params, memory_limit=None):
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
    found = statistics(data, cards, n_classes, memory_limit=memory_limit)
    d, n = len(cards), found.n_rows
    cmi = found.conditional_mutual_information()
    added = n_classes * np.outer(cards - 1, cards - 1)
    gain = n * cmi - TAN_PENALTIES[score](n) * added
    keep = gain > 0 if score != "likelihood" else np.ones_like(gain, dtype=bool)
    np.fill_diagonal(keep, False)
    # scipy treats a zero weight as a missing edge; a constant shift keeps every kept edge present and
    # does not change which spanning forest is minimal, since all have the same number of edges.
    weights = np.where(keep, gain.max() + 1.0 - gain, 0.0) if d > 1 else np.zeros((d, d))
    forest = minimum_spanning_tree(weights)
    mi = found.mutual_information_with_class()
    _, component = connected_components(forest, directed=False)
    parents: list[list[int]] = [[] for _ in range(d)]
    for label in np.unique(component):
        members = np.flatnonzero(component == label)
        root = int(members[np.argmax(mi[members])])
        _, predecessors = breadth_first_order(forest, root, directed=False, return_predecessors=True)
        for i in members:
            if i != root:
                parents[i] = [int(predecessors[i])]
    return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}


TAN_PENALTIES = {"likelihood": lambda n: 0.0, "aic": lambda n: 1.0, "bic": lambda n: np.log(n) / 2.0}


def k_dependence(data, cards, n_classes, k, params, memory_limit=None):
    """kDB-k (Sahami 1996; SkDB paper Algorithm 2).

    Attributes are taken in decreasing ``I(X_i; Y)``; each takes as parents the ``min(i, k)`` earlier
    attributes with the highest ``I(X_i; X_j | Y)``, listed in decreasing order of it. Ties go to the
    earlier attribute in the order.
    """
    _reject_params("kdb", params, set())
    parents, _ = _kdb_parents(data, cards, n_classes, 1 if k is None else k, memory_limit)
    return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}


def _kdb_parents(data, cards, n_classes, k, memory_limit=None):
    k = int(k)
    if k < 0:
        raise ConfigError(f"kDB needs k >= 0, got k={k}.")
    found = statistics(data, cards, n_classes, pairs=k > 0, memory_limit=memory_limit)
    order = found.attribute_order()
    cmi = found.conditional_mutual_information() if k > 0 else None
    parents: list[list[int]] = [[] for _ in range(len(cards))]
    for position, attribute in enumerate(order):
        earlier = order[:position]
        if k > 0 and position > 0:
            ranked = earlier[np.argsort(-cmi[attribute, earlier], kind="stable")]
            parents[attribute] = [int(p) for p in ranked[:k]]
    return parents, order


def selective_k_dependence(data, cards, n_classes, k, params, memory_limit=None):
    """Selective kDB (SkDB paper Algorithm 4): kDB-``k`` (default 5), then the top-l attributes and the
    k' <= k with the lowest leave-one-out loss (``selective_kdb``).

    ``structure_params``: ``loss`` ("rmse" default, "zero_one_loss", "log_loss") and ``m`` (the
    m-estimate's m used for selection, default 1 as in the SkDB paper's Appendix B).
    """
    _reject_params("skdb", params, {"loss", "m"})
    k_max = 5 if k is None else int(k)
    parents, order = _kdb_parents(data, cards, n_classes, k_max, memory_limit)
    network = counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data)
    selection = selective_kdb.select(network, data, order, k_max, params.get("m", 1.0), params.get("loss", "rmse"))
    return network.restricted(selection.attributes, selection.k), {"selection": selection}


def averaged_one_dependence(data, cards, n_classes, k, params, memory_limit=None):
    """AODE (Webb et al. 2005): every attribute in turn is the super-parent of all the others;
    ``structure_params={"frequency_limit": 1}`` as in the paper."""
    _reject_params("aode", params, {"frequency_limit"})
    limit = params.get("frequency_limit", 1)
    if not (isinstance(limit, int) and limit >= 0):
        raise ConfigError(f"aode frequency_limit must be an integer >= 0, got {limit!r}.")
    network = counted(AveragedOneDependence(cards, n_classes, limit, memory_limit), data)
    return network, {"super_parents": network.super_parents}


def direct(data, cards, n_classes, k, params, memory_limit=None):
    """The class given all the attributes (HPB paper's "Direct BN Structure"): one table
    ``P(Y | X_1..X_d)`` and no attribute tables.

    The attributes are the class's context in decreasing ``I(X_i; Y)``, ties by column order, so that
    an estimator that backs an unseen context off to its deepest seen prefix keeps the most
    informative attributes; HPB (``estimator="hpb"``) uses every subset and does not depend on the
    order. ``k`` is ignored.
    """
    _reject_params("direct", params, set())
    order = [int(a) for a in statistics(data, cards, n_classes, pairs=False).attribute_order()]
    network = CountedNetwork(
        [[] for _ in cards], cards, n_classes, attributes=[], class_parents=order, memory_limit=memory_limit
    )
    return counted(network, data), {}


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

#: The structures whose learner reads ``k``; the others ignore it.
USES_K = frozenset({"kdb", "skdb"})


def structure_uses_k(name: str) -> bool:
    """Whether structure ``name`` depends on ``k`` (a dict structure does not), so that a config hash can
    leave ``k`` out of the others."""
    if isinstance(name, str) and name not in STRUCTURES:
        raise ConfigError(f"unknown structure {name!r}; valid structures: {', '.join(sorted(STRUCTURES))}.")
    return name in USES_K
