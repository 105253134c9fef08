"""Published tables beside ours, on synthetic results in a real SQLite MLflow store."""

import re

import pandas as pd
import pytest

from bncbench.report.published import HDP_TABLE1, PUBLISHED, SKDB_TABLE2
from bncbench.report.results import load_fold_metrics, load_results
from bncbench.report.side_by_side import compare_published, published_markdown
from bncbench.report.significance import dataset_tests, wilcoxon_across_datasets


@pytest.fixture(scope="module")
def results(hdp_store):
    return load_results(hdp_store, "hdp")


def cells(comparison):
    return comparison.set_index(["row", "column"])


def test_hdp_table1_beside_ours(results):
    comparison = compare_published(HDP_TABLE1, results)
    assert len(comparison) == 16
    nb = cells(comparison).loc["Naive Bayes"]
    assert nb.loc["0/1-loss", ["paper", "source", "table", "metric", "printed"]].tolist() == [
        HDP_TABLE1.paper,
        "hdp-estimates-for-bnc-arxiv-with-tables.txt",
        "Table 1",
        "zero_one_loss",
        "41–4–23",
    ]
    # ours 6-0-0 (p = 2/64): significant like 41-4-23, unlike 40-0-28
    assert nb[["wins", "draws", "losses", "missing"]].to_numpy().tolist() == [[6, 0, 0, 0]] * 2
    assert nb["p_value"].tolist() == pytest.approx([2 / 64] * 2)
    assert nb["same_winner"].tolist() == [True, True]
    assert nb["same_significance"].tolist() == [True, False]
    assert nb["agree"].tolist() == [True, False]
    kdb5 = cells(comparison).loc[("kDB-5", "RMSE")]
    assert (kdb5["wins"], kdb5["draws"], kdb5["losses"], kdb5["agree"]) == (4, 0, 2, False)
    tan = cells(comparison).loc[("TAN", "RMSE")]
    assert tan["status"] == "not run: tan_hdp, tan_m_estimate"
    assert pd.isna(tan["wins"]) and pd.isna(tan["agree"])


def test_hdp_table1_markdown(results):
    settings = {"CV": {"5x2, seed 1": 20}, "HDP iterations": {"1000": 10}, "datasets": {"6": 20}}
    markdown = published_markdown(HDP_TABLE1, compare_published(HDP_TABLE1, results), settings)
    assert markdown.startswith(f"## Table 1 (HDP paper) with {HDP_TABLE1.competitor}\n\nThe paper's caption: “{HDP_TABLE1.caption}”")
    assert (
        "| Classifier | column | paper | ours | W−L: ours / paper | mean A − B | Wilcoxon p | agreement |"
    ) in markdown
    assert "| Naive Bayes | 0/1-loss | **41–4–23** | **6–0–0** | +6 / +18 | -0.0717 | 0.0312 | ✓ |" in markdown
    assert "| Naive Bayes | RMSE | 40–0–28 | **6–0–0** | +6 / +12 | -0.0717 | 0.0312 | ✗ significance |" in markdown
    # agreement on the winner no longer hides how far apart the records are
    assert "| kDB-5 | 0/1-loss | **60–4–4** | 4–0–2 | +2 / +56 | -0.00667 | 0.156 | ✗ significance |" in markdown
    assert "| TAN | RMSE | **52–1–15** | — | — / +37 |  |  |  |" in markdown
    assert "| datasets | 68 | 6 | **differs** |" in markdown
    assert "| CV | 5x2 | 5x2, seed 1 | same |" in markdown
    assert "| HDP iterations | 50000 | 1000 | **differs** |" in markdown
    assert "| discretisation | MDL | MDL | same |" in markdown
    assert (
        "**Totals: the paper's winner in 4 of 4 compared cells; significant where the paper is in 1 of 3; "
        "same winner and significance (✓) in 1 of 4.** W−L, ours minus the paper's: from -54 to -6. "
        "Not compared: 12 of 16 cells."
    ) in markdown
    assert "- Naive Bayes: nb_hdp vs nb_m_estimate (0/1-loss, RMSE)" in markdown
    assert "- TAN: not run: tan_hdp, tan_m_estimate (0/1-loss, RMSE)" in markdown
    assert "lost the bold face" in markdown


def test_a_published_cell_shows_both_distances_and_the_wilcoxon_test_of_the_report(results):
    comparison = cells(compare_published(HDP_TABLE1, results))
    kdb5 = comparison.loc[("kDB-5", "RMSE")]
    assert (kdb5["distance"], kdb5["published_distance"]) == (4 - 2, 60 - 6)
    means = results.pivot(index="dataset", columns="model", values="rmse")
    assert kdb5["mean_difference"] == pytest.approx((means["kdb5_hdp"] - means["kdb5_m_estimate"]).mean())
    across = wilcoxon_across_datasets(results, [("kdb5_hdp", "kdb5_m_estimate")], ["rmse"])
    assert kdb5["wilcoxon_p_value"] == across["wilcoxon_p_value"].iloc[0]
    tan = comparison.loc[("TAN", "RMSE")]
    assert pd.isna(tan["distance"]) and tan["published_distance"] == 52 - 15 and pd.isna(tan["mean_difference"])


def test_the_source_is_the_paper_not_a_local_file(results):
    for table in PUBLISHED.values():
        markdown = published_markdown(table, compare_published(table, results))
        source = next(line for line in markdown.splitlines() if line.startswith("Source: "))
        assert source.startswith(f"Source: {table.paper}, {table.table}")
        assert re.search(r"\(\d{4}\)\. [A-Z].+\. [A-Z]", source)  # authors (year). Title. Journal
        assert ".txt" not in source and "shared/papers" not in source


def test_every_published_table_has_its_own_heading(results):
    headings = [table.heading for table in PUBLISHED.values()]
    assert len(set(headings)) == len(headings)
    m_estimate = " with m-estimates backing off through the class to p(x) (*_m_estimate)"
    assert PUBLISHED["hdp_table2"].heading == f"Table 2 (HDP paper) against scikit-learn's random forest (random_forest){m_estimate}"
    assert PUBLISHED["hdp_table2_weka"].heading == f"Table 2 (HDP paper) against Weka's RandomForest (weka_random_forest){m_estimate}"
    assert PUBLISHED["hdp_table2_weka_m1"].heading.endswith("(weka_random_forest) with m-estimates with m = 1 (*_m1)")
    for table in PUBLISHED.values():
        assert published_markdown(table, compare_published(table, results)).startswith(f"## {table.heading}\n")


def test_the_datasets_beside_the_paper_are_those_its_cells_compare(results):
    """Runs of some models on 68 datasets and of others on 6 (a protocol going in by slices): the
    table compares 6, and says so, not 68."""
    settings = {"CV": {"5x2, seed 1": 20}, "datasets": {"68": 20}}
    markdown = published_markdown(HDP_TABLE1, compare_published(HDP_TABLE1, results), settings)
    assert "| datasets | 68 | 6 | **differs** |" in markdown


def test_skdb_table_counts_significant_folds(hdp_store, results):
    pair = ("skdb_m_estimate", "kdb5_m_estimate")
    folds = load_fold_metrics(hdp_store, results["run_id"], ["rmse"])
    tests = dataset_tests(results, folds, [pair], ["rmse"])
    comparison = cells(compare_published(SKDB_TABLE2, results, dataset_tests=tests))
    skdb = comparison.loc[("SKDB", "k=5")]
    # mean-based 6-0-0; only d0..d2 differ significantly on the folds: 3-3-0, p = 0.25
    assert (skdb["wins"], skdb["draws"], skdb["losses"]) == (3, 3, 0)
    assert (skdb["same_winner"], skdb["same_significance"]) == (True, False)  # paper: 8-8-0
    assert comparison.loc[("SKDB", "k=4"), "status"].startswith("no bncbench counterpart: SkDB")
    assert comparison.loc[("SKDB k_max = 5", "best k"), "printed"] == "6-10-0"


def test_options_reach_our_counts(results):
    comparison = compare_published(
        HDP_TABLE1, results, datasets=["d0", "d1", "d9"], alpha=0.01, draws="split"
    )
    nb = cells(comparison).loc[("Naive Bayes", "RMSE")]
    assert (nb["wins"], nb["losses"], nb["missing"], nb["significant"]) == (2, 0, 1, False)
