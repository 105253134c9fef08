"""A report's figures as PNG: per-dataset scatter of two models, win-loss curves, learning curves, CD diagram.

Drawn on :class:`matplotlib.figure.Figure` objects (no pyplot state, no GUI backend), so they can be
written from any process or thread.
"""

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bncbench.report.significance import Ranking, Undefined
from bncbench.report.win_draw_loss import compared_values, paired_means, same_mean

DPI = 150
#: Datasets named on a scatter plot: those furthest from its diagonal.
OUTLIERS = 5
#: The colour of a draw, and of the diagonal.
DRAW = "#808080"
#: Colours of the models of a report, in the order :class:`Colours` gives them out: tab10's, Dark2's,
#: then those of tab20b and tab20c hue by hue, darkest shades first (neighbours differ in hue), all but
#: the greys (a draw's colour).
PALETTE = tuple(
    colour
    for colour in (
        *map(to_hex, matplotlib.colormaps["tab10"].colors + matplotlib.colormaps["Dark2"].colors),
        *(to_hex(matplotlib.colormaps[name].colors[4 * hue + shade])
          for name in ("tab20b", "tab20c") for shade in range(4) for hue in range(5)),
    )
    if len(set(to_rgb(colour))) > 1
)
#: Below this share of a linear axis, the middle 80% of a scatter's losses are crushed by the rest:
#: the scatter zooms on them in an inset.
CROWDED = 0.25


class Colours:
    """One colour per model (or line of models) across the figures of a report.

    Each new name takes the next colour of :data:`PALETTE` (cycling past its end), so that a model has
    the same colour in every figure of the report that drew through this map.

    Parameters
    ----------
    names : iterable of str
        Names given their colours first, in this order (e.g. the experiment's models).
    """

    def __init__(self, names: Iterable[str] = ()):
        self.given: dict[str, str] = {}
        for name in names:
            self(name)

    def __call__(self, name: str) -> str:
        """The colour of ``name``, as ``#rrggbb``."""
        return self.given.setdefault(name, PALETTE[len(self.given) % len(PALETTE)])


def scatter_plot(results: pd.DataFrame, a: str, b: str, metric: str, path: Path, **options) -> Path:
    """Mean loss of A against that of B, one point per dataset (HDP paper Figs. 6a and 8 style):
    :func:`scatter_figure` (``options`` are its own; Undefined as it raises) written to ``path`` (a PNG), returned."""
    return _save(scatter_figure(results, a, b, metric, **options), path)


def scatter_figure(results: pd.DataFrame, a: str, b: str, metric: str, *, datasets: Iterable[str] | None = None,
                   colours: Colours | None = None, total: int | None = None) -> Figure:
    """Mean ``metric`` of A (y) against that of B (x) in ``results``, one point per dataset: A wins below the
    diagonal; Undefined if no dataset has a finite mean for both models.

    A point takes the colour of the model that wins there (grey: a draw). The title gives A's wins,
    draws (equal means; on 0-1 loss, equal errors) and losses, unrounded, on how many datasets, and
    which side of the diagonal each model wins. The axes are logarithmic only where the losses span more than a
    decade (as log loss may) and that spreads them better than linear axes; where linear axes leave the middle 80%
    of the losses within :data:`CROWDED` of the axis, an inset zooms on them. The ``OUTLIERS`` datasets furthest
    from the diagonal (in the axes' scale) are named, placed by adjustText so that no two names overlap.

    Parameters
    ----------
    datasets : iterable of str, optional
        Datasets to plot (default: every dataset with a mean for both).
    colours : Colours, optional
        The report's colour of each model (default: a map of its own).
    total : int, optional
        How many datasets the experiment has: the title says "on n of total" when fewer are plotted.
    """
    means, _ = paired_means(results, a, b, metric, datasets)
    if means.empty:
        raise Undefined(f"no dataset has a {metric} for both {a} and {b}")
    colours = colours or Colours()
    decided_a, decided_b = compared_values(results, means, metric, None)  # as the W-D-L counts them
    drawn = np.isfinite(means[[a, b]]).all(axis=1).to_numpy()  # an infinite mean has no place on an axis
    if not drawn.any():
        raise Undefined(f"no dataset has a finite {metric} for both {a} and {b}")
    counted, means = len(means), means[drawn]
    x, y = means[b].to_numpy(), means[a].to_numpy()
    values = np.concatenate([x, y])
    spreads = {scale: _spread(values, scale) for scale in ("linear", "log")}
    decades = values.min() > 0 and values.max() / values.min() > 10
    scale = "log" if decades and spreads["log"] > spreads["linear"] else "linear"
    figure = Figure(figsize=(4.8, 5.2))
    ax = figure.add_subplot()
    tie = same_mean(decided_a, decided_b)
    wins, losses = ~tie & (decided_a < decided_b), ~tie & (decided_a > decided_b)
    title = f"{wins.sum()}–{tie.sum()}–{losses.sum()}"
    wins, losses, tie = wins[drawn], losses[drawn], tie[drawn]
    groups = [(wins, colours(a), f"{a} wins ({wins.sum()})"), (losses, colours(b), f"{b} wins ({losses.sum()})"),
              (tie, DRAW, f"draw ({tie.sum()})")]
    _square(ax, values, scale)
    _points(ax, x, y, groups, size=14)
    ax.set(xlabel=f"{b}: {metric}", ylabel=f"{a}: {metric}")
    axes = [ax]
    if scale == "linear" and spreads[scale] < CROWDED:
        axes.append(_inset(ax, x, y, groups))
    distance = np.abs(_scaled(y, scale) - _scaled(x, scale))
    named = [i for i in np.argsort(-distance, kind="stable")[:OUTLIERS] if distance[i] > 0]
    _name_points(axes, [str(means.index[i]) for i in named], x[named], y[named], x, y)
    hidden = f" ({counted - len(means)} of infinite mean not drawn)" if counted > len(means) else ""
    ax.set_title(f"{a} vs {b}: {title} on {_of_total(counted, total)} datasets{hidden}\n"
                 f"below the diagonal {a} wins, above it {b}", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=7, frameon=False)
    return figure


def _scaled(values: np.ndarray, scale: str) -> np.ndarray:
    return np.log10(values) if scale == "log" else values


def _spread(values: np.ndarray, scale: str) -> float:
    """The share of the axis the middle 80% of ``values`` cover in ``scale``; -1 where the scale does
    not apply (log of a loss of 0)."""
    if scale == "log" and values.min() <= 0:
        return -1.0
    scaled = _scaled(values, scale)
    span = scaled.max() - scaled.min()
    return float(np.subtract(*np.quantile(scaled, [0.9, 0.1])) / span) if span > 0 else 1.0


def _square(ax: Axes, values: np.ndarray, scale: str) -> None:
    """Equal axes in ``scale`` around ``values``, padded, with the diagonal."""
    low, high = values.min(), values.max()
    if scale == "log":
        limits = (low / 1.25, high * 1.25)
    else:
        pad = 0.05 * (high - low) or 0.05
        limits = (low - pad, high + pad)
    ax.set(xlim=limits, ylim=limits, xscale=scale, yscale=scale, aspect="equal")
    ax.plot(limits, limits, color=DRAW, linewidth=0.8, zorder=1)


def _points(ax: Axes, x, y, groups, size: float) -> None:
    """The points of each group ``(mask, colour, label)`` that has any."""
    for who, colour, label in groups:
        if who.any():
            ax.scatter(x[who], y[who], s=size, color=colour, zorder=2, label=label)


def _inset(ax: Axes, x, y, groups) -> Axes:
    """A linear inset on the middle 90% of the losses, in the off-diagonal corner with fewer points."""
    values = np.concatenate([x, y])
    low, high = np.quantile(values, [0.05, 0.95])
    pad = 0.05 * (high - low) or 0.05
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    upper_left = np.sum((x < x0 + 0.5 * (x1 - x0)) & (y > y0 + 0.5 * (y1 - y0)))
    lower_right = np.sum((x > x0 + 0.5 * (x1 - x0)) & (y < y0 + 0.5 * (y1 - y0)))
    box = [0.14, 0.57, 0.38, 0.38] if upper_left <= lower_right else [0.57, 0.1, 0.38, 0.38]
    inset = ax.inset_axes(box)
    _square(inset, np.array([low - pad, high + pad]), "linear")
    _points(inset, x, y, groups, size=8)
    inset.tick_params(labelsize=6)
    ax.indicate_inset_zoom(inset, edgecolor=DRAW)
    return inset


# adjustText stops after 1 s of wall time unless told a number of steps, so a figure would depend on
# the machine's load and a report would not regenerate byte for byte. Most figures settle in under 25
# steps; a crowded one stops here.
LABEL_PLACEMENT_STEPS = 500


def _name_points(axes: list[Axes], names: list[str], x, y, every_x, every_y) -> None:
    """Name the points ``(x, y)``, each in the last of ``axes`` whose limits hold it (an inset before
    the main axes), and place the names with adjustText, off each other and off the points."""
    from adjustText import adjust_text  # here, as plot_stats below: each imports matplotlib.pyplot

    for place, ax in enumerate(axes):
        inner = axes[place + 1 :]
        held = [i for i in range(len(names))
                if _holds(ax, x[i], y[i]) and not any(_holds(a, x[i], y[i]) for a in inner)]
        if not held:
            continue
        texts = [ax.text(x[i], y[i], names[i], fontsize=7, color="dimgrey") for i in held]
        adjust_text(texts, x=every_x, y=every_y, ax=ax, iter_lim=LABEL_PLACEMENT_STEPS,
                    arrowprops={"arrowstyle": "-", "color": DRAW, "linewidth": 0.5})


def _holds(ax: Axes, x: float, y: float) -> bool:
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    return x0 <= x <= x1 and y0 <= y <= y1


def line_names(models_by_line: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """A legend label for each line of models, from the models' names: the one model's name, or their
    common start and end around ``*`` (``kdb5_hdp_single_it*`` for ``kdb5_hdp_single_it500`` ...
    ``kdb5_hdp_single_it50000``), else the names themselves; two lines never share a label."""
    names = {line: _pattern(sorted(set(models))) for line, models in models_by_line.items()}
    if len(set(names.values())) < len(names):
        return {line: ", ".join(sorted(set(models))) for line, models in models_by_line.items()}
    return names


def _pattern(models: list[str]) -> str:
    if len(models) == 1:
        return models[0]
    prefix = os.path.commonprefix(models).rstrip("0123456789")
    ends = [model[len(prefix):][::-1] for model in models]
    suffix = os.path.commonprefix(ends)[::-1]
    suffix = suffix[suffix.index("_"):] if "_" in suffix else ""
    return f"{prefix}*{suffix}" if prefix or suffix else ", ".join(models)


def win_loss_plot(curves: pd.DataFrame, path: Path, **options) -> Path:
    """:func:`win_loss_figure` (``options`` are its own; Undefined as it raises) written to ``path`` (a PNG), returned."""
    return _save(win_loss_figure(curves, **options), path)


def win_loss_figure(curves: pd.DataFrame, *, title: str, reference: str, colours: Colours | None = None,
                    total: int | None = None) -> Figure:
    """Wins minus losses of each line against its reference, by iterations (log scale); the legend
    names each line by its models (:func:`line_names`).

    Parameters
    ----------
    curves : pandas.DataFrame
        :func:`bncbench.report.win_loss_curves.win_loss_curves`.
    title : str
        The first line of the title; the second says on how many datasets (of ``total``, the experiment's, when
        fewer are compared).
    reference : str
        What the lines are compared with, for the axis label (e.g. "the most iterations").
    colours : Colours, optional
        The report's colour of each line, by its label (:func:`line_names`).

    Raises
    ------
    Undefined
        If ``curves`` is empty.
    """
    if curves.empty:
        raise Undefined("no model has a reference to compare with")
    colours = colours or Colours()
    labels = line_names(curves.groupby("line", sort=False)["model"].agg(list))
    figure = Figure(figsize=(7.2, 4.2))
    ax = figure.add_subplot()
    for line, points in curves.groupby("line", sort=False):
        label = labels[line]
        ax.plot(points["iterations"], points["wins"] - points["losses"], marker="o", label=label, color=colours(label))
    ax.axhline(0, color=DRAW, linewidth=0.8)
    _log_ticks(ax, curves["iterations"])
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel=f"iterations (below 0: {reference} wins more often)", ylabel=f"wins − losses against {reference}")
    compared = int((curves["wins"] + curves["draws"] + curves["losses"]).max())
    ax.set_title(f"{title}\non {_of_total(compared, total)} datasets", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return figure


#: Line styles of the variants of a family of models in a learning-curve figure (``nb_hdp``, ``nb_m_estimate``: the
#: family ``nb`` in one colour, each variant in its style), in the order the variants come.
VARIANT_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))
#: Panels per row of a learning-curve figure: legible at the width GitHub shows an image (about 900 pixels).
CURVE_COLUMNS = 2


def learning_curve_plot(curve: pd.DataFrame, path: Path, *, title: str) -> Path:
    """The learning curves of one network (:func:`bncbench.report.learning_curves.learning_curves`, its rows):
    a panel per metric in a grid of ``CURVE_COLUMNS``, a line per model, the mean loss against the training rows
    (log scale), written to ``path`` (a PNG), which is returned. A model ``<family>_<variant>`` takes its family's
    colour and its variant's line style and marker (:data:`VARIANT_STYLES`), so that e.g. kDB-3 with HDP and with
    m-estimates are one colour, solid and dashed; where every model is of one variant, each family takes a style of
    its own too, so that no two lines differ by their colour alone."""
    metrics = list(dict.fromkeys(curve["metric"]))
    models = list(dict.fromkeys(curve["model"]))
    families = Colours(model.partition("_")[0] for model in models)
    styled_by = 2 if len({model.partition("_")[2] for model in models}) > 1 else 0  # the variant, else the family
    variants = {part: VARIANT_STYLES[n % len(VARIANT_STYLES)]
                for n, part in enumerate(dict.fromkeys(model.partition("_")[styled_by] for model in models))}
    rows = -(-len(metrics) // CURVE_COLUMNS)
    figure = Figure(figsize=(4.4 * CURVE_COLUMNS, 3.3 * rows + 1.2), layout="constrained")
    axes = figure.subplots(rows, CURVE_COLUMNS, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        for model, points in curve[curve["metric"] == metric].groupby("model", sort=False):
            family = model.partition("_")[0]
            style, marker = variants[model.partition("_")[styled_by]]
            ax.plot(points["training_rows"], points["value"], style, marker=marker, markersize=4, label=model,
                    color=families(family), linewidth=1.4)
        _log_ticks(ax, curve["training_rows"])
        ax.set(xlabel="training rows (log scale)", ylabel="mean over the folds", title=metric)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(metrics):]:
        ax.set_axis_off()
    handles, labels = axes[0].get_legend_handles_labels()
    if len(metrics) < len(axes):  # in the grid's first free panel, else below the grid
        axes[len(metrics)].legend(handles, labels, loc="center", ncol=2, fontsize=9, frameon=False)
    else:
        figure.legend(handles, labels, loc="outside lower center", ncol=min(len(models), 4), fontsize=8, frameon=False)
    figure.suptitle(title, fontsize=10)
    return _save(figure, path)


def critical_difference_plot(ranking: Ranking, path: Path, *, total: int | None = None) -> Path:
    """Demsar's critical-difference diagram of a :class:`Ranking` (autorank's drawing) written to ``path`` (a PNG),
    which is returned; ``total``: how many datasets the experiment has ("on n of total datasets" when fewer are
    ranked).

    Models whose mean ranks differ by less than Nemenyi's critical difference are joined by a bar;
    drawn also when Friedman's test is not significant (its title says so).
    """
    n_models = len(ranking.mean_ranks)
    # autorank numbers every rank on the axis: a wider figure for many models keeps the numbers apart.
    figure = Figure(figsize=(max(6.4, 0.4 * n_models), 1.2 + 0.3 * np.ceil(n_models / 2)))
    ax = figure.add_subplot()
    from autorank import plot_stats

    plot_stats(ranking.result, allow_insignificant=True, ax=ax)
    significance = "" if ranking.p_value <= ranking.alpha else ", not significant"
    ax.set_title(f"{ranking.metric}: mean ranks on {_of_total(ranking.datasets, total)} datasets "
                 f"(Friedman p = {ranking.p_value:.3g}{significance}; CD = {ranking.critical_difference:.2f})",
                 fontsize=9)
    return _save(figure, path)


def _of_total(shown: int, total: int | None) -> str:
    """``"n of total"`` where a figure shows fewer datasets than the experiment's ``total``, else ``"n"``."""
    return f"{shown} of {total}" if total and total > shown else str(shown)


def _log_ticks(ax: Axes, values: pd.Series) -> None:
    """A log-scaled x axis with a tick at each of ``values``, thousands separated."""
    ticks = sorted(values.unique())
    ax.set_xscale("log")
    ax.set_xticks(ticks, [f"{tick:,}" for tick in ticks])
    ax.minorticks_off()


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    return path
