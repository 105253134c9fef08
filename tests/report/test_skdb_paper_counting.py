"""The SkDB paper's W-D-L (Sect. 3.1: a win or a loss only where a Wilcoxon signed-rank test of the fold
errors is significant) on a hand-computed example, and its "best k" kDB chosen in hindsight."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from bncbench.core.errors import ConfigError
from bncbench.report.best_of import best_of, check_best_of
from bncbench.report.significance import dataset_tests
from bncbench.report.significant_wdl import check_counting
from bncbench.report.tables import wdl_table

# fold errors of B on three datasets, and A's differences from them: d1 all lower (A wins), d2 lower on
# average but with mixed signs (a draw), d3 all higher (A loses)
B = 0.3 + 0.01 * np.arange(10)
DIFFERENCES = {
    "d1": -0.001 * np.arange(1, 11),
    "d2": 0.001 * np.array([-9, 8, -7, 6, -5, 4, -3, 2, -10, 1]),
    "d3": 0.002 * np.arange(1, 11),
}


@pytest.fixture
def logged():
    rows, folds = [], []
    for dataset, d in DIFFERENCES.items():
        for model, scores in (("a", B + d), ("b", B)):
            run_id = f"{model}-{dataset}"
            rows.append({"dataset": dataset, "model": model, "run_id": run_id, "cfg_hash": "", "rmse": scores.mean()})
            folds += [{"run_id": run_id, "metric": "rmse", "fold": f, "value": v} for f, v in enumerate(scores)]
    return pd.DataFrame(rows), pd.DataFrame(folds)


def test_the_wilcoxon_p_values_by_hand_and_by_scipy(logged):
    results, folds = logged
    tests = dataset_tests(results, folds, [("a", "b")], ["rmse"], folds_per_repetition=10).set_index("dataset")
    # by hand: all 10 signs negative (or positive), exact two-sided p = 2 / 2^10
    assert tests.loc["d1", "wilcoxon_p_value"] == pytest.approx(2 / 1024)
    assert tests.loc["d3", "wilcoxon_p_value"] == pytest.approx(2 / 1024)
    # d2: |d| ranks 9 8 7 6 5 4 3 2 10 1, positive ranks 8 + 6 + 4 + 2 + 1 = 21: p = P(T <= 21) * 2
    assert tests.loc["d2", "wilcoxon_statistic"] == 21
    for dataset, d in DIFFERENCES.items():
        scipy = wilcoxon(d)
        assert tests.loc[dataset, "wilcoxon_p_value"] == pytest.approx(scipy.pvalue, rel=1e-12)
        assert tests.loc[dataset, "wilcoxon_statistic"] == scipy.statistic


def test_a_dataset_is_a_win_or_a_loss_only_where_the_test_is_significant(logged):
    results, folds = logged
    tests = dataset_tests(results, folds, [("a", "b")], ["rmse"], folds_per_repetition=10)
    assert results.set_index(["dataset", "model"]).loc[("d2", "a"), "rmse"] < B.mean()  # lower mean: a win by means
    (paper,) = wdl_table(results, [{"a": "a", "b": "b"}], ["rmse"], draws="exclude", round=None, alpha=0.05,
                         dataset_tests=tests)
    assert (paper.wins, paper.draws, paper.losses, paper.n) == (1, 1, 1, 2)
    (means,) = wdl_table(results, [{"a": "a", "b": "b"}], ["rmse"])
    assert (means.wins, means.draws, means.losses) == (2, 0, 1)
    (strict,) = wdl_table(results, [{"a": "a", "b": "b"}], ["rmse"], draws="exclude", round=None, alpha=0.001,
                          dataset_tests=tests)  # 2 / 1024 > 0.001: nothing significant
    assert (strict.wins, strict.draws, strict.losses) == (0, 3, 0)


def test_best_k_in_hindsight_on_a_hand_made_table():
    means = {  # dataset: (kdb1, kdb2, kdb3) rmse; zero_one_loss
        "d1": ((0.30, 0.20, 0.25), (0.10, 0.12, 0.09)),
        "d2": ((0.40, 0.40, 0.50), (0.20, 0.20, 0.20)),  # ties: the first of the list
        "d3": ((0.10, np.nan, 0.05), (0.05, 0.04, 0.03)),  # kdb2 has no rmse there: no pick on rmse
    }
    rows = [
        {"dataset": d, "model": f"kdb{k + 1}", "run_id": f"r{d}{k + 1}", "cfg_hash": "", "rmse": r[k],
         "zero_one_loss": z[k]}
        for d, (r, z) in means.items() for k in range(3)
    ]
    results = pd.DataFrame(rows + [{"dataset": "d4", "model": "kdb1", "run_id": "x", "cfg_hash": "", "rmse": 0.1,
                                    "zero_one_loss": 0.1}])  # d4 lacks kdb2, kdb3: no pick
    hindsight = best_of(results, {"best_k": ["kdb1", "kdb2", "kdb3"]}, ["rmse", "zero_one_loss"])
    picks = hindsight.picks.set_index(["dataset", "metric"])["model"].to_dict()
    assert picks == {("d1", "rmse"): "kdb2", ("d1", "zero_one_loss"): "kdb3", ("d2", "rmse"): "kdb1",
                     ("d2", "zero_one_loss"): "kdb1", ("d3", "zero_one_loss"): "kdb3"}
    chosen = hindsight.rows.set_index("dataset")
    assert chosen.loc["d1", "rmse"] == 0.20 and chosen.loc["d1", "zero_one_loss"] == 0.09
    assert np.isnan(chosen.loc["d3", "rmse"]) and np.isnan(chosen.loc["d4", "rmse"])
    assert set(chosen["model"]) == {"best_k"}
    counted = best_of(results.assign(total_errors=range(len(results))), {"best_k": ["kdb1", "kdb2", "kdb3"]},
                      ["zero_one_loss"]).rows.set_index("dataset")
    assert counted.loc["d1", "total_errors"] == 2  # the errors of the pick on 0-1 loss, kdb3 (row 2)
    folds = pd.DataFrame({"run_id": ["rd12", "rd13", "rd11"], "metric": ["rmse", "zero_one_loss", "rmse"],
                          "fold": [0, 0, 0], "value": [0.2, 0.09, 0.3]})
    added = hindsight.fold_metrics(folds).iloc[3:]
    assert added.to_dict("list") == {"run_id": ["best_k@d1", "best_k@d1"], "metric": ["rmse", "zero_one_loss"],
                                     "fold": [0, 0], "value": [0.2, 0.09]}


@pytest.mark.parametrize("bad", [{"best": "kdb1"}, {"best": ["kdb1"]}, ["kdb1", "kdb2"]])
def test_bad_report_settings_are_named(bad):
    with pytest.raises(ConfigError, match="report.best_of must map a name"):
        check_best_of(bad)
    with pytest.raises(ConfigError, match="report.counting must be one of means, wilcoxon"):
        check_counting("sign")
