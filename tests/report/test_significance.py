"""Per-dataset fold tests, Wilcoxon across datasets, Friedman-Nemenyi: by hand and from MLflow."""

from math import sqrt

import numpy as np
import pandas as pd
import pytest

from bncbench.report.results import load_fold_metrics, load_results
from bncbench.report.significance import (
    Undefined,
    dataset_tests,
    friedman_nemenyi,
    wilcoxon_across_datasets,
)
from bncbench.report.win_draw_loss import win_draw_loss


@pytest.fixture(scope="module")
def logged(hdp_store):
    results = load_results(hdp_store, "hdp")
    return results, load_fold_metrics(hdp_store, results["run_id"], ["rmse", "zero_one_loss"])


def test_dataset_tests_by_hand(logged):
    results, folds = logged
    tests = dataset_tests(results, folds, [("nb_hdp", "nb_m_estimate")], ["rmse"])
    assert list(tests["dataset"]) == [f"d{i}" for i in range(6)]
    d0 = tests.iloc[0]
    assert (d0["a"], d0["b"], d0["metric"], d0["folds"], d0["note"]) == (
        "nb_hdp",
        "nb_m_estimate",
        "rmse",
        10,
        "",
    )
    assert d0["mean_a"] == pytest.approx(0.5 - 0.18) and d0["mean_b"] == pytest.approx(0.5)
    # differences -D0_DIFFERENCES: t = -0.1 / sqrt(0.024), f = 0.46 / 0.24 (test_paired_tests)
    assert d0["t_statistic"] == pytest.approx(-0.1 / sqrt(0.024), rel=1e-9)
    assert d0["f_statistic"] == pytest.approx(0.46 / 0.24, rel=1e-9)
    # every difference is negative: W = 0, p = 2 / 2^9 (one zero difference dropped)
    assert (d0["wilcoxon_statistic"], d0["wilcoxon_p_value"]) == (0.0, pytest.approx(2 / 512))
    # d1..d5: differences -0.04, -0.06 in each repetition: s_i^2 = 2e-4, t = -0.04 / sqrt(2e-4)
    assert tests["t_statistic"].iloc[1:].tolist() == pytest.approx([-2 * sqrt(2)] * 5, rel=1e-9)


def test_fold_wilcoxon_counts_the_skdb_paper_way(logged):
    results, folds = logged
    pair = ("skdb_m_estimate", "kdb5_m_estimate")
    tests = dataset_tests(results, folds, [pair], ["rmse"]).set_index("dataset")
    assert tests["wilcoxon_p_value"].iloc[:3].tolist() == pytest.approx([2 / 1024] * 3)
    assert (tests["wilcoxon_p_value"].iloc[3:] > 0.05).all()
    by_means = win_draw_loss(results, *pair, "rmse")
    by_folds = win_draw_loss(results, *pair, "rmse", dataset_p_values=tests["wilcoxon_p_value"])
    assert (by_means.wins, by_means.draws, by_means.losses) == (6, 0, 0)
    assert (by_folds.wins, by_folds.draws, by_folds.losses, by_folds.n) == (3, 3, 0, 3)
    none = win_draw_loss(results, *pair, "rmse", dataset_p_values={})  # no p-value: a draw
    assert (none.wins, none.draws, none.losses) == (0, 6, 0)


def test_missing_folds_and_other_cv(logged):
    results, folds = logged
    pair = [("nb_hdp", "nb_m_estimate")]
    d0_hdp = results.set_index(["dataset", "model"]).loc[("d0", "nb_hdp"), "run_id"]
    partial = folds.loc[~((folds["run_id"] == d0_hdp) & (folds["fold"] == 9))]
    tests = dataset_tests(results, partial, pair, ["rmse"])
    assert tests["folds"].tolist() == [9] + [10] * 5
    assert tests["note"].iloc[0] == "some folds of A or B are not logged: no test"
    assert np.isnan(tests["t_p_value"].iloc[0]) and np.isnan(tests["wilcoxon_p_value"].iloc[0])
    three = dataset_tests(results, folds, pair, ["rmse"], folds_per_repetition=3)
    assert three["t_p_value"].isna().all() and three["f_p_value"].isna().all()
    assert three["wilcoxon_p_value"].notna().all()
    assert set(three["note"]) == {"5x2cv tests need 2-fold CV repetitions (cv.folds = 2)"}


def test_equal_folds_are_undefined(logged):
    results, folds = logged
    tests = dataset_tests(results, folds, [("h2", "h5")], ["rmse"])  # same values
    assert set(tests["note"]) == {"A and B equal on every fold: no test defined"}
    assert tests[["t_p_value", "f_p_value", "wilcoxon_p_value"]].isna().all().all()


def test_wilcoxon_across_datasets(make_results):
    # differences -1, -2, +3, -4, -5 (and a draw): W = 3, p = 10 / 32 (test_paired_tests)
    results = make_results({"a": {"rmse": [1, 2, 6, 4, 5, 7]}, "b": {"rmse": [2, 4, 3, 8, 10, 7]}})
    w = wilcoxon_across_datasets(results, [("a", "b")], ["rmse"]).iloc[0]
    assert (w["a"], w["b"], w["metric"], w["datasets"]) == ("a", "b", "rmse", 6)
    assert (w["wilcoxon_statistic"], w["wilcoxon_p_value"]) == (3.0, pytest.approx(10 / 32))


def ranks_results(make_results, n_datasets):
    """a < b < c on every dataset."""
    return make_results(
        {
            "a": {"rmse": [0.1] * n_datasets},
            "b": {"rmse": [0.2] * n_datasets},
            "c": {"rmse": [0.3] * n_datasets + [0.1]},  # and one dataset of c alone
        }
    )


def test_friedman_nemenyi_by_hand(make_results):
    ranking = friedman_nemenyi(ranks_results(make_results, 5), ["c", "a", "b"], "rmse")
    assert ranking.mean_ranks.to_dict() == {"a": 1.0, "b": 2.0, "c": 3.0}
    assert (ranking.datasets, ranking.dropped) == (5, ("d5",))
    # chi2 = 12 N / (k (k + 1)) sum R_j^2 - 3 N (k + 1) = 12 * 5 / 12 * 14 - 60
    assert ranking.statistic == pytest.approx(10.0)
    assert ranking.p_value == pytest.approx(np.exp(-10.0 / 2))  # chi2 with 2 df
    # Demsar (2006), Table 5(a): q_0.05 = 2.343 for k = 3; CD = q sqrt(k (k + 1) / (6 N))
    assert ranking.critical_difference == pytest.approx(2.343 * sqrt(12 / 30), rel=1e-3)


@pytest.mark.parametrize(
    ("models", "n_datasets", "match"),
    [
        (["a", "b"], 5, "ranks at least 3 models, the experiment has 2"),
        (["a", "b", "c"], 4, "needs at least 5 datasets where every model has a rmse, there are 4"),
    ],
)
def test_friedman_undefined(make_results, models, n_datasets, match):
    with pytest.raises(Undefined, match=match):
        friedman_nemenyi(ranks_results(make_results, n_datasets), models, "rmse")


def test_fold_tests_cover_only_datasets_with_both_means(logged):
    results, folds = logged
    tests = dataset_tests(
        results, folds, [("nb_hdp", "nb_m_estimate")], ["rmse"], datasets=["d1", "d9"]
    )
    assert list(tests["dataset"]) == ["d1"]
    empty = dataset_tests(results, folds, [], ["rmse"])
    assert empty.empty and isinstance(empty, pd.DataFrame)
