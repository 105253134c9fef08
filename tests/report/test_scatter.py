"""Scatter plots of two models: log axes only where they spread the losses better, an inset where one
point would crush the rest, outliers named without overlap, each model in its colour, and the
"who wins where" legend in the title, never over the points."""

import itertools

import adjustText
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from bncbench.report.figures import OUTLIERS, Colours, scatter_figure, scatter_plot
from bncbench.report.significance import Undefined


def results(a_losses, b_losses) -> pd.DataFrame:
    names = [f"d{i}" for i in range(len(a_losses))]
    return pd.DataFrame(
        {"dataset": names * 2, "model": ["a"] * len(names) + ["b"] * len(names),
         "log_loss": [*a_losses, *b_losses], "rmse": [*a_losses, *b_losses]}
    )


def names(ax):
    return [text.get_text() for text in ax.texts]


def test_losses_spanning_decades_are_drawn_on_log_axes_and_outliers_are_named():
    rng = np.random.default_rng(0)
    b = 10 ** rng.uniform(-3, 0, 20)
    a = b * 1.01
    a[[3, 11]] = b[[3, 11]] * 30  # far from the diagonal in log scale, however small the losses
    ax = scatter_figure(results(a, b), "a", "b", "log_loss").axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert len(names(ax)) == OUTLIERS and {"d3", "d11"} <= set(names(ax))
    assert "below the diagonal a wins, above it b" in ax.get_title()


def test_losses_within_a_decade_stay_linear_and_a_tie_is_not_an_outlier():
    ax = scatter_figure(results([0.2, 0.3, 0.25], [0.2, 0.35, 0.2]), "a", "b", "rmse").axes[0]
    assert ax.get_xscale() == "linear"
    assert sorted(names(ax)) == ["d1", "d2"]  # d0: on the diagonal
    assert ax.get_title().startswith("a vs b: 1–1–1 on 3 datasets")


def test_one_tiny_loss_does_not_squeeze_the_others_into_a_corner():
    """The HDP paper's Fig. 6a: mushroom's RMSE of 1e-6 beside 67 datasets between 0.1 and 0.7 spans
    six decades, but log axes would crush the 67; linear axes spread them, no inset needed."""
    rng = np.random.default_rng(1)
    b = np.append(rng.uniform(0.1, 0.7, 67), 0.02)
    a = np.append(b[:67] + rng.normal(0, 0.02, 67), 1e-6)
    ax = scatter_figure(results(a, b), "a", "b", "rmse", total=68).axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "linear"
    assert not ax.child_axes
    low, high = ax.get_xlim()
    assert high - low < 1  # the 67 fill the axes
    assert "on 68 datasets" in ax.get_title()


def test_a_loss_that_crushes_the_rest_on_linear_axes_gets_an_inset():
    """30 losses within 0.30-0.32 and one of 2: less than a decade apart, drawn linear, where the one
    would leave the 30 a dot; an inset zooms on them."""
    rng = np.random.default_rng(2)
    b = np.append(rng.uniform(0.30, 0.32, 30), 2.0)
    a = np.append(b[:30] + rng.normal(0, 0.002, 30), 1.5)
    ax = scatter_figure(results(a, b), "a", "b", "log_loss").axes[0]
    assert ax.get_xscale() == "linear"
    (inset,) = ax.child_axes
    low, high = inset.get_xlim()
    assert high - low < 0.1 and ((low < b[:30]) & (b[:30] < high)).mean() > 0.8  # the 30 fill the inset
    assert ax.get_xlim()[1] > 2  # the main axes still hold every dataset
    assert "d30" in names(ax)  # the one outside the inset is named on the main axes


def text_boxes(figure):
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    axes = [*figure.axes, *(child for ax in figure.axes for child in ax.child_axes)]
    return [text.get_window_extent(renderer) for ax in axes for text in ax.texts]


def test_names_of_close_outliers_do_not_overlap():
    """Five datasets far from the diagonal and close to each other: their names are moved apart."""
    b = np.array([0.5, 0.51, 0.52, 0.5, 0.51, *np.linspace(0.1, 0.9, 20)])
    a = np.array([0.2, 0.21, 0.2, 0.22, 0.21, *np.linspace(0.1, 0.9, 20) + 0.005])
    frame = results(a, b).assign(dataset=lambda f: f["dataset"].str.replace("d", "dataset-with-a-long-name-"))
    figure = scatter_figure(frame, "a", "b", "rmse")
    boxes = text_boxes(figure)
    assert len(boxes) == OUTLIERS
    for one, other in itertools.combinations(boxes, 2):
        assert not one.overlaps(other), (one, other)


def test_a_figure_does_not_depend_on_how_fast_the_machine_places_its_names(tmp_path, monkeypatch):
    """adjustText stops after 1 s of wall time unless given a number of steps: on a loaded machine a
    committed figure would come out different. Here its clock jumps 10 s a reading, as if every step
    were slow; the PNG is byte for byte the one drawn at full speed."""
    b = np.array([0.5, 0.5, 0.5, 0.5, 0.5, *np.linspace(0.1, 0.9, 20)])
    a = np.array([0.2, 0.2, 0.2, 0.2, 0.2, *np.linspace(0.1, 0.9, 20) + 0.005])
    frame = results(a, b).assign(dataset=lambda f: f["dataset"].str.replace("d", "dataset-with-a-long-name-"))
    fast = scatter_plot(frame, "a", "b", "rmse", tmp_path / "fast.png").read_bytes()
    readings = itertools.count(step=10.0)
    monkeypatch.setattr(adjustText, "timer", lambda: next(readings))
    slow = scatter_plot(frame, "a", "b", "rmse", tmp_path / "slow.png").read_bytes()
    assert slow == fast


def test_each_point_takes_the_colour_of_the_model_that_wins_there_the_same_in_every_figure():
    colours = Colours(["b", "a"])
    ax = scatter_figure(results([0.1, 0.3, 0.2], [0.2, 0.2, 0.2]), "a", "b", "rmse", colours=colours).axes[0]
    drawn = {collection.get_label(): collection.get_facecolor()[0] for collection in ax.collections}
    assert set(drawn) == {"a wins (1)", "b wins (1)", "draw (1)"}
    assert pd.Series(drawn["a wins (1)"][:3]).round(3).tolist() == pd.Series(
        [int(colours("a")[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    ).round(3).tolist()
    assert colours("a") != colours("b") and colours.given == {"b": colours("b"), "a": colours("a")}


def test_the_title_says_how_many_of_the_experiments_datasets_are_plotted():
    ax = scatter_figure(results([0.1, 0.3], [0.2, 0.2]), "a", "b", "rmse", total=68).axes[0]
    assert ax.get_title().startswith("a vs b: 1–0–1 on 2 of 68 datasets")


def test_no_common_dataset_is_undefined(tmp_path):
    frame = results([0.1], [0.2]).assign(dataset=["d0", "d1"])
    with pytest.raises(Undefined, match="no dataset has a rmse for both a and b"):
        scatter_plot(frame, "a", "b", "rmse", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_an_infinite_mean_is_counted_in_the_title_and_left_off_the_axes(tmp_path):
    """A log loss of inf (a run logged without clipping, by another tool) must not stop the report (issue 42)."""
    ax = scatter_figure(results([0.1, np.inf, 0.3], [0.2, 0.2, 0.2]), "a", "b", "log_loss").axes[0]
    assert ax.get_title().startswith("a vs b: 1–0–2 on 3 datasets (1 of infinite mean not drawn)")
    assert np.isfinite(ax.get_xlim()).all() and np.isfinite(ax.get_ylim()).all()
    with pytest.raises(Undefined, match="no dataset has a finite log_loss for both a and b"):
        scatter_plot(results([np.inf], [0.2]), "a", "b", "log_loss", tmp_path / "x.png")
