"""What differs from the paper: each published table's protocol beside ours, derived from the runs'
settings, the table's models and its forest, and the README section that gathers the differences."""

import functools

import pandas as pd
import pytest

from bncbench.app.config import compose
from bncbench.report.differences import CONFIG_KEYS, READING, differences_section, protocol_rows
from bncbench.report.published import HDP_TABLE1, HDP_TABLE2, HDP_TABLE2_WEKA, PUBLISHED, SKDB_TABLE3
from bncbench.report.side_by_side import compare_published

#: The runs of the committed bnc_vs_rf report at 5000 iterations, as run_settings counts them.
SETTINGS = {"CV": {"5x2, seed 1": 476}, "HDP iterations": {"5000": 136}, "datasets": {"68": 476}}


@pytest.fixture(scope="module")
def results():
    """Every model of the HDP paper's Tables 1-2 and of the SkDB paper's Table 3 on 3 datasets."""
    models = {cell.a for t in (HDP_TABLE1, HDP_TABLE2, HDP_TABLE2_WEKA, SKDB_TABLE3) for cell in t.cells}
    models |= {cell.b for t in (HDP_TABLE1, HDP_TABLE2, HDP_TABLE2_WEKA, SKDB_TABLE3) for cell in t.cells}
    rows = [
        {"dataset": f"d{i}", "model": model, "zero_one_loss": 0.1 * (i + 1) + 0.01 * j, "rmse": 0.2 + 0.01 * j}
        for i in range(3)
        for j, model in enumerate(sorted(models - {None}))
    ]
    return pd.DataFrame(rows)


def rows(table, results, settings=SETTINGS):
    return {row.setting: row for row in protocol_rows(table, compare_published(table, results), settings)}


def test_the_hdp_papers_protocol_beside_ours(results):
    table1 = rows(HDP_TABLE1, results)
    assert [(r.setting, r.paper, r.ours, r.same) for r in table1.values()] == [
        ("datasets", "68", "3", False),  # the datasets its cells compare, not those the runs cover
        ("CV", "5x2", "5x2, seed 1", True),
        ("HDP iterations", "50000", "5000", False),
        ("discretisation", "MDL", "MDL", True),
        ("m-estimate", HDP_TABLE1.protocol["m-estimate"], HDP_TABLE1.competitor, False),  # a reading: never the same
    ]
    assert table1["m-estimate"].status == READING and "not said" in table1["m-estimate"].paper
    class_kept = rows(PUBLISHED["hdp_table1_class_kept"], results)["m-estimate"]
    assert (class_kept.ours, class_kept.status) == ("m-estimates that never drop the class (*_m_class_kept)", READING)
    assert rows(HDP_TABLE2, results)["forest"].ours == "scikit-learn's random forest (random_forest)"
    assert not rows(HDP_TABLE2, results)["forest"].same
    assert rows(HDP_TABLE2_WEKA, results)["forest"].same


def test_the_skdb_papers_protocol_differs_in_datasets_cv_and_discretisation(results):
    table3 = rows(SKDB_TABLE3, results)
    assert {setting: row.same for setting, row in table3.items()} == {
        "datasets": False,
        "CV": False,
        "discretisation": False,
    }
    assert (table3["discretisation"].paper, table3["discretisation"].ours) == ("5-bin equal frequency", "MDL")
    assert "HDP iterations" not in table3  # the SkDB paper has none


def test_the_section_gathers_what_differs_and_names_the_override_that_made_it(results):
    published = [(table, compare_published(table, results)) for table in (HDP_TABLE2, HDP_TABLE2_WEKA)]
    command = "bncbench report experiment=bnc_vs_rf hdp.iterations=5000"
    lines = differences_section(published, SETTINGS, command)
    text = "\n".join(lines)
    assert lines[0] == "## What differs from the paper, and why"
    m_estimate = " with m-estimates backing off through the class to p(x) (*_m_estimate)"
    both = (
        f"Table 2 (HDP paper) against scikit-learn's random forest (random_forest){m_estimate}; "
        f"Table 2 (HDP paper) against Weka's RandomForest (weka_random_forest){m_estimate}"
    )
    assert f"| HDP iterations | 50000 | 5000 | `hdp.iterations=5000` in this report's command | {both} |" in text
    assert (
        "| forest | Weka's RandomForest (weka_random_forest) | scikit-learn's random forest (random_forest) | "
        "the model the table's cells compare with, picked by its key in `report.published` | Table 2 (HDP paper) "
        f"against scikit-learn's random forest (random_forest){m_estimate} |"
    ) in text
    assert (
        "The same as the paper: CV (5x2); discretisation (MDL); forest (Weka's RandomForest (weka_random_forest)) in "
        f"Table 2 (HDP paper) against Weka's RandomForest (weka_random_forest){m_estimate}."
    ) in text
    # the m-estimate is never "the same": the paper leaves it partly open, and ours is a reading
    assert ("Left partly open by the paper, m-estimate: m chosen on a holdout of min(N/10, 5000) rows from "
            "{0, 0.05, 0.2, 1, 5, 20};") in text
    assert text.rstrip().endswith("Read here as: m-estimates backing off through the class to p(x) (*_m_estimate).")
    assert differences_section([], SETTINGS, command) == []


def test_a_report_at_the_papers_protocol_differs_only_in_its_forest(results):
    settings = {**SETTINGS, "HDP iterations": {"50000": 136}}
    published = [(table, compare_published(table, results)) for table in (HDP_TABLE1, HDP_TABLE2_WEKA)]
    text = "\n".join(differences_section(published, settings, "bncbench report experiment=hdp_vs_m"))
    assert "| datasets | 68 | 3 | the experiment's datasets where both models of a cell have runs |" in text
    assert "HDP iterations" not in text.split("The same as the paper:")[0]


def test_the_settings_named_as_why_are_config_keys():
    settings = compose(["experiment=hdp_vs_m"]).settings
    for keys in CONFIG_KEYS.values():
        for key in keys:
            assert functools.reduce(getattr, key.split("."), settings) is not None, key
