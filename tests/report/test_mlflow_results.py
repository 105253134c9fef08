"""Reading an experiment's runs back from a real SQLite MLflow store."""

import pytest
from mlflow.tracking import MlflowClient

from bncbench.core.errors import ConfigError
from bncbench.tracking import tags as tag
from bncbench.protocol.cell import Cell, CrossValidationSettings
from bncbench.report.results import load_fold_metrics, load_results, read_runs


def test_one_row_per_finished_cell(store):
    uri, run_ids = store
    results = load_results(uri, "toy")
    assert list(results.columns) == [
        "dataset",
        "model",
        "run_id",
        "cfg_hash",
        "rmse",
        "zero_one_loss",
    ]
    cells = list(zip(results["dataset"], results["model"], strict=True))
    assert cells == sorted(run_ids)  # no FAILED (d3, b), no RUNNING, no duplicate (d0, a)
    assert list(results["run_id"]) == [run_ids[cell] for cell in cells]
    latest = results.set_index(["dataset", "model"]).loc[("d0", "a")]
    assert latest["cfg_hash"] == "h-d0-a-2000"
    assert latest["zero_one_loss"] == pytest.approx(0.1)
    assert latest["rmse"] == pytest.approx(0.3)


def test_fold_metrics(store):
    uri, run_ids = store
    runs = [run_ids[("d2", "a")], run_ids[("d0", "b")]]
    folds = load_fold_metrics(uri, runs, ["zero_one_loss"])
    assert list(folds.columns) == ["run_id", "metric", "fold", "value"]
    assert list(folds["run_id"]) == [runs[0]] * 10 + [runs[1]] * 10
    assert set(folds["metric"]) == {"zero_one_loss"}
    assert list(folds["fold"]) == list(range(10)) * 2
    assert list(folds["value"]) == [0.05, 0.35] * 5 + [0.2] * 10


def test_missing_store_is_not_created(tmp_path):
    db = tmp_path / "nowhere" / "mlflow.db"
    with pytest.raises(ConfigError, match="no MLflow store at .*run the experiment first"):
        load_results(f"sqlite:///{db}", "toy")
    assert not db.parent.exists()


def test_unknown_experiment_lists_existing(store):
    uri, _ = store
    with pytest.raises(
        ConfigError,
        match=r"no MLflow experiment 'toi'.*existing: Default, empty, smoke, toy\); run the",
    ):
        load_results(uri, "toi")


def test_unsupported_uri():
    with pytest.raises(ConfigError, match="cannot open the tracking store 'foo://bar'"):
        load_results("foo://bar", "toy")


def test_a_dataset_without_a_file_here_is_read_in_one_version(tmp_path, cell_logger):
    # a is logged on the first version of d, b later on a second: with no file for d here, the report
    # reads the latest version, so a's cell is left out instead of compared across versions
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "artifacts").as_uri())
    folds = {"rmse": [0.3] * 10}
    cells = {("d", m): Cell.of("d", m, {"name": "d"}, {"estimator": m}, CrossValidationSettings(), None) for m in "ab"}
    for model, start, digest in [("a", 1, "v1"), ("b", 2, "v2")]:
        cell = cells[("d", model)]
        tags = {"cfg_hash": cell.cfg_hash, tag.DATA_DIGEST: digest}
        cell_logger(client, experiment, "d", model, folds, start=start, params=cell.params, tags=tags)
    runs = read_runs(uri, "e", cells)
    assert list(runs.results()["model"]) == ["b"]
    left_out = runs.left_out()
    assert list(left_out["model"]) == ["a"] and left_out["differs"].iloc[0].startswith("data_digest=v1")
    assert list(read_runs(uri, "e", {("d", "a"): cells[("d", "a")]}).results()["model"]) == ["a"]  # alone: its own
