"""Estimators that adjust each attribute's Dirichlet tables by one number per attribute.

AWNB and WANBIA raise every table of attribute ``X_i`` to a weight ``w_i``; MANB mixes its table with
the attribute's class-free table by the posterior probability of the arc ``Y -> X_i``. All three start
from the Dirichlet estimates of ``dirichlet.smoothed``,
``theta_ijk = (N_ijk + alpha) / (N_ij + r_i alpha)`` (bnclassify methods vignette, "Bayesian parameter
estimation"), with ``alpha = 1`` by default: bnclassify fixes ``smooth = 1`` for WANBIA and leaves it
to the user for AWNB and MANB. The class prior keeps its Dirichlet estimate.

Weights act on every level of an attribute's context tree, so a weighted table is used wherever
prediction reads it (the deepest context seen in training), for any structure. A network without
attribute tables (e.g. selective kDB keeping no attribute) has nothing to adjust and keeps its
Dirichlet tables.
"""

import numpy as np
import pandas as pd

from bncbench.bnc.estimators.base import Estimator
from bncbench.bnc.estimators.dirichlet import smoothed
from bncbench.bnc.parameters import check_number
from bncbench.core.errors import ConfigError


class PerAttributeEstimator(Estimator):
    """Dirichlet tables of every tree, then adjusted by one fitted number per attribute.

    A subclass sets ``fitted_name`` (the fitted dict, e.g. ``"feature_weights_"``) and ``value_name``
    (its column in ``diagnostics``), and defines ``fit_values`` and ``adjusted``.

    Parameters
    ----------
    alpha : float, default 1.0
        Dirichlet pseudo-count of the underlying estimates (> 0; >= 0 where ``zero_alpha_allowed``).
    """

    fitted_name: str
    value_name: str
    zero_alpha_allowed = False

    def __init__(self, alpha: float = 1.0):
        self.alpha = check_number("alpha", alpha, low_open=not self.zero_alpha_allowed)

    def check_network(self, network) -> None:
        """Raise ``ConfigError`` when the estimator is not defined on this network."""

    def fit_values(self, network, codes, tables, rng) -> np.ndarray:
        """The number of each attribute of ``network.attributes``, from the Dirichlet ``tables``."""
        raise NotImplementedError

    def adjusted(self, network, tables, values) -> list:
        """The tables adjusted by ``values`` (one per attribute of ``network.attributes``)."""
        raise NotImplementedError

    def tables(self, network, data, rng):
        self.check_network(network)
        tables = [[smoothed(counts, self.alpha) for counts in tree.counts] for tree in network.trees]
        values = np.asarray(self.fit_values(network, data.sample, tables, rng), dtype=float)
        setattr(self, self.fitted_name, {int(a): float(v) for a, v in zip(network.attributes, values)})
        return self.adjusted(network, tables, values)

    def attribute_values(self) -> dict:
        return {self.fitted_name: getattr(self, self.fitted_name)}

    def summary(self) -> dict:
        """Numbers of the fit logged besides the per-attribute table."""
        return {}

    def diagnostics(self, column_names) -> dict:
        """The fitted numbers, for ``BNClassifier.diagnostics``.

        ``column_names`` as in :meth:`Estimator.diagnostics`. Returns a dict:
            ``fitted_name`` without its ``_``: a table of attributes by ``value_name``; and
            ``summary()``.
        """
        fitted = getattr(self, self.fitted_name)
        table = pd.DataFrame(
            {self.value_name: list(fitted.values())},
            index=pd.Index([column_names[a] for a in fitted], name="attribute"),
        ).rename_axis(columns="quantity")
        return {self.fitted_name.rstrip("_"): table, **self.summary()}


def tree_attribute_positions(network) -> np.ndarray:
    """For each attribute tree (trees 1..), the position of its child in ``network.attributes``."""
    position = {a: i for i, a in enumerate(network.attributes)}
    return np.array([position[tree.child] for tree in network.trees[1:]], dtype=np.int64)


class AttributeWeighting(PerAttributeEstimator):
    """Tables raised to per-attribute weights: ``P(y) prod_i P(x_i | y, pa_i) ** w_i``.

    Hall (2007) and Zaidi et al. (2013) use the weighted tables as they are, unnormalised;
    bnclassify renormalises each weighted row, ``theta ** w / sum_k theta_k ** w`` (vignette, AWNB
    section), which changes the class posterior whenever ``0 < w < 1``. ``renormalise=True`` gives
    bnclassify's behaviour.

    Parameters
    ----------
    alpha : float, default 1.0
    renormalise : bool, default False
    """

    fitted_name = "feature_weights_"
    value_name = "weight"

    def __init__(self, alpha: float = 1.0, renormalise: bool = False):
        super().__init__(alpha)
        if not isinstance(renormalise, (bool, np.bool_)):
            raise ConfigError(f"renormalise must be true or false, got {renormalise!r}.")
        self.renormalise = bool(renormalise)

    def adjusted(self, network, tables, values):
        weights = values[tree_attribute_positions(network)]
        out = [tables[0]]
        for tree_tables, weight in zip(tables[1:], weights):
            out.append([weighted(table, weight, self.renormalise) for table in tree_tables])
        return out

    def summary(self) -> dict:
        weights = list(self.feature_weights_.values())
        return {"mean_feature_weight": float(np.mean(weights))} if weights else {}


def weighted(table: np.ndarray, weight: float, renormalise: bool) -> np.ndarray:
    """``table ** weight``, each row rescaled to sum to one if ``renormalise`` (all-zero rows stay)."""
    powered = table**weight
    if not renormalise:
        return powered
    totals = powered.sum(axis=1, keepdims=True)
    return np.divide(powered, totals, out=np.zeros_like(powered), where=totals > 0)
