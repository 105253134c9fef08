"""k-dependence Bayesian classifiers (Sahami 1996; SkDB paper Algorithm 2)."""

import numpy as np

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.parameters import check_choice, check_integer
from bncbench.bnc.structures.base import Structure, counted, statistics


#: How ``KDependenceStructure`` lists an attribute's parents, which is the order of the levels of its context
#: tree (HDP estimates, m-estimates' back-off): by decreasing ``I(X_i; X_j | Y)``, or in the attributes' order.
PARENT_ORDERS = ("cmi", "attributes")


class KDependenceStructure(Structure):
    """kDB-k: attributes are taken in decreasing ``I(X_i; Y)``; each takes as parents the ``min(i, k)``
    earlier attributes with the highest ``I(X_i; X_j | Y)``, listed in decreasing order of it (the HDP
    paper's Sect. 3.3). Ties go to the earlier attribute in the order.

    Parameters
    ----------
    k : int, default 1
        Maximum number of attribute parents of each attribute; 0 is naive Bayes.
    parent_order : {"cmi", "attributes"}, default "cmi"
        The order in which the chosen parents are listed: by decreasing ``I(X_i; X_j | Y)``, or by decreasing
        ``I(X_j; Y)`` (the attributes' order). The same parents either way; only a context tree's levels change.

    References
    ----------
    Sahami, M. (1996). Learning limited dependence Bayesian classifiers. KDD-96, 335-338.
    Martínez, A. M., Webb, G. I., Chen, S. and Zaidi, N. A. (2016). Scalable learning of Bayesian network
    classifiers. JMLR 17(44), 1-35 (the SkDB paper), Algorithm 2.
    """

    name = "kdb"
    presets = {f"kdb{k}": {"k": k} for k in range(1, 6)}
    handles_missing = True  # available-case counts and informations

    def __init__(self, k: int = 1, parent_order: str = "cmi"):
        self.k = check_integer("k", k, minimum=0)
        self.parent_order = check_choice("parent_order", parent_order, PARENT_ORDERS)

    def learn(self, data, cards, n_classes, memory_limit=None):
        parents, _ = self.parents_and_order(data, cards, n_classes, memory_limit)
        return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}

    def parents_and_order(self, data, cards, n_classes, memory_limit=None) -> tuple[list[list[int]], np.ndarray]:
        """The parents of every attribute (one pass over ``data``, as ``learn``'s arguments), and the
        attributes in decreasing ``I(X_i; Y)``."""
        found = statistics(data, cards, n_classes, pairs=self.k > 0, memory_limit=memory_limit)
        order = found.attribute_order()
        cmi = found.conditional_mutual_information() if self.k > 0 else None
        parents: list[list[int]] = [[] for _ in range(len(cards))]
        for position, attribute in enumerate(order):
            earlier = order[:position]
            if self.k > 0 and position > 0:
                ranked = earlier[np.argsort(-cmi[attribute, earlier], kind="stable")]
                chosen = ranked[: self.k]
                if self.parent_order == "attributes":
                    chosen = earlier[np.isin(earlier, chosen)]
                parents[attribute] = [int(p) for p in chosen]
        return parents, order

    def naive_bayes_shaped(self) -> bool:
        return self.k == 0
