"""The README of a report: its sections, the record of the figures it shows, and the sections left out.

Each section function returns a :class:`Section`; :func:`render_sections` writes those with content
and lists the others, with why, for the end of the README (its second list): a section the
experiment does not define (no comparison, no published table, no two models told apart by their
iterations) is not shown empty.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bncbench.core.names import check_path_name
from bncbench.report.compute import Report
from bncbench.report.significance import Undefined
from bncbench.report.significant_wdl import fold_p_values
from bncbench.report.tables import markdown_table, markdown_text
from bncbench.report.win_draw_loss import win_draw_loss

FIGURES = "figures"
#: Per-dataset tests whose significant datasets are counted as W-D-L in the README.
FOLD_TESTS = {"t_p_value": "5x2cv t", "f_p_value": "5x2cv F", "wilcoxon_p_value": "fold Wilcoxon"}


@dataclass
class Section:
    """A section of the README: its title, its content, and why some of it is not shown (all of it
    when ``body`` is empty); a ``body`` of None leaves the section out of the README entirely (a plug-in whose
    runs do not have what it shows, so that reports of other runs are unchanged)."""

    title: str
    body: list[str] | None
    reasons: list[str] = field(default_factory=list)


def render_sections(sections: list[Section]) -> tuple[list[str], list[str]]:
    """The sections with content as Markdown, the others as items saying why they are left out.

    Parameters
    ----------
    sections : list of Section
        In the README's order.

    Returns
    -------
    lines : list of str
        Each section with a body: its heading, its body, then each reason as a "not drawn" item.
    left_out : list of str
        For the end of the README (none when every section has a body): one item per section without a body,
        its title and its reasons.
    """
    lines, left_out = [], []
    for section in sections:
        if section.body is None:
            continue
        if section.body:
            reasons = [f"- not drawn: {why}" for why in section.reasons]
            lines += [f"## {section.title}", "", *section.body, *reasons, *([""] if reasons else [])]
        else:
            left_out.append(f"- {section.title}: {'; '.join(section.reasons) or 'nothing to show'}.")
    return lines, (["Sections left out, which these runs do not define:", "", *left_out, ""] if left_out else [])


@dataclass
class Figures:
    """The figures written (section, caption, file name) and those left out (section, why)."""

    directory: Path
    drawn: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def draw(self, section: str, caption: str, name: str, plot, *data, **options) -> None:
        """``plot(*data, path, **options)`` into ``path = directory / name``, or record why it is undefined; in
        ``name`` (made of model and metric names) a path separator or control character becomes ``_``."""
        name = check_path_name("figure", re.sub(r"[/\\\x00-\x1f\x7f]", "_", name))
        try:
            plot(*data, self.directory / name, **options)
        except Undefined as why:
            self.skipped.append((section, markdown_text(f"{caption}: {why}")))
        else:
            self.drawn.append((section, markdown_text(caption), name))

    def reasons(self, section: str) -> list[str]:
        """Why figures of ``section`` were not drawn."""
        return [why for drawn_in, why in self.skipped if drawn_in == section]


def significance_section(report: Report, clipped: list[str]) -> Section:
    """W-D-L by the sign test, the Wilcoxon test across datasets and the per-dataset tests, and the
    comparisons' ``clipped`` notes (:func:`bncbench.report.clipping.clipping_notes`)."""
    options, title = report.options.sign_test, "Win–draw–loss and significance"
    if not report.wdls:
        return Section(title, [], ["the experiment declares no comparison (experiment.comparisons)"])
    wilcoxon = report.wilcoxon.set_index(["a", "b", "metric"])["wilcoxon_p_value"]
    per_repetition = report.options.folds_per_repetition
    rows = []
    for w in report.wdls:
        counts = [
            win_draw_loss(report.compared_results, w.a, w.b, w.metric, datasets=report.datasets, **options,
                          dataset_p_values=fold_p_values(report.tests, w.a, w.b, w.metric, column)).record()
            if per_repetition == 2 or column == "wilcoxon_p_value" else "—"
            for column in FOLD_TESTS
        ]
        record = f"**{w.record()}**" if w.significant else w.record()
        rows.append([f"{w.a} vs {w.b}", w.metric, record, f"{w.p_value:.3g}", _p(wilcoxon.get((w.a, w.b, w.metric))),
                     *counts, _missing(w.missing)])
    header = ["comparison", "metric", "W–D–L", "sign test p", "Wilcoxon p", *FOLD_TESTS.values(), "datasets left out"]
    not_two_fold = f" The 5x2cv tests need 2-fold CV repetitions (cv.folds = {per_repetition} here): —."
    return Section(title, [
        "[wdl.md](wdl.md) · [wdl.tex](wdl.tex) · [wdl.csv](wdl.csv) · [tests.csv](tests.csv) · "
        "[results.csv](results.csv)",
        "",
        report.legend(),
        "",
        f"Wilcoxon p: signed-rank test of the mean losses across datasets. The three columns after it count as wins or "
        f"losses only the datasets where a test of the fold scores gives p ≤ {options['alpha']} (Dietterich's 5x2cv "
        f"t-test, Alpaydin's combined 5x2cv F-test, Wilcoxon signed-rank on the fold differences); per-dataset "
        f"statistics in tests.csv." + ("" if per_repetition == 2 else not_two_fold),
        "",
        markdown_table(header, rows),
        *clipped,
        *([""] if clipped else []),
    ])


def _missing(datasets, shown: int = 5) -> str:
    """The datasets a comparison left out (A or B has no finished run there), the first few by name."""
    if not datasets:
        return "0"
    more = f", … ({len(datasets) - shown} more: wdl.csv)" if len(datasets) > shown else ""
    return f"{len(datasets)}: {', '.join(markdown_text(d) for d in datasets[:shown])}{more}"


def _p(value) -> str:
    return "undefined" if value is None or pd.isna(value) else f"{value:.3g}"


def published_section(report: Report) -> Section:
    """Per published table, how many of our records agree with it."""
    title = "Published results beside ours"
    if not report.published:
        return Section(title, [], ["none declared in `report.published` (`bncbench.report.published.PUBLISHED`)"])
    lines = ["[published.md](published.md) · [published.csv](published.csv)", ""]
    for table, comparison in report.published:
        compared = comparison.loc[comparison["status"] == ""]
        lines.append(f"- {table.heading} (`{table.key}`): {compared['agree'].sum()} of {len(compared)} compared "
                     f"cells agree ({len(comparison) - len(compared)} of {len(comparison)} not compared)")
    return Section(title, lines + [""])


def claims_section(report: Report) -> Section:
    """The paper's qualitative claims the experiment measures (:mod:`bncbench.report.claims`): each, the paper's
    figure, ours, and whether they agree."""
    measured = [o for o in report.claims if o.measured is not None]
    agree = sum(o.verdict == "agrees" for o in measured)
    rows = [
        [f"{o.claim.where}: “{o.claim.quote}”", o.claim.published, o.measured.ours if o.measured else o.why, o.verdict]
        for o in report.claims
    ]
    reading = ("; an m-estimate is the class-kept reading, "
               "[docs/m_estimate_readings.md](../../docs/m_estimate_readings.md)")
    return Section("The paper's claims beside ours", [
        "[claims.csv](claims.csv). Each qualitative claim of the paper's text, the paper's figure, ours from these "
        "runs (mean losses over the folds, counted as above"
        + (reading if any(o.claim.against_m_estimate for o in report.claims) else "") + "), and whether they agree.",
        "",
        f"**{agree} of {len(measured)} measured claims agree** ({len(report.claims) - len(measured)} not measured).",
        "",
        markdown_table(["claim", "the paper", "ours", "verdict"], rows),
        "",
    ])


def ranking_section(report: Report, figures: Figures) -> Section:
    """Friedman's test and the mean ranks of the models, Nemenyi's critical difference."""
    rankings = report.rankings
    unlogged = [model for model in report.models if model not in set(report.results["model"])]
    title = "Ranks of all models: Friedman test, Nemenyi critical difference"
    reasons = figures.reasons("ranks")
    unranked = f"Not ranked, no finished cell: {', '.join(unlogged)}." if unlogged else ""
    if not rankings:
        return Section(title, [], reasons + [unranked.rstrip(".")] * bool(unranked))
    metrics = [r.metric for r in rankings]
    ranks = [[model, *(f"{r.mean_ranks.get(model, float('nan')):.2f}" for r in rankings)]
             for model in rankings[0].mean_ranks.index]
    statistics = [
        ["datasets", *(str(r.datasets) for r in rankings)],
        ["left out: a model has no value", *(str(len(r.dropped)) for r in rankings)],
        ["Friedman χ²", *(f"{r.statistic:.3g}" for r in rankings)],
        ["Friedman p", *(f"{r.p_value:.3g}" for r in rankings)],
        [f"Nemenyi CD (α = {rankings[0].alpha})"] + [f"{r.critical_difference:.3g}" for r in rankings],
    ]
    return Section(title, [
        *([unranked, ""] if unranked else []),
        "[ranks.csv](ranks.csv). Mean rank over the datasets where every model has a value (1 = lowest loss); two "
        "models differ significantly when their mean ranks are more than the critical difference (CD) apart.",
        "",
        markdown_table(["model", *metrics], ranks),
        markdown_table(["", *metrics], statistics),
        *_images(figures, "ranks"),
    ], reasons)


def figure_sections(figures: Figures) -> list[Section]:
    """The scatter plots and the win-loss curves, and why some were not drawn; the learning curves where drawn."""
    sections = []
    for section, title, data in (("scatter", "Per-dataset scatter plots", "[results.csv](results.csv)"),
                                 ("win-loss curves", "Win–loss against iterations", "[wl_curves.csv](wl_curves.csv)")):
        images = _images(figures, section)
        body = [f"Data: {data}.", "", *images] if images else []
        sections.append(Section(title, body, figures.reasons(section)))
    curves = _images(figures, "learning curves")
    if curves:  # on synthetic datasets alone: other experiments have no such section, not even left out
        sections.append(Section("Learning curves", ["Data: [learning_curves.csv](learning_curves.csv).", "", *curves]))
    return sections


def _images(figures: Figures, section: str) -> list[str]:
    """The section's figures as images, and a blank line after them."""
    images = [f"![{caption}]({FIGURES}/{name})" for s, caption, name in figures.drawn if s == section]
    return [*images, ""] if images else []
