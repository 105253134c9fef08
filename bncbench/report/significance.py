"""Significance of an experiment's results beyond the sign test, computed from the logged scores.

- Wilcoxon signed-rank test of each comparison across datasets (on the mean losses);
- per dataset and comparison, from the fold scores: Dietterich's 5x2cv t-test, Alpaydin's combined
  5x2cv F-test and a Wilcoxon signed-rank test of the fold differences;
- Friedman's test over all models of an experiment with Nemenyi's post-hoc critical difference
  (Demsar 2006), by :mod:`autorank`.
"""

import contextlib
import io
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import friedmanchisquare

from bncbench.report.paired_tests import five_by_two_f_test, five_by_two_t_test, wilcoxon_signed_rank
from bncbench.report.win_draw_loss import model_means, paired_means, same_mean

if TYPE_CHECKING:
    from autorank.autorank import RankResult

#: autorank's lower bound on the number of datasets (its "performance estimations").
MIN_FRIEDMAN_DATASETS = 5


class Undefined(Exception):
    """A statistic or a figure that the results do not define; the message says why."""


DATASET_TEST_COLUMNS = [
    "a", "b", "metric", "dataset", "mean_a", "mean_b", "folds", "t_statistic", "t_p_value", "f_statistic",
    "f_p_value", "wilcoxon_statistic", "wilcoxon_p_value", "note",
]


def dataset_tests(results: pd.DataFrame, folds: pd.DataFrame, pairs: Iterable[tuple[str, str]], metrics: Iterable[str],
                  *, datasets: Iterable[str] | None = None, folds_per_repetition: int = 2) -> pd.DataFrame:
    """Paired tests of each comparison (A, B) of ``pairs`` on each dataset's fold scores of ``metrics`` (lower is
    better).

    Parameters
    ----------
    results : pandas.DataFrame
        One row per (dataset, model) with ``run_id`` and the mean metrics
        (:func:`bncbench.report.results.load_results`).
    folds : pandas.DataFrame
        Fold scores of those runs, columns ``run_id``, ``metric``, ``fold``, ``value``
        (:func:`bncbench.report.results.load_fold_metrics`); fold index = 2 * repetition + fold.
    datasets : iterable of str, optional
        Datasets to cover (default: every dataset in ``results``); a dataset where A or B has no
        mean is left out, as in the win-draw-loss tables.
    folds_per_repetition : int
        Folds of each CV repetition (``cv.folds``); the 5x2cv tests need 2 and are NaN otherwise.

    Returns
    -------
    pandas.DataFrame
        One row per (A, B, metric, dataset): the means, the number of paired folds, the 5x2cv
        t-test (Dietterich 1998), the combined 5x2cv F-test (Alpaydin 1999) and the Wilcoxon
        signed-rank test of the fold differences A - B (statistic and two-sided p-value each);
        ``note`` says why a test is NaN where the scores do not define it.
    """
    datasets = None if datasets is None else list(datasets)
    keyed = folds.merge(results[["run_id", "dataset", "model"]], on="run_id")
    scores = keyed.pivot(index=["metric", "model", "dataset"], columns="fold", values="value")
    frames = []
    for a, b in pairs:
        for metric in metrics:
            means, _ = paired_means(results, a, b, metric, datasets)
            frame = means.set_axis(["mean_a", "mean_b"], axis=1).rename_axis("dataset")
            frame = frame.reset_index().assign(a=a, b=b, metric=metric)
            differences = _fold_differences(scores, metric, a, b, means.index)
            frames.append(_fold_tests(frame, differences, folds_per_repetition))
    if not frames:
        return pd.DataFrame(columns=DATASET_TEST_COLUMNS)
    return pd.concat(frames, ignore_index=True)[DATASET_TEST_COLUMNS]


def _fold_differences(scores: pd.DataFrame, metric: str, a: str, b: str, datasets) -> pd.DataFrame:
    """A - B per dataset (rows) and fold (columns); NaN where a fold of A or B is not logged."""
    of_a, of_b = (scores.reindex(pd.MultiIndex.from_product([[metric], [model], datasets])).set_axis(datasets, axis=0)
                  for model in (a, b))
    return of_a - of_b


def _fold_tests(frame: pd.DataFrame, differences: pd.DataFrame, folds_per_repetition: int) -> pd.DataFrame:
    """``frame`` (one dataset per row, as ``differences``) with the fold tests and a note."""
    logged = differences.notna()
    frame["folds"] = logged.sum(axis=1).to_numpy()
    frame["note"] = "some folds of A or B are not logged: no test"
    paired = (logged.all(axis=1) & (logged.shape[1] > 0)).to_numpy()
    d = differences.to_numpy(dtype=float)[paired]
    tests = {}
    if len(d):
        tests["wilcoxon"] = wilcoxon_signed_rank(d)
        notes = np.where(np.any(d != 0, axis=1), "", "A and B equal on every fold: no test defined")
        if folds_per_repetition == 2 and d.shape[1] % 2 == 0:
            by_repetition = d.reshape(len(d), -1, 2)
            tests["t"] = five_by_two_t_test(by_repetition)
            tests["f"] = five_by_two_f_test(by_repetition)
        else:
            notes = np.full(len(d), "5x2cv tests need 2-fold CV repetitions (cv.folds = 2)")
        frame.loc[paired, "note"] = notes
    for name in ("t", "f", "wilcoxon"):
        frame[f"{name}_statistic"], frame[f"{name}_p_value"] = np.nan, np.nan
        if name in tests:
            frame.loc[paired, f"{name}_statistic"] = tests[name].statistic
            frame.loc[paired, f"{name}_p_value"] = tests[name].p_value
    return frame


def wilcoxon_across_datasets(results: pd.DataFrame, pairs: Iterable[tuple[str, str]], metrics: Iterable[str], *,
                             datasets: Iterable[str] | None = None) -> pd.DataFrame:
    """Wilcoxon signed-rank test of each comparison (A, B) of ``pairs`` across ``datasets`` (as in
    :func:`bncbench.report.win_draw_loss.win_draw_loss`), on the mean losses of ``results``.

    Means equal but for floating-point summation order count as zero differences, which the test
    drops (as the sign test drops draws); means are not rounded.

    Returns
    -------
    pandas.DataFrame
        One row per (A, B, metric): ``datasets`` (with a mean for both), ``wilcoxon_statistic``
        and ``wilcoxon_p_value`` (NaN when no dataset differs).
    """
    datasets = None if datasets is None else list(datasets)
    rows = []
    for a, b in pairs:
        for metric in metrics:
            means, _ = paired_means(results, a, b, metric, datasets)
            mean_a, mean_b = means[a].to_numpy(), means[b].to_numpy()
            test = wilcoxon_signed_rank(np.where(same_mean(mean_a, mean_b), 0.0, mean_a - mean_b))
            rows.append([a, b, metric, len(means), test.statistic, test.p_value])
    return pd.DataFrame(rows, columns=["a", "b", "metric", "datasets", "wilcoxon_statistic", "wilcoxon_p_value"])


@dataclass(frozen=True)
class Ranking:
    """Friedman's test over several models and Nemenyi's critical difference of their mean ranks.

    Attributes
    ----------
    mean_ranks : pandas.Series
        Mean rank of each model over the datasets (1 = lowest loss, ties share their mean rank),
        best first.
    datasets : int
        Datasets ranked: those where every model has a value.
    dropped : tuple of str
        Datasets left out because some model has no value there.
    statistic, p_value : float
        Friedman's chi-square and its p-value.
    critical_difference : float
        Nemenyi's critical difference at ``alpha``: two mean ranks further apart differ.
    result : autorank.autorank.RankResult
        autorank's result, to draw the critical-difference diagram.
    """

    metric: str
    mean_ranks: pd.Series
    datasets: int
    dropped: tuple[str, ...]
    statistic: float
    p_value: float
    critical_difference: float
    alpha: float
    result: "RankResult"


def friedman_nemenyi(results: pd.DataFrame, models: Sequence[str], metric: str, *, alpha: float = 0.05,
                     datasets: Iterable[str] | None = None) -> Ranking:
    """Rank ``models`` (the experiment's) on each of ``datasets`` (default: every dataset of ``results``) by
    their mean ``metric``, lower better; test with Friedman, post-hoc Nemenyi at level ``alpha`` (autorank).

    Raises
    ------
    Undefined
        Fewer than 3 models, or fewer than :data:`MIN_FRIEDMAN_DATASETS` datasets where every model
        has a value.
    """
    models = list(models)
    if len(models) < 3:
        raise Undefined(f"the Friedman test ranks at least 3 models, the experiment has {len(models)} "
                        "(the Wilcoxon test of a comparison covers two)")
    means = model_means(results, models, metric, datasets)
    complete = means.notna().all(axis=1)
    if complete.sum() < MIN_FRIEDMAN_DATASETS:
        raise Undefined(f"the Friedman test needs at least {MIN_FRIEDMAN_DATASETS} datasets where every model "
                        f"has a {metric}, there are {int(complete.sum())}")
    table = means.loc[complete].astype(float)
    statistic, p_value = friedmanchisquare(*table.to_numpy().T)
    from autorank import autorank  # here: it imports matplotlib.pyplot, which only a ranking needs

    # autorank prints its choice of test and warns on ties; the report states both.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = autorank(table.rename_axis(index=None, columns=None).reset_index(drop=True), alpha=alpha,
                          order="ascending", force_mode="nonparametric")
    return Ranking(metric=metric, mean_ranks=result.rankdf["meanrank"].rename_axis("model"), datasets=len(table),
                   dropped=tuple(means.index[~complete]), statistic=float(statistic), p_value=float(p_value),
                   critical_difference=float(result.cd), alpha=alpha, result=result)
