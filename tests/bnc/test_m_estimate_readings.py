"""The m-estimate's two readings of the HDP paper (issue 26): the back-off to the root of the tree
(``backoff="value_to_root"``, Sect. 4.1 and 6.1) and the choice of m as the authors' Java code makes it
(``selection="authors_java"``); hand-computed tables and losses, the property that a class seen in
training never gets probability 0 on real data, and the cell hashes of runs logged before."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.estimators.m_estimate import (
    authors_java_rmse,
    first_strictly_best,
    largest_tied,
)
from bncbench.core.errors import ConfigError
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.protocol.cell import canonical_model, semantic_hash
from bncbench.protocol.cross_validation import repetition_seeds

PAPER_GRID = (0.0, 0.05, 0.2, 1.0, 5.0, 20.0)


def _fit(frame, params, structure="nb", k=None):
    return BNClassifier(structure=structure, k=k, estimator="m_estimate", estimator_params=params).fit(
        frame.drop(columns="y"), frame["y"]
    )


# A under "+": a0 a0 a1 a2; under "-": a1 a1. Root counts a0: 2, a1: 3, a2: 1 of 6.
NB_ROWS = pd.DataFrame({"A": ["a0", "a0", "a1", "a2", "a1", "a1"], "y": ["+", "+", "+", "+", "-", "-"]})


@pytest.mark.parametrize("m", [0.0, 1.5])
def test_naive_bayes_value_unseen_with_a_class_gets_the_root_estimate(m):
    table = _fit(NB_ROWS, {"m": m, "backoff": "value_to_root"}).cpt("A")
    # a0 and a2 are unseen with "-": p(a0) and p(a2)
    np.testing.assert_allclose(table.loc["-"].to_numpy(), [(2 + m / 3) / (6 + m), (2 + m / 3) / (2 + m), (1 + m / 3) / (6 + m)])
    np.testing.assert_allclose(table.loc["+"].to_numpy(), [(2 + m / 3) / (4 + m), (1 + m / 3) / (4 + m), (1 + m / 3) / (4 + m)])
    # "value" keeps the class level's own estimate: 0 at m = 0
    value = _fit(NB_ROWS, {"m": m, "backoff": "value"}).cpt("A").loc["-"].to_numpy()
    np.testing.assert_allclose(value[[0, 2]], (m / 3) / (2 + m))


def test_naive_bayes_posterior_with_the_root_estimate_by_hand():
    # a0 at m = 0: + gets 4/6 * 2/4, - gets 2/6 * p(a0) = 2/6 * 2/6
    plus, minus = 4 / 6 * 2 / 4, 2 / 6 * 2 / 6
    proba = _fit(NB_ROWS, {"m": 0.0, "backoff": "value_to_root"}).predict_proba(pd.DataFrame({"A": ["a0"]}))
    np.testing.assert_allclose(proba, [[plus / (plus + minus), minus / (plus + minus)]])
    assert _fit(NB_ROWS, {"m": 0.0, "backoff": "value"}).predict_proba(pd.DataFrame({"A": ["a0"]})).tolist() == [[1.0, 0.0]]


# kDB-1 on (A, B): A tells the class better, so B's parent is A. B's tree: root b0: 4, b1: 3, b2: 1 of 8;
# class level +: (3, 1, 1), -: (1, 2, 0); level (class, A) (+, a0): (2, 1, 1), (+, a1): (1, 0, 0),
# (-, a1): (1, 2, 0). A's tree: root a0: 4, a1: 4; +: (4, 1), -: (0, 3).
KDB_ROWS = pd.DataFrame(
    [["a0", "b0", "+"], ["a0", "b0", "+"], ["a0", "b1", "+"], ["a0", "b2", "+"], ["a1", "b0", "+"],
     ["a1", "b1", "-"], ["a1", "b1", "-"], ["a1", "b0", "-"]],
    columns=["A", "B", "y"],
)


@pytest.mark.parametrize("m", [0.0, 1.0])
def test_kdb1_back_off_goes_through_the_class_level_to_the_root(m):
    clf = _fit(KDB_ROWS, {"m": m, "backoff": "value_to_root"}, structure="kdb", k=1)
    assert clf.parents_ == {"A": [], "B": ["A"]}
    b = clf.cpt("B")
    # n(b2 | -, a1) = 0 and n(b2 | -) = 0: two levels up, to p(b2)
    np.testing.assert_allclose(b.loc[("-", "a1")].to_numpy(), [(1 + m / 3) / (3 + m), (2 + m / 3) / (3 + m), (1 + m / 3) / (8 + m)])
    # n(b1 | +, a1) = n(b2 | +, a1) = 0: one level up, to p(. | +), counted there
    np.testing.assert_allclose(b.loc[("+", "a1")].to_numpy(), [(1 + m / 3) / (1 + m), (1 + m / 3) / (5 + m), (1 + m / 3) / (5 + m)])
    # "value" stops at the class level
    value = _fit(KDB_ROWS, {"m": m, "backoff": "value"}, structure="kdb", k=1).cpt("B")
    np.testing.assert_allclose(value.loc[("-", "a1")].to_numpy()[2], (m / 3) / (3 + m))


def test_kdb1_posterior_with_a_two_level_back_off_by_hand():
    # (a1, b2) at m = 0: + gets 5/8 * p(a1 | +) 1/5 * p(b2 | +) 1/5 (context (+, a1) lacks b2),
    # - gets 3/8 * p(a1 | -) 3/3 * p(b2) 1/8 (neither (-, a1) nor - has b2)
    plus, minus = 5 / 8 * 1 / 5 * 1 / 5, 3 / 8 * 1 * 1 / 8
    row = pd.DataFrame({"A": ["a1"], "B": ["b2"]})
    proba = _fit(KDB_ROWS, {"m": 0.0, "backoff": "value_to_root"}, structure="kdb", k=1).predict_proba(row)
    np.testing.assert_allclose(proba, [[plus / (plus + minus), minus / (plus + minus)]])
    assert _fit(KDB_ROWS, {"m": 0.0, "backoff": "value"}, structure="kdb", k=1).predict_proba(row).tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize("dataset", ["iris", "wine", "new-thyroid", "wall-following"])
def test_no_class_seen_in_training_gets_probability_zero_on_the_folds(shared_data_dir, dataset):
    """Over the 5x2 folds, at m = 0 (the only m of the grid with zero estimates) "value" gives some test
    row a class of probability 0 on each dataset and "value_to_root" none. The joint probabilities are
    checked before normalisation (a posterior can underflow to 0 on its own)."""
    data = load_dataset(dataset, shared_data_dir)
    y = data.y.to_numpy()
    zeros = {"value": 0, "value_to_root": 0}
    for seed in repetition_seeds(1, 5):
        for train, test in StratifiedKFold(2, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
            discretizer = MDLDiscretizer().fit(data.X.iloc[train], data.y.iloc[train])
            X_train, X_test = discretizer.transform(data.X.iloc[train]), discretizer.transform(data.X.iloc[test])
            for backoff in zeros:
                for structure, k in (("nb", None), ("kdb", 2)):
                    clf = BNClassifier(structure=structure, k=k, estimator="m_estimate",
                                       estimator_params={"m": 0.0, "backoff": backoff})
                    clf.fit(X_train, data.y.iloc[train])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # values unseen in training
                        log_joint = clf.packed_.log_joint(clf.encoder_.transform(X_test))
                        np.testing.assert_allclose(clf.predict_proba(X_test).sum(axis=1), 1.0)
                    zeros[backoff] += int(np.isneginf(log_joint).sum())
    assert zeros["value"] > 0
    assert zeros["value_to_root"] == 0


def test_value_to_root_table_rows_and_posteriors_on_random_data():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.integers(0, 4, size=(60, 5)), columns=list("abcde")).astype(str)
    frame["y"] = rng.integers(0, 3, 60).astype(str)
    clf = _fit(frame, {"backoff": "value_to_root"}, structure="kdb", k=3)
    proba = clf.predict_proba(frame.drop(columns="y"))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba > 0).all()


def test_authors_java_rmse_by_hand():
    with np.errstate(divide="ignore"):
        log_joint = np.log(np.array([[0.2, 0.6, 0.2], [0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]))
    # row 1 has every class at 0: skipped (NaN in Java); rows 0 and 2 enter over all classes
    expected = math.sqrt(((0.2**2 + 0.4**2 + 0.2**2) + (0.5**2 + 0.5**2 + 1.0)) / 2)
    assert authors_java_rmse(log_joint, np.array([1, 0, 2])) == pytest.approx(expected, rel=1e-12)
    assert math.isnan(authors_java_rmse(log_joint[[1]], np.array([0])))  # no row left: 0.0 / 0


def test_first_strictly_best_keeps_the_first_of_tied_losses():
    assert first_strictly_best(PAPER_GRID, [0.3] * 6) == 0.0
    assert largest_tied(PAPER_GRID, [0.3] * 6) == 20.0
    # a difference of rounding is a difference to Java's `<`, not to largest_tied's tolerance
    assert first_strictly_best([0.0, 0.05], [0.1 + 0.2, 0.3]) == 0.05
    assert first_strictly_best([0.0, 0.05], [0.3, 0.1 + 0.2]) == 0.0
    assert largest_tied([0.0, 0.05], [0.3, 0.1 + 0.2]) == 0.05
    assert first_strictly_best([0.0, 0.05, 0.2], [math.nan, 0.4, 0.2]) == 0.2  # NaN never wins
    assert first_strictly_best([0.0, 5.0], [math.nan, math.nan]) == 1.0  # Java's initial bestM


def test_authors_java_takes_only_its_own_loss():
    with pytest.raises(ConfigError, match="selection_loss"):
        _fit(NB_ROWS, {"selection": "authors_java", "selection_loss": "log_loss"})
    with pytest.raises(ConfigError, match="selection must be one of"):
        _fit(NB_ROWS, {"selection": "smallest"})


def _cell_hash(**estimator_params) -> str:
    model = {"name": "kdb5_m_estimate", "structure": "kdb", "k": 5, "structure_params": {},
             "estimator": "m_estimate", "estimator_params": estimator_params}
    cv = {"repetitions": 5, "folds": 2, "seed": 1}
    dataset = {"name": "iris", "source": "store", "openml_id": 61, "openml_target": None, "drop": []}
    return semantic_hash({"dataset": dataset, "cv": cv, "model": model})


def test_selection_at_its_default_keeps_the_hash_and_other_values_change_it():
    assert "selection" not in canonical_model({"estimator": "m_estimate", "estimator_params": {}})["estimator_params"]
    assert _cell_hash() == _cell_hash(selection="largest_tied")
    assert _cell_hash() != _cell_hash(selection="authors_java")
    assert _cell_hash() == _cell_hash(backoff="value_to_root")  # the default back-off
    assert _cell_hash() != _cell_hash(backoff="value")
    assert _cell_hash(backoff="value") != _cell_hash(backoff="value", selection="authors_java")


def test_parameters_added_later_are_parameters_of_their_estimator():
    for name, cls in ESTIMATORS.items():
        assert set(cls.added_later) <= set(cls.defaults()), name


def test_the_default_gives_no_class_seen_in_training_probability_zero_on_the_68_datasets(shared_data_dir):
    """The classifier's own default m-estimate, at m = 0 (the grid's value that can give zeros, which the
    holdout may choose), on both folds of the first 5x2 repetition of every dataset of the store (MDL
    fitted on each training fold, as the runner does): no class seen in training has joint probability 0
    for any test row, where the class-kept back-off gives zeros on many datasets. Joint probabilities,
    before normalising: a posterior can also underflow to 0 (musk2's 166 attributes) or belong to a class
    absent from the training fold (audiology), which no estimate can help."""
    names = pd.read_csv(shared_data_dir / "manifest.csv")["slug"]
    zeros = {"default": {}, "value": {}}
    for name in names:
        data = load_dataset(name, shared_data_dir)
        y = data.y.to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a class of one row cannot be in both folds; unseen values
            for train, test in StratifiedKFold(2, shuffle=True, random_state=repetition_seeds(1, 1)[0]).split(y, y):
                discretizer = MDLDiscretizer().fit(data.X.iloc[train], data.y.iloc[train])
                X_train, X_test = discretizer.transform(data.X.iloc[train]), discretizer.transform(data.X.iloc[test])
                for reading, params in (("default", {"m": 0.0}), ("value", {"m": 0.0, "backoff": "value"})):
                    clf = BNClassifier(estimator="m_estimate", estimator_params=params).fit(X_train, data.y.iloc[train])
                    n = int(np.isneginf(clf.packed_.log_joint(clf.encoder_.transform(X_test))).sum())
                    zeros[reading][name] = zeros[reading].get(name, 0) + n
    assert len(names) == 68
    assert sum(zeros["default"].values()) == 0, {name: n for name, n in zeros["default"].items() if n}
    assert sum(n > 0 for n in zeros["value"].values()) >= 20


def test_normalised_rows_by_hand():
    # naive Bayes, m = 0, back-off to p(x): the "-" row is p(a0), n(a1 | -) / n(-), p(a2) = 2/6, 1, 1/6, which
    # sums to 1.5; normalised, 2/9, 2/3, 1/9
    raw = _fit(NB_ROWS, {"m": 0.0, "backoff": "value_to_root"}).cpt("A").loc["-"].to_numpy()
    np.testing.assert_allclose(raw, [2 / 6, 1.0, 1 / 6])
    normalised = _fit(NB_ROWS, {"m": 0.0, "backoff": "value_to_root", "normalise": True}).cpt("A")
    np.testing.assert_allclose(normalised.loc["-"].to_numpy(), [2 / 9, 2 / 3, 1 / 9])
    np.testing.assert_allclose(normalised.loc["+"].to_numpy(), [2 / 4, 1 / 4, 1 / 4])  # seen values only: as it was
    # kDB-1, the class kept: B's (+, a1) row counts b0 once; b1 and b2 take p(. | +) = 1/5 each: 1, 0.2, 0.2
    kept = {"m": 0.0, "backoff": "value"}
    np.testing.assert_allclose(_fit(KDB_ROWS, kept, "kdb", 1).cpt("B").loc[("+", "a1")].to_numpy(), [1, 0.2, 0.2])
    normalised = _fit(KDB_ROWS, {**kept, "normalise": True}, "kdb", 1).cpt("B")
    np.testing.assert_allclose(normalised.loc[("+", "a1")].to_numpy(), np.array([1, 0.2, 0.2]) / 1.4)


@pytest.mark.parametrize("backoff", ["value", "value_to_root"])
def test_normalised_tables_are_distributions_and_the_holdout_reads_them(shared_data_dir, backoff):
    data = load_dataset("hepatitis", shared_data_dir)
    X = MDLDiscretizer().fit(data.X, data.y).transform(data.X)
    params = {"backoff": backoff, "normalise": True}
    clf = BNClassifier(structure="kdb", k=3, estimator="m_estimate", estimator_params=params, random_state=0)
    clf.fit(X, data.y)
    for tree in clf.tables_:
        for table in tree:
            sums = table.sum(axis=1)
            np.testing.assert_allclose(sums[sums > 0], 1.0)
    raw = BNClassifier(structure="kdb", k=3, estimator="m_estimate", estimator_params={"backoff": backoff},
                       random_state=0).fit(X, data.y)
    assert clf.estimator_.holdout_losses_ != raw.estimator_.holdout_losses_  # the holdout scored the normalised tables
    assert any(not np.allclose(t.sum(axis=1)[t.sum(axis=1) > 0], 1.0) for tree in raw.tables_ for t in tree)
