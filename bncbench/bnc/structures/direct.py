"""The HPB paper's Direct BN Structure: the class given all the attributes."""

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.structures.base import Structure, counted, statistics


class DirectStructure(Structure):
    """The class given all the attributes: one table ``P(Y | X_1..X_d)`` and no attribute tables.

    The attributes are the class's context in decreasing ``I(X_i; Y)``, ties by column order, so that an
    estimator that backs an unseen context off to its deepest seen prefix keeps the most informative
    attributes; HPB (``estimator="hpb"``) uses every subset and does not depend on the order.

    References
    ----------
    Jambeiro Filho, J. and Wainer, J. (2007). Using a hierarchical Bayesian model to handle high
    cardinality attributes with relevant interactions in a classification problem. IJCAI-07, Sect. 1
    (the HPB paper's "Direct BN Structure").
    """

    name = "direct"
    presets = {"direct": {}}

    def learn(self, data, cards, n_classes, memory_limit=None):
        order = [int(a) for a in statistics(data, cards, n_classes, pairs=False).attribute_order()]
        network = CountedNetwork(
            [[] for _ in cards], cards, n_classes, attributes=[], class_parents=order, memory_limit=memory_limit
        )
        return counted(network, data), {}
