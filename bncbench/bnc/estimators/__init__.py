"""Parameter estimators: each fills the probability tables of a counted network.

An estimator is one class in one module with the method
``tables(network, codes, rng) -> list[list[ndarray]]`` giving, for each context tree of the network
and each of its levels, the ``(n_nodes, n_values)`` table of conditional probabilities. It is registered
here by name; ``conf/model`` files refer to that name. An estimator whose predictions are not a
reading of those tables at each row's deepest seen context (HPB, which answers an unseen context from
its sub-patterns) also has ``predictor(network, tables)``, returning what ``BNClassifier`` predicts with
in place of ``PackedNetwork(network, tables)``: an object with ``predict_proba(codes)``. An estimator
defined on some structures only (MANB: naive Bayes) refuses the others in ``tables`` with a
``ConfigError`` and says which it takes by a static ``valid_structure(structure, k) -> bool``.
"""

import inspect

from bncbench.bnc.estimators.awnb import AttributeWeightedNaiveBayes
from bncbench.bnc.estimators.dirichlet import DirichletEstimator, MaximumLikelihood
from bncbench.bnc.estimators.hdp import HDPEstimator
from bncbench.bnc.estimators.hpb import HierarchicalPatternBayes
from bncbench.bnc.estimators.m_estimate import MEstimate
from bncbench.bnc.estimators.manb import ModelAveragedNaiveBayes
from bncbench.bnc.estimators.wanbia import WeightingToAlleviateNaiveBayes
from bncbench.errors import ConfigError

ESTIMATORS = {
    "mle": MaximumLikelihood,
    "laplace": DirichletEstimator,
    "m_estimate": MEstimate,
    "hdp": HDPEstimator,
    "hpb": HierarchicalPatternBayes,
    "awnb": AttributeWeightedNaiveBayes,
    "manb": ModelAveragedNaiveBayes,
    "wanbia": WeightingToAlleviateNaiveBayes,
}


def make_estimator(name: str, params: dict):
    """Instantiate the estimator registered as ``name`` with ``params``, or say what is valid."""
    if name not in ESTIMATORS:
        raise ConfigError(f"unknown estimator {name!r}; valid estimators: {', '.join(sorted(ESTIMATORS))}.")
    cls = ESTIMATORS[name]
    accepted = [p for p in inspect.signature(cls).parameters]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(
            f"estimator {name!r} does not take {unknown}; its estimator_params are: {accepted or 'none'}."
        )
    return cls(**params)
