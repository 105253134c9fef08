"""What BNClassifier refuses or warns about instead of answering with confidence: parameters that are
not finite or out of range, columns that look continuous, values of another kind at prediction than in
training, columns none of whose values were seen, class labels that mix kinds, malformed structures."""

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.inputs import CONTINUOUS_FRACTION, CONTINUOUS_MIN_VALUES
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.core.errors import (
    BncbenchError,
    BncbenchWarning,
    ConfigError,
    ContinuousColumnWarning,
    DatasetError,
    UnseenValuesWarning,
)
from bncbench.protocol.cross_validation import cross_validate

INF, NAN = math.inf, math.nan
X = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2, 1, 1] * 5, "b": list("xyxyyxxy") * 5})
Y = np.array(list("pqpqqppq") * 5)


def spec(name):
    return {"name": name, "source": "store", "openml_id": None, "openml_target": None, "drop": []}


@pytest.fixture
def no_bncbench_warning():
    """Turn bncbench's warnings into errors, so a test fails if one is given."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BncbenchWarning)
        yield


# --- numeric parameters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("estimator", "params", "name"),
    [
        ("laplace", {"alpha": INF}, "alpha"),
        ("laplace", {"alpha": NAN}, "alpha"),
        ("laplace", {"alpha": -1}, "alpha"),
        ("laplace", {"alpha": "1"}, "alpha"),
        ("m_estimate", {"m": INF}, "m"),
        ("m_estimate", {"m": NAN}, "m"),
        ("m_estimate", {"m_grid": [0.0, INF]}, "m_grid"),
        ("m_estimate", {"m_grid": [NAN]}, "m_grid"),
        ("m_estimate", {"m_grid": "15"}, "m_grid"),
        ("m_estimate", {"holdout_fraction": 1.5}, "holdout_fraction"),
        ("m_estimate", {"holdout_fraction": NAN}, "holdout_fraction"),
        ("m_estimate", {"holdout_max": -1}, "holdout_max"),
        ("hdp", {"iterations": INF}, "iterations"),
        ("hdp", {"iterations": 10.0}, "iterations"),
        ("hdp", {"initial_concentration": INF}, "initial_concentration"),
        ("hdp", {"initial_concentration": 0}, "initial_concentration"),
        ("hdp", {"prior_shape": NAN}, "prior_shape"),
        ("hdp", {"prior_rate": -1.0}, "prior_rate"),
        ("hdp", {"max_concentration": INF}, "max_concentration"),
        ("hdp", {"concentration_every": 0}, "concentration_every"),
        ("hpb", {"b": INF}, "b"),
        ("hpb", {"b": NAN}, "b"),
        ("hpb", {"b": None, "b_grid": [1.0, NAN]}, "b_grid"),
        ("hpb", {"s_grid": [1.0, INF]}, "s_grid"),
        ("hpb", {"max_patterns": INF}, "max_patterns"),
        ("awnb", {"alpha": INF}, "alpha"),
        ("awnb", {"subsample": 0}, "subsample"),
        ("awnb", {"subsample": 1.5}, "subsample"),
        ("awnb", {"subsample": NAN}, "subsample"),
        ("awnb", {"n_trees": INF}, "n_trees"),
        ("manb", {"alpha": INF}, "alpha"),
        ("manb", {"arc_prior": NAN}, "arc_prior"),
        ("wanbia", {"alpha": INF}, "alpha"),
        ("wanbia", {"alpha": 0}, "alpha"),
        ("wanbia", {"max_iterations": 0}, "max_iterations"),
    ],
)
def test_a_parameter_not_finite_or_out_of_range_is_refused_by_name(estimator, params, name):
    with pytest.raises(ConfigError, match=rf"^{name} must be an? (finite number|integer|non-empty list)"):
        BNClassifier(estimator=estimator, estimator_params=params).fit(X, Y)


def test_selective_kdb_m_is_checked_as_the_estimators_m():
    with pytest.raises(ConfigError, match="^m must be a finite number >= 0"):
        BNClassifier(structure="skdb", k=1, structure_params={"m": INF}).fit(X, Y)


@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        ("laplace", {"alpha": 0}),
        ("m_estimate", {"m": 0, "holdout_fraction": 0.0, "holdout_max": 0}),
        ("m_estimate", {"m_grid": [0, 1e6]}),
        ("hpb", {"b": 0, "s_grid": [1e-9, 1e9]}),
        ("awnb", {"alpha": 0, "subsample": 1}),
        ("manb", {"arc_prior": 0}),
        ("manb", {"arc_prior": 1}),
        ("hdp", {"iterations": 20, "initial_concentration": 1e-6, "max_concentration": 1e6}),
    ],
)
def test_the_ends_of_the_valid_ranges_are_accepted_and_give_probabilities(estimator, params):
    proba = BNClassifier(estimator=estimator, estimator_params=params, random_state=0).fit(X, Y).predict_proba(X)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def _defined_models():
    for estimator, structure in itertools.product(sorted(ESTIMATORS), sorted(STRUCTURES)):
        if ESTIMATORS[estimator].valid_structure(structure, 2):
            params = {"iterations": 50} if estimator == "hdp" else {}
            if not (estimator == "hpb" and structure == "direct"):  # HPB's direct table needs few attributes
                yield structure, estimator, params


@pytest.mark.parametrize("dataset", ["labor", "lung-cancer", "zoo"])  # missing values; 56 attributes for 32 rows; 7 classes
def test_predict_proba_is_a_distribution_for_every_model(shared_data_dir, dataset):
    data = load_dataset(spec(dataset), shared_data_dir)
    train = np.arange(len(data.y)) % 2 == 0
    discretizer = MDLDiscretizer().fit(data.X[train], data.y[train])
    X_train, X_test = discretizer.transform(data.X[train]), discretizer.transform(data.X[~train])
    for structure, estimator, params in _defined_models():
        clf = BNClassifier(structure=structure, k=2, estimator=estimator, estimator_params=params, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenValuesWarning)  # a test half may miss some values
            proba = clf.fit(X_train, data.y[train]).predict_proba(X_test)
        assert np.isfinite(proba).all() and (proba >= 0).all(), (structure, estimator)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, err_msg=f"{structure}, {estimator}")


def test_a_nan_probability_is_an_error_not_an_answer():
    clf = BNClassifier(estimator="laplace").fit(X, Y)
    clf.packed_.log_tables[:] = np.nan  # what a bug in an estimator would leave
    with pytest.raises(BncbenchError, match="gave NaN probabilities for 40 of 40 rows. This is a bug"):
        clf.predict_proba(X)


# --- continuous columns -------------------------------------------------------------------------------


def test_a_continuous_column_warns_naming_it_and_the_fix(shared_data_dir):
    data = load_dataset(spec("iris"), shared_data_dir)
    with pytest.warns(ContinuousColumnWarning) as record:
        BNClassifier().fit(data.X, data.y)
    message = str(record[0].message)
    assert all(repr(column) in message for column in data.X.columns)
    assert "make_pipeline(MDLDiscretizer(), BNClassifier(...))" in message


def test_numbers_written_as_strings_that_look_continuous_warn_saying_to_convert_them(no_bncbench_warning):
    numbers, y = _numbers(200, CONTINUOUS_MIN_VALUES)
    with pytest.warns(ContinuousColumnWarning, match=r"\['x'\] hold numbers written as strings.*pd.to_numeric"):
        BNClassifier().fit(numbers.astype(str), y)
    BNClassifier().fit(numbers.astype(str).assign(x=lambda f: f.x + "cm"), y)  # not numbers: no warning
    BNClassifier().fit(_numbers(200, 200, offset=0)[0].astype(str), y)  # integers: no warning


def _numbers(n_rows, n_values, dtype=float, offset=0.5):
    """A column of ``n_values`` distinct numbers ``i + offset`` over ``n_rows`` rows, and random classes."""
    rng = np.random.default_rng(0)
    values = rng.permutation(np.resize(np.arange(n_values) + offset, n_rows))
    return pd.DataFrame({"x": pd.Series(values, dtype=dtype)}), rng.choice(["p", "q"], n_rows)


def test_the_continuous_threshold(no_bncbench_warning):
    at_most_fraction = int(CONTINUOUS_FRACTION * 1000) - 1
    assert at_most_fraction >= CONTINUOUS_MIN_VALUES and CONTINUOUS_FRACTION * 200 < CONTINUOUS_MIN_VALUES
    BNClassifier().fit(*_numbers(200, CONTINUOUS_MIN_VALUES - 1))  # over the fraction, under the minimum
    BNClassifier().fit(*_numbers(1000, at_most_fraction))  # over the minimum, under the fraction
    BNClassifier().fit(*_numbers(200, 200, offset=0))  # integers
    with pytest.warns(ContinuousColumnWarning, match=f"'x' .{CONTINUOUS_MIN_VALUES} distinct values"):
        BNClassifier().fit(*_numbers(200, CONTINUOUS_MIN_VALUES, dtype=object))  # numbers in an object column
    with pytest.warns(ContinuousColumnWarning, match=f"'x' .{at_most_fraction + 1} distinct values"):
        BNClassifier().fit(*_numbers(1000, at_most_fraction + 1))


@pytest.mark.parametrize("dataset", ["iris", "sonar"])
def test_the_runners_discretised_folds_never_warn(no_bncbench_warning, shared_data_dir, dataset):
    data = load_dataset(spec(dataset), shared_data_dir)
    model = {"structure": "kdb", "k": 2, "structure_params": {}, "estimator": "m_estimate", "estimator_params": {}}
    cv = cross_validate(data, model, repetitions=1, folds=2, seed=0)
    assert (cv.metrics["zero_one_loss"] < 0.4).all()


# --- kinds of values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "given", "kinds"),
    [
        ("a", X["a"].astype(str), "holds strings \\(e.g. '1'\\) but held numbers in training \\(e.g. 1\\)"),
        ("b", pd.Series([1, 2] * 20), "holds numbers \\(e.g. 1\\) but held strings in training \\(e.g. 'x'\\)"),
        ("a", X["a"] == 1, "holds booleans \\(e.g. (np\\.True_|True)\\) but held numbers"),
    ],
)
def test_values_of_another_kind_at_prediction_are_refused(column, given, kinds):
    clf = BNClassifier(estimator="laplace").fit(X, Y)
    fix = {"a": "pd.to_numeric\\(X\\['a'\\]\\)", "b": "X\\['b'\\].map\\(str, na_action='ignore'\\)"}[column]
    with pytest.raises(ValueError, match=f"^column '{column}' {kinds}.*e.g. X\\['{column}'\\] = {fix}"):
        clf.predict(X.assign(**{column: given}))


def test_numbers_are_numbers_whatever_their_type_and_missing_values_stay_values():
    X_missing = X.assign(a=X["a"].where(np.arange(len(X)) % 5 != 0))  # NaN every fifth row, float64
    clf = BNClassifier(estimator="laplace").fit(X_missing, Y)
    expected = clf.predict_proba(X_missing)
    as_objects = X_missing.assign(a=pd.Series([None if pd.isna(v) else int(v) for v in X_missing["a"]], dtype=object))
    np.testing.assert_allclose(clf.predict_proba(as_objects), expected)  # ints and None in an object column
    np.testing.assert_allclose(clf.predict_proba(X_missing.assign(a=X_missing["a"].astype("Int64"))), expected)
    assert clf.cpt("a").columns.isna().sum() == 1  # missing is a value of its own
    clf = BNClassifier(estimator="laplace").fit(X, Y)
    with pytest.warns(UnseenValuesWarning):  # "b" (strings) had no missing value in training
        every_b_missing = clf.predict_proba(X.assign(b=np.nan))  # a float column without numbers: no kind to refuse
    with pytest.warns(UnseenValuesWarning):
        np.testing.assert_allclose(every_b_missing, clf.predict_proba(X.assign(b="unseen")))


def test_a_column_whose_every_value_is_unseen_warns(no_bncbench_warning):
    clf = BNClassifier(estimator="laplace").fit(X, Y)
    clf.predict(X.assign(a=[3] + [1] * 39))  # one value unseen: no warning
    with pytest.warns(UnseenValuesWarning, match=r"no value of the columns \['a'\] was seen in training.* 40 rows"):
        clf.predict(X.assign(a=X["a"] + 0.5))


# --- class labels ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "y", [[1, 1.0, 2, 2] * 10, np.array([1, 1.0, 2, 2] * 10, dtype=object), pd.Series([1, 1.0, 2, 2] * 10, dtype=object)]
)
def test_class_numbers_of_any_type_are_one_class(y):
    assert BNClassifier().fit(X, y).classes_.tolist() == [1, 2]


def test_class_strings_are_labels_as_written():
    assert BNClassifier().fit(X, ["1", "1.0", "2", "2"] * 10).classes_.tolist() == ["1", "1.0", "2"]


@pytest.mark.parametrize("y", [[1, "1", 2, 2] * 10, np.array([1, "1", 2, 2] * 10, dtype=object)])
def test_class_labels_mixing_numbers_and_strings_are_refused(y):
    with pytest.raises(DatasetError, match=r"the class mixes numbers and strings \(e.g. 1, '1'\).*y.map\(str\)"):
        BNClassifier().fit(X, y)


def test_many_classes_warn_only_when_they_outnumber_half_the_rows():
    """26 classes in 260 rows are a classification (scikit-learn's warning, given the distinct labels
    only, took them for 26 rows); 25 classes in 30 rows may be a regression target."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BNClassifier().fit(pd.DataFrame({"a": ["x", "y"] * 130}), np.repeat(letters, 10))
    with pytest.warns(UserWarning, match=r"greater than 50% of the number of samples \(25 classes in 30 rows\)"):
        BNClassifier().fit(pd.DataFrame({"a": ["x", "y"] * 15}), [*letters[:25], *letters[:5]])


# --- structures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("structure", "message"),
    [
        ({"a": "bc"}, "the parents of 'a' .* got 'bc': write \\['bc'\\] for one parent named 'bc', or \\['b', 'c'\\] for the 2 parents 'b', 'c'"),
        ({"a": "b"}, "got 'b': write \\['b'\\] for one parent named 'b'\\.$"),
        ({"a": None}, "the parents of 'a' in the structure must be a list of attribute names, got None"),
        ({"a": [["b"]]}, "must be a list of attribute names, got \\[\\['b'\\]\\]"),
        ({"a": ["class"]}, "not columns of X: \\['class'\\]; the columns are \\['a', 'b'\\] \\(the class is not listed"),
        ({"class": ["a"]}, "not columns of X: \\['class'\\]"),
        ({"a": ["b", "b"]}, "lists itself or a parent twice"),
        ({"a": ["a"]}, "lists itself"),
        ({"a": ["b"], "b": ["a"]}, "the structure has a cycle: a -> b -> a"),
        (["a", "b"], "unknown structure \\['a', 'b'\\]"),
    ],
)
def test_a_malformed_structure_is_refused_saying_how_to_write_it(structure, message):
    with pytest.raises(ConfigError, match=message):
        BNClassifier(structure=structure).fit(X, Y)
