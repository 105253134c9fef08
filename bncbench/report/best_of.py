"""Models chosen per dataset in hindsight: of a list of models, the one with the lowest mean loss on
each dataset and metric, e.g. the SkDB paper's "best k" kDB (Sect. 3.1: "SKDB with k = 5 is compared
against the lowest error of any standard KDB with k between 1 and 5 (which is a theoretical result,
since the value of k that will minimize out of sample error can only be determined a posteriori)").

Such a model (``report.best_of: {name: [models]}``) enters the report's comparisons and published
tables as any model, with the mean and the fold scores of the run it picks; the pick is made for each
metric apart (the k of lowest RMSE need not be that of lowest 0-1 loss), ties to the earlier model of
the list. A dataset where a model of the list has no mean has no pick.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.report.error_counts import COUNTED

#: The run id of a pick's row: one per (model chosen in hindsight, dataset), not a run of the store.
_RUN_ID = "{name}@{dataset}"


@dataclass(frozen=True)
class Hindsight:
    """The picks of the ``report.best_of`` models.

    Attributes
    ----------
    rows : pandas.DataFrame
        One row per (dataset, best-of model), as :meth:`bncbench.report.results.LoggedRuns.results`:
        ``run_id`` a name of the pick (``<name>@<dataset>``), each metric the pick's mean.
    picks : pandas.DataFrame
        Columns ``name``, ``dataset``, ``metric``, ``model`` (the one picked) and ``run_id`` (its run).
    """

    rows: pd.DataFrame
    picks: pd.DataFrame

    def fold_metrics(self, folds: pd.DataFrame) -> pd.DataFrame:
        """``folds`` (columns ``run_id``, ``metric``, ``fold``, ``value``) with the folds of every pick
        added under the pick's ``run_id``."""
        if self.picks.empty:
            return folds
        picks = self.picks.rename(columns={"run_id": "picked_run"})
        picked = folds.merge(picks, left_on=["run_id", "metric"], right_on=["picked_run", "metric"])
        picked["run_id"] = [_RUN_ID.format(name=n, dataset=d) for n, d in zip(picked["name"], picked["dataset"])]
        return pd.concat([folds, picked[folds.columns]], ignore_index=True)


def best_of(results: pd.DataFrame, models: Mapping[str, Sequence[str]], metrics: Iterable[str]) -> Hindsight:
    """Pick, per dataset and metric, the model of each list with the lowest mean (see the module).

    Parameters
    ----------
    results : pandas.DataFrame
        One row per (dataset, model) with ``run_id`` and the mean metrics.
    models : mapping
        ``{name: [model, ...]}`` (``report.best_of``).
    metrics : iterable of str
        The metrics to pick on; the rows hold NaN for the others.
    """
    check_best_of(models)
    metrics = [metric for metric in metrics if metric in results.columns]
    rows, picks = [], []
    for name, candidates in models.items():
        candidates = list(candidates)
        for dataset, of_dataset in results.loc[results["model"].isin(candidates)].groupby("dataset", sort=True):
            table = of_dataset.set_index("model").reindex(candidates)
            row = {"dataset": dataset, "model": name, "run_id": _RUN_ID.format(name=name, dataset=dataset),
                   "cfg_hash": ""}
            for metric in metrics:
                means = table[metric].to_numpy(dtype=float)
                if np.isnan(means).any():
                    continue
                chosen = candidates[int(np.argmin(means))]  # the first of equal means
                row[metric] = means.min()
                counted = COUNTED.get(metric)  # the pick's whole counts, which decide its draws
                if counted in table.columns:
                    row[counted] = table.loc[chosen, counted]
                picks.append([name, dataset, metric, chosen, table.loc[chosen, "run_id"]])
            rows.append(row)
    return Hindsight(pd.DataFrame(rows, columns=[*results.columns]).astype({m: float for m in metrics}),
                     pd.DataFrame(picks, columns=["name", "dataset", "metric", "model", "run_id"]))


def check_best_of(models) -> None:
    """Raise a ConfigError naming ``report.best_of`` unless it maps names to lists of two or more models."""
    if not isinstance(models, Mapping) or not all(
        isinstance(name, str) and isinstance(candidates, Sequence) and not isinstance(candidates, str)
        and len(candidates) >= 2 and all(isinstance(c, str) for c in candidates)
        for name, candidates in models.items()
    ):
        raise ConfigError("report.best_of must map a name to a list of two or more models, e.g. "
                          f"{{kdb_best_k: [kdb1_m_estimate, kdb2_m_estimate]}}, got {models!r}.")
