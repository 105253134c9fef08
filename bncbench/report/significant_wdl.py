"""Win-draw-loss counted as the SkDB paper counts: a dataset is a win or a loss only where a Wilcoxon
signed-rank test of the paired fold losses is significant, a draw elsewhere (Martinez et al. 2016,
Sect. 3.1: "A win indicates that the algorithm has significantly lower error than the comparator. A
draw indicates that the differences in error are not significant. Statistical significance has been
assessed using Wilcoxon signed-rank tests to compare the 10-fold outputs"; the paper does not state
its level: ``report.alpha`` is used, 0.05 by default).

``report.counting: wilcoxon`` counts an experiment's own W-D-L so; ``means`` (the default) compares the
mean losses (:func:`bncbench.report.win_draw_loss.win_draw_loss`). Tables the paper counts this way
(:attr:`bncbench.report.published_table.PublishedTable.per_dataset_significance`) always are.
"""

from collections.abc import Iterable, Mapping

import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.report.win_draw_loss import WinDrawLoss, win_draw_loss

COUNTINGS = ("means", "wilcoxon")


def fold_p_values(dataset_tests: pd.DataFrame | None, a: str, b: str, metric: str) -> pd.Series:
    """The Wilcoxon p-value of A vs B on each dataset's folds, indexed by dataset (empty without tests)."""
    if dataset_tests is None:
        return pd.Series(dtype=float)
    tests = dataset_tests.loc[
        (dataset_tests["a"] == a) & (dataset_tests["b"] == b) & (dataset_tests["metric"] == metric)
    ]
    return tests.set_index("dataset")["wilcoxon_p_value"]


def wilcoxon_wdl_table(
    results: pd.DataFrame,
    dataset_tests: pd.DataFrame,
    comparisons: Iterable[Mapping[str, str]],
    metrics: Iterable[str],
    *,
    datasets: Iterable[str] | None = None,
    **options,
) -> list[WinDrawLoss]:
    """Win-draw-loss of every comparison and metric, a win or a loss only where the dataset's Wilcoxon
    test of the folds (``dataset_tests``, :func:`bncbench.report.significance.dataset_tests`) has
    ``p <= alpha``; comparison-major, as :func:`bncbench.report.tables.wdl_table`. ``options``:
    ``draws``, ``round``, ``alpha``; the sign test across datasets is then that of these records."""
    datasets = None if datasets is None else list(datasets)
    return [
        win_draw_loss(
            results, comparison["a"], comparison["b"], metric, datasets=datasets,
            dataset_p_values=fold_p_values(dataset_tests, comparison["a"], comparison["b"], metric), **options,
        )
        for comparison in comparisons
        for metric in metrics
    ]


def check_counting(counting) -> None:
    """Raise a ConfigError naming ``report.counting`` unless it is one of :data:`COUNTINGS`."""
    if counting not in COUNTINGS:
        raise ConfigError(f"report.counting must be one of {', '.join(COUNTINGS)}, got {counting!r}.")


def wilcoxon_legend(draws: str, round: int | None, alpha: float, dash: str = "–", less_equal: str = "≤") -> str:
    """What a W-D-L table counted by :func:`wilcoxon_wdl_table` counts and tests."""
    test = "draws left out" if draws == "exclude" else "draws split evenly between A and B (an odd one dropped)"
    return (
        f"Win{dash}draw{dash}loss of A vs B across datasets, counted as the SkDB paper counts (Sect. 3.1): A "
        f"wins (loses) a dataset when a two-sided Wilcoxon signed-rank test of the paired fold losses has p "
        f"{less_equal} {alpha} and A's mean loss is lower (higher); a draw otherwise. p: two-tailed exact "
        f"binomial sign test of these records, {test}; bold: p {less_equal} {alpha}."
    )
