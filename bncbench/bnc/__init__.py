"""Bayesian network classifiers: context trees, structures and parameter estimators."""
