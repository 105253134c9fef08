"""The 5x2 cross-validation of one cell, its metrics, and logging a cell to a real SQLite store."""

import json

import numpy as np
import pandas as pd
import pytest

from bncbench import tracking
from bncbench.app.runner import Outcome, run_cell
from bncbench.app.sweep import Summary, finished_before
from bncbench.core.metrics import PROBABILITY_FLOOR
from bncbench.data import Dataset, load_dataset
from bncbench.protocol.cross_validation import cross_validate, repetition_seeds

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
        "zero_one_loss", "rmse", "log_loss", "rmse_all_classes", "zero_probability_rows", "clipped_log_loss",
        "errors", "test_rows", "fit_seconds", "predict_seconds",
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
    target = np.eye(3)[np.searchsorted(sorted(iris.y.unique()), predictions["y_true"])]
    all_classes = pd.Series(((proba - target) ** 2).mean(axis=1)).groupby(predictions["fold"].to_numpy()).mean()
    np.testing.assert_allclose(np.sqrt(all_classes), iris_cv.metrics["rmse_all_classes"])  # Weka's


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


@pytest.fixture
def iris_cell(tmp_path, new_store, plan_cell):
    """``iris_cell(model="nb_laplace", *overrides)``: the sklearn-iris cell of ``model`` logging to a new
    store in ``tmp_path``, its destination, and the store's client and experiment id."""

    def make(model="nb_laplace", *overrides):
        uri = new_store(tmp_path)
        cell, destination = plan_cell(
            "sklearn-iris", model, f"tracking_uri={uri}", f"artifact_location={tmp_path}/artifacts", *overrides
        )
        client = tracking.open_store(uri)
        return cell, destination, client, tracking.prepare_experiment(client, destination.experiment, None)

    return make


def test_run_cell_logs_a_finished_run_then_skips_it(iris_cell):
    cell, destination, client, exp = iris_cell()
    assert run_cell(cell, destination).status == "finished"
    (run,) = client.search_runs([exp])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "sklearn-iris/nb_laplace"
    assert run.data.tags["cfg_hash"] == cell.cfg_hash
    assert {"dataset.name", "model.estimator", "cv.seed", "cv.seeds", "data_dir"} <= set(run.data.params)
    assert json.loads(run.data.params["cv.seeds"]) == repetition_seeds(cell.cv.seed, 5)
    folds = [m.value for m in client.get_metric_history(run.info.run_id, "fold/rmse")]
    assert len(folds) == 10 and run.data.metrics["rmse"] == pytest.approx(np.mean(folds))
    assert len(client.get_metric_history(run.info.run_id, "fold/zero_probability_rows")) == 10
    assert {"zero_probability_rows", "clipped_log_loss"} <= set(run.data.metrics)
    assert run_cell(cell, destination).status == "skipped"
    assert len(client.search_runs([exp])) == 1


def test_a_failing_cell_is_logged_failed_with_its_error(tmp_path, new_store, plan_cell, write_store,
                                                         simple_table, simple_schema):
    data_dir = write_store(tmp_path / "store", {"gone": (simple_table(), simple_schema)})
    uri = new_store(tmp_path)
    cell, destination = plan_cell("iris", "nb_laplace", f"tracking_uri={uri}", f"data_dir={data_dir}")
    cell = type(cell).of("gone", "nb_laplace", {**cell.semantic()["dataset"], "name": "gone", "openml_id": None},
                         cell.semantic()["model"], cell.cv, None)  # not on OpenML either: not fetched
    (data_dir / "gone.csv.gz").unlink()
    client = tracking.open_store(uri)
    exp = tracking.prepare_experiment(client, destination.experiment, None)
    outcome = run_cell(cell, destination)
    assert outcome.status == "failed" and "'gone'" in outcome.message
    (run,) = client.search_runs([exp])
    assert run.info.status == "FAILED"
    assert "'gone'" in run.data.tags["error"]
    # user errors carry their message only, no traceback artifact
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["config.yaml"]


def test_summary_classifies_outcomes(iris_cell):
    cell = iris_cell()[0]
    summary = Summary(skipped=["d0/m0"])
    for status, message in [("finished", ""), ("copied", ""), ("failed", "boom"), ("not applicable", "too wide"),
                            ("running elsewhere", "")]:
        summary.add(Outcome(cell, status, message))
    assert summary.finished == summary.copied == summary.elsewhere == ["sklearn-iris/nb_laplace"]
    assert summary.failed == {"sklearn-iris/nb_laplace": "boom"}
    assert summary.not_applicable == {"sklearn-iris/nb_laplace": "too wide"}
    assert summary.total == 6
    assert summary.line("e") == (
        "bncbench: experiment 'e': 6 cells, 1 run, 1 copied from a finished run of the same config, "
        "1 skipped (finished before), 1 not applicable, 1 running in another sweep, 1 failed."
    )


def test_the_sweep_skips_the_cells_finished_before_in_one_search(iris_cell, plan_cell):
    cell, destination, client, exp = iris_cell()
    plan = type("P", (), {"cells": (cell,)})

    def logged():
        return tracking.finished_records(destination.tracking_uri, destination.experiment)

    assert finished_before(logged(), plan) == set()
    run_cell(cell, destination)
    assert finished_before(logged(), plan) == {cell.key}
    other, _ = plan_cell("sklearn-iris", "nb_laplace", "cv.seed=7")  # another configuration
    assert finished_before(logged(), type("P", (), {"cells": (other,)})) == set()


def test_a_bug_in_a_cell_is_logged_with_its_traceback(tmp_path, iris_cell, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr("bncbench.app.runner.cross_validate", broken)
    cell, destination, client, exp = iris_cell()
    assert run_cell(cell, destination).status == "failed"
    (run,) = client.search_runs([exp])
    assert run.info.status == "FAILED"
    assert run.data.tags["error"] == "RuntimeError: kernel exploded"
    (tmp_path / "dl").mkdir()
    error_file = client.download_artifacts(run.info.run_id, "error.txt", str(tmp_path / "dl"))
    assert "Traceback" in open(error_file).read()
    assert run_cell(cell, destination).status == "failed"  # a failed cell runs again


def test_a_selective_kdb_cell_logs_its_selection_and_loss_grid(tmp_path, iris_cell):
    cell, destination, client, exp = iris_cell("skdb_m_estimate")
    assert run_cell(cell, destination).status == "finished"
    (run,) = client.search_runs([exp])
    run_id = run.info.run_id
    assert len(client.get_metric_history(run_id, "fold/skdb_k")) == 10
    assert 0 <= run.data.metrics["skdb_attributes"] <= 4
    assert {"skdb_loocv_losses.csv", "skdb_loocv_losses.png"} <= {a.path for a in client.list_artifacts(run_id)}
    grid = pd.read_csv(client.download_artifacts(run_id, "skdb_loocv_losses.csv", str(tmp_path)))
    assert set(grid.columns) == {"k", "n_attributes", "value", "fold"}
    assert len(grid) == 10 * 6 * 5  # folds x (k' = 0..5) x (l = 0..4)


def test_an_hdp_cell_whose_chains_end_before_a_concentration_update_is_logged(tmp_path, iris_cell):
    # 2 iterations: the first concentration update would come at the 3rd; the trace has no column
    cell, destination, client, exp = iris_cell("kdb1_hdp", "hdp.iterations=2")
    assert run_cell(cell, destination).status == "finished"
    (run,) = client.search_runs([exp])
    assert len(client.get_metric_history(run.info.run_id, "fold/hdp_concentration_level1")) == 10
    trace = pd.read_csv(client.download_artifacts(run.info.run_id, "hdp_concentration_trace.csv", str(tmp_path)))
    assert len(trace) == 0 and "value" in trace.columns


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_a_folds_rows_read_a_block_at_a_time_are_its_mask_and_row_numbers(block):
    """FoldRows stands for a fold's mask and row numbers without holding them (8 bytes a test row before): its
    slices are the mask's, the training rows leave out the rows in no fold, and the row numbers taken a chunk at a
    time are the mask's, in order."""
    from bncbench.protocol.cross_validation import FoldRows, _Taken, no_fold

    folds = np.random.default_rng(block).integers(0, 3, size=1000).astype(np.uint8)
    folds[::9] = no_fold(folds)
    for fold in range(3):
        test = FoldRows(folds, fold)
        for where in [slice(None), slice(0, 1), slice(5, 400), slice(990, 2000)]:
            np.testing.assert_array_equal(test[where], (folds == fold)[where])
            np.testing.assert_array_equal(test.training()[where], ((folds != fold) & (folds != 255))[where])
        taken = _Taken(test.positions(block))
        chunks = [taken.take(n) for n in [0, 1, 13, 100, 2]]
        np.testing.assert_array_equal(np.concatenate(chunks), np.flatnonzero(folds == fold)[:116])
        with pytest.raises(ValueError, match="more predictions than test rows"):
            taken.take(len(folds))


@pytest.mark.parametrize("folds", [2, 3, 10])
def test_the_folds_are_scikit_learns_stratified_folds(folds):
    """stratified_test_folds computes StratifiedKFold's folds in a byte a row: the same folds, with classes rarer
    than the folds, classes whose codes are not in order of appearance, and one first seen past the first block."""
    import warnings

    from sklearn.model_selection import StratifiedKFold

    from bncbench.protocol.cross_validation import stratified_test_folds

    rng = np.random.default_rng(folds)
    for y in [rng.integers(0, 5, size=331), rng.choice(4, size=200, p=[0.01, 0.09, 0.3, 0.6]),
              np.r_[np.full(7, 3), rng.integers(1, 3, size=(1 << 20) + 5), [0, 0, 4]]]:
        for seed in rng.integers(0, 2**32, size=3):
            expected = np.empty(len(y), dtype=int)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "The least populated class ..."
                for fold, (_, test) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=seed).split(y, y)):
                    expected[test] = fold
            assert np.array_equal(stratified_test_folds(y, folds, int(seed)), expected)
