"""Reports regenerated from what an experiment logged to MLflow.

:func:`write_report` writes them all: win-draw-loss tables with sign tests, Wilcoxon and per-dataset
5x2cv tests, Friedman ranks with a critical-difference diagram, the published tables beside ours,
scatter plots and win-loss curves against iterations.
"""

from bncbench.report.published import PUBLISHED, PublishedTable, published_tables
from bncbench.report.results import load_fold_metrics, load_model_params, load_results
from bncbench.report.tables import to_frame, to_latex, to_markdown, wdl_table
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss
from bncbench.report.writer import write_report

__all__ = [
    "PUBLISHED",
    "PublishedTable",
    "WinDrawLoss",
    "load_fold_metrics",
    "load_model_params",
    "load_results",
    "published_tables",
    "to_frame",
    "to_latex",
    "to_markdown",
    "wdl_table",
    "win_draw_loss",
    "write_report",
]
