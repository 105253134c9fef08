"""A model that cannot run on a dataset (``NotApplicableError``): logged as skipped, not failed, and left
out of the report."""

import pytest

from bncbench import tracking
from bncbench.app.config import compose
from bncbench.app.runner import run_cell
from bncbench.app.sweep import run_plan
from bncbench.report import load_results

GRID = "experiment.grids=[{structure: direct, estimator: hpb, estimator_params: {max_patterns: [100]}, name: direct_hpb}]"


@pytest.fixture(scope="module")
def store(tmp_path_factory, plan_cell):
    """A store with a finished nb_laplace cell and a direct_hpb cell over its bound, on iris."""
    tmp_path = tmp_path_factory.mktemp("store")
    places = [f"tracking_uri=sqlite:///{tmp_path}/mlflow.db", f"artifact_location={tmp_path}/artifacts"]
    bounded = plan_cell("sklearn-iris", "direct_hpb", *places, GRID)
    client = tracking.open_store(bounded[1].tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", None)
    statuses = {
        "direct_hpb": run_cell(*bounded).status,
        "nb_laplace": run_cell(*plan_cell("sklearn-iris", "nb_laplace", *places)).status,
    }
    return tmp_path, client, exp, statuses


def test_the_cell_is_killed_with_the_reason_naming_dataset_patterns_and_bound(store):
    _, client, exp, statuses = store
    assert statuses == {"direct_hpb": "not applicable", "nb_laplace": "finished"}
    (run,) = client.search_runs([exp], filter_string="tags.model = 'direct_hpb'")
    assert run.info.status == "KILLED"
    reason = run.data.tags["not_applicable"]
    assert reason.startswith("not applicable to dataset 'sklearn-iris': HPB refuses this data")
    assert "75 training rows x 16 pattern families = 1200 sub-patterns, more than max_patterns=100" in reason
    assert "error" not in run.data.tags
    assert "error.txt" not in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_the_sweep_counts_it_apart_and_the_report_leaves_it_out(store, capsys):
    tmp_path, client, exp, _ = store
    results = load_results(f"sqlite:///{tmp_path}/mlflow.db", "smoke")
    assert list(results["model"]) == ["nb_laplace"]

    composed = compose(
        [
            "experiment.datasets=[sklearn-iris]",
            "experiment.models=[nb_laplace,direct_hpb]",
            "experiment.comparisons=[]",
            GRID,
            "executor.n_jobs=1",
            f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
            f"report_dir={tmp_path}/reports",
        ]
    )
    assert run_plan(composed, "bncbench") == 0  # nothing failed
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("bncbench: skipped sklearn-iris/direct_hpb: not applicable to") for line in lines)
    assert lines[-1] == (
        "bncbench: experiment 'smoke': 2 cells, 0 run, 1 skipped (finished before), 1 not applicable, 0 failed."
    )
