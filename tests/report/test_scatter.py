"""Scatter plots of two models: log axes where losses span decades, outliers named, and the
"who wins where" legend in the title, never over the points."""

import numpy as np
import pandas as pd
import pytest

from bncbench.report.figures import OUTLIERS, scatter_figure, scatter_plot
from bncbench.report.significance import Undefined


def results(a_losses, b_losses) -> pd.DataFrame:
    names = [f"d{i}" for i in range(len(a_losses))]
    return pd.DataFrame(
        {"dataset": names * 2, "model": ["a"] * len(names) + ["b"] * len(names),
         "log_loss": [*a_losses, *b_losses], "rmse": [*a_losses, *b_losses]}
    )


def test_losses_spanning_decades_are_drawn_on_log_axes_and_outliers_are_named():
    rng = np.random.default_rng(0)
    b = 10 ** rng.uniform(-3, 0, 20)
    a = b * 1.01
    a[[3, 11]] = b[[3, 11]] * 30  # far from the diagonal in log scale, however small the losses
    ax = scatter_figure(results(a, b), "a", "b", "log_loss").axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    named = [text.get_text() for text in ax.texts]
    assert len(named) == OUTLIERS and {"d3", "d11"} <= set(named)
    assert "below the diagonal a wins, above it b" in ax.get_title()


def test_losses_within_a_decade_stay_linear_and_a_tie_is_not_an_outlier():
    ax = scatter_figure(results([0.2, 0.3, 0.25], [0.2, 0.35, 0.2]), "a", "b", "rmse").axes[0]
    assert ax.get_xscale() == "linear"
    assert sorted(text.get_text() for text in ax.texts) == ["d1", "d2"]  # d0: on the diagonal
    assert ax.get_title().startswith("a vs b: 1–1–1 on 3 datasets")


def test_no_common_dataset_is_undefined(tmp_path):
    frame = results([0.1], [0.2]).assign(dataset=["d0", "d1"])
    with pytest.raises(Undefined, match="no dataset has a rmse for both a and b"):
        scatter_plot(frame, "a", "b", "rmse", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
