"""The render layer of the report, and ``write_report``, its entry point from a config.

``bncbench run`` calls :func:`write_report` after the last cell and ``bncbench report`` on its own;
it computes the report (:func:`bncbench.report.compute.compute_report`) and renders it
(:func:`write_files`). A statistic or figure the results do not define (too few datasets, models
missing) is left out and the experiment's ``README.md`` says why.
"""

import dataclasses
import functools
import hashlib
import json
import subprocess
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.core.names import check_path_name
from bncbench.protocol.cell import Plan
from bncbench.report.claims import claims_frame
from bncbench.report.clipping import clipping_notes
from bncbench.report.compute import NO_CURVE, Report, compute_report
from bncbench.report.differences import differences_section
from bncbench.report.figures import (
    Colours, critical_difference_plot, learning_curve_plot, line_names, scatter_plot, win_loss_plot,
)
from bncbench.report.options import ReportOptions
from bncbench.report.readme import (
    FIGURES, Figures, claims_section, figure_sections, published_section, ranking_section, render_sections,
    significance_section,
)
from bncbench.report.results import LoggedRuns, read_runs
from bncbench.report.run_settings import settings_lines
from bncbench.report.sections import plugins
from bncbench.report.side_by_side import published_markdown
from bncbench.report.staging import staged
from bncbench.report.tables import markdown_text, to_frame, to_latex, to_markdown, write_csv

#: ``report.*`` settings added after reports were committed, with their defaults: a report states them
#: only off the default, so that the reports committed before regenerate byte for byte.
ADDED_LATER = {"counting": "means", "best_of": {}}
#: Settings that say where things are, not what the report shows: left out of its regenerate command,
#: but for a relative ``report_dir`` (e.g. ``reports/paper_protocol``), without which the command would
#: write the report into another report's folder.
PLACES = ("tracking_uri", "report_dir", "data_dir", "artifact_location", "runs_dir")
#: Files a report may write besides the figures; removed first, so none is left from an older run.
OUTPUTS = ("README.md", "results.csv", "wdl.md", "wdl.tex", "wdl.csv", "tests.csv", "published.md", "published.csv",
           "ranks.csv", "wl_curves.csv", "learning_curves.csv", "claims.csv", "manifest.json")
#: What a report was made from (``report_inputs``) and the digest of each of its files.
MANIFEST = "manifest.json"
#: The libraries whose versions the report's numbers and figures may depend on.
LIBRARIES = ("numpy", "pandas", "scipy", "matplotlib")


def write_report(plan: Plan, runs: LoggedRuns, report_dir: str | Path, replace: bool = False, scratch: bool = False,
                 test_rows: Callable[[str], np.ndarray] | None = None, data_dir: str | None = None,
                 manifest: bool = False, allow_uncommitted: bool = False) -> Path:
    """Write the tables, statistics and figures of an experiment from its logged runs.

    Parameters
    ----------
    plan : Plan
        The experiment's cells, comparisons, metrics and report settings
        (:func:`bncbench.app.config.compose`). A plan without cells (one made by hand) has empty
        ``datasets`` and ``models``: every dataset and model logged.
    runs : LoggedRuns
        The experiment's finished runs, from a store (:func:`plan_runs`) or from bundles, checked against
        the plan's cells (``plan.by_key()``): each cell's run is the one of this configuration and data,
        the others are counted as left out; read without cells, each cell's latest finished run.
    report_dir : str or Path
        The report goes to ``<report_dir>/<plan.experiment>``.
    replace : bool
        Replace a report there that :func:`report_in_the_way` finds in the way (of other cells, or
        tracked by git); without it such a report is refused, before anything is computed.
    scratch : bool
        ``report_dir`` is bncbench's own folder beside the store, not one the user named: a report of
        other cells there is replaced (a subset run after a whole one), one git tracks still is not.
    test_rows : callable, optional
        ``dataset -> test rows of each fold`` (``bncbench.app.reporting.plan_test_rows``), read only for runs
        that predate their folds' error counts (``bncbench.report.error_counts``); None: such runs are refused.
    data_dir : str, optional
        The data directory the datasets were read from, as the manifest records it.
    manifest : bool
        Also write ``manifest.json``: what the report was made from (:func:`report_inputs`) and the
        digest of each of its files, so that a rerun with nothing new leaves it as it is
        (:func:`unchanged_report`; ``bncbench run`` writes it, ``bncbench report`` does not).
    allow_uncommitted : bool
        Write a report into a folder git tracks (the committed ``reports/``) from runs made by code with
        uncommitted changes, which nobody can rebuild (:func:`uncommitted_runs`); without it that is refused.

    Returns
    -------
    pathlib.Path
        ``<report_dir>/<plan.experiment>``, holding

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
          models that differ in their ``iterations`` or ``tying`` parameter;
        - ``manifest.json`` with ``manifest``.

    Raises
    ------
    ConfigError
        If a metric is missing, the experiment has no finished run, a report option is invalid, a
        report in the way is not to be replaced, or runs of uncommitted code are not allowed.
    """
    place = Path(report_dir) / check_path_name("experiment.name", plan.experiment)
    in_the_way = report_in_the_way(place, {cell.key for cell in plan.cells}, other_cells=not scratch)
    if in_the_way and not replace:
        raise ConfigError(
            f"{place} holds {in_the_way}: write this report elsewhere (report_dir=...) or replace that one "
            "(--replace)."
        )
    uncommitted = uncommitted_runs(runs)
    if uncommitted and not allow_uncommitted and (_tracked_by_git(place) or _tracked_by_git(Path(report_dir))):
        raise ConfigError(
            f"{place} is a folder git tracks, and {uncommitted}: a report committed from them could not be "
            "rebuilt from committed code. Run those cells again from a clean checkout, or write it anyway "
            "(bncbench report --allow-uncommitted)."
        )
    settings = {key: value for key, value in plan.report.items() if ADDED_LATER.get(key, ...) != value}
    made_of = report_inputs(plan, runs, data_dir) if manifest else None
    report = compute_report(runs, ReportOptions.of_plan(plan), test_rows)
    command = regenerate_command(list(plan.overrides), plan.experiment, runs.bundles)
    reads = "the bundles it names" if runs.bundles else "the MLflow store of your tracking_uri"
    return write_files(report, Path(report_dir), settings, command, made_of, reads)


def uncommitted_runs(runs: LoggedRuns, shown: int = 3) -> str | None:
    """Which runs the report of ``runs`` reads were made by code with uncommitted changes (MLflow's
    ``mlflow.source.git.dirty``), as a phrase, e.g. "22 of its 84 runs were made by code with uncommitted
    changes (git 4f2a0c8b, fbee3a83; synthetic-kdb4-1e5/nb_hdp, ...)"; None when none was."""
    read = runs.provenance()
    dirty = read if read.empty else read[read["git_dirty"] == "true"]
    if dirty.empty:
        return None
    commits = ", ".join(sorted({str(commit)[:8] for commit in dirty["git_commit"]}))
    names = [f"{dataset}/{model}" for dataset, model in zip(dirty["dataset"], dirty["model"])]
    more = ", ..." if len(names) > shown else ""
    return (f"{len(dirty)} of its {len(read)} runs were made by code with uncommitted changes (git {commits}; "
            f"{', '.join(names[:shown])}{more})")


def plan_runs(plan: Plan, tracking_uri: str) -> LoggedRuns:
    """The finished runs of ``plan``'s experiment in the store of ``tracking_uri``, checked against its
    cells (none in a plan made by hand: each cell's latest run)."""
    return read_runs(tracking_uri, plan.experiment, plan.by_key() if plan.cells else None)


def report_inputs(plan: Plan, runs: LoggedRuns, data_dir: str | None = None) -> str:
    """A digest of everything :func:`write_report` makes a report of ``plan`` from: the experiment's
    finished runs (all of each: ids, times, tags, params, metrics) and where they were read, the plan
    (every cell's ``cfg_hash`` and data digest, the comparisons, metrics, report settings and
    overrides), the data directory, and the code (bncbench's files, the versions of ``LIBRARIES``)."""
    records = sorted((dataclasses.asdict(run) for run in runs.runs), key=lambda run: run["run_id"])
    made_of = [records, repr(plan), runs.source, str(data_dir), _code()]
    return hashlib.sha256(json.dumps(made_of, sort_keys=True, default=str).encode()).hexdigest()


@functools.cache
def _code() -> str:
    """A digest of bncbench's files and of the versions of ``LIBRARIES``."""
    digest = hashlib.sha256(" ".join(version(library) for library in LIBRARIES).encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def unchanged_report(plan: Plan, runs: LoggedRuns, report_dir: str | Path, data_dir: str | None = None) -> Path | None:
    """The report of ``plan`` in ``report_dir`` if :func:`write_report` would write it as it is: its
    manifest says it was made from the same ``report_inputs`` and every file it lists is there, as
    written; else (no report, or no manifest, e.g. an older report's) None."""
    place = Path(report_dir) / check_path_name("experiment.name", plan.experiment)
    try:
        manifest = json.loads((place / MANIFEST).read_text(encoding="utf-8"))
        files = {name: _file_digest(place / name) for name in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    unchanged = files == manifest["files"] and manifest["made_of"] == report_inputs(plan, runs, data_dir)
    return place if unchanged else None


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report_in_the_way(place: Path, cells: set[tuple[str, str]], other_cells: bool = True) -> str | None:
    """What a report written to ``place`` would replace that its writer did not make: with
    ``other_cells``, a report of other cells than ``cells`` (none given: any report); and files
    tracked by git (a committed report). None when ``place`` holds no report, or nothing of that."""
    if not (place / "README.md").is_file():
        return None
    found = []
    old = report_cells(place) or None  # none: no readable table, another kind of folder
    if other_cells and (old is None or not cells or not old <= cells):
        found.append(f"a report of {len(old)} cells ({len({d for d, _ in old})} datasets)" if old else "a report")
    if _tracked_by_git(place):
        found.append("tracked by git" if found else "a report tracked by git")
    return ", ".join(found) if found else None


def report_cells(place: Path) -> set[tuple[str, str]]:
    """The (dataset, model) cells of the report at ``place`` (its ``results.csv``); empty if none is readable."""
    try:
        logged = pd.read_csv(place / "results.csv", usecols=["dataset", "model"])
    except (OSError, ValueError, pd.errors.ParserError):
        return set()
    return set(zip(logged["dataset"].astype(str), logged["model"].astype(str)))


def _tracked_by_git(place: Path) -> bool:
    """Whether git tracks a file under ``place`` (False outside a work tree or without git)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--", "."], cwd=place, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return listed.returncode == 0 and bool(listed.stdout.strip())


def regenerate_command(overrides: list[str] | None, experiment: str, bundles: Sequence[str] = ()) -> str:
    """``bncbench report`` with the overrides that made a report, but those of ``PLACES``, and the
    bundle folders it read, if any."""

    def shown(override: str) -> bool:
        key, _, value = override.partition("=")
        key = key.lstrip("+~")
        return key not in PLACES or (key == "report_dir" and not Path(value).is_absolute())

    read = ["--bundles", *bundles] if bundles else []
    return " ".join(["bncbench report", *filter(shown, overrides or [f"experiment={experiment}"]), *read])


def write_files(report: Report, report_dir: Path, settings: dict | None = None, command: str | None = None,
                made_of: str | None = None, reads: str = "the MLflow store of your tracking_uri") -> Path:
    """Render ``report`` (:func:`bncbench.report.compute.compute_report`) into ``<report_dir>/<experiment>``,
    replacing the files of an older one; returns that directory (:func:`write_report` lists its files).

    Parameters
    ----------
    settings : dict, optional
        The ``report.*`` settings, stated in the README as the overrides that regenerate it;
        default ``report.options.shown()``.
    command : str, optional
        The command that regenerates the report (default ``bncbench report experiment=<name>``), run
        with the user's own ``tracking_uri`` and folders (``PLACES``).
    made_of : str, optional
        :func:`report_inputs` of the report: given, ``manifest.json`` records it with the digest of each
        file written, which :func:`unchanged_report` checks.
    reads : str
        What ``command`` reads the runs from, as the README says it.
    """
    place = Path(report_dir) / check_path_name("experiment.name", report.experiment)
    command = command or f"bncbench report experiment={report.experiment}"
    sections = plugins()
    with staged(place, (*OUTPUTS, *(name for section in sections for name in section.files), FIGURES)) as out:
        clipped = _write_tables(out, report)
        figures = _draw_figures(out, report)
        rendered, left_out = render_sections(
            [
                significance_section(report, clipped),
                *(section.write(report, out, figures) for section in sections),
                published_section(report),
                *([claims_section(report)] if report.claims else []),  # only experiments a paper's claims name
                ranking_section(report, figures),
                *figure_sections(figures),
            ]
        )
        results = report.results
        readme = [
            f"# Report: {markdown_text(report.experiment)}",
            "",
            f"Regenerate with `{command}` (reads {reads}, refits nothing). Report settings of this version: "
            f"{_overrides(report.options.shown() if settings is None else settings)}. "
            f"{len(results)} finished cells: {results['dataset'].nunique()} datasets, "
            f"{results['model'].nunique()} models.{_unfinished(report)}",
            "",
            *differences_section(report.published, report.settings, command),
            *rendered,
            *settings_lines(report.settings, report.left_out, report.repeats),
            *left_out,
        ]
        (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
        if made_of is not None:
            files = sorted(path for path in out.rglob("*") if path.is_file())
            written = {path.relative_to(out).as_posix(): _file_digest(path) for path in files}
            (out / MANIFEST).write_text(json.dumps({"made_of": made_of, "files": written}, indent=1), encoding="utf-8")
    return place


def _write_tables(out: Path, report: Report) -> list[str]:
    """The report's tables (the W-D-L ones, the per-dataset tests, the published tables, the claims) into ``out``;
    returns the notes on the log-loss comparisons that measure the clip (``clipping_notes``)."""
    write_csv(report.results, out / "results.csv")
    wilcoxon = report.wilcoxon.drop(columns="datasets")
    write_csv(to_frame(report.wdls).merge(wilcoxon, on=["a", "b", "metric"], how="left"), out / "wdl.csv")
    clipped = clipping_notes(report.results, report.wdls, report.datasets)
    title = f"# Win–draw–loss: {markdown_text(report.experiment)}"
    wdl_markdown = f"{title}\n\n{report.legend()}\n\n{to_markdown(report.wdls)}"
    (out / "wdl.md").write_text("\n".join([wdl_markdown, *clipped]), encoding="utf-8")
    caption = report.legend(dash="--", less_equal=r"$\le$")
    (out / "wdl.tex").write_text(to_latex(report.wdls, caption=caption), encoding="utf-8")
    write_csv(report.tests, out / "tests.csv")
    if report.published:
        shown = [published_markdown(table, comparison, report.settings) for table, comparison in report.published]
        (out / "published.md").write_text("# Published results beside ours\n\n" + "\n".join(shown), encoding="utf-8")
        compared = pd.concat([comparison for _, comparison in report.published], ignore_index=True)
        write_csv(compared, out / "published.csv")
    if report.claims:
        write_csv(claims_frame(report.claims), out / "claims.csv")
    return clipped


def _unfinished(report: Report, shown: int = 10) -> str:
    """How many of the experiment's (dataset, model) cells have no finished run, and of which datasets."""
    datasets = report.datasets if report.datasets is not None else sorted(set(report.results["dataset"]))
    done = set(zip(report.results["dataset"], report.results["model"]))
    lacking = {d: n for d in datasets if (n := sum((d, m) not in done for m in report.models))}
    if not lacking:
        return ""
    named = [f"{markdown_text(d)} ({n})" for d, n in lacking.items()][:shown]
    more = f", … ({len(lacking) - shown} more datasets)" if len(lacking) > shown else ""
    return (
        f" **Cells without a finished run: {sum(lacking.values())} of the experiment's "
        f"{len(datasets) * len(report.models)}**, by dataset: {', '.join(named)}{more}; a comparison leaves out the "
        "datasets where it lacks a cell."
    )


def _overrides(settings: dict) -> str:
    """The ``report.*`` settings as command-line overrides."""

    def override(value) -> str:
        if isinstance(value, list):
            return "[" + ",".join(map(override, value)) + "]"
        if isinstance(value, dict):
            return "{" + ",".join(f"{key}:{override(item)}" for key, item in value.items()) + "}"
        return "null" if value is None else str(value)

    return ", ".join(f"`report.{key}={override(value)}`" for key, value in settings.items())


def _draw_figures(out: Path, report: Report) -> Figures:
    """The report's figures into ``out / FIGURES``, and the data of the curves (``ranks.csv``, ``wl_curves.csv``,
    ``learning_curves.csv``) into ``out``; each model (or line of models) takes one colour in every figure."""
    figures = Figures(out / FIGURES)
    total = len(report.datasets) if report.datasets is not None else report.results["dataset"].nunique()
    colours = Colours([*_curve_lines(report), *report.models])
    figures.skipped += [("ranks", why) for why in report.unranked]
    for ranking in report.rankings:
        figures.draw("ranks", f"critical-difference diagram, {ranking.metric}", f"cd_{ranking.metric}.png",
                     critical_difference_plot, ranking, total=total)
    if report.rankings:
        ranks = [
            ranking.mean_ranks.rename("mean_rank").reset_index().assign(
                metric=ranking.metric, datasets=ranking.datasets, friedman_statistic=ranking.statistic,
                friedman_p_value=ranking.p_value, critical_difference=ranking.critical_difference,
            )
            for ranking in report.rankings
        ]
        write_csv(pd.concat(ranks, ignore_index=True), out / "ranks.csv")
    figures.skipped += [("scatter", why) for why in report.missing_scatters]
    for (a, b, metric), paper in report.scatters.items():
        caption = f"{a} vs {b}, {metric}" + (f" (as {paper})" if paper else "")
        figures.draw("scatter", caption, f"scatter_{metric}_{a}_vs_{b}.png", scatter_plot, report.results, a, b,
                     metric, datasets=report.datasets, colours=colours, total=total)
    _draw_curves(out, figures, report, colours, total)
    curves = report.learning_curves
    if not curves.empty:
        write_csv(curves, out / "learning_curves.csv")
    for number, (network, curve) in enumerate(curves.groupby("network", sort=True), start=1):
        figures.draw("learning curves", network, f"learning_curves_{number}.png", learning_curve_plot, curve,
                     title=f"Learning curves (as the SkDB paper's Fig. 1): {network}")
    return figures


def _curve_lines(report: Report) -> list[str]:
    """The legend labels of the win-loss curves' lines (:func:`bncbench.report.figures.line_names`), sorted."""
    return sorted({label for curves in report.curves for frame in curves.by_metric.values()
                   for label in line_names(frame.groupby("line", sort=False)["model"].agg(list)).values()})


def _draw_curves(out: Path, figures: Figures, report: Report, colours: Colours, total: int) -> None:
    """The win-loss curves against the iterations or a tying, and their points as ``wl_curves.csv``."""
    frames = []
    for curves in report.curves:
        if all(frame.empty for frame in curves.by_metric.values()):
            figures.skipped.append(("win-loss curves", f"against {curves.reference}: {NO_CURVE[curves.kind]}"))
            continue
        for metric, frame in curves.by_metric.items():
            frames.append(frame.assign(kind=curves.kind, metric=metric))
            figures.draw("win-loss curves", f"{metric}, against {curves.reference}", f"wl_{curves.kind}_{metric}.png",
                         win_loss_plot, frame, reference=curves.reference, colours=colours, total=total,
                         title=f"{metric}: each model against {curves.reference} (HDP paper, {curves.paper})")
    if frames:
        write_csv(pd.concat(frames, ignore_index=True), out / "wl_curves.csv")
