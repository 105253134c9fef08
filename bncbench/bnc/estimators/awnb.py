"""Attribute-weighted naive Bayes, AWNB (Hall 2007; bnclassify methods vignette, AWNB section).

Each attribute's tables are raised to a weight (``per_attribute.AttributeWeighting``),

``w_i = (1 / M) sum_t 1 / sqrt(d_ti)``,

``d_ti`` the minimum depth (root = 1) at which attribute ``i`` is tested in an unpruned decision tree
grown on the ``t``-th of ``M`` bootstrap samples (drawn with replacement, ``subsample * N`` rows, as
bnclassify), the term being 0 when the tree does not test the attribute. An attribute at the root
of every tree gets weight 1; one that no tree tests gets 0 and drops out of the model.

The trees are scikit-learn's CART grown to purity with the information-gain criterion (as
bnclassify's rpart trees, ``split = "information"``, ``cp = 0``, ``minsplit = 2``), on the attributes
one-hot encoded: a split tests one value of an attribute against the others, so the arbitrary order
of the codes plays no part. Hall used C4.5's multiway splits, which test all values of an attribute at
once. Binary trees are deeper, but on the 63 datasets of up to 13000 rows of the HDP paper's list
(naive Bayes, 5x2 CV, MDL discretisation) weights from one-hot CART against weights from C4.5-style
multiway trees (gain ratio among the attributes of at least average gain, two branches of at least
two rows) gave W-D-L 35-3-25 on 0-1 loss, 37-3-23 on RMSE and 38-3-22 on log-loss (sign test
p = 0.25, 0.09, 0.05): the multiway trees do not help. CART on the ordinal codes instead of one-hot
lost on log-loss (20-4-39, p = 0.02).
"""

import numpy as np

from bncbench.bnc.estimators.per_attribute import AttributeWeighting
from bncbench.bnc.parameters import check_integer, check_number


class AttributeWeightedNaiveBayes(AttributeWeighting):
    """AWNB weights from bootstrapped unpruned decision trees, as exponents of the Dirichlet tables.

    Parameters
    ----------
    alpha : float, default 1.0
        Dirichlet pseudo-count of the underlying estimates (>= 0).
    n_trees : int, default 10
        Number of bootstrap samples and trees, ``M``.
    subsample : float, default 0.5
        Size of each bootstrap sample as a fraction of the training rows, in (0, 1] (at least one row).
    renormalise : bool, default False
        Rescale each weighted table row to sum to one, as bnclassify (see ``AttributeWeighting``).

    Attributes
    ----------
    feature_weights_ : dict
        Attribute column -> weight ``w_i`` in [0, 1].
    test_depths_ : ndarray
        ``(n_trees, n_attributes)``: ``d_ti``, inf where tree ``t`` does not test the attribute.

    References
    ----------
    Hall, M. (2007). A decision tree-based attribute weighting filter for naive Bayes.
    Knowledge-Based Systems 20(2), 120-126.
    """

    zero_alpha_allowed = True

    name = "awnb"

    def __init__(self, alpha: float = 1.0, n_trees: int = 10, subsample: float = 0.5, renormalise: bool = False):
        super().__init__(alpha, renormalise)
        self.n_trees = check_integer("n_trees", n_trees)
        self.subsample = check_number("subsample", subsample, 0.0, 1.0, low_open=True)

    def fit_values(self, network, codes, tables, rng) -> np.ndarray:
        from sklearn.tree import DecisionTreeClassifier  # here: the command line imports every estimator

        attributes = np.asarray(network.attributes, dtype=np.int64)
        self.test_depths_ = np.empty((self.n_trees, len(attributes)))
        if len(attributes) == 0:
            return np.empty(0)
        features, feature_attribute = _one_hot(codes[:, attributes], network.cards[attributes])
        y = codes[:, -1]
        size = max(1, int(len(y) * self.subsample))
        for t in range(self.n_trees):
            rows = rng.integers(len(y), size=size)
            tree = DecisionTreeClassifier(criterion="entropy", random_state=int(rng.integers(2**31 - 1)))
            tree.fit(features[rows], y[rows])
            self.test_depths_[t] = minimum_test_depths(tree.tree_, feature_attribute, len(attributes))
        return np.mean(1.0 / np.sqrt(self.test_depths_), axis=0)


def minimum_test_depths(tree, feature_attribute: np.ndarray, n_attributes: int) -> np.ndarray:
    """Depth (root = 1) of the shallowest node of a fitted ``sklearn.tree`` testing each attribute.

    ``feature_attribute`` maps each feature column to its attribute; untested attributes get inf.
    """
    internal = tree.feature >= 0
    depths = np.full(n_attributes, np.inf)
    np.minimum.at(depths, feature_attribute[tree.feature[internal]], tree.compute_node_depths()[internal])
    return depths


def _one_hot(codes: np.ndarray, cards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indicator columns of every value of every attribute, and the attribute of each column."""
    feature_attribute = np.repeat(np.arange(len(cards)), cards)
    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
    features = np.zeros((codes.shape[0], int(cards.sum())), dtype=np.float32)
    rows = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
    features[rows, (codes + offsets).ravel()] = 1.0
    return features, feature_attribute
