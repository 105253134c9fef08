"""Reports regenerated from what an experiment logged to MLflow: win-draw-loss tables."""

from bncbench.report.results import load_fold_metrics, load_results
from bncbench.report.tables import to_frame, to_latex, to_markdown, wdl_table, write_report
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss

__all__ = [
    "WinDrawLoss",
    "load_fold_metrics",
    "load_results",
    "to_frame",
    "to_latex",
    "to_markdown",
    "wdl_table",
    "win_draw_loss",
    "write_report",
]
