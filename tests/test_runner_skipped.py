"""A model that cannot run on a dataset (``NotApplicableError``): logged as skipped, not failed, and left
out of the report."""

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from bncbench import tracking
from bncbench.app.config import CONFIG_NAME, compose, config_dir
from bncbench.report import load_results
from bncbench.app.runner import run_cell
from bncbench.app.sweep import ExperimentCallback, summarise


def _cell(tmp_path, model, *extra):
    overrides = [
        "dataset=sklearn-iris",
        f"model={model}",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_location={tmp_path}/artifacts",
        *extra,
    ]
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose(CONFIG_NAME, overrides)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with a finished nb_laplace cell and a direct_hpb cell over its bound, on iris."""
    tmp_path = tmp_path_factory.mktemp("store")
    bounded = _cell(
        tmp_path, "direct_hpb",
        "experiment.grids=[{structure: direct, estimator: hpb, estimator_params: {max_patterns: [100]}, name: direct_hpb}]",
    )
    client = tracking.open_store(bounded.tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", bounded.artifact_location)
    statuses = {
        "direct_hpb": run_cell(bounded, client, exp, "sklearn-iris", "direct_hpb"),
        "nb_laplace": run_cell(_cell(tmp_path, "nb_laplace"), client, exp, "sklearn-iris", "nb_laplace"),
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


def test_the_summary_counts_it_apart_and_the_report_leaves_it_out(store, capsys):
    tmp_path, client, exp, _ = store
    summary = summarise(client, exp, ["sklearn-iris"], ["nb_laplace", "direct_hpb"], sweep=None)
    assert summary.finished == ["sklearn-iris/nb_laplace"]
    assert list(summary.not_applicable) == ["sklearn-iris/direct_hpb"] and summary.failed == {}
    assert summary.total == 2
    results = load_results(f"sqlite:///{tmp_path}/mlflow.db", "smoke")
    assert list(results["model"]) == ["nb_laplace"]

    cfg = compose(
        [
            "experiment.datasets=[sklearn-iris]",
            "experiment.models=[nb_laplace,direct_hpb]",
            "experiment.comparisons=[]",
            f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
            f"report_dir={tmp_path}/reports",
        ]
    )
    ExperimentCallback().on_multirun_end(cfg)  # no SystemExit: nothing failed
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("bncbench: skipped sklearn-iris/direct_hpb: not applicable to") for line in lines)
    assert lines[-1] == (
        "bncbench: experiment 'smoke': 2 cells, 1 run, 0 skipped (finished before), 1 not applicable, 0 failed."
    )
