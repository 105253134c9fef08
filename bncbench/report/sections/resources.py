"""Resources per cell: each cell's peak resident memory and CPU time (``bncbench.core.resources``) beside its
dataset's rows, so that a cell whose memory grows with the rows shows it; left out of the README entirely (``Section``
with body None) where no run logged them, as in every report made before issue 44."""

from pathlib import Path

import pandas as pd

from bncbench.report.compute import Report
from bncbench.report.readme import Figures, Section
from bncbench.report.sections import PluginSection
from bncbench.report.tables import markdown_table, write_csv
from bncbench.tracking import tags as tag

FILE = "resources.csv"
TITLE = "Resources per cell"
COLUMNS = ["dataset", "training_rows", "model", "peak_rss_mib", "cpu_seconds", "fit_seconds", "predict_seconds"]


def resources(report: Report) -> pd.DataFrame:
    """One row per cell that logged its peak memory or CPU time (``COLUMNS``): the training rows of a fold of its
    dataset (a synthetic one's, ``report.learning_curves``; NA for others), its peak in MiB, its CPU seconds, and
    the means over its folds of the fit and predict times; sorted by rows, then dataset and model."""
    results = report.results
    if not set(tag.RESOURCES) & set(results.columns):
        return pd.DataFrame(columns=COLUMNS)
    logged = results.reindex(columns=["dataset", "model", *tag.RESOURCES, "fit_seconds", "predict_seconds"])
    logged = logged[logged[list(tag.RESOURCES)].notna().any(axis=1)]
    frame = pd.DataFrame({
        "dataset": logged["dataset"],
        "training_rows": logged["dataset"].map(_training_rows(report)).astype("Int64"),
        "model": logged["model"],
        "peak_rss_mib": logged[tag.PEAK_RSS] / 2**20,
        "cpu_seconds": logged[tag.CPU_SECONDS],
        "fit_seconds": logged["fit_seconds"],
        "predict_seconds": logged["predict_seconds"],
    })
    return frame.sort_values(["training_rows", "dataset", "model"], ignore_index=True)[COLUMNS]


def _training_rows(report: Report) -> dict:
    """``dataset -> training rows of a fold`` of the synthetic datasets."""
    curves = report.learning_curves
    return dict(zip(curves["dataset"], curves["training_rows"]))


def write(report: Report, folder: Path, figures: Figures) -> Section:
    """``resources.csv`` and the README's table of it; no section where no run logged the metrics."""
    found = resources(report)
    if found.empty:
        return Section(TITLE, None)
    write_csv(found, folder / FILE)
    rows = [[row.dataset, "–" if pd.isna(row.training_rows) else f"{row.training_rows:,}", row.model,
             _number(row.peak_rss_mib, "{:,.0f}"), _number(row.cpu_seconds, "{:,.1f}"),
             _number(row.fit_seconds, "{:,.2f}"), _number(row.predict_seconds, "{:,.2f}")] for row in found.itertuples(index=False)]
    header = ["dataset", "training rows", "model", "peak RSS (MiB)", "CPU (s)", "fit (s, mean of folds)",
              "predict (s, mean of folds)"]
    return Section(TITLE, [
        f"[{FILE}]({FILE}). Each cell's peak resident memory, from its start to its end (its process's high-water "
        "mark reset at its start, so it includes what the process held before: the interpreter, the libraries, "
        "numba's kernels), and the CPU time of its whole cross-validation (every thread of its process); beside "
        "them the means over its folds of the wall-clock fit and predict times. A cell whose memory does not "
        "grow with the rows has the same peak at every size; '–' where a run did not log it (no /proc).",
        "",
        markdown_table(header, rows),
    ])


def _number(value, form: str) -> str:
    return "–" if pd.isna(value) else form.format(value)


SECTION = PluginSection(TITLE, order=20, files=(FILE,), write=write)
