"""WANBIA: a duplicated attribute by hand, the gradient against finite differences, never worse than NB."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import approx_fprime

from bncbench import BNClassifier
from bncbench.bnc.estimators.wanbia import (
    ConditionalLogLikelihood,
    WeightingToAlleviateNaiveBayes,
)
from bncbench.core.errors import ConfigError


def _random_data(seed, n=300, d=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = pd.DataFrame({f"x{i}": np.where(rng.random(n) < 0.2 + 0.15 * i, y, rng.integers(0, 3 + i % 2, n))
                      for i in range(d)})
    X["copy"] = X["x3"]  # a dependence that naive Bayes double counts
    return X, y


def _fit(X, y, structure="nb", k=2, **params):
    return BNClassifier(structure=structure, k=k, estimator="wanbia", estimator_params=params).fit(X, y)


def _training_cll(clf, X, y):
    proba = clf.predict_proba(X)
    return float(np.sum(np.log(proba[np.arange(len(y)), np.searchsorted(clf.classes_, y)])))


def test_a_duplicated_attribute_gets_half_weights_by_hand():
    # One attribute A, counts (a0: 30 +, 10 -; a1: 10 +, 30 -), and a copy of it. With alpha -> 0 the
    # model with weights (w, w') predicts sigmoid(log prior odds + (w + w') log-ratio(a)); w + w' = 1 is
    # naive Bayes on A alone, which reproduces the empirical P(y | a) and so maximises the CLL. From
    # (1, 1) the symmetric gradient keeps w = w'.
    a = np.repeat(["a0", "a0", "a1", "a1"], [30, 10, 10, 30])
    y = np.repeat(["+", "-", "+", "-"], [30, 10, 10, 30])
    X = pd.DataFrame({"A": a, "A2": a})
    clf = _fit(X, y, alpha=1e-9)
    assert clf.feature_weights_ == pytest.approx({"A": 0.5, "A2": 0.5}, abs=1e-4)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 0], np.where(a == "a0", 0.75, 0.25), atol=1e-5)
    assert _training_cll(clf, X, y) == pytest.approx(80 * np.log(0.75) * 0.75 + 80 * np.log(0.25) * 0.25, abs=1e-4)
    assert clf.diagnostics()["wanbia_training_log_loss"] == pytest.approx(-_training_cll(clf, X, y) / 80)


@pytest.mark.parametrize("structure,renormalise", [("nb", False), ("nb", True), ("kdb", False), ("kdb", True)])
def test_gradient_matches_finite_differences(structure, renormalise):
    X, y = _random_data(0)
    clf = BNClassifier(structure=structure, k=2, estimator="laplace").fit(X, y)
    codes = np.column_stack([clf.encoder_.transform(X), y])
    likelihood = ConditionalLogLikelihood(clf.network_, clf.tables_, codes, renormalise)
    for weights in np.random.default_rng(1).uniform(0.05, 0.95, (3, X.shape[1])):
        _, gradient = likelihood.negative_with_gradient(weights)
        numeric = approx_fprime(weights, lambda w: -likelihood(w), 1e-6)
        np.testing.assert_allclose(gradient, numeric, rtol=1e-4, atol=1e-3)
    # weights 1 without renormalising are naive Bayes itself
    if not renormalise:
        assert likelihood(np.ones(X.shape[1])) == pytest.approx(_training_cll(clf, X, y))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("structure", ["nb", "tan"])
def test_never_a_worse_training_cll_than_unweighted(seed, structure):
    X, y = _random_data(seed)
    unweighted = BNClassifier(structure=structure, estimator="laplace").fit(X, y)
    clf = _fit(X, y, structure=structure)
    assert clf.parents_ == unweighted.parents_
    assert _training_cll(clf, X, y) >= _training_cll(unweighted, X, y) - 1e-9
    assert all(0 <= w <= 1 for w in clf.feature_weights_.values())
    assert clf.estimator_.optimisation_.success
    if structure == "nb":
        assert clf.feature_weights_["copy"] + clf.feature_weights_["x3"] < 2  # the double count is undone


def test_renormalised_option_changes_the_tables():
    X, y = _random_data(0)
    clf = _fit(X, y, renormalise=True)
    for tables in clf.tables_[1:]:
        np.testing.assert_allclose(tables[1].sum(axis=1), 1.0)
    assert clf.feature_weights_ != _fit(X, y).feature_weights_


def test_selected_attributes_keep_their_names():
    X, y = _random_data(3)
    clf = _fit(X, y, structure="skdb", k=2)
    assert list(clf.feature_weights_) == list(clf.parents_)


def test_refuses_aode_and_bad_parameters():
    X, y = _random_data(0, n=40)
    with pytest.raises(ConfigError, match="AODE averages several"):
        _fit(X, y, structure="aode")
    assert not WeightingToAlleviateNaiveBayes.valid_structure("aode", 2)
    assert WeightingToAlleviateNaiveBayes.valid_structure("skdb", 2)
    with pytest.raises(ConfigError, match="alpha must be a finite number > 0"):
        WeightingToAlleviateNaiveBayes(alpha=0)
    with pytest.raises(ConfigError, match="max_iterations"):
        WeightingToAlleviateNaiveBayes(max_iterations=0)
