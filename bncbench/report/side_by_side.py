"""A published table in the paper's layout with our records beside it and whether they agree.

Agreement of a cell: the same winner (the sign of wins - losses) and the same significance (our
sign test at ``report.alpha`` against the published record's, see
:mod:`bncbench.report.published`).
"""

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from bncbench.report.published_table import PublishedCell, PublishedTable
from bncbench.report.tables import markdown_table
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss

NOT_COMPARED = "—"
_COLUMNS = [
    "paper",
    "source",
    "table",
    "row",
    "column",
    "metric",
    "printed",
    "published_wins",
    "published_draws",
    "published_losses",
    "published_p_value",
    "published_significant",
    "a",
    "b",
    "status",
    "wins",
    "draws",
    "losses",
    "missing",
    "p_value",
    "significant",
    "same_winner",
    "same_significance",
    "agree",
]


def compare_published(
    table: PublishedTable,
    results: pd.DataFrame,
    *,
    dataset_tests: pd.DataFrame | None = None,
    datasets: Iterable[str] | None = None,
    **options,
) -> pd.DataFrame:
    """Our win-draw-loss record for every cell of a published table.

    Parameters
    ----------
    table : PublishedTable
    results : pandas.DataFrame
        One row per (dataset, model) with the mean metrics.
    dataset_tests : pandas.DataFrame, optional
        Per-dataset fold tests (:func:`bncbench.report.significance.dataset_tests`) covering the
        table's comparisons; needed when ``table.per_dataset_significance``, whose wins are the
        datasets where the Wilcoxon test of the folds is significant.
    datasets : iterable of str, optional
        Datasets to count on (the experiment's).
    **options
        ``draws``, ``round``, ``alpha`` of :func:`bncbench.report.win_draw_loss.win_draw_loss`.

    Returns
    -------
    pandas.DataFrame
        One row per cell, in the paper's order: its source (``paper``, ``source``, ``table``,
        ``row``, ``column``), ``metric``, the record as ``printed`` and parsed, its sign-test
        ``published_p_value`` and ``published_significant``; the models ``a`` and ``b``;
        ``status`` (empty when compared, else why not); our ``wins``, ``draws``, ``losses``,
        ``missing`` (datasets without both models), ``p_value``, ``significant``; and
        ``same_winner``, ``same_significance``, ``agree`` (empty when not compared).
    """
    datasets = None if datasets is None else list(datasets)
    rows = []
    for cell in table.cells:
        wins, draws, losses = cell.record
        row = {
            "paper": table.paper,
            "source": table.source,
            "table": table.table,
            "row": cell.row,
            "column": cell.column,
            "metric": cell.metric,
            "printed": cell.printed,
            "published_wins": wins,
            "published_draws": draws,
            "published_losses": losses,
            "published_p_value": cell.p_value,
            "published_significant": cell.significant,
            "a": cell.a,
            "b": cell.b,
            "status": _status(cell, results),
        }
        if not row["status"]:
            p_values = _fold_p_values(table, cell, dataset_tests)
            w = win_draw_loss(
                results,
                cell.a,
                cell.b,
                cell.metric,
                datasets=datasets,
                dataset_p_values=p_values,
                **options,
            )
            row |= _ours(w, cell)
        rows.append(row)
    counts = {column: "Int64" for column in ("wins", "draws", "losses", "missing")}
    flags = {column: "boolean" for column in ("significant", "same_winner", "same_significance")}
    return (
        pd.DataFrame(rows).reindex(columns=_COLUMNS).astype(counts | flags | {"agree": "boolean"})
    )


def _status(cell: PublishedCell, results: pd.DataFrame) -> str:
    if cell.a is None:
        return f"no bncbench counterpart: {cell.unmapped}"
    if cell.metric not in results.columns:
        return f"{cell.metric} not logged"
    absent = [model for model in (cell.a, cell.b) if model not in set(results["model"])]
    return f"not run: {', '.join(absent)}" if absent else ""


def _fold_p_values(
    table: PublishedTable, cell: PublishedCell, dataset_tests: pd.DataFrame | None
) -> pd.Series | None:
    if not table.per_dataset_significance:
        return None
    if dataset_tests is None:
        return pd.Series(dtype=float)
    tests = dataset_tests.loc[
        (dataset_tests["a"] == cell.a)
        & (dataset_tests["b"] == cell.b)
        & (dataset_tests["metric"] == cell.metric)
    ]
    return tests.set_index("dataset")["wilcoxon_p_value"]


def _ours(w: WinDrawLoss, cell: PublishedCell) -> dict:
    wins, _, losses = cell.record
    same_winner = bool(np.sign(w.wins - w.losses) == np.sign(wins - losses))
    same_significance = w.significant == cell.significant
    return {
        "wins": w.wins,
        "draws": w.draws,
        "losses": w.losses,
        "missing": len(w.missing),
        "p_value": w.p_value,
        "significant": w.significant,
        "same_winner": same_winner,
        "same_significance": same_significance,
        "agree": same_winner and same_significance,
    }


def published_markdown(
    table: PublishedTable, comparison: pd.DataFrame, settings: Mapping[str, Mapping[str, int]] | None = None
) -> str:
    """The paper's table with three columns per paper column: the paper's record, ours, agreement.

    Parameters
    ----------
    table : PublishedTable
    comparison : pandas.DataFrame
        :func:`compare_published` of ``table``.
    settings : mapping, optional
        The settings of the runs read (:func:`bncbench.report.run_settings.run_settings`), set beside
        the paper's protocol (``table.protocol``).

    Returns
    -------
    str
        A Markdown section: heading, source, table (significant records in bold), the models of
        each row, a count of agreements and the table's notes.
    """
    cells = comparison.set_index(["row", "column"])
    header = [table.row_header]
    for column in table.columns:
        header += [f"{column}: paper", f"{column}: ours", f"{column}: agreement"]
    rows = []
    for row in table.rows:
        line = [row]
        for column in table.columns:
            if (row, column) not in cells.index:
                line += ["", "", ""]
                continue
            cell = cells.loc[(row, column)]
            line += [_published_record(cell), _our_record(cell), _agreement(cell)]
        rows.append(line)
    compared = comparison.loc[comparison["status"] == ""]
    significant = compared.loc[compared["published_significant"].astype(bool)]
    lines = [
        f"## {table.table}: {table.caption}",
        "",
        (
            f"Source: {table.paper}; `../shared/papers/{table.source}`, {table.table} "
            f"(`report.published: [{table.key}]`)."
        ),
        "",
        *_protocol_lines(table, {**(settings or {}), **_compared_datasets(compared)}),
        markdown_table(header, rows),
        (
            "Records are wins–draws–losses of the row's classifier; bold: significant (sign test, "
            "draws left out). Agreement: ✓ when the winner (sign of wins − losses) and the "
            "significance are the same as the paper's, else ✗ and what differs; "
            f"{NOT_COMPARED}: not compared (see below)."
        ),
        "",
        (
            f"**Totals: the paper's winner in {compared['same_winner'].sum()} of {len(compared)} compared "
            f"cells; significant where the paper is in {_significant_too(significant)} of "
            f"{len(significant)}; same winner and significance (✓) in {compared['agree'].sum()} of "
            f"{len(compared)}.** Not compared: {len(comparison) - len(compared)} of {len(comparison)} cells."
        ),
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


def _compared_datasets(compared: pd.DataFrame) -> dict[str, dict[str, int]]:
    """The setting ``datasets`` as the table's cells count them: the datasets where both models of a
    cell have runs (the runs read may cover more, e.g. while a protocol's slices go in), each number
    of datasets with how many cells have it."""
    if compared.empty:
        return {}
    per_cell = (compared["wins"] + compared["draws"] + compared["losses"]).astype(int)
    return {"datasets": {str(n): int(cells) for n, cells in per_cell.value_counts().sort_index().items()}}


def _significant_too(cells: pd.DataFrame) -> int:
    """Cells significant in the paper that are significant here too, with the paper's winner."""
    return int((cells["significant"].astype(bool) & cells["same_winner"].astype(bool)).sum())


def _protocol_lines(table: PublishedTable, settings: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The paper's protocol beside the settings of the runs read, each marked as the same or not."""
    if not table.protocol:
        return []
    rows = []
    for setting, paper in table.protocol.items():
        ours = list(settings.get(setting) or {})
        shown = ", ".join(ours) if ours else "not logged"
        same = len(ours) == 1 and (ours[0] == paper or ours[0].startswith(f"{paper},"))
        rows.append([setting, paper, shown, "same" if same else "**differs**"])
    return [
        "The paper's protocol and that of the runs read (from their logged params; datasets: those "
        "where both models of a cell have runs):",
        "",
        markdown_table(["setting", "paper", "ours", ""], rows),
    ]


def _published_record(cell: pd.Series) -> str:
    record = f"{cell['published_wins']}–{cell['published_draws']}–{cell['published_losses']}"
    return f"**{record}**" if cell["published_significant"] else record


def _our_record(cell: pd.Series) -> str:
    if cell["status"]:
        return NOT_COMPARED
    record = f"{cell['wins']}–{cell['draws']}–{cell['losses']}"
    if cell["significant"]:
        record = f"**{record}**"
    return record + (f" ({cell['missing']} missing)" if cell["missing"] else "")


def _agreement(cell: pd.Series) -> str:
    if cell["status"]:
        return ""
    differs = [
        what
        for what, same in (
            ("winner", cell["same_winner"]),
            ("significance", cell["same_significance"]),
        )
        if not same
    ]
    return "✗ " + ", ".join(differs) if differs else "✓"


def _row_notes(comparison: pd.DataFrame) -> list[str]:
    """Per row: the models of each compared column, and why the other columns are not compared."""
    notes = []
    for row, cells in comparison.groupby("row", sort=False):
        parts = {}
        for cell in cells.itertuples():
            what = cell.status or f"{cell.a} vs {cell.b}"
            parts.setdefault(what, []).append(cell.column)
        notes.append(
            f"- {row}: "
            + "; ".join(f"{what} ({', '.join(columns)})" for what, columns in parts.items())
        )
    return notes
