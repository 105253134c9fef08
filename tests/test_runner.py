"""The 5x2 cross-validation of one cell, its metrics, and logging a cell to a real SQLite store."""

import json

import numpy as np
import pandas as pd
import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from bncbench.tracking import lease
from bncbench import semantic, tracking
from bncbench.app.config import CONFIG_NAME, config_dir
from bncbench.data import Dataset, load_dataset
from bncbench.core.metrics import PROBABILITY_FLOOR
from bncbench.app.runner import cross_validate, repetition_seeds, run_cell
from bncbench.app.sweep import summarise

NB = {"structure": "nb", "k": 0, "structure_params": {}, "estimator": "laplace", "estimator_params": {}}
IRIS = {"name": "sklearn-iris", "source": "sklearn", "openml_id": None, "openml_target": None, "drop": []}


@pytest.fixture(scope="module")
def iris():
    return load_dataset(IRIS, None)


@pytest.fixture(scope="module")
def iris_cv(iris):
    return cross_validate(iris, {**NB, "structure": "kdb", "k": 1}, repetitions=5, folds=2, seed=1)


def test_five_times_two_folds(iris, iris_cv):
    metrics = iris_cv.metrics
    assert list(metrics.columns) == [
        "zero_one_loss", "rmse", "log_loss", "zero_probability_rows", "clipped_log_loss",
        "fit_seconds", "predict_seconds",
    ]
    assert len(metrics) == 10
    assert (metrics[["fit_seconds", "predict_seconds"]] > 0).all().all()
    assert metrics["zero_one_loss"].between(0, 0.2).all()  # kDB-1 on iris is accurate
    predictions = iris_cv.predictions
    assert len(predictions) == 5 * len(iris.y)
    for _, rows in predictions.groupby("repetition"):
        assert sorted(rows["row"]) == list(range(len(iris.y)))  # each row tested once per repetition
        assert rows["fold"].nunique() == 2
        for _, fold in rows.groupby("fold"):  # stratified: each class split evenly
            assert fold["y_true"].value_counts().tolist() == [25, 25, 25]
    assert iris_cv.seeds == repetition_seeds(1, 5)
    assert [s["fold"] for s in iris_cv.structures] == list(range(10))
    assert set(iris_cv.structures[0]["parents"]) == set(iris.X.columns)


def test_metrics_agree_with_the_predictions(iris, iris_cv):
    predictions = iris_cv.predictions
    proba = predictions[[f"proba_{c}" for c in sorted(iris.y.unique())]].to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    p_true = proba[np.arange(len(proba)), np.searchsorted(sorted(iris.y.unique()), predictions["y_true"])]
    by_fold = pd.DataFrame(
        {
            "fold": predictions["fold"],
            "error": predictions["y_true"] != predictions["y_pred"],
            "sq": (1 - p_true) ** 2,
            "nll": -np.log(p_true),
        }
    ).groupby("fold")
    np.testing.assert_allclose(by_fold["error"].mean(), iris_cv.metrics["zero_one_loss"])
    np.testing.assert_allclose(np.sqrt(by_fold["sq"].mean()), iris_cv.metrics["rmse"])  # SkDB Eq. 1
    np.testing.assert_allclose(by_fold["nll"].mean(), iris_cv.metrics["log_loss"])


def test_same_seed_same_numbers_other_seed_other_folds(iris, iris_cv):
    again = cross_validate(iris, {**NB, "structure": "kdb", "k": 1}, seed=1)
    losses = ["zero_one_loss", "rmse", "log_loss"]
    pd.testing.assert_frame_equal(again.metrics[losses], iris_cv.metrics[losses])
    pd.testing.assert_frame_equal(again.predictions, iris_cv.predictions)
    other = cross_validate(iris, NB, seed=2)
    assert not other.predictions["row"].equals(iris_cv.predictions["row"])
    assert repetition_seeds(2, 5) != repetition_seeds(1, 5)


def test_a_class_absent_from_a_training_fold_has_probability_zero():
    # "r" has one row: whichever fold tests it was trained without it.
    y = pd.Series(["p", "q"] * 10 + ["r"], name="class")
    X = pd.DataFrame({"a": [str(i % 3) for i in range(21)], "b": ["x"] * 21})
    cv = cross_validate(Dataset("tiny", X, y, []), NB, repetitions=2, folds=2, seed=0)
    rare = cv.predictions[cv.predictions["y_true"] == "r"]
    assert len(rare) == 2 and (rare["proba_r"] == 0).all()
    assert np.isfinite(cv.metrics["log_loss"]).all()
    tested = cv.metrics.loc[rare["fold"]]
    assert (tested["log_loss"] >= -np.log(PROBABILITY_FLOOR) / 11).all()  # clipped, not infinite
    assert (tested["zero_probability_rows"] == 1).all()
    n_test = cv.predictions.loc[cv.predictions["fold"].isin(rare["fold"])].groupby("fold").size().to_numpy()
    np.testing.assert_allclose(tested["clipped_log_loss"], -np.log(PROBABILITY_FLOOR) / n_test)
    assert (cv.metrics.drop(index=rare["fold"])["zero_probability_rows"] == 0).all()


def test_holdout_ties_no_longer_give_the_true_class_of_iris_probability_zero(iris):
    # Zero-one loss on a 7-row holdout ties m = 20 with smaller m on every fold; the first tied m (0 on
    # 9 folds) gave 31 of the 750 test rows probability 0 on their true class. A tie now goes to the
    # largest m, and with m > 0 naive Bayes gives every class a positive probability.
    model = {**NB, "estimator": "m_estimate", "estimator_params": {"selection_loss": "zero_one_loss"}}
    cv = cross_validate(iris, model, repetitions=5, folds=2, seed=1)
    assert all(fold["selected_m"] > 0 for fold in cv.diagnostics)
    assert cv.metrics["zero_probability_rows"].sum() == 0
    assert (cv.metrics["clipped_log_loss"] == 0).all()


def cell_cfg(tmp_path, store_uri, dataset="sklearn-iris", model="nb_laplace", extra=()):
    """A cell's config as a job of the experiment's sweep composes it (``extra``: more overrides)."""
    overrides = [
        f"dataset={dataset}",
        f"model={model}",
        f"tracking_uri={store_uri}",
        f"artifact_location={tmp_path}/artifacts",
        *extra,
    ]
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose(CONFIG_NAME, overrides)


def test_run_cell_logs_a_finished_run_then_skips_it(tmp_path, new_store):
    cfg = cell_cfg(tmp_path, new_store(tmp_path))
    client = tracking.open_store(cfg.tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", cfg.artifact_location)
    assert run_cell(cfg, client, exp, "sklearn-iris", "nb_laplace") == "finished"
    (run,) = client.search_runs([exp])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "sklearn-iris/nb_laplace"
    assert run.data.tags["cfg_hash"] == semantic.cfg_hash(cfg)
    assert {"dataset.name", "model.estimator", "cv.seed", "cv.seeds", "data_dir"} <= set(run.data.params)
    assert json.loads(run.data.params["cv.seeds"]) == repetition_seeds(cfg.cv.seed, 5)
    folds = [m.value for m in client.get_metric_history(run.info.run_id, "fold/rmse")]
    assert len(folds) == 10 and run.data.metrics["rmse"] == pytest.approx(np.mean(folds))
    assert len(client.get_metric_history(run.info.run_id, "fold/zero_probability_rows")) == 10
    assert {"zero_probability_rows", "clipped_log_loss"} <= set(run.data.metrics)
    assert run_cell(cfg, client, exp, "sklearn-iris", "nb_laplace") == "skipped"
    assert len(client.search_runs([exp])) == 1


def test_a_failing_cell_is_logged_failed_with_its_error(tmp_path, new_store):
    cfg = cell_cfg(tmp_path, new_store(tmp_path))
    cfg.dataset.name = "no-such-dataset"
    cfg.dataset.source = "store"
    cfg.data_dir = str(tmp_path / "empty_store")
    client = tracking.open_store(cfg.tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", cfg.artifact_location)
    assert run_cell(cfg, client, exp, "no-such-dataset", "nb_laplace") == "failed"
    (run,) = client.search_runs([exp])
    assert run.info.status == "FAILED"
    assert "Dataset 'no-such-dataset' not found" in run.data.tags["error"]
    # user errors carry their message only, no traceback artifact
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["config.yaml"]


def test_summary_classifies_cells(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path))

    def run(dataset, model, status, sweep="this", live=False):
        tags = {"dataset": dataset, "model": model, lease.SWEEP_TAG: sweep}
        if live:
            tags.update({lease.OWNER_TAG: lease.owner(), lease.HEARTBEAT_TAG: "0"})
        run_id = tracking.start_run(client, exp, f"{dataset}/{model}", tags)
        if status != "RUNNING":
            client.set_terminated(run_id, status)
        if status == "FAILED":
            tracking.set_tags(client, run_id, {"error": "boom"})

    run("d1", "m1", "FINISHED", sweep="earlier")
    run("d1", "m2", "FINISHED")
    run("d2", "m1", "FAILED")
    run("d2", "m2", "RUNNING")  # no owner: its process died
    run("d3", "m1", "RUNNING", sweep="another", live=True)  # this process, alive: another sweep's cell
    run("d4", "m1", "RUNNING", live=True)  # this sweep's, alive: interrupted in a one-process sweep
    summary = summarise(client, exp, ["d1", "d2", "d3", "d4"], ["m1", "m2"], "this")
    assert summary.skipped == ["d1/m1"]
    assert summary.finished == ["d1/m2"]
    assert summary.elsewhere == ["d3/m1"]
    interrupted = "interrupted (its run is left RUNNING; the next sweep runs the cell again)"
    assert summary.failed == {
        "d2/m1": "boom",
        "d2/m2": interrupted,
        "d3/m2": "not run (see the log of its Hydra job)",
        "d4/m1": interrupted,
        "d4/m2": "not run (see the log of its Hydra job)",
    }
    assert summary.total == 8


def test_a_bug_in_a_cell_is_logged_with_its_traceback(tmp_path, new_store, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr("bncbench.app.runner.cross_validate", broken)
    cfg = cell_cfg(tmp_path, new_store(tmp_path))
    client = tracking.open_store(cfg.tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", cfg.artifact_location)
    assert run_cell(cfg, client, exp, "sklearn-iris", "nb_laplace") == "failed"
    (run,) = client.search_runs([exp])
    assert run.info.status == "FAILED"
    assert run.data.tags["error"] == "RuntimeError: kernel exploded"
    (tmp_path / "dl").mkdir()
    error_file = client.download_artifacts(run.info.run_id, "error.txt", str(tmp_path / "dl"))
    assert "Traceback" in open(error_file).read()
    assert run_cell(cfg, client, exp, "sklearn-iris", "nb_laplace") == "failed"  # a failed cell runs again


def test_a_selective_kdb_cell_logs_its_selection_and_loss_grid(tmp_path, new_store):
    cfg = cell_cfg(tmp_path, new_store(tmp_path), model="skdb_m_estimate")
    client = tracking.open_store(cfg.tracking_uri)
    exp = tracking.prepare_experiment(client, "skdb", cfg.artifact_location)
    assert run_cell(cfg, client, exp, "sklearn-iris", "skdb_m_estimate") == "finished"
    (run,) = client.search_runs([exp])
    run_id = run.info.run_id
    assert len(client.get_metric_history(run_id, "fold/skdb_k")) == 10
    assert 0 <= run.data.metrics["skdb_attributes"] <= 4
    assert {"skdb_loocv_losses.csv", "skdb_loocv_losses.png"} <= {a.path for a in client.list_artifacts(run_id)}
    grid = pd.read_csv(client.download_artifacts(run_id, "skdb_loocv_losses.csv", str(tmp_path)))
    assert set(grid.columns) == {"k", "n_attributes", "value", "fold"}
    assert len(grid) == 10 * 6 * 5  # folds x (k' = 0..5) x (l = 0..4)


def test_an_hdp_cell_whose_chains_end_before_a_concentration_update_is_logged(tmp_path, new_store):
    # 2 iterations: the first concentration update would come at the 3rd; the trace has no column
    cfg = cell_cfg(tmp_path, new_store(tmp_path), model="kdb1_hdp", extra=["hdp.iterations=2"])
    client = tracking.open_store(cfg.tracking_uri)
    exp = tracking.prepare_experiment(client, "short", cfg.artifact_location)
    assert run_cell(cfg, client, exp, "sklearn-iris", "kdb1_hdp") == "finished"
    (run,) = client.search_runs([exp])
    assert len(client.get_metric_history(run.info.run_id, "fold/hdp_concentration_level1")) == 10
    trace = pd.read_csv(client.download_artifacts(run.info.run_id, "hdp_concentration_trace.csv", str(tmp_path)))
    assert len(trace) == 0 and "value" in trace.columns
