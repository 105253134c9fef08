"""Bayesian network classifiers: context trees, structures and parameter estimators."""

from bncbench.bnc.kernel_cache import lock_cache_saves

lock_cache_saves()  # before any kernel of the package compiles
