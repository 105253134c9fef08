"""bncbench: a benchmark suite for parameter estimation in Bayesian network classifiers."""

from bncbench.bnc.classifier import BNClassifier

__all__ = ["BNClassifier"]
