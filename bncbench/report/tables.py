"""Win-draw-loss tables of an experiment's comparisons, as Markdown, LaTeX and CSV.

A table has one row per comparison "A vs B" and one column per metric; a cell shows A's wins, draws
and losses and the sign test's p-value, in bold when significant.
"""

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.report.significant_wdl import fold_p_values
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss

#: First characters that make a spreadsheet read a CSV cell as a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def wdl_table(results: pd.DataFrame, comparisons: Iterable[Mapping[str, str]], metrics: Iterable[str], *,
              datasets: Iterable[str] | None = None, dataset_tests: pd.DataFrame | None = None, **options
              ) -> list[WinDrawLoss]:
    """Win-draw-loss of every comparison (``{"a": model, "b": model}`` each, as in ``experiment.comparisons``) on
    every metric, comparison-major; ``datasets`` and ``options`` (``draws``, ``round``, ``alpha``) as in
    :func:`bncbench.report.win_draw_loss.win_draw_loss`. Given the per-dataset tests of the folds
    (``dataset_tests``, :func:`bncbench.report.significance.dataset_tests`), a dataset is a win or a loss only
    where its Wilcoxon test has ``p <= alpha``, as the SkDB paper counts (``report.counting: wilcoxon``,
    :mod:`bncbench.report.significant_wdl`)."""
    datasets = None if datasets is None else list(datasets)
    return [
        win_draw_loss(results, a, b, metric, datasets=datasets, **options,
                      dataset_p_values=None if dataset_tests is None else fold_p_values(dataset_tests, a, b, metric))
        for a, b in map(pair, comparisons)
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
    return markdown_table(["comparison", *cells.columns],
                          ([label, *row] for label, row in zip(cells.index, cells.to_numpy(), strict=True)))


def markdown_text(value) -> str:
    """A name or message as Markdown text: HTML escaped (``<script>`` shows, not runs), line breaks
    made spaces (a name cannot start a heading or break a table)."""
    return " ".join(html.escape(str(value), quote=False).split())


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with text cells that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``,
    tab, carriage return first) prefixed with ``'``; numbers, and text that reads as a number, stay."""

    def neutral(value):
        if isinstance(value, str) and value[:1] in FORMULA_STARTS:
            try:
                float(value)
            except ValueError:
                return "'" + value
        return value

    text = frame.select_dtypes(include=["object", "string"]).columns
    return frame.assign(**{column: frame[column].map(neutral) for column in text})


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` without its index as a CSV file at ``path``, its text cells :func:`csv_safe`."""
    csv_safe(frame).to_csv(path, index=False)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown (GitHub) table of strings, each cell ``markdown_text`` with ``|`` escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(cell).replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), "|" + " --- |" * len(header), *map(line, rows)]) + "\n"


def to_latex(wdls: Iterable[WinDrawLoss], caption: str | None = None) -> str:
    """LaTeX booktabs table (``\\bfseries`` for significant cells); ``caption`` is raw LaTeX."""
    cells, significant = _cells(list(wdls), dash="--")
    styler = (
        cells.style.format(escape="latex")
        .format_index(escape="latex", axis=0)
        .format_index(escape="latex", axis=1)
        .apply(lambda _: np.where(significant, "font-weight: bold;", ""), axis=None)
    )
    return styler.to_latex(hrules=True, convert_css=True, column_format="l" + "r" * cells.shape[1], caption=caption)


def pair(comparison: Mapping[str, str]) -> tuple[str, str]:
    """``{"a": A, "b": B}`` of ``experiment.comparisons`` -> ``(A, B)``, or a ConfigError."""
    if not isinstance(comparison, Mapping) or set(comparison) != {"a", "b"}:
        raise ConfigError(f"a comparison must be a mapping {{a: model, b: model}}, got {comparison!r}")
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
        cells.loc[_label(w), w.metric] = f"{w.record(dash)} (p = {w.p_value:.3g}{missing})"
        significant.loc[_label(w), w.metric] = w.significant
    return cells, significant.to_numpy(dtype=bool)


def wdl_legend(draws: str, round: int | None, alpha: float, dash: str = "–", less_equal: str = "≤",
               counting: str = "means") -> str:
    """What a W-D-L table counts and tests, under the report options (``counting``: ``report.counting``)."""
    test = "draws left out" if draws == "exclude" else "draws split evenly between A and B (an odd one dropped)"
    if counting == "wilcoxon":
        return (f"Win{dash}draw{dash}loss of A vs B across datasets, counted as the SkDB paper counts (Sect. 3.1): A "
                f"wins (loses) a dataset when a two-sided Wilcoxon signed-rank test of the paired fold losses has p "
                f"{less_equal} {alpha} and A's mean loss is lower (higher); a draw otherwise. p: two-tailed exact "
                f"binomial sign test of these records, {test}; bold: p {less_equal} {alpha}.")
    rounded = "" if round is None else f" after rounding to {round} decimals"
    return (
        f"Win{dash}draw{dash}loss of A vs B across datasets: A wins a dataset when its mean loss "
        f"over the folds is lower than B's, draws when they are equal{rounded}; on 0-1 loss, when it "
        f"makes fewer errors over the same folds, draws when as many. "
        f"p: two-tailed exact binomial sign test, {test}; "
        f"bold: p {less_equal} {alpha}."
    )
