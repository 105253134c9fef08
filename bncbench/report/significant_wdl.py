"""Win-draw-loss counted as the SkDB paper counts: a dataset is a win or a loss only where a Wilcoxon
signed-rank test of the paired fold losses is significant, a draw elsewhere (Martinez et al. 2016,
Sect. 3.1: "A win indicates that the algorithm has significantly lower error than the comparator. A
draw indicates that the differences in error are not significant. Statistical significance has been
assessed using Wilcoxon signed-rank tests to compare the 10-fold outputs"; the paper does not state
its level: ``report.alpha`` is used, 0.05 by default).

``report.counting: wilcoxon`` counts an experiment's own W-D-L so
(:func:`bncbench.report.tables.wdl_table` given the per-dataset tests); ``means`` (the default) compares the
mean losses (:func:`bncbench.report.win_draw_loss.win_draw_loss`). Tables the paper counts this way
(:attr:`bncbench.report.published_table.PublishedTable.per_dataset_significance`) always are.
"""

import pandas as pd

from bncbench.core.errors import ConfigError

COUNTINGS = ("means", "wilcoxon")


def fold_p_values(dataset_tests: pd.DataFrame | None, a: str, b: str, metric: str,
                  column: str = "wilcoxon_p_value") -> pd.Series:
    """The p-value ``column`` (by default the Wilcoxon test's) of A vs B on each dataset's folds, indexed by dataset
    (empty without tests)."""
    if dataset_tests is None:
        return pd.Series(dtype=float)
    compared = (dataset_tests["a"] == a) & (dataset_tests["b"] == b) & (dataset_tests["metric"] == metric)
    return dataset_tests.loc[compared].set_index("dataset")[column]


def check_counting(counting) -> None:
    """Raise a ConfigError naming ``report.counting`` unless it is one of :data:`COUNTINGS`."""
    if counting not in COUNTINGS:
        raise ConfigError(f"report.counting must be one of {', '.join(COUNTINGS)}, got {counting!r}.")
