"""Bayesian comparison of two classifiers across datasets (Benavoli, Corani, Demšar and Zaffalon (2017). Time
for a change: a tutorial for comparing multiple classifiers through Bayesian analysis. JMLR 18(77), 1-36), beside
the sign test's W-D-L, with baycomp's implementation:

- across datasets, the Bayesian signed-rank test (their Sect. 5.1) on the datasets' mean losses: the posterior
  probabilities that ``a``'s loss is lower than ``b``'s by more than the region of practical equivalence
  (``ROPE``), that they are within it, and that ``b``'s is lower;
- on each dataset, the correlated Bayesian t-test (their Sect. 4; Corani and Benavoli 2015) on the folds'
  losses, correlation 1/k for k folds a repetition: the datasets where one side or the ROPE is more probable
  than ``DECIDED``, and those left undecided.

The hierarchical model over the folds of every dataset (their Sect. 6) needs Stan, which the report does not
take on: it is not computed. The signed-rank posterior is sampled with a fixed seed, so that a report
regenerates byte for byte.
"""

from pathlib import Path

import numpy as np
import pandas as pd
from baycomp import CorrelatedTTest, SignedRankTest

from bncbench.report.compute import Report
from bncbench.report.readme import Figures, Section
from bncbench.report.sections import PluginSection
from bncbench.report.tables import markdown_table, write_csv

#: The region of practical equivalence, on each loss: one point of error rate, 0.01 of RMSE or of log loss.
ROPE = 0.01
#: A posterior probability above this decides a dataset (the paper's 95%).
DECIDED = 0.95
#: The seed of the signed-rank test's Monte Carlo sample, and its size: a probability to within about 0.005
#: (one standard error at 0.5), shown to two decimals; baycomp's default of 50,000 costs 1 CPU-s a comparison and
#: metric on 68 datasets.
SEED, SAMPLES = 1, 10_000
FILE = "bayesian.csv"
COLUMNS = ["a", "b", "metric", "datasets", "rope", "p_a_better", "p_equivalent", "p_b_better",
           "datasets_a_better", "datasets_equivalent", "datasets_b_better", "datasets_undecided"]
TITLE = "Bayesian comparison: signed-rank test across datasets, correlated t-test on each"


def comparisons(report: Report) -> pd.DataFrame:
    """The posterior probabilities of every comparison and metric (``COLUMNS``), on the datasets where both
    models have a mean and their folds."""
    results = report.compared_results
    if report.datasets is not None:
        results = results[results["dataset"].isin(report.datasets)]
    folds = report.folds.pivot_table(index=["run_id", "metric"], columns="fold", values="value", aggfunc="last")
    runs = max(1, folds.shape[1] // report.options.folds_per_repetition)
    paired = results.pivot_table(index="dataset", columns="model", values="run_id", aggfunc="last")
    rows = []
    for metric in [metric for metric in report.metrics if metric in results.columns]:
        means = results.pivot_table(index="dataset", columns="model", values=metric, aggfunc="last")
        for a, b in report.comparisons:
            if a not in means.columns or b not in means.columns:
                continue
            both = means[[a, b]].dropna().index
            if len(both) == 0:
                continue
            p_a, p_equal, p_b = SignedRankTest.probs(means.loc[both, b].to_numpy(), means.loc[both, a].to_numpy(),
                                                     rope=ROPE, nsamples=SAMPLES, random_state=SEED)
            per_dataset = [_dataset_probs(folds, paired.at[d, a], paired.at[d, b], metric, runs) for d in both]
            decided = [np.argmax(p) if max(p) > DECIDED else 3 for p in per_dataset if p is not None]
            rows.append([a, b, metric, len(both), ROPE, p_a, p_equal, p_b,
                         *(decided.count(side) for side in range(4))])
    return pd.DataFrame(rows, columns=COLUMNS)


def _dataset_probs(folds: pd.DataFrame, run_a: str, run_b: str, metric: str, runs: int) -> tuple | None:
    """``(P(a better), P(equivalent), P(b better))`` of one dataset's folds; None without both runs' folds."""
    try:
        x, y = folds.loc[(run_b, metric)].to_numpy(), folds.loc[(run_a, metric)].to_numpy()
    except KeyError:
        return None
    kept = ~(np.isnan(x) | np.isnan(y))
    return CorrelatedTTest.probs(x[kept], y[kept], rope=ROPE, runs=runs) if kept.sum() > 1 else None


def write(report: Report, folder: Path, figures: Figures) -> Section:
    """``bayesian.csv`` and the README's table of it."""
    if not report.comparisons:
        return Section(TITLE, [], ["the experiment declares no comparison (experiment.comparisons)"])
    found = comparisons(report)
    if found.empty:
        return Section(TITLE, [], ["no comparison has both models' runs on a dataset"])
    write_csv(found, folder / FILE)
    rows = [
        [f"{row.a} vs {row.b}", row.metric, str(row.datasets), *(f"{p:.2f}" for p in
         (row.p_a_better, row.p_equivalent, row.p_b_better)),
         f"{row.datasets_a_better}–{row.datasets_equivalent}–{row.datasets_b_better} ({row.datasets_undecided})"]
        for row in found.itertuples(index=False)
    ]
    header = ["a vs b", "metric", "datasets", "P(a better)", "P(equivalent)", "P(b better)",
              "datasets a–equivalent–b (undecided)"]
    return Section(TITLE, [
        f"[{FILE}]({FILE}). The posterior probability that a's mean loss across datasets is lower than b's by more "
        f"than {ROPE} (the region of practical equivalence), within it, or higher (Bayesian signed-rank test, "
        f"Benavoli et al. 2017, Sect. 5.1; a Monte Carlo sample of {SAMPLES:,}), and the datasets on which the correlated Bayesian t-test of the folds "
        f"gives one of the three a probability above {DECIDED} (Sect. 4), with those left undecided; what no "
        "paper of these experiments reports. The hierarchical model over all folds (Sect. 6) needs Stan and is "
        "not computed.",
        "",
        markdown_table(header, rows),
    ])


SECTION = PluginSection(TITLE, order=10, files=(FILE,), write=write)
