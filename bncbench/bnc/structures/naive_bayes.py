"""Naive Bayes: the class is the only parent of every attribute."""

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.structures.base import Structure, counted


class NaiveBayesStructure(Structure):
    """Naive Bayes: no attribute parents, ``P(y, x) = P(y) prod_i P(x_i | y)``.

    References
    ----------
    Martínez, A. M., Webb, G. I., Chen, S. and Zaidi, N. A. (2016). Scalable learning of Bayesian network
    classifiers. JMLR 17(44), 1-35 (the SkDB paper), Sect. 1.
    """

    name = "nb"
    presets = {"nb": {}}
    handles_missing = True  # available-case counts and informations

    def learn(self, data, cards, n_classes, memory_limit=None):
        return counted(CountedNetwork([[] for _ in cards], cards, n_classes, memory_limit=memory_limit), data), {}

    def naive_bayes_shaped(self) -> bool:
        return True
