"""Whole error counts of the cells, so that a draw on 0-1 loss is an equal number of errors.

Two models that make the same number of errors over the same folds can differ in their mean fold error
rate (``zero_one_loss`` averages rates of folds of unequal sizes), and a comparison of those means would
count a win where the two models are tied. A run logs each fold's ``errors`` and ``test_rows``
(``bncbench.core.metrics.COUNTS``); for a run that predates them, a fold's errors are its error rate
times its test rows, which the cell's cross-validation split gives (``fold_test_rows``), and must come
out whole.
"""

from collections.abc import Callable

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError

#: The column of the results that holds each cell's total errors over its folds.
TOTAL_ERRORS = "total_errors"
#: Metric -> the column of whole counts that decides its wins, losses and draws.
COUNTED = {"zero_one_loss": TOTAL_ERRORS}
#: How far a derived count may be from a whole number: error rates are ``errors / rows`` in float64.
_WHOLE_TOLERANCE = 1e-6


def with_total_errors(results: pd.DataFrame, folds: pd.DataFrame, test_rows: Callable[[str], np.ndarray] | None
                      ) -> pd.DataFrame:
    """``results`` with a column ``total_errors``: each run's errors summed over its folds.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per cell, columns ``dataset`` and ``run_id`` among others.
    folds : pandas.DataFrame
        Per-fold ``zero_one_loss`` and ``errors`` of the runs (long format of
        :func:`bncbench.tracking.fold_metrics`); ``errors`` is absent for runs that predate it.
    test_rows : callable or None
        ``dataset -> test rows of each fold``, for the runs without ``errors``; None when the
        datasets are not at hand.

    Raises
    ------
    ConfigError
        A run without ``errors`` when ``test_rows`` is None, or whose error rates times its folds' test
        rows are not whole numbers (the run and the split disagree).
    """
    values = folds.pivot_table(index="run_id", columns=["metric", "fold"], values="value", aggfunc="last")
    totals = []
    for dataset, run_id in zip(results["dataset"], results["run_id"]):
        logged = values.loc[run_id] if run_id in values.index else pd.Series(dtype=float)
        if "errors" in logged.index.get_level_values(0) and logged["errors"].notna().all():
            totals.append(int(round(logged["errors"].sum())))
        elif "zero_one_loss" in logged.index.get_level_values(0):
            totals.append(_derived_total(dataset, run_id, logged["zero_one_loss"].to_numpy(), test_rows))
        else:
            totals.append(None)
    return results.assign(**{TOTAL_ERRORS: pd.array(totals, dtype="Int64")})


def _derived_total(dataset: str, run_id: str, rates: np.ndarray, test_rows) -> int:
    """Total errors of a run that logged its folds' error rates only."""
    if test_rows is None:
        raise ConfigError(f"run {run_id} of {dataset!r} logged no error counts (it predates them), and the dataset is "
                          "not at hand to count its folds' test rows; give the data directory (BNCBENCH_DATA_DIR or "
                          "data_dir=) so that draws on 0-1 loss are equal numbers of errors.")
    rows = np.asarray(test_rows(dataset), dtype=float)
    if len(rows) != len(rates):
        raise ConfigError(f"run {run_id} of {dataset!r} has {len(rates)} folds but its cross-validation split has "
                          f"{len(rows)}: the run is not of this configuration.")
    counts = rates * rows
    if not np.allclose(counts, np.round(counts), rtol=0.0, atol=_WHOLE_TOLERANCE):
        raise ConfigError(
            f"run {run_id} of {dataset!r}: its folds' error rates times their test rows {rows.astype(int).tolist()} "
            f"are not whole numbers ({counts.tolist()}): the run was not made on this split of the data."
        )
    return int(np.round(counts).sum())
