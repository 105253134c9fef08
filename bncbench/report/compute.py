"""The compute layer of the report: everything it shows, from an experiment's logged runs.

:func:`compute_report` takes the runs and the options (:class:`bncbench.report.options.ReportOptions`, no
config) and returns a :class:`Report` of data frames and the data of each figure; :mod:`bncbench.report.writer`
renders it.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.report.best_of import best_of as hindsight_picks
from bncbench.report.claims import Outcome, evaluate_claims
from bncbench.report.error_counts import with_total_errors
from bncbench.report.learning_curves import COLUMNS as LEARNING_CURVE_COLUMNS
from bncbench.report.learning_curves import learning_curves
from bncbench.report.options import ReportOptions
from bncbench.report.published import published_tables
from bncbench.report.published_table import PublishedTable
from bncbench.report.results import LoggedRuns
from bncbench.report.run_settings import run_settings
from bncbench.report.side_by_side import compare_published
from bncbench.report.significance import Ranking, Undefined, dataset_tests, friedman_nemenyi, wilcoxon_across_datasets
from bncbench.report.significant_wdl import check_counting
from bncbench.report.tables import pair, wdl_legend, wdl_table
from bncbench.report.win_draw_loss import WinDrawLoss
from bncbench.report.win_loss_curves import model_specs, win_loss_curves

#: Why a kind of win-loss curve is not drawn when no model has a reference.
NO_CURVE = {
    "iterations": "no two models differ only in `model.estimator_params.iterations`",
    "tying": ("no model differs from another only in `model.estimator_params.tying`, that one "
              "having the reference tying (report.reference_tying)"),
}


@dataclass(frozen=True)
class Curves:
    """Win-loss curves of one kind (``iterations`` or ``tying``), per metric, against ``reference``
    as in the HDP paper's figure ``paper``; every frame empty when no model has a reference."""

    kind: str
    reference: str
    paper: str
    by_metric: dict[str, pd.DataFrame]


@dataclass
class Report:
    """What a report shows, computed from the runs; :func:`bncbench.report.writer.write_files`
    renders it.

    Attributes
    ----------
    experiment : str
        The MLflow experiment read.
    options : ReportOptions
        What the report compares and how.
    datasets : list of str or None
        The datasets compared (None: every dataset logged).
    models : list of str
        The models of the experiment, in its order; those with no finished cell are not ranked.
    results : pandas.DataFrame
        Mean metrics, one row per cell (:meth:`bncbench.report.results.LoggedRuns.results`).
    compared_results : pandas.DataFrame
        ``results`` with the rows of the ``report.best_of`` models, which the comparisons read.
    wdls : list of WinDrawLoss
        Sign tests of every comparison and metric.
    wilcoxon : pandas.DataFrame
        Wilcoxon signed-rank test across datasets of every comparison and metric.
    tests : pandas.DataFrame
        Per-dataset tests of the fold scores, of the comparisons and of the published tables' pairs.
    published : list of (PublishedTable, pandas.DataFrame)
        Each published table and our records beside it.
    folds : pandas.DataFrame
        The per-fold values of the compared models' runs (:meth:`bncbench.report.results.LoggedRuns.fold_metrics`,
        long format), which the per-dataset tests and the sections (:mod:`bncbench.report.sections`) read.
    rankings : list of Ranking
        Friedman-Nemenyi per metric where defined; ``unranked`` says why not elsewhere.
    scatters : dict
        ``{(a, b, metric): caption suffix}``: the scatter plots to draw (the published tables' ones
        named after their figure); ``missing_scatters`` lists those whose models were not run.
    learning_curves : pandas.DataFrame
        The points of the learning curves of the metrics on synthetic datasets (:mod:`bncbench.report.learning_curves`).
    settings : dict
        Settings and versions of the runs read (:func:`bncbench.report.run_settings.run_settings`).
    left_out : pandas.DataFrame or None
        Runs of the cells with other settings or data (None: not checked against cells).
    repeats : dict
        ``{bundle id: runs}`` passed over, their cells' numbers read from a bundle before (``LoggedRuns.repeats``).
    claims : list of Outcome
        The paper's claims the experiment shows (:mod:`bncbench.report.claims`), each with ours.
    """

    experiment: str
    options: ReportOptions
    datasets: list[str] | None
    models: list[str]
    metrics: list[str]
    comparisons: list[tuple[str, str]]
    results: pd.DataFrame
    compared_results: pd.DataFrame
    wdls: list[WinDrawLoss]
    wilcoxon: pd.DataFrame
    tests: pd.DataFrame
    published: list[tuple[PublishedTable, pd.DataFrame]]
    folds: pd.DataFrame
    rankings: list[Ranking] = field(default_factory=list)
    unranked: list[str] = field(default_factory=list)
    scatters: dict[tuple[str, str, str], str] = field(default_factory=dict)
    missing_scatters: list[str] = field(default_factory=list)
    curves: list[Curves] = field(default_factory=list)
    learning_curves: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LEARNING_CURVE_COLUMNS))
    settings: dict[str, dict[str, int]] = field(default_factory=dict)
    left_out: pd.DataFrame | None = None
    repeats: dict[str, int] = field(default_factory=dict)
    claims: list[Outcome] = field(default_factory=list)

    def legend(self, **style) -> str:
        """What the report's W-D-L tables count and test (:func:`bncbench.report.tables.wdl_legend`, ``style``
        its ``dash`` and ``less_equal``)."""
        return wdl_legend(**self.options.sign_test, counting=self.options.counting, **style)


def compute_report(runs: LoggedRuns, options: ReportOptions,
                   test_rows: Callable[[str], np.ndarray] | None = None) -> Report:
    """Compute every table, test and figure's data of an experiment from its logged runs.

    Parameters
    ----------
    runs : LoggedRuns
        The experiment's finished runs, read from a store (:func:`bncbench.report.results.read_runs`) or
        from bundles, checked against its cells if given there: only their runs of this configuration
        and data are read; without cells, each cell's latest finished run.
    options : ReportOptions
        What the report compares and how.
    test_rows : callable, optional
        ``dataset -> test rows of each fold``, for the runs that predate their folds' error counts
        (``bncbench.report.error_counts``).

    Raises
    ------
    ConfigError
        If a metric is missing, the experiment has no finished run, or a setting is invalid.
    """
    experiment, results = runs.experiment, runs.results()
    if results.empty:
        others = 0 if runs.cells is None else len(runs.left_out())
        raise ConfigError(f"experiment {experiment!r} has no finished run in {runs.source!r}"
                          + (f" of this configuration ({others} of other settings or data)" if others else "")
                          + "; run it first (python -m bncbench experiment=...)")
    if "zero_one_loss" in results.columns:  # wins and draws on 0-1 loss are on whole errors
        counts = runs.fold_metrics(results["run_id"], ["zero_one_loss", "errors"])
        results = with_total_errors(results, counts, test_rows)
    check_counting(options.counting)
    sign_test, datasets = options.sign_test, None if options.datasets is None else list(options.datasets)
    metrics, pairs = list(options.metrics), [pair(comparison) for comparison in options.comparisons]
    tables = published_tables(options.published)
    test_metrics = dict.fromkeys(metrics + [cell.metric for t in tables for cell in t.cells])
    test_metrics = [metric for metric in test_metrics if metric in results.columns]
    hindsight = hindsight_picks(results, options.best_of, test_metrics)
    compared_results = pd.concat([results, hindsight.rows], ignore_index=True) if options.best_of else results
    logged = set(compared_results["model"])
    published_pairs = [(cell.a, cell.b) for table in tables for cell in table.cells
                       if {cell.a, cell.b} <= logged and cell.metric in results.columns]
    tested_pairs = list(dict.fromkeys(pairs + published_pairs))
    compared = {model for pair_ in tested_pairs for model in pair_}
    run_ids = compared_results.loc[compared_results["model"].isin(compared), "run_id"]
    folds = hindsight.fold_metrics(runs.fold_metrics([*run_ids, *hindsight.picks["run_id"]], test_metrics))
    tests = dataset_tests(compared_results, folds, tested_pairs, test_metrics, datasets=datasets,
                          folds_per_repetition=options.folds_per_repetition)
    counted_by = tests if options.counting == "wilcoxon" else None
    models = list(options.models) if options.models else sorted(results["model"].unique())
    report = Report(
        experiment=experiment, options=options, datasets=datasets, models=models, metrics=metrics, comparisons=pairs,
        results=results, compared_results=compared_results, tests=tests, folds=folds,
        wdls=wdl_table(compared_results, options.comparisons, metrics, datasets=datasets, dataset_tests=counted_by,
                       **sign_test),
        wilcoxon=wilcoxon_across_datasets(compared_results, pairs, metrics, datasets=datasets),
        published=[
            (table, compare_published(table, compared_results, dataset_tests=tests, datasets=datasets, **sign_test))
            for table in tables
        ],
        settings=run_settings(runs.provenance(), experiment),
        left_out=runs.left_out(),
        repeats=dict(runs.repeats),
    )
    ranked = [model for model in models if model in logged]
    for metric in metrics:
        try:
            report.rankings.append(friedman_nemenyi(results, ranked, metric, alpha=options.alpha, datasets=datasets))
        except Undefined as why:
            report.unranked.append(f"{metric}: {why}")
    _scatters(report, tables)
    specs = model_specs(runs.model_params())
    for kind, tying, reference, paper in (
        ("iterations", None, "the most iterations", "journal Fig. 4, arXiv Fig. 3"),
        ("tying", options.reference_tying, f"tying {options.reference_tying}", "journal Fig. 5, arXiv Fig. 4"),
    ):
        by_metric = {metric: win_loss_curves(results, specs, metric, reference_tying=tying, datasets=datasets,
                                             **sign_test) for metric in metrics}
        report.curves.append(Curves(kind, reference, paper, by_metric))
    report.learning_curves = learning_curves(results, runs.dataset_params(), metrics)
    report.claims = evaluate_claims(experiment, compared_results, datasets, sign_test,
                                    _dataset_rows(test_rows, options.folds_per_repetition), counted_by)
    return report


def _dataset_rows(test_rows: Callable[[str], np.ndarray] | None, folds_per_repetition: int):
    """``dataset -> rows``: the test rows of one repetition's folds, which together hold every row once."""
    if test_rows is None:
        return None
    return lambda dataset: int(np.sum(test_rows(dataset)[:folds_per_repetition]))


def _scatters(report: Report, tables: list[PublishedTable]) -> None:
    """The scatter plots of the comparisons and of the published tables whose models were run."""
    report.scatters = {(a, b, metric): "" for a, b in report.comparisons for metric in report.metrics}
    for table in tables:
        for scatter in table.scatters:
            if {scatter.a, scatter.b} <= set(report.results["model"]):
                report.scatters[(scatter.a, scatter.b, scatter.metric)] = f"{table.key}: {scatter.figure}"
            else:
                needs = f"needs models {scatter.a} and {scatter.b}"
                report.missing_scatters.append(f"{table.paper.split('.')[0]} {scatter.figure}: {needs}")
