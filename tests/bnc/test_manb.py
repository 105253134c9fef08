"""MANB: arc posteriors and averaged tables by hand, exact averaging over all 2^n naive Bayes models."""

import itertools
from math import lgamma, log

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.manb import ModelAveragedNaiveBayes
from bncbench.core.errors import ConfigError

# A, B, class. A: + has a0 a0 a0 a1, - has a1 a1. B: + has b0 b0 b1 b1, - has b1 b0.
TINY = pd.DataFrame(
    [["a0", "b0", "+"], ["a0", "b0", "+"], ["a0", "b1", "+"], ["a1", "b1", "+"], ["a1", "b1", "-"], ["a1", "b0", "-"]],
    columns=["A", "B", "y"],
)


def _fit(data, structure="nb", k=None, **params):
    attributes = [c for c in data.columns if c != "y"]
    return BNClassifier(structure=structure, k=k, estimator="manb", estimator_params=params).fit(
        data[attributes], data["y"]
    )


def test_arc_posteriors_and_tables_by_hand():
    clf = _fit(TINY)
    # Beta-binomial sequence probabilities (alpha = 1): with the arc, A's data has probability
    # (3! 1! / 5!) (0! 2! / 3!) = 1/20 * 1/3 = 1/60; without, 3! 3! / 7! = 1/140. Posterior
    # (1/60) / (1/60 + 1/140) = 0.7. For B: (2! 2! / 5!) (1! 1! / 3!) = 1/180 against 1/140: 0.4375.
    assert clf.arc_posteriors_ == pytest.approx({"A": 0.7, "B": 0.4375})
    # theta(A | +) = (4/6, 2/6), theta(A | -) = (1/4, 3/4), theta(A) = (1/2, 1/2)
    a = clf.cpt("A")
    np.testing.assert_allclose(a.loc["+"].to_numpy(), [0.7 * 4 / 6 + 0.15, 0.7 * 2 / 6 + 0.15])
    np.testing.assert_allclose(a.loc["-"].to_numpy(), [0.7 / 4 + 0.15, 0.7 * 3 / 4 + 0.15])
    # the arc prior multiplies the posterior odds: 7/3 * (1/4) / (3/4) = 7/9
    assert _fit(TINY, arc_prior=0.25).arc_posteriors_["A"] == pytest.approx(7 / 16)
    table = clf.diagnostics()["arc_posteriors"]
    assert table["arc_posterior"].to_dict() == pytest.approx({"A": 0.7, "B": 0.4375})
    assert clf.diagnostics()["manb_expected_arcs"] == pytest.approx(1.1375)


def test_alpha_generalises_the_marginal_likelihood():
    # B with alpha = 2: with the arc, per class prod_k Gamma(N_jk + 2) / Gamma(2) * Gamma(4) / Gamma(N_j + 4)
    with_arc = (lgamma(4) - lgamma(8) + 2 * lgamma(4)) + (lgamma(4) - lgamma(6) + 2 * lgamma(3))
    without = lgamma(4) - lgamma(10) + 2 * lgamma(5)
    expected = 1 / (1 + np.exp(without - with_arc))
    assert _fit(TINY, alpha=2.0).arc_posteriors_["B"] == pytest.approx(expected)


def _enumerated_posteriors(train, test, alpha, arc_prior):
    """Bayesian model averaging by brute force over every subset of class -> attribute arcs."""
    attributes = [c for c in train.columns if c != "y"]
    classes = sorted(train["y"].unique())
    values = {a: sorted(train[a].unique()) for a in attributes}

    def log_marginal(groups, column):
        r = len(values[column])
        total = 0.0
        for _, group in groups:
            counts = group[column].value_counts()
            total += lgamma(r * alpha) - lgamma(len(group) + r * alpha)
            total += sum(lgamma(counts.get(v, 0) + alpha) - lgamma(alpha) for v in values[column])
        return total

    def estimate(rows, column, value):
        return (np.sum(rows[column] == value) + alpha) / (len(rows) + len(values[column]) * alpha)

    joint = np.zeros((len(test), len(classes)))
    log_weights = []
    for arcs in itertools.product([False, True], repeat=len(attributes)):
        log_weight = 0.0
        for a, arc in zip(attributes, arcs):
            groups = train.groupby("y") if arc else [(None, train)]
            prior = arc_prior if arc else 1 - arc_prior
            log_weight += log(prior) + log_marginal(groups, a)
        log_weights.append(log_weight)
        for row, (_, x) in enumerate(test.iterrows()):
            for j, c in enumerate(classes):
                p = (np.sum(train["y"] == c) + alpha) / (len(train) + len(classes) * alpha)
                for a, arc in zip(attributes, arcs):
                    p *= estimate(train[train["y"] == c] if arc else train, a, x[a])
                joint[row, j] += np.exp(log_weight) * p
    return joint / joint.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("alpha,arc_prior", [(1.0, 0.5), (0.5, 0.2)])
def test_equals_brute_force_averaging_over_all_naive_bayes_models(alpha, arc_prior):
    rng = np.random.default_rng(1)
    n = 40
    y = rng.integers(0, 3, n)
    data = pd.DataFrame(
        {
            "strong": np.where(rng.random(n) < 0.8, y, rng.integers(0, 3, n)),
            "weak": np.where(rng.random(n) < 0.3, y % 2, rng.integers(0, 2, n)),
            "noise": rng.integers(0, 3, n),
        }
    ).astype(str)
    data["y"] = y.astype(str)
    clf = _fit(data, alpha=alpha, arc_prior=arc_prior)
    expected = _enumerated_posteriors(data, data.iloc[:15], alpha, arc_prior)
    np.testing.assert_allclose(clf.predict_proba(data.iloc[:15].drop(columns="y")), expected, rtol=1e-9)


def test_reduces_to_naive_bayes_when_every_arc_posterior_is_one():
    data = pd.concat([TINY] * 5, ignore_index=True)
    manb = _fit(data, arc_prior=1.0, alpha=0.5)
    assert manb.arc_posteriors_ == {"A": 1.0, "B": 1.0}
    nb = BNClassifier(estimator="laplace", estimator_params={"alpha": 0.5}).fit(data[["A", "B"]], data["y"])
    for manb_tables, nb_tables in zip(manb.tables_, nb.tables_):
        np.testing.assert_allclose(manb_tables[-1], nb_tables[-1])
    np.testing.assert_allclose(manb.predict_proba(data[["A", "B"]]), nb.predict_proba(data[["A", "B"]]))
    # with no arc at all, only the class prior is left
    flat = _fit(data, arc_prior=0.0).predict_proba(data[["A", "B"]])
    np.testing.assert_allclose(flat, np.tile([(20 + 1) / (30 + 2), (10 + 1) / (30 + 2)], (30, 1)))


def test_naive_bayes_only():
    with pytest.raises(ConfigError, match="naive Bayes only: use structure 'nb'"):
        _fit(TINY, structure="tan")
    with pytest.raises(ConfigError, match="naive Bayes only"):
        _fit(TINY, structure={"A": [], "B": ["A"]})
    assert _fit(TINY, structure="kdb", k=0).arc_posteriors_ == pytest.approx({"A": 0.7, "B": 0.4375})
    valid = ModelAveragedNaiveBayes.valid_structure
    assert valid("nb", 2) and valid("kdb", 0) and valid({"A": [], "B": []}, None)
    assert not any(valid(s, 2) for s in ("tan", "kdb", "skdb", "aode")) and not valid({"A": ["B"]}, None)


@pytest.mark.parametrize("params,message", [({"alpha": 0}, "alpha must be a finite number > 0"),
                                            ({"arc_prior": 1.5}, "arc_prior must be a finite number in \\[0, 1\\]")])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ConfigError, match=message):
        ModelAveragedNaiveBayes(**params)
