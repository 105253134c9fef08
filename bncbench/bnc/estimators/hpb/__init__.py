"""Hierarchical Pattern Bayes (Jambeiro & Wainer 2007): the estimator and its pattern hierarchy."""

from bncbench.bnc.estimators.hpb.estimator import HierarchicalPatternBayes

__all__ = ["HierarchicalPatternBayes"]
