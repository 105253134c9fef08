"""Win-loss curves against iterations, with models told apart by their logged params."""

import pandas as pd
import pytest

from bncbench.report.results import load_results, read_runs
from bncbench.report.win_loss_curves import ITERATIONS, TYING, model_specs, win_loss_curves


@pytest.fixture(scope="module")
def logged(hdp_store):
    return load_results(hdp_store, "hdp"), model_specs(read_runs(hdp_store, "hdp").model_params())


def test_params_per_model(hdp_store):
    params = read_runs(hdp_store, "hdp").model_params()
    assert params.loc["h1", ITERATIONS] == "500"
    assert pd.isna(params.loc["h2", ITERATIONS])  # not set: the estimator's default
    assert params.loc["nb_m_estimate", "model.estimator_params"] == "{}"
    assert "model.name" not in params.columns


def test_specs_fill_the_estimators_defaults(logged):
    _, specs = logged
    assert specs.loc["h2", ITERATIONS] == "5000"  # HDPEstimator's default
    assert specs.loc["nb_hdp", TYING] == "level"
    assert specs.loc["nb_m_estimate", ITERATIONS] == ""  # the m-estimate has no iterations
    assert specs.loc["nb_m_estimate", "model.estimator_params.m"] == "None"
    assert "model.estimator_params" not in specs.columns  # '{}' is no parameter


def records(curves):
    return [
        (row.line, row.model, row.reference, row.iterations, row.wins, row.draws, row.losses)
        for row in curves.itertuples()
    ]


def test_against_the_most_iterations(logged):
    results, specs = logged
    curves = win_loss_curves(results, specs, "rmse")
    assert records(curves) == [
        ("tying=level", "h1", "h3", 500, 0, 0, 6),
        ("tying=level", "h2", "h3", 5000, 3, 0, 3),
        ("tying=single", "h4", "h5", 500, 0, 0, 6),
    ]
    assert curves["p_value"].tolist() == pytest.approx([2 / 64, 1.0, 2 / 64])


def test_against_a_tying(logged):
    results, specs = logged
    curves = win_loss_curves(results, specs, "zero_one_loss", reference_tying="level")
    assert records(curves) == [
        ("tying=single", "h4", "h1", 500, 1, 0, 5),
        ("tying=single", "h5", "h3", 50000, 3, 0, 3),
    ]


def test_options_and_datasets_pass_through(logged):
    results, specs = logged
    curves = win_loss_curves(results, specs, "rmse", datasets=["d0", "d5"], round=0)
    assert curves[["wins", "draws", "losses"]].to_numpy().tolist() == [[0, 2, 0]] * 3


def test_no_curve_without_iterations(make_results):
    results = make_results({"a": {"rmse": [0.1]}, "b": {"rmse": [0.2]}})
    specs = pd.DataFrame({"model.estimator": ["m_estimate", "m_estimate"]}, index=["a", "b"])
    assert win_loss_curves(results, model_specs(specs), "rmse").empty
    assert win_loss_curves(results, model_specs(specs), "rmse", reference_tying="level").empty
