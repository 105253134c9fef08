"""Model-averaged naive Bayes, MANB (Wei, Visweswaran and Cooper 2011; bnclassify methods vignette).

Exact Bayesian model averaging over the ``2^n`` naive Bayes models given by the subsets of arcs
``Y -> X_i``. With a prior that is a product over arcs (each present with probability
``arc_prior``) and Dirichlet parameter priors, the posterior over structures factorises over the
attributes, and so does the averaged joint ``P(y, x | D)``: the average is naive Bayes again, with
each attribute's table the mixture (vignette, MANB section)

``theta_ijk^MANB = P(Y -> X_i | D) theta_ijk + (1 - P(Y -> X_i | D)) theta_ik``,

``theta_ijk = (N_ijk + alpha) / (N_ij + r_i alpha)`` the estimate with the arc (class level of the
context tree) and ``theta_ik = (N_ik + alpha) / (N + r_i alpha)`` the one without (its root). The arc
posterior compares the two local marginal likelihoods (Dash and Cooper 2002, Eq. 8; Wei et al.'s
online appendix, Eqs. 6-7, is the case ``alpha = 1``)

``log P(D | Y -> X_i) = sum_j [lgamma(r_i alpha) - lgamma(N_ij + r_i alpha)
+ sum_k (lgamma(N_ijk + alpha) - lgamma(alpha))]``,

``log P(D | no arc) = lgamma(r_i alpha) - lgamma(N + r_i alpha) + sum_k (lgamma(N_ik + alpha) -
lgamma(alpha))``,

by Bayes' rule with the prior ``arc_prior``, in log space. The cost is one pass over each attribute's
counts: linear in the number of attributes. Missing values are values of their own here, so the
available-case counts of bnclassify are the ordinary counts.
"""

import numpy as np

from bncbench.bnc.estimators.per_attribute import PerAttributeEstimator
from bncbench.bnc.parameters import check_number
from bncbench.bnc.structures.base import make_structure
from bncbench.core.errors import ConfigError


class ModelAveragedNaiveBayes(PerAttributeEstimator):
    """MANB estimates: every attribute's table averaged over the presence of its class arc.

    Defined for naive Bayes networks only (``structure="nb"``, kDB or SkDB with ``k=0``, a given
    structure without attribute parents: ``Structure.naive_bayes_shaped``): other structures refuse with
    a ``ConfigError``.

    Parameters
    ----------
    alpha : float, default 1.0
        Dirichlet pseudo-count (> 0) of the parameter prior and of the estimates.
    arc_prior : float, default 0.5
        Prior probability of each arc ``Y -> X_i``, in [0, 1]; 1 gives naive Bayes, 0 the class prior.

    Attributes
    ----------
    arc_posteriors_ : dict
        Attribute column -> posterior probability of its arc from the class.

    References
    ----------
    Wei, W., Visweswaran, S. and Cooper, G. F. (2011). The application of naive Bayes model averaging
    to predict Alzheimer's disease from genome-wide data. JAMIA 18(4), 370-375.
    Dash, D. and Cooper, G. F. (2002). Exact model averaging with naive Bayesian classifiers. ICML.
    """

    fitted_name = "arc_posteriors_"
    value_name = "arc_posterior"

    name = "manb"
    structures_taken = (
        "naive Bayes: structure 'nb', 'kdb' or 'skdb' with k=0, or a given structure without attribute parents"
    )

    def __init__(self, alpha: float = 1.0, arc_prior: float = 0.5):
        super().__init__(alpha)
        self.arc_prior = check_number("arc_prior", arc_prior, 0.0, 1.0)

    @staticmethod
    def valid_structure(structure, k) -> bool:
        return make_structure(structure, k).naive_bayes_shaped()

    def check_network(self, network) -> None:
        # the class prior, then one tree per attribute (tree 1 + i is attribute i) conditioned on the class
        depths = [tree.depth for tree in network.trees]
        if len(depths) != 1 + len(network.attributes) or depths[0] != 0 or any(d != 1 for d in depths[1:]):
            raise ConfigError(
                "MANB averages over naive Bayes models (Wei et al. 2011) and is defined for naive Bayes "
                "only: use structure 'nb' (or 'kdb' with k=0); this structure conditions an attribute "
                "on other attributes, or the class on attributes."
            )

    def fit_values(self, network, codes, tables, rng) -> np.ndarray:
        from scipy.special import expit

        log_odds = np.array(
            [_log_marginal(tree.counts[1], self.alpha) - _log_marginal(tree.counts[0], self.alpha)
             for tree in network.trees[1:]]
        )
        with np.errstate(divide="ignore"):  # arc_prior 0 or 1: log odds -inf or +inf
            log_odds += np.log(self.arc_prior) - np.log1p(-self.arc_prior)
        return expit(log_odds)

    def adjusted(self, network, tables, values):
        out = [tables[0]]
        for (without_arc, with_arc), posterior in zip(tables[1:], values):
            out.append([without_arc, posterior * with_arc + (1.0 - posterior) * without_arc])
        return out

    def summary(self) -> dict:
        return {"manb_expected_arcs": float(sum(self.arc_posteriors_.values()))}


def _log_marginal(counts: np.ndarray, alpha: float) -> float:
    """``log P(D)`` of the rows of ``counts``, each an independent Dirichlet(alpha)-multinomial."""
    from scipy.special import gammaln

    r = counts.shape[1]
    return float(
        np.sum(gammaln(r * alpha) - gammaln(counts.sum(axis=1) + r * alpha))
        + np.sum(gammaln(counts + alpha) - gammaln(alpha))
    )
