"""The Bayesian comparison section (a report plug-in, ``bncbench.report.sections``): its orientation (a lower
loss is better), its limits (a clear winner, identical models, too few datasets), determinism, and the README."""

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.report import ReportOptions, compute_report, plan_runs, read_runs, write_report
from bncbench.report.sections import plugins
from bncbench.report.sections.bayesian import COLUMNS, FILE, ROPE, TITLE, comparisons


@pytest.fixture(scope="module")
def clear_store(tmp_path_factory):
    """Experiment ``clear``, 12 datasets: ``a`` 0.05 below ``b`` on every fold; ``same`` equal to ``b`` on every
    fold but for noise far inside the ROPE."""
    from tests.report.conftest import log_cell

    tmp = tmp_path_factory.mktemp("bayesian")
    uri = f"sqlite:///{tmp}/mlflow.db"
    client = MlflowClient(uri)
    experiment = client.create_experiment("clear", artifact_location=(tmp / "artifacts").as_uri())
    noise = np.random.default_rng(3)
    for i in range(12):
        b = 0.2 + 0.01 * i + noise.normal(0, 0.01, 10)
        for model, folds in (("a", b - 0.05), ("b", b), ("same", b + noise.normal(0, 0.0005, 10))):
            log_cell(client, experiment, f"d{i}", model, {"rmse": list(folds)}, start=100)
    return uri


def test_a_clear_winner_and_identical_models(clear_store):
    report = compute_report(read_runs(clear_store, "clear"),
                            ReportOptions(("rmse",), ({"a": "a", "b": "b"}, {"a": "same", "b": "b"})))
    found = comparisons(report).set_index(["a", "b"])
    assert list(found.reset_index().columns) == COLUMNS
    winner, same = found.loc[("a", "b")], found.loc[("same", "b")]
    assert winner.datasets == 12 and winner.p_a_better > 0.99 and winner.p_b_better < 0.01
    assert (winner.datasets_a_better, winner.datasets_equivalent, winner.datasets_b_better) == (12, 0, 0)
    assert same.p_equivalent > 0.99 and (same.datasets_equivalent, same.datasets_undecided) == (12, 0)
    for row in (winner, same):
        assert row.p_a_better + row.p_equivalent + row.p_b_better == pytest.approx(1.0) and row.rope == ROPE
    flipped = comparisons(compute_report(read_runs(clear_store, "clear"), ReportOptions(("rmse",), ({"a": "b", "b": "a"},))))
    assert flipped.p_b_better.iloc[0] == pytest.approx(winner.p_a_better)  # the sides swap with the comparison


def test_the_toy_experiment_counts_each_dataset_once_and_is_deterministic(store):
    uri, _ = store
    report = compute_report(read_runs(uri, "toy"), ReportOptions(("zero_one_loss",), ({"a": "a", "b": "b"},)))
    first, again = comparisons(report), comparisons(report)
    pd.testing.assert_frame_equal(first, again)  # a fixed seed: a report regenerates byte for byte
    (row,) = first.itertuples(index=False)
    # d0: a below b by 0.1 on every fold; d1: b below a; d2: equal means, folds +-0.3 apart; d3: b failed
    assert row.datasets == 3
    assert (row.datasets_a_better, row.datasets_equivalent, row.datasets_b_better, row.datasets_undecided) == (1, 0, 1, 1)
    assert abs(row.p_a_better - row.p_b_better) < 0.05  # one win each way: symmetric up to the Monte Carlo error


def test_the_section_is_a_plug_in_shown_after_the_sign_tests(store, tmp_path, report_plan):
    assert TITLE in [section.title for section in plugins()]
    uri, _ = store
    plan = report_plan(name="toy", datasets=["d0", "d1", "d2", "d3"], models=["a", "b"],
                       comparisons=[{"a": "a", "b": "b"}], metrics=["zero_one_loss"])
    out = write_report(plan, plan_runs(plan, uri), tmp_path)
    readme = (out / "README.md").read_text()
    assert readme.index("## Win–draw–loss and significance") < readme.index(f"## {TITLE}") < readme.index("## Per-dataset")
    assert "| a vs b | zero_one_loss | 3 |" in readme
    assert list(pd.read_csv(out / FILE).columns) == COLUMNS
    none = report_plan(name="toy", datasets=["d0"], models=["a", "b"], comparisons=[], metrics=["zero_one_loss"])
    out = write_report(none, plan_runs(none, uri), tmp_path, replace=True)
    assert not (out / FILE).exists()  # the older version's file went with it
    assert f"- {TITLE}: the experiment declares no comparison" in (out / "README.md").read_text()
