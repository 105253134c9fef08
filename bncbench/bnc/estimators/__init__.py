"""Parameter estimators: each fills the probability tables of a counted network.

An estimator is one class in one module (with its kernels beside it) subclassing the contract
``base.Estimator``; setting its ``name`` registers it in ``ESTIMATORS``, and ``conf/estimator/<name>.yaml``
refers to that name. Importing this package imports every built-in estimator, so all are registered.
"""

from bncbench.bnc.estimators.base import (
    ESTIMATORS,
    Estimator,
    check_pairing,
    estimator_class,
    estimator_defaults,
    make_estimator,
    registered,
)
from bncbench.bnc.estimators.awnb import AttributeWeightedNaiveBayes
from bncbench.bnc.estimators.dirichlet import DirichletEstimator, MaximumLikelihood
from bncbench.bnc.estimators.hdp import HDPEstimator
from bncbench.bnc.estimators.hpb.estimator import HierarchicalPatternBayes
from bncbench.bnc.estimators.m_estimate import MEstimate
from bncbench.bnc.estimators.manb import ModelAveragedNaiveBayes
from bncbench.bnc.estimators.wanbia import WeightingToAlleviateNaiveBayes

__all__ = [
    "ESTIMATORS", "Estimator", "check_pairing", "estimator_class", "estimator_defaults", "make_estimator",
    "registered", "AttributeWeightedNaiveBayes", "DirichletEstimator", "MaximumLikelihood", "HDPEstimator",
    "HierarchicalPatternBayes", "MEstimate", "ModelAveragedNaiveBayes", "WeightingToAlleviateNaiveBayes",
]
