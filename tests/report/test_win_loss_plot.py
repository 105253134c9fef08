"""The win-loss figures: lines named by their models (no ``k=None``), one colour per line in every
figure of a report, and the number of datasets in the title."""

import pandas as pd
from matplotlib.colors import to_hex

from bncbench.report.figures import PALETTE, Colours, line_names, win_loss_figure, win_loss_plot

ITERATIONS = [500, 1000, 5000, 10000, 50000]


def curves(lines: dict[str, str], iterations=ITERATIONS, datasets=51) -> pd.DataFrame:
    """``{line label: model name template}``: one point per number of iterations, 1 draw."""
    rows = [
        {"line": line, "model": template.format(n), "reference": "ref", "iterations": n,
         "wins": 20, "draws": 1, "losses": datasets - 21, "p_value": 0.5}
        for line, template in lines.items()
        for n in iterations
    ]
    return pd.DataFrame(rows)


SINGLE = {"tying=single, k=5, structure=kdb": "kdb5_hdp_single_it{}"}
LEVEL = {"tying=level, k=None, structure=tan": "tan_hdp_level_it{}"}


def test_a_line_is_named_by_its_models():
    assert line_names({"x": ["kdb5_hdp_single_it500", "kdb5_hdp_single_it50000", "kdb5_hdp_single_it1000"]}) == {
        "x": "kdb5_hdp_single_it*"
    }
    assert line_names({"x": ["hdp_it500_tan", "hdp_it5000_tan"]}) == {"x": "hdp_it*_tan"}
    assert line_names({"x": ["tan_hdp"]}) == {"x": "tan_hdp"}
    assert line_names({"x": ["a1", "b2"]}) == {"x": "a1, b2"}  # nothing in common: the names
    # two lines that would share a label are named by their models instead
    assert line_names({"x": ["m1_a", "m2_a"], "y": ["m3_a", "m4_a"]}) == {"x": "m1_a, m2_a", "y": "m3_a, m4_a"}


def plotted(frame, colours, **options):
    title = "rmse: each model against tying level"
    return win_loss_figure(frame, title=title, reference="level", colours=colours, **options).axes[0]


def test_one_line_has_one_colour_in_every_figure_and_a_readable_legend():
    colours = Colours()
    against_tying = plotted(curves(SINGLE), colours, total=68)
    against_most = plotted(curves({**LEVEL, **SINGLE}, ITERATIONS[:-1]), colours, total=68)
    legends = [[text.get_text() for text in ax.get_legend().get_texts()] for ax in (against_tying, against_most)]
    assert legends == [["kdb5_hdp_single_it*"], ["tan_hdp_level_it*", "kdb5_hdp_single_it*"]]
    assert not any("None" in label or "=" in label for labels in legends for label in labels)
    single = [next(line for line in ax.get_lines() if line.get_label() == "kdb5_hdp_single_it*") for ax in
              (against_tying, against_most)]
    assert to_hex(single[0].get_color()) == to_hex(single[1].get_color()) == PALETTE[0]


def test_the_title_says_on_how_many_of_the_experiments_datasets(tmp_path):
    ax = plotted(curves(SINGLE), Colours(), total=68)
    assert ax.get_title() == "rmse: each model against tying level\non 51 of 68 datasets"
    ax = plotted(curves(SINGLE, datasets=68), Colours(), total=68)
    assert ax.get_title().endswith("\non 68 datasets")
    path = win_loss_plot(curves(SINGLE), tmp_path / "wl.png", title="t", reference="level")
    assert path.read_bytes()[:4] == b"\x89PNG"
