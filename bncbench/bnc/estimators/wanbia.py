"""Weighting to alleviate the naive Bayes independence assumption, WANBIA (Zaidi et al. 2013).

One weight ``w_i`` in [0, 1] per attribute, exponent of its tables (``per_attribute.AttributeWeighting``):

``P(y | x; w) = P(y) prod_i theta_i(x, y) ** w_i / sum_y' P(y') prod_i theta_i(x, y') ** w_i``,

``theta_i(x, y)`` the Dirichlet estimate of ``P(x_i | y, pa_i)`` at the row's deepest context seen in
training. The weights maximise the conditional log-likelihood of the training rows,
``CLL(w) = sum_n log P(y_n | x_n; w)``, by L-BFGS-B (scipy) from ``w = 1`` (naive Bayes) with the
analytic gradient (bnclassify methods vignette, WANBIA section)

``dCLL/dw_i = sum_n [log theta_i(x_n, y_n) - sum_y P(y | x_n; w) log theta_i(x_n, y)]``.

A value never seen in training carries no evidence (``log theta = 0``), as a missing value in the
vignette. L-BFGS-B only accepts steps that decrease the objective, so the training CLL is never below
naive Bayes's.

With ``renormalise=True`` (bnclassify's tables) each weighted row is rescaled,
``theta~ = theta ** w / Z(w)``, ``Z(w) = sum_k theta_k ** w``, and the gradient gains the term
``-d log Z / dw = -sum_k theta~_k log theta_k`` at the row's context. bnclassify optimises this
objective with the gradient of the unnormalised one; here the gradient is that of the objective.

The original is defined for naive Bayes; the same objective and gradient hold for any network that is
one product of tables (TAN, kDB, SkDB). AODE, an average of such products, is refused.
"""

import numpy as np

from bncbench.bnc.estimators.per_attribute import AttributeWeighting
from bncbench.bnc.inference import PackedNetwork
from bncbench.bnc.parameters import check_integer
from bncbench.bnc.structures.base import make_structure
from bncbench.core.errors import ConfigError

#: Bytes an entry (row, class, table) of the objective's arrays takes at their peak: each looked-up cell, node and
#: log value kept (int64, float64), and during an evaluation the slope and, renormalised, log Z and its expectation.
_BYTES_PER_ENTRY = 48


class WeightingToAlleviateNaiveBayes(AttributeWeighting):
    """WANBIA weights: the exponents of the Dirichlet tables that maximise the training CLL.

    Parameters
    ----------
    alpha : float, default 1.0
        Dirichlet pseudo-count (> 0: the objective needs every log-probability finite).
    renormalise : bool, default False
        Rescale each weighted table row to sum to one, as bnclassify (see the module docstring).
    max_iterations : int, default 15000
        Iteration limit of L-BFGS-B (scipy's default).

    Attributes
    ----------
    feature_weights_ : dict
        Attribute column -> weight in [0, 1].
    optimisation_ : scipy.optimize.OptimizeResult or None
        The optimiser's result: ``fun`` is the negative training CLL, ``nit`` the iterations (None
        when the network has no attribute to weight).
    training_log_loss_ : float
        ``-CLL(w) / N`` at the fitted weights (when there are weights to fit).

    References
    ----------
    Zaidi, N. A., Cerquides, J., Carman, M. J. and Webb, G. I. (2013). Alleviating naive Bayes
    attribute independence assumption by attribute weighting. JMLR 14, 1947-1988.
    """

    name = "wanbia"
    structures_taken = "networks that are one product of tables, one per attribute (every structure but 'aode')"

    def __init__(self, alpha: float = 1.0, renormalise: bool = False, max_iterations: int = 15000):
        super().__init__(alpha, renormalise)
        self.max_iterations = check_integer("max_iterations", max_iterations)

    @staticmethod
    def valid_structure(structure, k) -> bool:
        return make_structure(structure, k).product_of_attribute_tables

    def check_network(self, network) -> None:
        if np.any(network.tree_groups != 0) or len(network.trees) != 1 + len(network.attributes):
            raise ConfigError(
                "WANBIA weights the tables of a network that is one product of tables, one per "
                "attribute (nb, tan, kdb, skdb); AODE averages several and is not supported."
            )

    def fit_values(self, network, codes, tables, rng) -> np.ndarray:
        from scipy.optimize import minimize

        n_weights = len(network.attributes)
        self.optimisation_ = None
        if n_weights == 0:
            return np.empty(0)
        likelihood = ConditionalLogLikelihood(network, tables, codes, self.renormalise)
        self.optimisation_ = minimize(
            likelihood.negative_with_gradient,
            np.ones(n_weights),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * n_weights,
            options={"maxiter": self.max_iterations},
        )
        self.training_log_loss_ = float(self.optimisation_.fun) / len(codes)
        return self.optimisation_.x

    def summary(self) -> dict:
        if self.optimisation_ is None:
            return super().summary()
        return {
            **super().summary(),
            "wanbia_iterations": int(self.optimisation_.nit),
            "wanbia_converged": int(self.optimisation_.success),
            "wanbia_training_log_loss": self.training_log_loss_,
        }


class ConditionalLogLikelihood:
    """``CLL(w)`` of the training rows for a network whose attribute trees are raised to weights ``w``.

    Each tree's table is looked up once, at each row's deepest seen context under each class, by the
    prediction kernel (``inference``); evaluating a weight vector is then array arithmetic.

    Parameters
    ----------
    network : CountedNetwork
        One tree per attribute, all in one product (``tree_groups`` all 0).
    tables : list of list of ndarray
        The unweighted tables of every tree and level.
    codes : ndarray
        The training code matrix, class in the last column.
    renormalise : bool
        Whether weighted rows are rescaled to sum to one.
    """

    def __init__(self, network, tables, codes, renormalise):
        if network.memory_limit is not None:
            network.memory_limit.check_row_class_arrays(
                "WANBIA's weights", len(codes), network.n_classes, len(network.trees), _BYTES_PER_ENTRY,
                "use an estimator that scores no training row (m_estimate with a fixed m, hdp)")
        packed = PackedNetwork(network, tables)
        cells, nodes = packed.cells(codes)
        seen = cells >= 0
        cells = np.where(seen, cells, 0)
        log_values = np.where(seen, packed.log_tables[cells], 0.0)
        self.log_prior = log_values[:, :, 0]
        self.log_theta = log_values[:, :, 1:]  # (n, classes, attributes)
        self.y = codes[:, -1]
        self.renormalise = renormalise
        if renormalise:
            self.attribute_tables = [[np.log(t) for t in tree_tables] for tree_tables in tables[1:]]
            self.seen = seen[:, :, 1:]
            # each looked-up entry's node, numbered over the nodes of the attribute trees
            self.nodes = (np.where(seen, nodes, 0) - sum(table.shape[0] for table in tables[0]))[:, :, 1:]

    def _normalisers(self, weights):
        """Per looked-up (row, class, attribute): ``log Z(w)`` and ``sum_k theta~_k log theta_k``."""
        from scipy.special import logsumexp

        log_z, expected = [], []
        for log_tables, weight in zip(self.attribute_tables, weights):
            for log_table in log_tables:
                scaled = weight * log_table
                level_log_z = logsumexp(scaled, axis=1)
                log_z.append(level_log_z)
                expected.append(np.sum(np.exp(scaled - level_log_z[:, None]) * log_table, axis=1))
        log_z, expected = np.concatenate(log_z), np.concatenate(expected)
        return np.where(self.seen, log_z[self.nodes], 0.0), np.where(self.seen, expected[self.nodes], 0.0)

    def negative_with_gradient(self, weights: np.ndarray) -> tuple[float, np.ndarray]:
        """``-CLL(w)`` and its gradient."""
        from scipy.special import logsumexp

        log_joint = self.log_prior + self.log_theta @ weights
        slope = self.log_theta  # d log_joint / d w
        if self.renormalise:
            log_z, expected = self._normalisers(weights)
            log_joint = log_joint - log_z.sum(axis=2)
            slope = self.log_theta - expected
        log_posterior = log_joint - logsumexp(log_joint, axis=1, keepdims=True)
        rows = np.arange(len(self.y))
        cll = log_posterior[rows, self.y].sum()
        gradient = slope[rows, self.y].sum(axis=0) - np.einsum("nc,nca->a", np.exp(log_posterior), slope)
        return -float(cll), -gradient

    def __call__(self, weights: np.ndarray) -> float:
        """``CLL(w)``."""
        return -self.negative_with_gradient(weights)[0]

