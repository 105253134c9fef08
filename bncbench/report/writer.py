"""``write_report``: every table, test and figure of an experiment, from its MLflow runs.

The one entry point of the report: ``python -m bncbench`` calls it after the last cell and
``python -m bncbench.report`` on its own. A statistic or figure the results do not define (too few
datasets, models missing) is left out and the experiment's ``README.md`` says why.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from bncbench.errors import ConfigError
from bncbench.names import check_path_name
from bncbench.model_configs import experiment_comparisons, is_pattern
from bncbench.report.clipping import clipping_notes
from bncbench.report.figures import (
    critical_difference_plot,
    scatter_plot,
    win_loss_plot,
)
from bncbench.report.published import PublishedTable, published_tables
from bncbench.report.cells import expected_cells
from bncbench.report.results import Cells, left_out_runs, load_fold_metrics, load_model_params, load_results
from bncbench.report.run_settings import settings_section
from bncbench.report.staging import staged
from bncbench.report.side_by_side import compare_published, published_markdown
from bncbench.report.significance import (
    Ranking,
    Undefined,
    dataset_tests,
    friedman_nemenyi,
    wilcoxon_across_datasets,
)
from bncbench.report.tables import (
    csv_safe,
    markdown_table,
    markdown_text,
    pair,
    to_frame,
    to_latex,
    to_markdown,
    wdl_legend,
    wdl_table,
)
from bncbench.report.win_draw_loss import win_draw_loss
from bncbench.report.win_loss_curves import model_specs, win_loss_curves

FIGURES = "figures"
#: Files a report may write besides the figures; removed first, so none is left from an older run.
OUTPUTS = (
    "README.md",
    "results.csv",
    "wdl.md",
    "wdl.tex",
    "wdl.csv",
    "tests.csv",
    "published.md",
    "published.csv",
    "ranks.csv",
    "wl_curves.csv",
)
#: Per-dataset tests whose significant datasets are counted as W-D-L in the README.
_FOLD_TESTS = {"t_p_value": "5x2cv t", "f_p_value": "5x2cv F", "wilcoxon_p_value": "fold Wilcoxon"}

#: Why a kind of win-loss curve is not drawn when no model has a reference.
_NO_CURVE = {
    "iterations": "no two models differ only in `model.estimator_params.iterations`",
    "tying": (
        "no model differs from another only in `model.estimator_params.tying`, that one "
        "having the reference tying (report.reference_tying)"
    ),
}


@dataclass
class _Figures:
    """The figures written (section, caption, file name) and those left out (section, why)."""

    directory: Path
    drawn: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def draw(self, section: str, caption: str, name: str, plot) -> None:
        """``plot(path)`` into ``directory / name``, or record why it is undefined; in ``name`` (made
        of model and metric names) a path separator or control character becomes ``_``."""
        name = check_path_name("figure", re.sub(r"[/\\\x00-\x1f\x7f]", "_", name))
        try:
            plot(self.directory / name)
        except Undefined as why:
            self.skipped.append((section, markdown_text(f"{caption}: {why}")))
        else:
            self.drawn.append((section, markdown_text(caption), name))


def write_report(cfg: DictConfig, overrides: list[str] | None = None) -> Path:
    """Write the tables, statistics and figures of an experiment from its MLflow runs.

    Parameters
    ----------
    cfg : DictConfig
        The composed bncbench config (:func:`bncbench.config.compose` checks its model names); reads
        ``tracking_uri``, ``report_dir``, ``experiment.name``, ``experiment.comparisons``,
        ``experiment.metrics``, ``experiment.datasets`` and ``experiment.models`` (optional:
        default, every dataset and model logged), ``cv.folds`` (default 2), ``report.draws``,
        ``report.round``, ``report.alpha``, ``report.published`` (keys of
        :data:`bncbench.report.published.PUBLISHED`, default none) and ``report.reference_tying``
        (default ``level``).
    overrides : list of str, optional
        The overrides ``cfg`` was composed from: each cell's run is then the one of this
        configuration and data (:func:`bncbench.report.cells.expected_cells`), the others are
        counted as left out. None: each cell's latest finished run, whatever its settings.

    Returns
    -------
    pathlib.Path
        ``<report_dir>/<experiment.name>``, holding

        - ``README.md``: the report, linking or showing everything below, what was left out, and
          the settings, code versions and data digests of the runs read;
        - ``results.csv``: the mean metrics of every finished cell;
        - ``wdl.md``, ``wdl.tex``, ``wdl.csv``: win-draw-loss with the sign test per comparison and
          metric (the CSV also with the Wilcoxon signed-rank test across datasets);
        - ``tests.csv``: per comparison, metric and dataset, the 5x2cv t-test, the combined 5x2cv
          F-test and the Wilcoxon test of the fold scores;
        - ``published.md``, ``published.csv``: the tables of ``report.published`` in the papers'
          layout, our records beside them, and their agreement;
        - ``ranks.csv`` and ``figures/cd_<metric>.png``: Friedman with Nemenyi over all models;
        - ``figures/scatter_<metric>_<a>_vs_<b>.png``: per-dataset scatter of each comparison and
          of the published tables' scatter plots;
        - ``wl_curves.csv``, ``figures/wl_iterations_<metric>.png``,
          ``figures/wl_tying_<metric>.png``: win-loss against the number of iterations, for
          models that differ in their ``iterations`` or ``tying`` parameter.

    Raises
    ------
    ConfigError
        If the store, the experiment or a metric is missing, the experiment has no finished run, or
        a report option is invalid.
    """
    experiment = cfg.experiment
    cells = None if overrides is None else expected_cells(cfg, overrides)
    results = load_results(cfg.tracking_uri, experiment.name, cells)
    if results.empty:
        others = 0 if cells is None else len(left_out_runs(cfg.tracking_uri, experiment.name, cells))
        raise ConfigError(
            f"experiment {experiment.name!r} has no finished run in {cfg.tracking_uri!r}"
            + (f" of this configuration ({others} of other settings or data)" if others else "")
            + "; run it first (python -m bncbench experiment=...)"
        )
    options = {"draws": cfg.report.draws, "round": cfg.report.round, "alpha": cfg.report.alpha}
    datasets = _list(OmegaConf.select(cfg, "experiment.datasets"))
    models = _list(OmegaConf.select(cfg, "experiment.models")) or sorted(results["model"].unique())
    logged = set(results["model"])
    metrics = list(experiment.metrics)
    named = [str(c.get(side)) for c in experiment.comparisons for side in ("a", "b") if not is_pattern(str(c.get(side)))]
    expanded = experiment_comparisons({"models": [*models, *named], "comparisons": experiment.comparisons})
    comparisons = [pair(comparison) for comparison in expanded]
    tables = published_tables(OmegaConf.select(cfg, "report.published"))
    wdls = wdl_table(results, expanded, metrics, datasets=datasets, **options)

    published_pairs = [
        (cell.a, cell.b)
        for table in tables
        for cell in table.cells
        if {cell.a, cell.b} <= logged and cell.metric in results.columns
    ]
    pairs = list(dict.fromkeys(comparisons + published_pairs))
    test_metrics = list(dict.fromkeys(metrics + [cell.metric for t in tables for cell in t.cells]))
    test_metrics = [metric for metric in test_metrics if metric in results.columns]
    compared = {model for pair_ in pairs for model in pair_}
    folds = load_fold_metrics(
        cfg.tracking_uri, results.loc[results["model"].isin(compared), "run_id"], test_metrics
    )
    tests = dataset_tests(
        results,
        folds,
        pairs,
        test_metrics,
        datasets=datasets,
        folds_per_repetition=OmegaConf.select(cfg, "cv.folds", default=2),
    )

    place = Path(cfg.report_dir) / check_path_name("experiment.name", experiment.name)
    with staged(place, (*OUTPUTS, FIGURES)) as out:
        csv_safe(results).to_csv(out / "results.csv", index=False)
        wilcoxon = wilcoxon_across_datasets(results, comparisons, metrics, datasets=datasets)
        csv_safe(
            to_frame(wdls).merge(wilcoxon.drop(columns="datasets"), on=["a", "b", "metric"], how="left")
        ).to_csv(out / "wdl.csv", index=False)
        legend = wdl_legend(**options)
        clipped = clipping_notes(results, wdls, datasets)
        wdl_markdown = f"# Win–draw–loss: {markdown_text(experiment.name)}\n\n{legend}\n\n{to_markdown(wdls)}"
        (out / "wdl.md").write_text("\n".join([wdl_markdown, *clipped]), encoding="utf-8")
        caption = wdl_legend(**options, dash="--", less_equal=r"$\le$")
        (out / "wdl.tex").write_text(to_latex(wdls, caption=caption), encoding="utf-8")
        csv_safe(tests).to_csv(out / "tests.csv", index=False)

        comparisons_published = _write_published(out, tables, results, tests, datasets, options)
        figures = _Figures(out / FIGURES)
        ranked = [model for model in models if model in logged]
        rankings = _rankings(out, figures, results, ranked, metrics, datasets, options["alpha"])
        _scatters(figures, results, comparisons, metrics, tables, datasets)
        _curves(out, figures, cfg, cells, results, metrics, datasets, options)

        readme = [
            f"# Report: {markdown_text(experiment.name)}",
            "",
            (
                f"Regenerate with `python -m bncbench.report experiment={experiment.name}` (reads the "
                f"MLflow store, refits nothing). Report settings of this version: {_settings(cfg)}. "
                f"{len(results)} finished cells: {results['dataset'].nunique()} datasets, "
                f"{results['model'].nunique()} models."
            ),
            "",
            *_significance_section(wdls, results, wilcoxon, tests, datasets, options),
            *clipped,
            *_published_section(tables, comparisons_published),
            *_ranking_section(rankings, figures, [model for model in models if model not in logged]),
            *_figure_sections(figures),
            *settings_section(cfg.tracking_uri, experiment.name, cells),
        ]
        (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    return place


def _settings(cfg: DictConfig) -> str:
    """The ``report.*`` settings as command-line overrides."""

    def override(value) -> str:
        if isinstance(value, list):
            return "[" + ",".join(map(str, value)) + "]"
        return "null" if value is None else str(value)

    report = OmegaConf.to_container(cfg.report, resolve=True)
    return ", ".join(f"`report.{key}={override(value)}`" for key, value in report.items())


def _list(value) -> list | None:
    return None if value is None else list(value)


def _write_published(
    out: Path,
    tables: list[PublishedTable],
    results: pd.DataFrame,
    tests: pd.DataFrame,
    datasets: list | None,
    options: dict,
) -> list[pd.DataFrame]:
    comparisons = [
        compare_published(table, results, dataset_tests=tests, datasets=datasets, **options)
        for table in tables
    ]
    if tables:
        sections = [published_markdown(t, c) for t, c in zip(tables, comparisons, strict=True)]
        (out / "published.md").write_text(
            "# Published results beside ours\n\n" + "\n".join(sections), encoding="utf-8"
        )
        csv_safe(pd.concat(comparisons, ignore_index=True)).to_csv(out / "published.csv", index=False)
    return comparisons


def _rankings(
    out: Path,
    figures: _Figures,
    results: pd.DataFrame,
    models: list[str],
    metrics: list[str],
    datasets: list | None,
    alpha: float,
) -> list[Ranking]:
    rankings = []
    for metric in metrics:
        try:
            ranking = friedman_nemenyi(results, models, metric, alpha=alpha, datasets=datasets)
        except Undefined as why:
            figures.skipped.append(("ranks", f"{metric}: {why}"))
            continue
        rankings.append(ranking)
        figures.draw(
            "ranks",
            f"critical-difference diagram, {metric}",
            f"cd_{metric}.png",
            lambda path, ranking=ranking: critical_difference_plot(ranking, path),
        )
    if rankings:
        ranks = pd.concat(
            [
                ranking.mean_ranks.rename("mean_rank")
                .reset_index()
                .assign(
                    metric=ranking.metric,
                    datasets=ranking.datasets,
                    friedman_statistic=ranking.statistic,
                    friedman_p_value=ranking.p_value,
                    critical_difference=ranking.critical_difference,
                )
                for ranking in rankings
            ],
            ignore_index=True,
        )
        csv_safe(ranks).to_csv(out / "ranks.csv", index=False)
    return rankings


def _scatters(
    figures: _Figures,
    results: pd.DataFrame,
    comparisons: list[tuple[str, str]],
    metrics: list[str],
    tables: list[PublishedTable],
    datasets: list | None,
) -> None:
    wanted = {(a, b, metric): "" for a, b in comparisons for metric in metrics}
    for table in tables:
        for scatter in table.scatters:
            if {scatter.a, scatter.b} <= set(results["model"]):
                wanted[(scatter.a, scatter.b, scatter.metric)] = f"{table.key}: {scatter.figure}"
            else:
                figures.skipped.append(
                    (
                        "scatter",
                        (
                            f"{table.paper.split('.')[0]} {scatter.figure}: needs models "
                            f"{scatter.a} and {scatter.b}"
                        ),
                    )
                )
    for (a, b, metric), paper in wanted.items():
        figures.draw(
            "scatter",
            f"{a} vs {b}, {metric}" + (f" (as {paper})" if paper else ""),
            f"scatter_{metric}_{a}_vs_{b}.png",
            lambda path, a=a, b=b, metric=metric: scatter_plot(
                results, a, b, metric, path, datasets=datasets
            ),
        )


def _curves(
    out: Path,
    figures: _Figures,
    cfg: DictConfig,
    cells: Cells | None,
    results: pd.DataFrame,
    metrics: list[str],
    datasets: list | None,
    options: dict,
) -> None:
    specs = model_specs(load_model_params(cfg.tracking_uri, cfg.experiment.name, cells))
    tying = OmegaConf.select(cfg, "report.reference_tying", default="level")
    kinds = {
        "iterations": (None, "the most iterations", "journal Fig. 4, arXiv Fig. 3"),
        "tying": (tying, f"tying {tying}", "journal Fig. 5, arXiv Fig. 4"),
    }
    frames = []
    for kind, (reference_tying, reference, paper) in kinds.items():
        by_metric = {
            metric: win_loss_curves(
                results,
                specs,
                metric,
                reference_tying=reference_tying,
                datasets=datasets,
                **options,
            )
            for metric in metrics
        }
        if all(curves.empty for curves in by_metric.values()):
            figures.skipped.append(("win-loss curves", f"against {reference}: {_NO_CURVE[kind]}"))
            continue
        for metric, curves in by_metric.items():
            frames.append(curves.assign(kind=kind, metric=metric))
            title = f"{metric}: each model against {reference} (HDP paper, {paper})"
            figures.draw(
                "win-loss curves",
                f"{metric}, against {reference}",
                f"wl_{kind}_{metric}.png",
                lambda path, curves=curves, title=title, reference=reference: win_loss_plot(
                    curves, path, title=title, reference=reference
                ),
            )
    if frames:
        csv_safe(pd.concat(frames, ignore_index=True)).to_csv(out / "wl_curves.csv", index=False)


def _significance_section(
    wdls, results: pd.DataFrame, wilcoxon: pd.DataFrame, tests: pd.DataFrame, datasets, options
) -> list[str]:
    """W-D-L by the sign test, the Wilcoxon test across datasets and the per-dataset tests."""
    lines = [
        "## Win–draw–loss and significance",
        "",
        (
            "[wdl.md](wdl.md) · [wdl.tex](wdl.tex) · [wdl.csv](wdl.csv) · [tests.csv](tests.csv) · "
            "[results.csv](results.csv)"
        ),
        "",
    ]
    if not wdls:
        return lines + ["The experiment declares no comparison.", ""]
    wilcoxon = wilcoxon.set_index(["a", "b", "metric"])["wilcoxon_p_value"]
    rows = []
    for w in wdls:
        record = f"{w.wins}–{w.draws}–{w.losses}"
        per_dataset = tests.loc[
            (tests["a"] == w.a) & (tests["b"] == w.b) & (tests["metric"] == w.metric)
        ].set_index("dataset")
        counts = [
            win_draw_loss(
                results,
                w.a,
                w.b,
                w.metric,
                datasets=datasets,
                dataset_p_values=per_dataset[column],
                **options,
            )
            for column in _FOLD_TESTS
        ]
        rows.append(
            [
                f"{w.a} vs {w.b}",
                w.metric,
                f"**{record}**" if w.significant else record,
                f"{w.p_value:.3g}",
                _p(wilcoxon.get((w.a, w.b, w.metric))),
                *(f"{c.wins}–{c.draws}–{c.losses}" for c in counts),
            ]
        )
    header = ["comparison", "metric", "W–D–L", "sign test p", "Wilcoxon p", *_FOLD_TESTS.values()]
    return lines + [
        wdl_legend(**options),
        "",
        (
            f"Wilcoxon p: signed-rank test of the mean losses across datasets. The last three "
            f"columns count as wins or losses only the datasets where a test of the fold scores "
            f"gives p ≤ {options['alpha']} (Dietterich's 5x2cv t-test, Alpaydin's combined 5x2cv "
            f"F-test, Wilcoxon signed-rank on the fold differences); per-dataset statistics in "
            f"tests.csv."
        ),
        "",
        markdown_table(header, rows),
    ]


def _p(value) -> str:
    return "undefined" if value is None or pd.isna(value) else f"{value:.3g}"


def _published_section(tables: list[PublishedTable], comparisons: list[pd.DataFrame]) -> list[str]:
    lines = ["## Published results beside ours", ""]
    if not tables:
        return lines + [
            (
                "None declared: an experiment names published tables in `report.published` "
                "(see `bncbench.report.published.PUBLISHED`)."
            ),
            "",
        ]
    lines += ["[published.md](published.md) · [published.csv](published.csv)", ""]
    for table, comparison in zip(tables, comparisons, strict=True):
        compared = comparison.loc[comparison["status"] == ""]
        lines.append(
            f"- `{table.key}`, {table.paper.split('.')[0]}, {table.table}: "
            f"{compared['agree'].sum()} of {len(compared)} compared "
            f"cells agree ({len(comparison) - len(compared)} of {len(comparison)} not compared)"
        )
    return lines + [""]


def _ranking_section(rankings: list[Ranking], figures: _Figures, unlogged: list[str]) -> list[str]:
    lines = ["## Ranks of all models: Friedman test, Nemenyi critical difference", ""]
    if unlogged:
        lines += [f"Not ranked, no finished cell: {', '.join(unlogged)}.", ""]
    if rankings:
        models = list(rankings[0].mean_ranks.index)
        lines += [
            (
                "[ranks.csv](ranks.csv). Mean rank over the datasets where every model has a value "
                "(1 = lowest loss); two models differ significantly when their mean ranks are more "
                "than the critical difference (CD) apart."
            ),
            "",
            markdown_table(
                ["model", *(r.metric for r in rankings)],
                (
                    [model, *(f"{r.mean_ranks.get(model, float('nan')):.2f}" for r in rankings)]
                    for model in models
                ),
            ),
            markdown_table(
                ["", *(r.metric for r in rankings)],
                [
                    ["datasets", *(str(r.datasets) for r in rankings)],
                    ["left out: a model has no value", *(str(len(r.dropped)) for r in rankings)],
                    ["Friedman χ²", *(f"{r.statistic:.3g}" for r in rankings)],
                    ["Friedman p", *(f"{r.p_value:.3g}" for r in rankings)],
                    [f"Nemenyi CD (α = {rankings[0].alpha})"]
                    + [f"{r.critical_difference:.3g}" for r in rankings],
                ],
            ),
        ]
    return lines + _figure_lines(figures, "ranks")


def _figure_sections(figures: _Figures) -> list[str]:
    lines = []
    for section, title, data in (
        ("scatter", "Per-dataset scatter plots", "[results.csv](results.csv)"),
        ("win-loss curves", "Win–loss against iterations", "[wl_curves.csv](wl_curves.csv)"),
    ):
        lines += [f"## {title}", ""]
        if any(drawn[0] == section for drawn in figures.drawn):
            lines += [f"Data: {data}.", ""]
        lines += _figure_lines(figures, section)
    return lines


def _figure_lines(figures: _Figures, section: str) -> list[str]:
    """The section's figures as images, then why the others were not drawn."""
    images = [
        f"![{caption}]({FIGURES}/{name})" for s, caption, name in figures.drawn if s == section
    ]
    skipped = [f"- not drawn: {why}" for s, why in figures.skipped if s == section]
    if not images and not skipped:
        return ["Nothing to show.", ""]
    return [*images, *([""] if images and skipped else []), *skipped, ""]
