"""Draws on 0-1 loss are equal numbers of errors: the folds' counts as logged, or derived exactly from
the error rates and the split's test rows for runs that predate the counts."""

import numpy as np
import pandas as pd
import pytest

from bncbench.app.config import compose
from bncbench.core.errors import ConfigError
from bncbench.data import load_dataset
from bncbench.protocol.cross_validation import cross_validate, fold_test_rows
from bncbench.report.error_counts import TOTAL_ERRORS, with_total_errors
from bncbench.report.win_draw_loss import win_draw_loss
from bncbench.app.reporting import plan_test_rows


def folds_frame(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """The long per-fold frame of ``{run_id: {metric: [fold values]}}``, as the store returns it."""
    rows = [
        (run_id, metric, fold, value)
        for run_id, metrics in values.items()
        for metric, folds in metrics.items()
        for fold, value in enumerate(folds)
    ]
    return pd.DataFrame(rows, columns=["run_id", "metric", "fold", "value"])


def test_fold_test_rows_are_those_of_cross_validate():
    dataset = load_dataset("glass")  # 214 rows, six classes of 9 to 76: folds of 107 rows
    model = {"structure": "nb", "k": 0, "structure_params": {}, "estimator": "m_estimate", "estimator_params": {}}
    result = cross_validate(dataset, model, repetitions=3, folds=3, seed=7)
    rows = fold_test_rows(dataset.y, repetitions=3, folds=3, seed=7)
    assert rows.tolist() == result.metrics["test_rows"].tolist()
    assert rows.sum() == 3 * len(dataset.y)
    np.testing.assert_array_equal(result.metrics["errors"], result.metrics["zero_one_loss"] * rows)


def test_total_errors_are_the_logged_counts_or_the_rates_times_the_test_rows():
    results = pd.DataFrame({"dataset": ["d", "d"], "run_id": ["new", "old"]})
    folds = folds_frame(
        {
            "new": {"zero_one_loss": [2 / 51, 1 / 50], "errors": [2, 1]},
            "old": {"zero_one_loss": [3 / 51, 0 / 50]},  # logged before the counts
        }
    )
    totals = with_total_errors(results, folds, lambda dataset: np.array([51, 50]))
    assert totals[TOTAL_ERRORS].tolist() == [3, 3]


def test_rates_that_are_not_whole_errors_of_the_split_are_refused():
    results = pd.DataFrame({"dataset": ["d"], "run_id": ["old"]})
    folds = folds_frame({"old": {"zero_one_loss": [3 / 51, 1 / 49]}})
    with pytest.raises(ConfigError, match="not whole numbers"):
        with_total_errors(results, folds, lambda dataset: np.array([51, 50]))
    with pytest.raises(ConfigError, match="has 2 folds but its cross-validation split has 3"):
        with_total_errors(results, folds, lambda dataset: np.array([34, 34, 33]))
    with pytest.raises(ConfigError, match="BNCBENCH_DATA_DIR"):
        with_total_errors(results, folds, None)


def test_equal_errors_are_a_draw_though_the_mean_rates_differ(make_results):
    # d0: A errs 2 + 0 times on folds of 51 and 50 rows, B 0 + 2: mean rates 0.0196 and 0.02, 2 errors each
    # d1: A 1 error, B 2; d2: A 3, B 1
    rates = {"a": [2 / 51 / 2, 1 / 102, 3 / 102], "b": [2 / 50 / 2, 2 / 102, 1 / 102]}
    results = make_results({model: {"zero_one_loss": r} for model, r in rates.items()})
    by_means = win_draw_loss(results, "a", "b", "zero_one_loss")
    assert (by_means.wins, by_means.draws, by_means.losses) == (2, 0, 1)
    counted = results.assign(**{TOTAL_ERRORS: [2, 1, 3, 2, 2, 1]})  # rows: (d0, a), (d1, a), ..., (d2, b)
    assert counted.set_index(["dataset", "model"]).loc[("d0", "b"), TOTAL_ERRORS] == 2
    w = win_draw_loss(counted, "a", "b", "zero_one_loss")
    assert (w.wins, w.draws, w.losses) == (1, 1, 1)
    assert win_draw_loss(counted, "a", "b", "zero_one_loss", round=1).draws == 1  # counts are not rounded


def test_a_plan_counts_its_folds_test_rows_from_its_datasets_files():
    plan = compose(["experiment=smoke", "experiment.datasets=[glass]", "cv.repetitions=2", "cv.seed=3"]).plan
    test_rows = plan_test_rows(plan, None)  # BNCBENCH_DATA_DIR
    expected = fold_test_rows(load_dataset("glass").y, repetitions=2, folds=2, seed=3)
    assert test_rows("glass").tolist() == expected.tolist() == [107] * 4
    with pytest.raises(ConfigError, match="not a dataset of experiment .smoke."):
        test_rows("iris")  # not a dataset of the plan
