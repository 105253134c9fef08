"""A published table, cell by cell in the paper's order, with our records beside it: how far each
is from the paper's and whether they agree.

Agreement of a cell: the same winner (the sign of wins - losses) and the same significance (our
sign test at ``report.alpha`` against the published record's, see
:mod:`bncbench.report.published`). The distance shows what agreement hides: wins minus losses, ours
and the paper's, and our mean loss difference A - B over the datasets with the Wilcoxon signed-rank
test across them (:func:`bncbench.report.significance.wilcoxon_across_datasets`).
"""

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from bncbench.report.differences import protocol_lines, protocol_rows
from bncbench.report.published_table import PublishedCell, PublishedTable
from bncbench.report.significance import wilcoxon_across_datasets
from bncbench.report.significant_wdl import fold_p_values
from bncbench.report.tables import markdown_table
from bncbench.report.win_draw_loss import WinDrawLoss, paired_means, win_draw_loss

NOT_COMPARED = "—"
_COLUMNS = [
    "paper", "source", "table", "row", "column", "metric", "printed", "published_wins", "published_draws",
    "published_losses", "published_p_value", "published_significant", "published_distance", "a", "b", "status",
    "wins", "draws", "losses", "missing", "p_value", "significant", "distance", "mean_difference", "wilcoxon_p_value",
    "same_winner", "same_significance", "agree",
]


def compare_published(table: PublishedTable, results: pd.DataFrame, *, dataset_tests: pd.DataFrame | None = None,
                      datasets: Iterable[str] | None = None, **options) -> pd.DataFrame:
    """Our win-draw-loss record for every cell of a published table, from the mean metrics of ``results`` on
    ``datasets`` (the experiment's) with ``options`` (``draws``, ``round``, ``alpha``) as in
    :func:`bncbench.report.win_draw_loss.win_draw_loss`; where ``table.per_dataset_significance``, the datasets
    where the Wilcoxon test of the folds is significant are the wins (``dataset_tests``, covering the table's
    comparisons: :func:`bncbench.report.significance.dataset_tests`).

    Returns
    -------
    pandas.DataFrame
        One row per cell, in the paper's order: its source (``paper``, ``source``, ``table``,
        ``row``, ``column``), ``metric``, the record as ``printed`` and parsed, its sign-test
        ``published_p_value`` and ``published_significant``, its ``published_distance`` (wins -
        losses); the models ``a`` and ``b``; ``status`` (empty when compared, else why not); our
        ``wins``, ``draws``, ``losses``, ``missing`` (datasets without both models), ``p_value``,
        ``significant``, ``distance`` (wins - losses), ``mean_difference`` (the mean over the datasets
        of A's mean loss minus B's) and ``wilcoxon_p_value`` (signed-rank test of those differences
        across the datasets); and ``same_winner``, ``same_significance``, ``agree`` (empty when not
        compared).
    """
    datasets = None if datasets is None else list(datasets)
    rows = []
    for cell in table.cells:
        wins, draws, losses = cell.record
        row = {
            "paper": table.paper, "source": table.source, "table": table.table, "row": cell.row, "column": cell.column,
            "metric": cell.metric, "printed": cell.printed, "published_wins": wins, "published_draws": draws,
            "published_losses": losses, "published_p_value": cell.p_value, "published_significant": cell.significant,
            "published_distance": wins - losses, "a": cell.a, "b": cell.b, "status": _status(cell, results),
        }
        if not row["status"]:
            tested = table.per_dataset_significance
            p_values = fold_p_values(dataset_tests, cell.a, cell.b, cell.metric) if tested else None
            w = win_draw_loss(results, cell.a, cell.b, cell.metric, datasets=datasets, dataset_p_values=p_values,
                              **options)
            row |= _ours(w, cell) | _difference(results, cell, datasets)
        rows.append(row)
    counts = {column: "Int64" for column in ("wins", "draws", "losses", "missing", "distance")}
    flags = {column: "boolean" for column in ("significant", "same_winner", "same_significance", "agree")}
    return pd.DataFrame(rows).reindex(columns=_COLUMNS).astype(counts | flags)


def _status(cell: PublishedCell, results: pd.DataFrame) -> str:
    if cell.a is None:
        return f"no bncbench counterpart: {cell.unmapped}"
    if cell.metric not in results.columns:
        return f"{cell.metric} not logged"
    absent = [model for model in (cell.a, cell.b) if model not in set(results["model"])]
    return f"not run: {', '.join(absent)}" if absent else ""


def _ours(w: WinDrawLoss, cell: PublishedCell) -> dict:
    wins, _, losses = cell.record
    same_winner = bool(np.sign(w.wins - w.losses) == np.sign(wins - losses))
    same_significance = w.significant == cell.significant
    return {"wins": w.wins, "draws": w.draws, "losses": w.losses, "missing": len(w.missing), "p_value": w.p_value,
            "significant": w.significant, "distance": w.wins - w.losses, "same_winner": same_winner,
            "same_significance": same_significance, "agree": same_winner and same_significance}


def _difference(results: pd.DataFrame, cell: PublishedCell, datasets: list[str] | None) -> dict:
    """Our mean loss difference A - B over the datasets with both, and its Wilcoxon test across them."""
    means, _ = paired_means(results, cell.a, cell.b, cell.metric, datasets)
    test = wilcoxon_across_datasets(results, [(cell.a, cell.b)], [cell.metric], datasets=datasets)
    difference = float((means[cell.a] - means[cell.b]).mean()) if len(means) else np.nan
    return {"mean_difference": difference, "wilcoxon_p_value": float(test["wilcoxon_p_value"].iloc[0])}


def published_markdown(table: PublishedTable, comparison: pd.DataFrame,
                       settings: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """The paper's table cell by cell beside ours (``comparison``, :func:`compare_published`), as a Markdown
    section: the table's heading (:attr:`PublishedTable.heading`) and caption, the paper cited, its protocol beside
    the ``settings`` of the runs read (:func:`bncbench.report.differences.protocol_rows`), one line per cell in the
    paper's order (significant records in bold) with the distances and agreement, totals, the models of each row
    and the table's notes."""
    header = [table.row_header or "row", "column", "paper", "ours", "W−L: ours / paper", "mean A − B", "Wilcoxon p",
              "agreement"]
    rows = [
        [cell["row"], cell["column"], _record(cell, "published_"), _our_record(cell),
         f"{_signed(cell['distance'])} / {_signed(cell['published_distance'])}",
         _number(cell["mean_difference"], "+.3g"), _number(cell["wilcoxon_p_value"], ".3g"), _agreement(cell)]
        for _, cell in comparison.iterrows()
    ]
    compared = comparison.loc[comparison["status"] == ""]
    significant = compared.loc[compared["published_significant"].astype(bool)]
    lines = [
        f"## {table.heading}",
        "",
        f"The paper's caption: “{table.caption}”",
        "",
        f"Source: {table.citation}. Shown by `report.published: [{table.key}]`.",
        "",
        *protocol_lines(protocol_rows(table, comparison, settings)),
        *(paper_layout(comparison) if table.in_layout else []),
        markdown_table(header, rows),
        "Records are wins–draws–losses of the row's classifier A against B; bold: significant (sign test, "
        "draws left out). W−L: wins minus losses, ours / the paper's. Mean A − B: the mean over the "
        "datasets of A's mean loss minus B's (below 0: A's losses are lower); Wilcoxon p: signed-rank "
        "test of those differences across the datasets. Agreement: ✓ when the winner (sign of W−L) and "
        "the significance are the same as the paper's, else ✗ and what differs; "
        f"{NOT_COMPARED}: not compared (see below).",
        "",
        f"**Totals: the paper's winner in {compared['same_winner'].sum()} of {len(compared)} compared "
        f"cells; significant where the paper is in {_significant_too(significant)} of "
        f"{len(significant)}; same winner and significance (✓) in {compared['agree'].sum()} of "
        f"{len(compared)}.** {_gaps(compared)}Not compared: {len(comparison) - len(compared)} of "
        f"{len(comparison)} cells.",
        "",
        "The models each row compares (A vs B), and why a cell is not compared:",
        "",
        *_row_notes(comparison),
        "",
        "Notes:",
        "",
        *(f"- {note}" for note in table.notes),
    ]
    return "\n".join(lines) + "\n"


def paper_layout(comparison: pd.DataFrame) -> list[str]:
    """The table as the paper lays it out, rows by columns, each cell "the paper's record / ours"."""
    columns = list(dict.fromkeys(comparison["column"]))
    grid = {row: dict.fromkeys(columns, "") for row in dict.fromkeys(comparison["row"])}
    for _, cell in comparison.iterrows():
        grid[cell["row"]][cell["column"]] = f"{_record(cell, 'published_')} / {_our_record(cell)}"
    return [
        "In the paper's layout, each cell the paper's record / ours (wins–draws–losses of the row against the "
        "column; bold: significant by the sign test):",
        "",
        markdown_table(["", *columns], [[row, *cells.values()] for row, cells in grid.items()]),
        "Cell by cell:",
        "",
    ]


def _gaps(compared: pd.DataFrame) -> str:
    """How far our W−L is from the paper's over the compared cells."""
    if compared.empty:
        return ""
    gap = (compared["distance"] - compared["published_distance"]).astype(int)
    return f"W−L, ours minus the paper's: from {_signed(gap.min())} to {_signed(gap.max())}. "


def _significant_too(cells: pd.DataFrame) -> int:
    """Cells significant in the paper that are significant here too, with the paper's winner."""
    return int((cells["significant"].astype(bool) & cells["same_winner"].astype(bool)).sum())


def _signed(value) -> str:
    return NOT_COMPARED if pd.isna(value) else f"{int(value):+d}"


def _number(value, spec: str) -> str:
    return "" if pd.isna(value) else format(float(value), spec)


def _record(cell: pd.Series, side: str = "") -> str:
    """Our record of a cell (``side`` ``published_``: the paper's), bold where significant."""
    record = f"{cell[side + 'wins']}–{cell[side + 'draws']}–{cell[side + 'losses']}"
    return f"**{record}**" if cell[side + "significant"] else record


def _our_record(cell: pd.Series) -> str:
    if cell["status"]:
        return NOT_COMPARED
    return _record(cell) + (f" ({cell['missing']} missing)" if cell["missing"] else "")


def _agreement(cell: pd.Series) -> str:
    if cell["status"]:
        return ""
    differs = [what for what in ("winner", "significance") if not cell[f"same_{what}"]]
    return "✗ " + ", ".join(differs) if differs else "✓"


def _row_notes(comparison: pd.DataFrame) -> list[str]:
    """Per row: the models of each compared column, and why the other columns are not compared."""
    notes = []
    for row, cells in comparison.groupby("row", sort=False):
        parts = {}
        for cell in cells.itertuples():
            what = cell.status or f"{cell.a} vs {cell.b}"
            parts.setdefault(what, []).append(cell.column)
        notes.append(f"- {row}: "
                     + "; ".join(f"{what} ({', '.join(columns)})" for what, columns in parts.items()))
    return notes
