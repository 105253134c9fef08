"""HDP estimates (Petitjean et al.): the estimator, its Gibbs sampler kernels and the Stirling tables."""

from bncbench.bnc.estimators.hdp.estimator import HDPEstimator

__all__ = ["HDPEstimator"]
