"""Bayesian network classifiers: context trees, structures and parameter estimators."""

from bncbench.core.kernel_cache import key_on_package_source, lock_cache_saves

key_on_package_source()  # before any kernel of the package is defined
lock_cache_saves()
