"""Parameter estimators: each fills the probability tables of a counted network.

An estimator is one class in one module with the method
``tables(network, codes, rng) -> list[list[ndarray]]`` giving, for each context tree of the network
and each of its levels, the ``(n_nodes, n_values)`` table of conditional probabilities. It is registered
here by name; ``conf/model`` files refer to that name.
"""

import inspect

from bncbench.bnc.estimators.dirichlet import DirichletEstimator, MaximumLikelihood
from bncbench.bnc.estimators.hdp import HDPEstimator
from bncbench.bnc.estimators.m_estimate import MEstimate
from bncbench.errors import ConfigError

ESTIMATORS = {"mle": MaximumLikelihood, "laplace": DirichletEstimator, "m_estimate": MEstimate, "hdp": HDPEstimator}


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
