"""Figures as PNG: per-dataset scatter of two models, win-loss curves, CD diagram (a report's), and
the heat map of a run's loss grid.

Drawn on :class:`matplotlib.figure.Figure` objects (no pyplot state, no GUI backend), so they can be
written from any process or thread.
"""

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from autorank import plot_stats
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bncbench.report.significance import Ranking, Undefined
from bncbench.report.win_draw_loss import paired_means, same_mean

DPI = 150
#: Datasets named on a scatter plot: those furthest from its diagonal.
OUTLIERS = 5


def scatter_plot(
    results: pd.DataFrame,
    a: str,
    b: str,
    metric: str,
    path: Path,
    *,
    datasets: Iterable[str] | None = None,
) -> Path:
    """Mean loss of A against that of B, one point per dataset (HDP paper Figs. 6a and 8 style):
    :func:`scatter_figure` written to ``path`` (a PNG), which is returned.

    Raises
    ------
    Undefined
        If no dataset has a mean for both models.
    """
    return _save(scatter_figure(results, a, b, metric, datasets=datasets), path)


def scatter_figure(
    results: pd.DataFrame, a: str, b: str, metric: str, *, datasets: Iterable[str] | None = None
) -> Figure:
    """Mean loss of A (y) against that of B (x), one point per dataset: A wins below the diagonal.

    The title gives A's wins, draws (equal means) and losses, unrounded, and which side of the
    diagonal each model wins, outside the points. The axes are logarithmic where the losses span
    more than a decade (log loss), and the ``OUTLIERS`` datasets furthest from the diagonal (in the
    axes' scale) are labelled with their names.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per (dataset, model) with the mean ``metric``.
    a, b, metric : str
    datasets : iterable of str, optional
        Datasets to plot (default: every dataset with a mean for both).
    """
    means, _ = paired_means(results, a, b, metric, datasets)
    if means.empty:
        raise Undefined(f"no dataset has a {metric} for both {a} and {b}")
    x, y = means[b].to_numpy(), means[a].to_numpy()
    low, high = min(x.min(), y.min()), max(x.max(), y.max())
    log = low > 0 and high / low > 10
    if log:
        limits = (low / 1.25, high * 1.25)
        distance = np.abs(np.log(y) - np.log(x))
    else:
        pad = 0.05 * (high - low) or 0.05
        limits = (low - pad, high + pad)
        distance = np.abs(y - x)
    figure = Figure(figsize=(4.8, 4.8))
    ax = figure.add_subplot()
    ax.plot(limits, limits, color="grey", linewidth=0.8)
    ax.scatter(x, y, s=14, color="tab:blue", zorder=2)
    if log:
        ax.set(xscale="log", yscale="log")
    ax.set(xlim=limits, ylim=limits, aspect="equal", xlabel=f"{b}: {metric}", ylabel=f"{a}: {metric}")
    for i in np.argsort(-distance, kind="stable")[:OUTLIERS]:
        if distance[i] > 0:
            ax.annotate(
                str(means.index[i]), (x[i], y[i]), xytext=(4, 2), textcoords="offset points", fontsize=7,
                color="dimgrey",
            )
    tie = same_mean(y, x)
    record = f"{np.sum(~tie & (y < x))}–{np.sum(tie)}–{np.sum(~tie & (y > x))}"
    ax.set_title(
        f"{a} vs {b}: {record} on {len(means)} datasets\nbelow the diagonal {a} wins, above it {b}",
        fontsize=9,
    )
    return figure


def win_loss_plot(curves: pd.DataFrame, path: Path, *, title: str, reference: str) -> Path:
    """Wins minus losses of each line against its reference, by iterations (log scale).

    Parameters
    ----------
    curves : pandas.DataFrame
        :func:`bncbench.report.win_loss_curves.win_loss_curves`.
    path : pathlib.Path
    title : str
    reference : str
        What the lines are compared with, for the axis label (e.g. "the most iterations").

    Raises
    ------
    Undefined
        If ``curves`` is empty.
    """
    if curves.empty:
        raise Undefined("no model has a reference to compare with")
    figure = Figure(figsize=(6.4, 4.2))
    ax = figure.add_subplot()
    for line, points in curves.groupby("line", sort=False):
        ax.plot(points["iterations"], points["wins"] - points["losses"], marker="o", label=line)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ticks = sorted(curves["iterations"].unique())
    ax.set_xticks(ticks, [f"{tick:,}" for tick in ticks])
    ax.minorticks_off()
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel=f"iterations (below 0: {reference} wins more often)",
        ylabel=f"wins − losses against {reference}",
    )
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(figure, path)


def critical_difference_plot(ranking: Ranking, path: Path) -> Path:
    """Demsar's critical-difference diagram of a :class:`Ranking` (autorank's drawing).

    Models whose mean ranks differ by less than Nemenyi's critical difference are joined by a bar;
    drawn also when Friedman's test is not significant (its title says so).

    Parameters
    ----------
    ranking : Ranking
        :func:`bncbench.report.significance.friedman_nemenyi`.
    path : pathlib.Path
        The PNG to write.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    n_models = len(ranking.mean_ranks)
    figure = Figure(figsize=(6.4, 1.2 + 0.3 * np.ceil(n_models / 2)))
    ax = figure.add_subplot()
    plot_stats(ranking.result, allow_insignificant=True, ax=ax)
    significance = "" if ranking.p_value <= ranking.alpha else ", not significant"
    ax.set_title(
        f"{ranking.metric}: mean ranks on {ranking.datasets} datasets "
        f"(Friedman p = {ranking.p_value:.3g}{significance}; "
        f"CD = {ranking.critical_difference:.2f})",
        fontsize=9,
    )
    return _save(figure, path)


def heat_map(grid: pd.DataFrame, title: str, path: Path) -> Path:
    """A loss grid (e.g. m-estimate's holdout loss by attribute and m) as a heat map, lower is better."""
    figure = Figure(figsize=(max(4, 0.35 * grid.shape[1] + 2), 0.5 * grid.shape[0] + 1.5))
    axes = figure.add_subplot()
    image = axes.imshow(grid.to_numpy(), aspect="auto", cmap="viridis_r")
    axes.set_xticks(range(grid.shape[1]), grid.columns, fontsize=7)
    axes.set_yticks(range(grid.shape[0]), grid.index)
    axes.set_xlabel(grid.columns.name or "")
    axes.set_ylabel(grid.index.name or "")
    axes.set_title(f"{title} (mean over folds)")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    return _save(figure, path)


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    return path
