import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from bncbench import BNClassifier
from bncbench.bnc.structures import STRUCTURES
from bncbench.core.errors import ConfigError, DatasetError


@pytest.fixture(scope="module")
def mixed_frame():
    rng = np.random.default_rng(0)
    n = 200
    y = rng.choice(["no", "yes"], n)
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", None], n),
            "count": rng.integers(0, 3, n),
            "flag": np.where(y == "yes", rng.random(n) < 0.8, rng.random(n) < 0.2),
            "level": rng.choice([1.5, 2.5, np.nan], n),
        }
    )
    return frame, y


@pytest.mark.parametrize("structure,k", [("nb", 1), ("tan", 1), ("kdb", 1), ("kdb", 3)])
@pytest.mark.parametrize("estimator", ["mle", "laplace", "m_estimate"])
def test_fit_predict_on_values_of_any_type(mixed_frame, structure, k, estimator):
    X, y = mixed_frame
    clf = BNClassifier(structure=structure, k=k, estimator=estimator, random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    assert list(clf.classes_) == ["no", "yes"]
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(X)) <= {"no", "yes"}
    assert set(clf.parents_) == set(X.columns)
    assert all(len(p) <= k for p in clf.parents_.values())
    assert clf.score(X, y) > 0.7  # "flag" alone predicts the class 80% of the time


def test_missing_is_a_value_of_its_own(mixed_frame):
    X, y = mixed_frame
    clf = BNClassifier(estimator="laplace").fit(X, y)
    assert len(clf.cpt("colour").columns) == 3  # green, red and missing
    assert clf.cpt("colour").columns.isna().sum() == 1


def test_unseen_values_and_contexts_at_prediction(mixed_frame):
    X, y = mixed_frame
    clf = BNClassifier(structure="kdb", k=2, estimator="m_estimate", estimator_params={"m": 1}).fit(X, y)
    unseen = X.iloc[:3].copy()
    unseen["colour"] = "ultraviolet"
    unseen["count"] = 99
    proba = clf.predict_proba(unseen)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # a value never seen in training carries no evidence: under NB the row is classified as if the
    # attribute were absent
    nb = BNClassifier(estimator="laplace").fit(X, y)
    without_colour = BNClassifier(estimator="laplace").fit(X.drop(columns="colour"), y)
    np.testing.assert_allclose(nb.predict_proba(unseen.assign(count=0)), without_colour.predict_proba(unseen.assign(count=0).drop(columns="colour")))


def test_mle_with_an_impossible_row_gives_the_uniform_distribution():
    X = pd.DataFrame({"a": ["p", "q"]})
    clf = BNClassifier(estimator="mle").fit(X, ["c1", "c2"])
    np.testing.assert_allclose(clf.predict_proba(X), [[1, 0], [0, 1]])


def test_a_dict_structure_keeps_the_given_parent_order(mixed_frame):
    X, y = mixed_frame
    structure = {"colour": ["level", "count"], "count": [], "flag": ["count"], "level": []}
    clf = BNClassifier(structure=structure, estimator="laplace").fit(X, y)
    assert clf.parents_["colour"] == ["level", "count"]
    assert clf.cpt("colour").index.names == ["class", "level", "count"]


@pytest.mark.parametrize(
    "structure,message",
    [
        ({"colour": ["nope"]}, "not columns of X"),
        ({"colour": ["count"], "count": ["colour"]}, "cycle"),
        ({"colour": ["colour"]}, "itself"),
    ],
)
def test_bad_dict_structures_are_refused(mixed_frame, structure, message):
    X, y = mixed_frame
    with pytest.raises(ConfigError, match=message):
        BNClassifier(structure=structure).fit(X, y)


def test_unknown_structure_lists_the_valid_ones(mixed_frame):
    X, y = mixed_frame
    with pytest.raises(ConfigError, match="valid structures: " + ", ".join(sorted(STRUCTURES))):
        BNClassifier(structure="forest").fit(X, y)


def test_bad_data_is_refused(mixed_frame):
    X, y = mixed_frame
    with pytest.raises(DatasetError, match="missing values"):
        BNClassifier().fit(X, np.where(np.arange(len(y)) == 3, None, y))
    with pytest.raises(DatasetError, match="zero rows"):
        BNClassifier().fit(X.iloc[:0], y[:0])
    clf = BNClassifier().fit(X, y)
    with pytest.raises(ValueError, match="missing"):
        clf.predict(X.drop(columns="flag"))


def test_no_columns_and_infinite_numbers_are_refused_in_a_frame_as_in_an_array(mixed_frame):
    X, y = mixed_frame
    with pytest.raises(DatasetError, match="X has no columns"):
        BNClassifier().fit(X[[]], y)
    infinite = X.assign(ratio=np.where(np.arange(len(X)) == 5, np.inf, 1.0))
    with pytest.raises(DatasetError, match=r"columns \['ratio'\] hold infinity"):
        BNClassifier().fit(infinite, y)
    with pytest.raises(DatasetError, match=r"columns \['ratio'\] hold infinity"):
        BNClassifier().fit(infinite.assign(ratio=1.0), y).predict(infinite)
    with pytest.raises(NotFittedError):
        BNClassifier().cpt("flag")


def test_columns_of_an_array_are_matched_by_position(mixed_frame):
    X, y = mixed_frame
    numbered = X.set_axis([2, 0, 1, 3], axis=1)  # integer labels that are not the positions
    clf = BNClassifier(structure="kdb", k=2).fit(numbered, y)
    expected = clf.predict_proba(numbered)
    np.testing.assert_array_equal(clf.predict_proba(numbered.to_numpy(dtype=object)), expected)
    named = BNClassifier(structure="kdb", k=2).fit(X, y)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        np.testing.assert_array_equal(named.predict_proba(X.to_numpy(dtype=object)), named.predict_proba(X))
    unnamed = BNClassifier().fit(X.to_numpy(dtype=object), y)
    with pytest.warns(UserWarning, match="has feature names"), pytest.raises(DatasetError, match="give an array"):
        unnamed.predict(X)


def test_scikit_learn_contract(mixed_frame):
    X, y = mixed_frame
    clf = BNClassifier(structure="kdb", k=2, estimator="m_estimate", estimator_params={"m": 1}, random_state=3)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    np.testing.assert_array_equal(twin.fit(X, y).predict_proba(X), clf.fit(X, y).predict_proba(X))


@pytest.mark.parametrize(
    "arguments,error,message",
    [
        ({"structure": "kdb", "k": 2.5}, ConfigError, "k must be an integer"),
        ({"structure": "kdb", "k": "2"}, ConfigError, "k must be an integer"),
        ({"structure": "kdb", "k": -1}, ConfigError, "k must be an integer"),
        ({"estimator": "laplace", "estimator_params": {"alpha": "x"}}, ConfigError, "alpha must be a finite number"),
    ],
)
def test_bad_arguments_are_refused_with_their_name(mixed_frame, arguments, error, message):
    X, y = mixed_frame
    with pytest.raises(error, match=message):
        BNClassifier(**arguments).fit(X, y)


def test_x_and_y_of_different_lengths_are_refused(mixed_frame):
    X, y = mixed_frame
    with pytest.raises(ValueError, match="rows"):
        BNClassifier().fit(X, y[:-3])


@pytest.mark.parametrize(
    "labels",
    [
        pd.Series(["no", "yes"], dtype="str"),
        pd.Series(["no", "yes"], dtype="string"),
        pd.Series([0, 7], dtype="int64"),
        pd.Series([1.0, 2.0], dtype="float64"),
        pd.Series([False, True], dtype="bool"),
        pd.Series([0, 7], dtype="Int64"),
    ],
)
def test_class_series_of_one_kind_fit_as_their_values_listed(mixed_frame, labels):
    """A Series whose dtype holds one kind of value is taken as it is; the same labels as a list go
    through an object array: the same classes, tables and posteriors."""
    X, y = mixed_frame
    as_series = pd.Series(np.where(y == "yes", labels[1], labels[0]), index=X.index[::-1]).astype(labels.dtype)
    as_list = as_series.tolist()
    fits = [BNClassifier(structure="kdb", k=1, estimator="m_estimate", random_state=0).fit(X, given) for given in (as_series, as_list)]
    assert fits[0].classes_.tolist() == fits[1].classes_.tolist() == sorted(labels.tolist())
    for a, b in zip(fits[0].tables_, fits[1].tables_):
        for ta, tb in zip(a, b):
            np.testing.assert_array_equal(ta, tb)
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    assert type(fits[0].predict(X[:1])[0]) is type(fits[1].predict(X[:1])[0])


def test_a_true_class_below_the_log_loss_clip_is_the_models_probability_not_an_underflow():
    """On smoke's breast-cancer, naive Bayes with Laplace smoothing gives some true classes less than 1e-15, which
    log_loss clips and a newcomer took for underflow (issue 42): the posterior is exact in logs down there."""
    from scipy.special import logsumexp
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold

    from bncbench.data import MDLDiscretizer

    data = load_breast_cancer(as_frame=True)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=2).split(data.data, data.target))
    discretizer = MDLDiscretizer().fit(data.data.iloc[train], data.target.iloc[train])
    X_train, X_test = discretizer.transform(data.data.iloc[train]), discretizer.transform(data.data.iloc[test])
    y = data.target.astype(str)
    model = BNClassifier(structure="nb", estimator="laplace").fit(X_train, y.iloc[train])
    proba = model.predict_proba(X_test)
    true = proba[np.arange(len(proba)), np.searchsorted(model.classes_, y.iloc[test])]
    log_joint = model.packed_.log_joint(model._codes(X_test))
    exact = np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))
    assert true.min() < 1e-15 and (true > 0).all()  # clipped by log_loss, yet not 0
    np.testing.assert_allclose(proba, exact, rtol=1e-9, atol=0)
