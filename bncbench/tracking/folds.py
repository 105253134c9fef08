"""A cell run's per-fold values as every reader sees them, whatever holds the logged values (a store's
metric history, a bundle's metrics table): ``FOLD_PREFIX + <metric>`` at step = fold index
(``bncbench.tracking.tags``), the later value where a step was logged twice."""

from collections.abc import Iterable

import pandas as pd

from bncbench.tracking import tags as tag

#: The logged values a reader gives :func:`fold_frame`: every value of some metric keys of some runs.
VALUE_COLUMNS = ["run_id", "key", "step", "value", "timestamp"]
#: The columns of :func:`fold_frame`.
FOLD_COLUMNS = ["run_id", "metric", "fold", "value"]


def fold_keys(metrics: Iterable[str]) -> list[str]:
    """The logged keys of the per-fold values of ``metrics`` (``zero_one_loss`` -> ``fold/zero_one_loss``)."""
    return [tag.FOLD_PREFIX + metric for metric in metrics]


def fold_frame(values: pd.DataFrame, run_ids: Iterable[str], metrics: Iterable[str]) -> pd.DataFrame:
    """The per-fold values of ``metrics`` (names without the ``fold/`` prefix, e.g. ``["zero_one_loss", "rmse"]``)
    of the runs ``run_ids`` among logged ``values`` (columns ``VALUE_COLUMNS``; others' keys and runs are left out),
    in long format: columns ``FOLD_COLUMNS`` (``fold`` is the step), sorted by run (in the order given), metric and
    fold; if a step was logged twice the later value counts."""
    run_ids, metrics = list(dict.fromkeys(run_ids)), list(metrics)
    frame = values[values["run_id"].isin(run_ids) & values["key"].isin(fold_keys(metrics))]
    frame = frame.rename(columns={"key": "metric", "step": "fold"}).assign(
        run_id=lambda f: pd.Categorical(f["run_id"], categories=run_ids, ordered=True),
        metric=lambda f: pd.Categorical(f["metric"].str.removeprefix(tag.FOLD_PREFIX), categories=metrics, ordered=True),
    )
    return (
        frame.sort_values(["run_id", "metric", "fold", "timestamp"], kind="stable")
        .drop_duplicates(["run_id", "metric", "fold"], keep="last")
        .astype({"run_id": str, "metric": str})
        .reset_index(drop=True)[FOLD_COLUMNS]
    )
