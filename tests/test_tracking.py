"""MLflow bookkeeping on a real SQLite store: opening it, experiments, cfg_hash, resume look-ups."""

from pathlib import Path

import pytest
from mlflow.entities import Dataset, DatasetInput, Metric
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from bncbench import tracking
from bncbench.core.errors import ConfigError
from bncbench.protocol.cell import SEMANTIC_KEYS, flatten, semantic_hash
from bncbench.tracking.record import CellRecord, fold_history, stored_artifacts, write_record


def cell_config(**changes):
    cfg = {
        "dataset": {"name": "iris", "source": "store", "openml_id": 61, "openml_target": None, "drop": []},
        "model": {
            "name": "nb_laplace",
            "structure": "nb",
            "k": 0,
            "structure_params": {},
            "estimator": "laplace",
            "estimator_params": {},
        },
        "cv": {"repetitions": 5, "folds": 2, "seed": 1},
        "data_dir": "/data",
        "tracking_uri": "sqlite:///runs/mlflow.db",
    }
    for dotted, value in changes.items():
        node = cfg
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return cfg


def test_open_store_creates_the_database_and_its_directory(tmp_path):
    db = tmp_path / "new" / "dir" / "mlflow.db"
    client = tracking.open_store(f"sqlite:///{db}")
    assert db.is_file()
    assert client.tracking_uri == f"sqlite:///{db}"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("sqlite:///{tmp}/a_file/mlflow.db", "cannot open the tracking store"),
        ("sqlite:////proc/mlflow.db", "cannot write in /proc"),  # at once, not after MLflow's retries
        ("{tmp}/mlruns", "file store, which MLflow 3 no longer supports"),
        ("nosuchscheme://host/x", "cannot open the tracking store"),
    ],
)
def test_a_store_that_cannot_be_opened_names_the_uri_and_the_fix(tmp_path, uri, expected):
    (tmp_path / "a_file").write_text("not a directory")
    uri = uri.format(tmp=tmp_path)
    with pytest.raises(ConfigError) as err:
        tracking.open_store(uri)
    assert expected in str(err.value)
    assert uri in str(err.value)
    assert "tracking_uri=sqlite:///" in str(err.value)


def test_prepare_experiment_puts_artifacts_under_the_given_directory(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    first = tracking.prepare_experiment(client, "smoke", str(tmp_path / "runs" / "artifacts"))
    assert tracking.prepare_experiment(client, "smoke", "elsewhere") == first
    location = client.get_experiment(first).artifact_location
    assert location == (tmp_path / "runs" / "artifacts" / "smoke").as_uri()
    assert tracking.experiment_id(client, "smoke") == first


@pytest.mark.parametrize(
    ("uri", "location", "expected"),
    [
        ("sqlite:///x.db", None, "{cwd}/runs/artifacts/e"),  # beside the store, for clients on this machine
        ("http://127.0.0.1:5000", None, None),  # the server's --artifacts-destination
        ("https://mlflow.example.org", None, None),
        ("http://127.0.0.1:5000", "s3://bucket/bnc", "s3://bucket/bnc/e"),
        ("sqlite:///x.db", "file:///shared/art/", "file:///shared/art/e"),
        ("sqlite:///x.db", "/shared/art", "file:///shared/art/e"),
        ("sqlite:///x.db", "art", "{cwd}/art/e"),
    ],
)
def test_where_a_new_experiment_keeps_its_artifacts(tmp_path, monkeypatch, uri, location, expected):
    monkeypatch.chdir(tmp_path)
    if expected and expected.startswith("{cwd}"):
        expected = Path(expected.format(cwd=tmp_path)).as_uri()
    assert tracking.artifact_root(uri, location, "e") == expected


def test_an_empty_tracking_uri_says_so():
    with pytest.raises(ConfigError, match="tracking_uri is empty"):
        tracking.open_store(" ")


def test_a_deleted_experiment_says_how_to_restore_it(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    client.delete_experiment(tracking.prepare_experiment(client, "smoke", str(tmp_path)))
    with pytest.raises(ConfigError, match="mlflow experiments restore"):
        tracking.prepare_experiment(client, "smoke", str(tmp_path))


def cfg_hash(config: dict) -> str:
    return semantic_hash({key: config[key] for key in SEMANTIC_KEYS})


def test_cfg_hash_covers_dataset_model_and_cv_only():
    base = cfg_hash(cell_config())
    assert cfg_hash(cell_config(data_dir="/elsewhere", tracking_uri="sqlite:///x.db")) == base
    for change in [
        {"dataset.name": "zoo"},
        {"model.estimator": "m_estimate"},
        {"model.estimator_params": {"alpha": 2}},
        {"cv.seed": 2},
        {"cv.repetitions": 10},
    ]:
        assert cfg_hash(cell_config(**change)) != base, change


def test_cfg_hash_ignores_key_order():
    cfg = cell_config()
    reordered = {"cv": cfg["cv"], "model": dict(reversed(list(cfg["model"].items()))), "dataset": cfg["dataset"]}
    assert cfg_hash(reordered) == cfg_hash(cfg)


def test_finished_runs_are_found_and_running_ones_abandoned(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path))
    tags = {"cfg_hash": "h1", "data_digest": "d1"}
    assert tracking.finished_run(client, exp, "h1", "d1") is None
    stale = tracking.start_run(client, exp, "d/m", tags)
    failed = tracking.start_run(client, exp, "d/m", tags)
    tracking.end_run(client, failed, failed=True)
    assert tracking.finished_run(client, exp, "h1", "d1") is None  # RUNNING and FAILED runs do not count

    running = tracking.running_runs(client, exp, "h1")
    assert [r.info.run_id for r in running] == [stale]
    tracking.abandon(client, running, "killed")
    assert tracking.running_runs(client, exp, "h1") == []
    assert client.get_run(stale).info.status == "KILLED"
    assert client.get_run(stale).data.tags["error"] == "killed"

    emptied = tracking.start_run(client, exp, "d/m", tags)  # its metrics lost: not a finished cell
    tracking.end_run(client, emptied, failed=False)
    assert tracking.finished_run(client, exp, "h1", "d1") is None
    done = tracking.start_run(client, exp, "d/m", tags)
    write_record(client, done, CellRecord(done, "d/m", "FINISHED", None, None, {}, {},
                                          history=[(name, 0.5, 0, 0) for name in tracking.CELL_METRICS]))
    assert tracking.finished_run(client, exp, "h1", "d1").info.run_id == done
    assert tracking.finished_run(client, exp, "h2", "d1") is None
    assert tracking.finished_run(client, exp, "h1", "d2") is None  # the dataset file changed
    assert tracking.finished_run(client, exp, "h1", None) is None  # not in the store yet
    assert [r.info.run_id for r in tracking.cell_runs(client, exp)] == [stale, failed, emptied, done]


def test_logging_helpers(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    run = tracking.start_run(
        client, tracking.prepare_experiment(client, "e", str(tmp_path)), "d/m", {"model": "m"}
    )
    tracking.log_params(client, run, {f"p{i}": i for i in range(150)})
    tracking.log_metric_history(client, run, [Metric("fold/rmse", 0.5, 0, 0), Metric("fold/rmse", 0.25, 0, 1)])
    tracking.set_tags(client, run, {"error": "x" * 10_000})
    data = client.get_run(run).data
    assert len(data.params) == 150
    assert [m.value for m in client.get_metric_history(run, "fold/rmse")] == [0.5, 0.25]
    assert len(data.tags["error"]) == tracking.MAX_TAG_LENGTH


def test_a_dataset_logged_by_another_run_meanwhile_is_linked_on_the_next_try(tmp_path, new_store, monkeypatch):
    # the race of two parallel cells of one dataset: MLflow looked the dataset up, the other run
    # inserted it, and this insert fails on the unique constraint (as a server reported it)
    client = tracking.open_store(new_store(tmp_path))
    experiment = tracking.prepare_experiment(client, "e", str(tmp_path))
    run = tracking.start_run(client, experiment, "d/m", {"model": "m"})
    dataset = DatasetInput(Dataset(name="d", digest="abc", source_type="local", source="d.csv.gz"), [])
    raced = "BAD_REQUEST: (sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, datasets.name, datasets.digest"
    log_inputs, calls = MlflowClient.log_inputs, []

    def racing(self, run_id, datasets=None):
        calls.append(run_id)
        if len(calls) == 1:
            raise MlflowException(raced)
        return log_inputs(self, run_id, datasets=datasets)

    monkeypatch.setattr(MlflowClient, "log_inputs", racing)
    tracking.log_inputs(client, run, [dataset])
    assert len(calls) == 2 and [d.dataset.digest for d in client.get_run(run).inputs.dataset_inputs] == ["abc"]
    calls.clear()
    monkeypatch.setattr(MlflowClient, "log_inputs", lambda self, run_id, datasets=None: calls.append(1) or 1 / 0)
    with pytest.raises(ZeroDivisionError):  # anything else is raised at once
        tracking.log_inputs(client, run, [dataset])
    assert len(calls) == 1


def test_flatten():
    assert flatten({"a": {"b": 1, "c": {}}, "d": [1, "x"], "e": None}) == {
        "a.b": "1",
        "a.c": "{}",
        "d": '[1, "x"]',
        "e": "None",
    }


def test_store_path_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracking.open_store("sqlite:///runs/mlflow.db")
    assert Path("runs/mlflow.db").is_file()


def test_fold_metrics_are_read_in_bulk_the_later_of_a_step_logged_twice_counting(
    tmp_path, new_store, monkeypatch
):
    monkeypatch.setattr(tracking.runs, "_RUNS_PER_QUERY", 2)  # three runs: two queries per metric
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path))
    runs = [tracking.start_run(client, exp, f"d{i}/m", {}) for i in range(3)]
    for i, run in enumerate(runs):
        folds = {"rmse": {fold: i + fold / 10 for fold in range(2)}, "zero_one_loss": {0: -i}}
        write_record(client, run, CellRecord(run, f"d{i}/m", "RUNNING", None, None, {}, {},
                                             history=fold_history(folds, 0)))
    client.log_batch(runs[1], metrics=[Metric("fold/rmse", 9.0, 2**42, 1)])  # fold 1 again, later (in 2109)

    folds = tracking.fold_metrics(client, [runs[2], runs[0], runs[1]], ["zero_one_loss", "rmse"])
    assert list(folds.columns) == ["run_id", "metric", "fold", "value"]
    assert folds.values.tolist() == [
        [runs[2], "zero_one_loss", 0, -2.0],
        [runs[2], "rmse", 0, 2.0],
        [runs[2], "rmse", 1, 2.1],
        [runs[0], "zero_one_loss", 0, 0.0],
        [runs[0], "rmse", 0, 0.0],
        [runs[0], "rmse", 1, 0.1],
        [runs[1], "zero_one_loss", 0, -1.0],
        [runs[1], "rmse", 0, 1.0],
        [runs[1], "rmse", 1, 9.0],
    ]
    assert tracking.fold_metrics(client, runs, ["log_loss"]).empty


def test_finished_cell_runs_reads_every_page(tmp_path, new_store, monkeypatch):
    monkeypatch.setattr(tracking.runs, "_PAGE", 2)
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path))
    cells = []
    for i in range(5):
        run = tracking.start_run(client, exp, f"d{i}/m", {"dataset": f"d{i}", "model": "m"})
        tracking.end_run(client, run)
        cells.append(run)
    tracking.start_run(client, exp, "d9/m", {"dataset": "d9", "model": "m"})  # RUNNING
    tracking.end_run(client, tracking.start_run(client, exp, "parent", {}))  # not a cell
    found = tracking.finished_cell_runs(client, exp)
    assert sorted(run.info.run_id for run in found) == sorted(cells)
    assert len(tracking.cell_runs(client, exp)) == 7


def test_a_missing_experiment_names_those_of_the_store(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    tracking.prepare_experiment(client, "kdb", str(tmp_path))
    with pytest.raises(ConfigError, match=r"no MLflow experiment 'kbd' .*\(existing: Default, kdb\); run"):
        tracking.experiment_id(client, "kbd")


def test_artifacts_and_run_ends(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path / "artifacts"))
    run = tracking.start_run(client, exp, "d/m", {})
    (tmp_path / "one.txt").write_text("one")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "two.csv").write_text("two")
    tracking.log_artifacts(client, run, tmp_path / "one.txt")
    tracking.log_artifacts(client, run, tmp_path / "dir")
    written = {"three.txt": b"three", "sub/four.json": b'{"folds": [1]}'}
    write_record(client, run, CellRecord(run, "d/m", "RUNNING", None, None, {}, {}, artifacts=written))
    stored = tmp_path / "artifacts" / "e" / run / "artifacts"
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*.*")) == [
        "one.txt", "sub/four.json", "three.txt", "two.csv"]
    assert stored_artifacts(client, run) == {"one.txt": b"one", "two.csv": b"two", **written}
    tracking.end_run(client, run, status="KILLED")
    assert tracking.get_run(client, run).info.status == "KILLED"
    tracking.delete_run(client, run)
    assert tracking.get_run(client, run).info.lifecycle_stage == "deleted"
