import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.m_estimate import MEstimate
from bncbench.bnc.inference import PackedNetwork
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.structures.kdb import KDependenceStructure
from bncbench.bnc.structures.selective_kdb import leave_one_out_losses
from bncbench.bnc.training_data import InMemoryCodes
from bncbench.core.metrics import LOSSES


@pytest.fixture(scope="module")
def small_problem(dependent_codes):
    return dependent_codes(60, 5)


def _brute_force_grid(codes, cards, parents, order, k_max, m, loss):
    """Refit the model without each row, for every (k', l), and score the row."""
    n, d = codes.shape[0], len(cards)
    proba = np.zeros((k_max + 1, d + 1, n, 3))
    for i in range(n):
        rest = np.delete(codes, i, axis=0)
        for k in range(k_max + 1):
            for l in range(d + 1):
                network = CountedNetwork([p[:k] for p in parents], cards, 3, list(order[:l])).add(rest)
                tables = MEstimate(m=m, backoff="value").tables_for(network, m)  # the SkDB paper's
                proba[k, l, i] = PackedNetwork(network, tables).predict_proba(codes[i : i + 1])[0]
    return np.array([[LOSSES[loss](proba[k, l], codes[:, -1]) for l in range(d + 1)] for k in range(k_max + 1)])


@pytest.mark.parametrize("loss", ["rmse", "zero_one_loss", "log_loss"])
@pytest.mark.parametrize("m", [1.0, 0.2])
def test_incremental_leave_one_out_equals_refitting_without_each_row(small_problem, loss, m):
    codes, cards = small_problem
    k_max = 2
    parents, order = KDependenceStructure(k_max).parents_and_order(InMemoryCodes(codes), cards, 3)
    network = CountedNetwork(parents, cards, 3).add(codes)
    incremental = leave_one_out_losses(network, InMemoryCodes(codes), order, k_max, m, loss)
    np.testing.assert_allclose(incremental, _brute_force_grid(codes, cards, parents, order, k_max, m, loss), rtol=1e-9)


def test_skdb_keeps_the_best_attributes_and_k(small_problem):
    codes, cards = small_problem
    X = pd.DataFrame(codes[:, :-1], columns=list("abcd")).astype(str)
    y = codes[:, -1]
    clf = BNClassifier(structure="skdb", k=2, estimator="m_estimate", estimator_params={"m": 1.0}).fit(X, y)
    selection = clf.structure_info_["selection"]
    grid = selection.losses
    assert grid.shape == (3, 5)
    best = grid.to_numpy().min()
    assert grid.loc[selection.k, selection.n_attributes] == best
    # ties go to fewer attributes, then to smaller k
    for l in range(selection.n_attributes + 1):
        for k in range(3):
            if (l, k) < (selection.n_attributes, selection.k):
                assert grid.loc[k, l] > best
    assert len(clf.parents_) == selection.n_attributes
    assert list(clf.parents_) == selection.attributes
    assert all(len(p) <= selection.k for p in clf.parents_.values())
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


def test_skdb_drops_noise_attributes():
    rng = np.random.default_rng(0)
    n = 2000
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({"signal": np.where(rng.random(n) < 0.85, y, 1 - y)})
    for i in range(6):
        X[f"noise{i}"] = rng.integers(0, 4, n)
    clf = BNClassifier(structure="skdb", k=2, estimator="laplace").fit(X.astype(str), y)
    assert "signal" in clf.parents_
    assert len(clf.parents_) < X.shape[1]


def test_algorithm_4_searches_from_one_parent_and_one_attribute():
    """With only noise, the best leave-one-out model is the class prior alone (l = 0) or naive Bayes (k' = 0); the
    SkDB paper's search (Algorithm 4: k' and l from 1) keeps the best among k' >= 1 and l >= 1."""
    rng = np.random.default_rng(1)
    n = 300
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({f"noise{i}": rng.integers(0, 3, n) for i in range(4)}).astype(str)
    free = BNClassifier(structure="skdb", k=2, estimator="m_estimate", estimator_params={"m": 1.0}).fit(X, y)
    assert free.structure_info_["selection"].n_attributes == 0  # the class prior alone
    paper = BNClassifier(structure="skdb", k=2, structure_params={"min_k": 1, "min_attributes": 1},
                         estimator="m_estimate", estimator_params={"m": 1.0}).fit(X, y)
    selection = paper.structure_info_["selection"]
    grid = selection.losses.loc[1:, 1:]
    assert selection.k >= 1 and selection.n_attributes >= 1
    assert grid.loc[selection.k, selection.n_attributes] == grid.to_numpy().min()
    fixed = BNClassifier(structure="skdb", k=2, structure_params={"select_k": False, "min_attributes": 1},
                         estimator="m_estimate", estimator_params={"m": 1.0}).fit(X, y)
    assert fixed.structure_info_["selection"].k == 2 and fixed.structure_info_["selection"].n_attributes >= 1
