import numpy as np
import pandas as pd
import pytest

from bncbench.baselines import make_baseline
from bncbench.data import load_dataset
from bncbench.core.errors import ConfigError
from bncbench.protocol.cross_validation import cross_validate


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    n = 400
    y = rng.choice(["a", "b", "c"], n)
    X = pd.DataFrame(
        {
            "colour": np.where(y == "a", "red", rng.choice(["green", "blue", None], n)),
            "size": np.where(y == "b", rng.normal(5, 1, n), rng.normal(0, 1, n)),
            "bins": rng.integers(0, 4, n),
        }
    )
    X.loc[::17, "size"] = np.nan
    return X, y


@pytest.mark.parametrize("name", ["random_forest", "xgboost"])
def test_baselines_learn_mixed_data_with_missing_and_unseen_values(mixed, name):
    X, y = mixed
    model = make_baseline(name, {}, random_state=0).fit(X, y)
    assert list(model.classes_) == ["a", "b", "c"]
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert (model.predict(X) == y).mean() > 0.9
    unseen = X.iloc[:5].assign(colour="ultraviolet")
    assert np.isfinite(model.predict_proba(unseen)).all()
    again = make_baseline(name, {}, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), proba)  # deterministic under a seed


@pytest.mark.parametrize("name", ["random_forest", "xgboost"])
def test_baselines_take_any_column_name_and_a_nominal_column_missing_throughout(mixed, name):
    """As in anneal (a nominal attribute with no value in a training fold) and spambase (attribute
    names such as ``char_freq_[``, which XGBoost refuses)."""
    X, y = mixed
    X = X.assign(empty=pd.Series([None] * len(X), dtype=object)).rename(columns={"size": "char_freq_[<"})
    model = make_baseline(name, {}, random_state=0).fit(X, y)
    assert (model.predict(X) == y).mean() > 0.9
    assert np.isfinite(model.predict_proba(X.iloc[:5].assign(empty="seen at last"))).all()


def test_random_forest_uses_wekas_number_of_attributes_per_split(mixed):
    X, y = mixed
    forest = make_baseline("random_forest", {}, random_state=0).fit(X, y).forest_
    assert forest.max_features == int(np.log2(3)) + 1
    assert forest.n_estimators == 100 and forest.min_samples_leaf == 1


def test_xgboost_has_the_papers_settings(mixed):
    X, y = mixed
    booster = make_baseline("xgboost", {}, random_state=0).fit(X, y).booster_
    assert booster.max_depth == 6 and booster.n_estimators == 50 and booster.enable_categorical


def test_unknown_baseline_or_parameter():
    with pytest.raises(ConfigError, match="valid baselines: random_forest, weka_random_forest, xgboost"):
        make_baseline("svm", {})
    with pytest.raises(ConfigError, match="n_tree"):
        make_baseline("random_forest", {"n_trees": 3})


@pytest.mark.parametrize("discretise", [True, False])
def test_baselines_run_in_cross_validation_on_discretised_or_raw_folds(discretise):
    iris = load_dataset({"name": "sklearn-iris", "source": "sklearn", "openml_id": None, "openml_target": None, "drop": []}, None)
    model = {"name": "rf", "baseline": "random_forest", "baseline_params": {"n_estimators": 10}, "discretise": discretise}
    result = cross_validate(iris, model, repetitions=1, folds=2, seed=0)
    assert len(result.metrics) == 2
    assert result.metrics["zero_one_loss"].max() < 0.2
    assert result.structures == []
