"""Reports regenerated from what an experiment logged: its MLflow runs, or the bundles they were exported to.

:func:`compute_report` computes a :class:`Report` from the runs and :class:`ReportOptions`, :func:`write_files` renders
it, and :func:`write_report` does both from a composed config (:func:`unchanged_report`: unless the
report there was made from the same runs, settings and code). A report holds win-draw-loss tables
with sign tests, Wilcoxon and per-dataset 5x2cv tests, Friedman ranks with a critical-difference
diagram, the published tables beside ours, scatter plots and win-loss curves against iterations.
"""

from bncbench.report.compute import Report, compute_report
from bncbench.report.options import ReportOptions
from bncbench.report.published import PUBLISHED, published_tables
from bncbench.report.published_table import PublishedTable
from bncbench.report.results import LoggedRuns, load_fold_metrics, load_results, read_runs
from bncbench.report.tables import to_frame, to_latex, to_markdown, wdl_table
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss
from bncbench.report.writer import plan_runs, unchanged_report, write_files, write_report

__all__ = ["PUBLISHED", "LoggedRuns", "PublishedTable", "Report", "ReportOptions", "WinDrawLoss", "compute_report",
           "load_fold_metrics", "load_results", "plan_runs", "published_tables", "read_runs", "to_frame",
           "to_latex", "to_markdown", "unchanged_report", "wdl_table", "win_draw_loss", "write_files", "write_report"]
