"""Win-draw-loss tables of an experiment's comparisons, as Markdown, LaTeX and CSV.

A table has one row per comparison "A vs B" and one column per metric; a cell shows A's wins, draws
and losses and the sign test's p-value, in bold when significant.
"""

from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from bncbench.errors import ConfigError
from bncbench.report.results import load_results
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss


def wdl_table(
    results: pd.DataFrame,
    comparisons: Iterable[Mapping[str, str]],
    metrics: Iterable[str],
    *,
    draws: str = "exclude",
    round: int | None = None,
    alpha: float = 0.05,
    datasets: Iterable[str] | None = None,
) -> list[WinDrawLoss]:
    """Win-draw-loss of every comparison on every metric.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per (dataset, model), see :func:`bncbench.report.results.load_results`.
    comparisons : iterable of mapping
        ``{"a": model, "b": model}`` each, as in ``experiment.comparisons``.
    metrics : iterable of str
        Metric columns to compare.
    draws, round, alpha, datasets
        See :func:`bncbench.report.win_draw_loss.win_draw_loss`.

    Returns
    -------
    list of WinDrawLoss
        Comparison-major order.
    """
    pairs = [_pair(comparison) for comparison in comparisons]
    datasets = None if datasets is None else list(datasets)
    return [
        win_draw_loss(
            results, a, b, metric, draws=draws, round=round, alpha=alpha, datasets=datasets
        )
        for a, b in pairs
        for metric in metrics
    ]


def to_frame(wdls: Iterable[WinDrawLoss]) -> pd.DataFrame:
    """Tidy table, one row per (comparison, metric); ``missing_datasets`` joined by ``;``."""
    wdls = list(wdls)
    frame = pd.DataFrame([asdict(w) for w in wdls], columns=[f.name for f in fields(WinDrawLoss)])
    frame.insert(0, "comparison", [_label(w) for w in wdls])
    frame["missing_datasets"] = frame["missing"].map(";".join)
    frame["missing"] = frame["missing"].map(len)
    return frame


def to_markdown(wdls: Iterable[WinDrawLoss]) -> str:
    """Markdown table, significant cells in bold."""
    cells, significant = _cells(list(wdls), dash="–")
    cells = cells.where(~significant, "**" + cells + "**")
    header = ["comparison", *cells.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += [
        "| " + " | ".join([label, *row]) + " |"
        for label, row in zip(cells.index, cells.to_numpy(), strict=True)
    ]
    return "\n".join(lines) + "\n"


def to_latex(wdls: Iterable[WinDrawLoss], caption: str | None = None) -> str:
    """LaTeX booktabs table (``\\bfseries`` for significant cells); ``caption`` is raw LaTeX."""
    cells, significant = _cells(list(wdls), dash="--")
    styler = (
        cells.style.format(escape="latex")
        .format_index(escape="latex", axis=0)
        .format_index(escape="latex", axis=1)
        .apply(lambda _: np.where(significant, "font-weight: bold;", ""), axis=None)
    )
    return styler.to_latex(
        hrules=True, convert_css=True, column_format="l" + "r" * cells.shape[1], caption=caption
    )


def write_report(cfg: DictConfig) -> Path:
    """Write the W-D-L tables and the per-dataset means of an experiment from its MLflow runs.

    Parameters
    ----------
    cfg : DictConfig
        The composed bncbench config (:func:`bncbench.config.compose` checks its model names); reads
        ``tracking_uri``, ``report_dir``, ``experiment.name``, ``experiment.comparisons``,
        ``experiment.metrics``, ``experiment.datasets`` (optional: default, every dataset logged),
        ``report.draws``, ``report.round`` and ``report.alpha``.

    Returns
    -------
    pathlib.Path
        ``<report_dir>/<experiment.name>``, holding ``wdl.md``, ``wdl.tex``, ``wdl.csv`` (one row
        per comparison and metric) and ``results.csv`` (the mean metrics of every finished cell).

    Raises
    ------
    ConfigError
        If the store, the experiment or a metric is missing, the experiment has no finished run, or
        a report option is invalid.
    """
    experiment = cfg.experiment
    results = load_results(cfg.tracking_uri, experiment.name)
    if results.empty:
        raise ConfigError(
            f"experiment {experiment.name!r} has no finished run in {cfg.tracking_uri!r}; "
            f"run it first (python -m bncbench experiment=...)"
        )
    options = {"draws": cfg.report.draws, "round": cfg.report.round, "alpha": cfg.report.alpha}
    wdls = wdl_table(
        results,
        experiment.comparisons,
        experiment.metrics,
        datasets=OmegaConf.select(cfg, "experiment.datasets"),
        **options,
    )
    out = Path(cfg.report_dir) / experiment.name
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False)
    to_frame(wdls).to_csv(out / "wdl.csv", index=False)
    markdown = f"# Win–draw–loss: {experiment.name}\n\n{_legend(**options)}\n\n{to_markdown(wdls)}"
    (out / "wdl.md").write_text(markdown, encoding="utf-8")
    caption = _legend(**options, dash="--", less_equal=r"$\le$")
    (out / "wdl.tex").write_text(to_latex(wdls, caption=caption), encoding="utf-8")
    return out


def _pair(comparison: Mapping[str, str]) -> tuple[str, str]:
    if not isinstance(comparison, Mapping) or set(comparison) != {"a", "b"}:
        raise ConfigError(
            f"a comparison must be a mapping {{a: model, b: model}}, got {comparison!r}"
        )
    return comparison["a"], comparison["b"]


def _label(w: WinDrawLoss) -> str:
    return f"{w.a} vs {w.b}"


def _cells(wdls: list[WinDrawLoss], dash: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Display strings and significance, one row per comparison, one column per metric."""
    labels = list(dict.fromkeys(_label(w) for w in wdls))
    metrics = list(dict.fromkeys(w.metric for w in wdls))
    cells = pd.DataFrame("", index=labels, columns=metrics)
    significant = pd.DataFrame(False, index=labels, columns=metrics)
    for w in wdls:
        missing = f", {len(w.missing)} missing" if w.missing else ""
        cells.loc[_label(w), w.metric] = (
            f"{w.wins}{dash}{w.draws}{dash}{w.losses} (p = {w.p_value:.3g}{missing})"
        )
        significant.loc[_label(w), w.metric] = w.significant
    return cells, significant.to_numpy(dtype=bool)


def _legend(
    draws: str, round: int | None, alpha: float, dash: str = "–", less_equal: str = "≤"
) -> str:
    rounded = "" if round is None else f" after rounding to {round} decimals"
    test = (
        "draws left out"
        if draws == "exclude"
        else "draws split evenly between A and B (an odd one dropped)"
    )
    return (
        f"Win{dash}draw{dash}loss of A vs B across datasets: A wins a dataset when its mean loss "
        f"over the folds is lower than B's, draws when they are equal{rounded}. "
        f"p: two-tailed exact binomial sign test, {test}; "
        f"bold: p {less_equal} {alpha}."
    )
