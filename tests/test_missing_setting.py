"""``missing`` as a model setting: a grid chooses it, the cell's hash holds it only when it is not the
default ``value``, and a cell with ``missing: ignore`` cross-validates a dataset with missing values."""

import numpy as np
import pandas as pd
import pytest

from bncbench.core.errors import ConfigError
from bncbench.data import MDLDiscretizer
from bncbench.protocol.cell import semantic_hash
from bncbench.protocol.cross_validation import cross_validate
from bncbench.protocol.models import model_spec

GRID = [{"structure": "tan", "estimator": "laplace", "missing": ["value", "ignore"], "name": "tan_laplace_{missing}"}]


def _hash(model):
    return semantic_hash({"dataset": {"name": "x"}, "model": model, "cv": {}})


def test_a_grid_sweeps_missing_and_only_ignore_changes_the_hash():
    value, ignore = model_spec("tan_laplace_value", GRID), model_spec("tan_laplace_ignore", GRID)
    assert (value["missing"], ignore["missing"]) == ("value", "ignore")
    assert _hash(value) == _hash(model_spec("tan_laplace"))
    assert _hash(ignore) != _hash(value)


def test_an_unknown_missing_value_is_refused_before_running():
    from bncbench.app.checks import check_model

    with pytest.raises(ConfigError, match="missing must be one of"):
        check_model("m", {**model_spec("tan_laplace"), "missing": "drop"})


def test_the_discretiser_keeps_missing_as_nan_for_ignore():
    X = pd.DataFrame({"v": [0.1, 0.2, np.nan, 5.0, 5.1, 5.2, 0.3, np.nan]})
    y = ["a", "a", "a", "b", "b", "b", "a", "b"]
    binned = MDLDiscretizer().fit(X, y).transform(X)["v"]
    kept = MDLDiscretizer(missing="keep").fit(X, y).transform(X)["v"]
    assert binned.isna().sum() == 0 and kept.isna().sum() == 2
    np.testing.assert_array_equal(kept.dropna(), binned[X["v"].notna()])


def test_a_cell_with_missing_ignore_runs_on_hepatitis(shared_data_dir):
    from bncbench.data import load_dataset

    spec = dict(name="hepatitis", source="store", openml_id=None, openml_target=None, drop=[])
    data = load_dataset(spec, shared_data_dir)
    assert data.X.isna().any().any()
    model = model_spec("tan_laplace_ignore", GRID)
    result = cross_validate(data, model, repetitions=1, folds=2, seed=1)
    assert len(result.metrics) == 2
    assert (result.metrics["zero_one_loss"] < 0.5).all()
