"""AWNB: weights from minimum test depths by hand, weights as exponents of every table."""

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.awnb import AttributeWeightedNaiveBayes
from bncbench.core.errors import ConfigError


def _and_data(copies=20):
    """y = A and B over the four combinations, plus a C that the trees never need."""
    rng = np.random.default_rng(0)
    grid = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * copies)
    frame = pd.DataFrame({"A": grid[:, 0], "B": grid[:, 1], "C": rng.integers(0, 3, len(grid))}).astype(str)
    return frame, (grid[:, 0] & grid[:, 1]).astype(str)


def _fit(X, y, structure="nb", random_state=0, **params):
    return BNClassifier(structure=structure, k=2, estimator="awnb", estimator_params=params,
                        random_state=random_state).fit(X, y)


def test_weights_from_minimum_test_depths_by_hand():
    # Every tree splits on A or B at the root (depth 1) and on the other at depth 2 in the branch
    # where the first is 1; both branches are then pure, so C is never tested. Which of A and B is the
    # root varies with the bootstrap sample, but each tree adds 1 + 1/sqrt(2) to w_A + w_B.
    X, y = _and_data()
    clf = _fit(X, y)
    depths = clf.estimator_.test_depths_
    assert depths.shape == (10, 3)
    assert all(sorted(row[:2]) == [1, 2] for row in depths) and np.all(np.isinf(depths[:, 2]))
    weights = clf.feature_weights_
    assert weights["A"] + weights["B"] == pytest.approx(1 + 1 / np.sqrt(2))
    assert weights["C"] == 0.0
    roots_a = np.sum(depths[:, 0] == 1)
    assert weights["A"] == pytest.approx((roots_a + (10 - roots_a) / np.sqrt(2)) / 10)


def test_an_attribute_that_decides_the_class_alone_keeps_weight_one():
    X, _ = _and_data()
    clf = _fit(X[["A", "C"]], np.where(X["A"] == "1", "yes", "no"))
    assert clf.feature_weights_ == {"A": 1.0, "C": 0.0}
    # w = 0 drops C: the posterior is naive Bayes on A alone
    alone = BNClassifier(estimator="laplace").fit(X[["A"]], np.where(X["A"] == "1", "yes", "no"))
    np.testing.assert_allclose(clf.predict_proba(X[["A", "C"]]), alone.predict_proba(X[["A"]]))


@pytest.mark.parametrize("renormalise", [False, True])
def test_weights_are_exponents_of_every_table(renormalise):
    rng = np.random.default_rng(2)
    n = 300
    y = rng.integers(0, 3, n)
    X = pd.DataFrame({f"x{i}": np.where(rng.random(n) < 0.4 + 0.1 * i, y, rng.integers(0, 3, n)) for i in range(4)})
    for structure in ("nb", "kdb"):
        clf = _fit(X, y, structure=structure, renormalise=renormalise)
        plain = BNClassifier(structure=structure, k=2, estimator="laplace").fit(X, y)
        assert clf.parents_ == plain.parents_
        weights = np.array([clf.feature_weights_[f"x{i}"] for i in range(4)])
        assert np.all((weights > 0) & (weights <= 1))
        np.testing.assert_allclose(clf.tables_[0][0], plain.tables_[0][0])
        for weight, tables, plain_tables in zip(weights, clf.tables_[1:], plain.tables_[1:]):
            for table, plain_table in zip(tables, plain_tables):
                powered = plain_table**weight
                expected = powered / powered.sum(axis=1, keepdims=True) if renormalise else powered
                np.testing.assert_allclose(table, expected)
    # naive Bayes posterior by hand: P(y) prod_i theta_i ** w_i, normalised over the classes
    clf = _fit(X, y, renormalise=renormalise)
    codes = clf.encoder_.transform(X)
    joint = np.tile(clf.tables_[0][0], (n, 1))
    for i, tree in enumerate(clf.network_.trees[1:]):
        class_nodes = tree.children[0][0]  # node of each class at the class level
        joint *= clf.tables_[1 + i][1][class_nodes][:, codes[:, i]].T
    np.testing.assert_allclose(clf.predict_proba(X), joint / joint.sum(axis=1, keepdims=True))


def test_deterministic_under_a_seed_and_logged():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.integers(0, 3, (200, 4)), columns=list("abcd"))
    y = (X["a"] + rng.integers(0, 2, 200)) % 3
    first, again, other = (_fit(X, y, random_state=s) for s in (5, 5, 6))
    assert first.feature_weights_ == again.feature_weights_
    assert first.feature_weights_ != other.feature_weights_
    found = first.diagnostics()
    assert found["feature_weights"]["weight"].to_dict() == first.feature_weights_
    assert found["mean_feature_weight"] == pytest.approx(np.mean(list(first.feature_weights_.values())))
    with pytest.raises(AttributeError, match="has no arc_posteriors_"):
        _ = first.arc_posteriors_


@pytest.mark.parametrize(
    "params,message",
    [({"n_trees": 0}, "n_trees must be an integer >= 1"), ({"subsample": 0}, "subsample must be"),
     ({"alpha": -1}, "alpha must be a finite number >= 0"), ({"renormalise": "yes"}, "renormalise must be true or false")],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ConfigError, match=message):
        AttributeWeightedNaiveBayes(**params)
