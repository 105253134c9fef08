"""Win-draw-loss of two models across datasets with the two-tailed exact binomial sign test.

Every bncbench metric is a loss (0-1 loss, RMSE, log-loss, seconds): A wins on a dataset when its
mean over the folds is lower than B's; on 0-1 loss, when it makes fewer errors over the same folds
(``bncbench.report.error_counts``), so that a draw is an equal number of errors.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from bncbench.core.errors import ConfigError
from bncbench.report.error_counts import COUNTED
from bncbench.report.results import KEY_COLUMNS

DRAWS = ("exclude", "split")
# Means are averages over the same folds, so equal losses (e.g. equal 0-1 error counts) can differ
# only by the order of floating-point summation; any real difference is many orders larger.
_SAME_MEAN_RTOL = 1e-12


@dataclass(frozen=True)
class WinDrawLoss:
    """Outcome of A vs B on one metric.

    Attributes
    ----------
    a, b, metric : str
        The comparison: A wins a dataset when its mean ``metric`` is lower than B's.
    wins, draws, losses : int
        Datasets won, drawn and lost by A.
    n : int
        Number of trials of the sign test (depends on the draws convention).
    p_value : float
        Two-tailed exact binomial sign test, success probability 0.5; 1.0 when ``n`` is 0.
    significant : bool
        ``p_value <= alpha``.
    missing : tuple of str
        Datasets left out because A or B has no value there (no finished run, or NaN).
    """

    a: str
    b: str
    metric: str
    wins: int
    draws: int
    losses: int
    n: int
    p_value: float
    significant: bool
    missing: tuple[str, ...]

    def record(self, dash: str = "–") -> str:
        """``wins–draws–losses``."""
        return f"{self.wins}{dash}{self.draws}{dash}{self.losses}"


def win_draw_loss(results: pd.DataFrame, a: str, b: str, metric: str, *, draws: str = "exclude",
                  round: int | None = None, alpha: float = 0.05, datasets: Iterable[str] | None = None,
                  dataset_p_values: Mapping[str, float] | None = None) -> WinDrawLoss:
    """Count the datasets on which A beats, ties and loses to B, and test the counts.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per (dataset, model) with columns ``dataset``, ``model`` and ``metric``, as returned
        by :func:`bncbench.report.results.load_results`.
    a, b : str
        Model names (the ``model`` column).
    metric : str
        Column of ``results`` to compare; lower is better.
    draws : {"exclude", "split"}
        ``"exclude"``: the sign test ignores draws, ``n = wins + losses`` (the usual convention
        of this literature, e.g. Petitjean et al. 2018). ``"split"``: of ``d`` draws, ``d // 2``
        count as wins and ``d // 2`` as losses, an odd one is dropped, so
        ``n = wins + losses + 2 * (d // 2)``.
    round : int or None
        None: a draw is equality of the unrounded means (to a relative 1e-12, which only absorbs
        floating-point summation order). An int: means are first rounded to that many decimals
        (``numpy.round``), which is what the few RMSE draws in the HDP paper suggest. Neither applies
        where the results hold whole counts of the metric (``total_errors`` for 0-1 loss): equal
        counts are a draw.
    alpha : float
        Significance level: significant when ``p_value <= alpha``.
    datasets : iterable of str, optional
        Datasets the comparison covers, e.g. the experiment's list; a dataset without a value for A
        or B is reported in ``missing``. Default: every dataset in ``results``.
    dataset_p_values : mapping of str to float, optional
        p-value of a paired test of A and B on each dataset's folds. When given, a dataset counts
        as a win or a loss only where its p-value is at most ``alpha`` and as a draw elsewhere
        (also where it has no p-value or a NaN one): the convention of the SkDB paper
        (Martinez et al. 2016, Sect. 3.1), whose wins are significant per dataset.

    Returns
    -------
    WinDrawLoss

    Raises
    ------
    ConfigError
        If ``metric`` is not in ``results`` or an option is invalid.
    """
    check_options(draws, round, alpha)
    means, missing = paired_means(results, a, b, metric, datasets)
    mean_a, mean_b = compared_values(results, means, metric, round)
    tie = same_mean(mean_a, mean_b)
    if dataset_p_values is not None:
        p_values = pd.Series(dataset_p_values, dtype=float).reindex(means.index).to_numpy()
        tie |= ~(p_values <= alpha)
    wins = int(np.sum(~tie & (mean_a < mean_b)))
    losses = int(np.sum(~tie & (mean_a > mean_b)))
    n_draws = int(np.sum(tie))
    half = n_draws // 2 if draws == "split" else 0
    n = wins + losses + 2 * half
    p_value = binomtest(wins + half, n, 0.5).pvalue if n else 1.0
    return WinDrawLoss(a=a, b=b, metric=metric, wins=wins, draws=n_draws, losses=losses, n=n, p_value=float(p_value),
                       significant=bool(p_value <= alpha), missing=missing)


def paired_means(results: pd.DataFrame, a: str, b: str, metric: str, datasets: Iterable[str] | None = None
                 ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The means of A and B on the datasets where both have one.

    Parameters
    ----------
    results, a, b, metric, datasets
        As in :func:`win_draw_loss`.

    Returns
    -------
    means : pandas.DataFrame
        Indexed by dataset (in the order of ``datasets``, else sorted), columns ``a`` and ``b``.
    missing : tuple of str
        The datasets left out because A or B has no value there.

    Raises
    ------
    ConfigError
        If ``metric`` is not in ``results``.
    """
    if metric not in results.columns:
        logged = [c for c in results.columns if c not in KEY_COLUMNS]
        raise ConfigError(f"no metric {metric!r} in the results; logged metrics: {', '.join(logged) or 'none'}")
    means = model_means(results, [a, b], metric, datasets)
    complete = means.notna().all(axis=1).to_numpy()
    return means.loc[complete].astype(float), tuple(means.index[~complete])


def model_means(results: pd.DataFrame, models: list[str], metric: str, datasets: Iterable[str] | None = None
                ) -> pd.DataFrame:
    """The mean ``metric`` of each of ``models`` (columns) on each dataset (rows: ``datasets``, else every dataset
    of ``results``, sorted), NaN where a model has none."""
    means = results.loc[results["model"].isin(models)].pivot(index="dataset", columns="model", values=metric)
    return means.reindex(index=sorted(results["dataset"].unique()) if datasets is None else list(datasets),
                         columns=models)


def compared_values(results: pd.DataFrame, means: pd.DataFrame, metric: str, round: int | None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """What decides A's win, draw or loss on each dataset of ``means`` (from :func:`paired_means`):
    the whole counts of the metric where the results have them (total errors for 0-1 loss,
    ``bncbench.report.error_counts``), else the means, rounded to ``round`` decimals if given."""
    a, b = means.columns
    counted = COUNTED.get(metric)
    if counted in results.columns:
        counts = paired_means(results, a, b, counted)[0].reindex(means.index)
        return counts[a].to_numpy(dtype=float), counts[b].to_numpy(dtype=float)
    mean_a, mean_b = means[a].to_numpy(dtype=float), means[b].to_numpy(dtype=float)
    if round is not None:
        return np.round(mean_a, round), np.round(mean_b, round)
    return mean_a, mean_b


def same_mean(mean_a: np.ndarray, mean_b: np.ndarray) -> np.ndarray:
    """Where two means over the same folds are equal but for floating-point summation order."""
    return np.isclose(mean_a, mean_b, rtol=_SAME_MEAN_RTOL, atol=0.0)


def check_options(draws: str, round: int | None, alpha: float) -> None:
    """Raise a ConfigError naming ``report.draws``, ``report.round`` or ``report.alpha`` if invalid."""
    if draws not in DRAWS:
        raise ConfigError(f"report.draws must be one of {', '.join(DRAWS)}, got {draws!r}")
    if round is not None and (not isinstance(round, int) or isinstance(round, bool) or round < 0):
        raise ConfigError(f"report.round must be null (exact equality) or a number of decimals >= 0, got {round!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha < 1:
        raise ConfigError(f"report.alpha must be in (0, 1), got {alpha!r}")
