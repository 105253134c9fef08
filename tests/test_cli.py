"""``python -m bncbench`` end to end, in subprocesses: the smoke experiment, resume, failures, bad input."""

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.bnc.estimators import ESTIMATORS
from bncbench.config import config_dir

EXPERIMENTS = sorted(p.stem for p in (config_dir() / "experiment").glob("*.yaml"))

SMOKE_DATASETS = ["sklearn-iris", "sklearn-wine", "sklearn-breast-cancer"]
SMOKE_MODELS = [
    "nb_laplace",
    "nb_m_estimate",
    "tan_laplace",
    "tan_m_estimate",
    "kdb1_laplace",
    "kdb1_m_estimate",
]
METRICS = ["zero_one_loss", "rmse", "log_loss", "fit_seconds", "predict_seconds"]


def last_line(result) -> str:
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, run_cli, new_store):
    """The smoke experiment run once with the joblib launcher, store and outputs in a fresh directory."""
    cwd = tmp_path_factory.mktemp("smoke")
    uri = new_store(cwd / "store")
    result = run_cli("experiment=smoke", f"tracking_uri={uri}", "hydra.launcher.n_jobs=2", cwd=cwd)
    return cwd, uri, result


@pytest.fixture(scope="module")
def smoke_runs(smoke):
    _, uri, _ = smoke
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("smoke")
    return client, experiment, client.search_runs([experiment.experiment_id])


def test_smoke_runs_every_cell(smoke):
    cwd, _, result = smoke
    assert result.returncode == 0, result.output
    assert "Traceback" not in result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 18 cells, 18 run, 0 skipped (finished before), 0 failed."
    )
    assert "Joblib.Parallel" in result.output
    assert (cwd / "reports" / "smoke" / "wdl.md").is_file()


def test_smoke_logs_each_cell_as_one_run(smoke_runs):
    client, experiment, runs = smoke_runs
    assert sorted(r.info.run_name for r in runs) == sorted(
        f"{d}/{m}" for d in SMOKE_DATASETS for m in SMOKE_MODELS
    )
    for run in runs:
        tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
        assert run.info.status == "FINISHED"
        assert f"{tags['dataset']}/{tags['model']}" == run.info.run_name
        assert tags["structure"] == params["model.structure"]
        assert tags["estimator"] == params["model.estimator"]
        assert len(tags["cfg_hash"]) == 16
        assert params["dataset.name"] == tags["dataset"] and params["model.name"] == tags["model"]
        assert params["cv.repetitions"] == "5" and params["cv.folds"] == "2"
        assert len(json.loads(params["cv.seeds"])) == 5
        assert set(METRICS) <= set(metrics)
    assert len({r.data.tags["cfg_hash"] for r in runs}) == len(runs)
    assert len({r.data.params["cv.seeds"] for r in runs}) == 1  # one CV protocol for every cell


def test_smoke_logs_per_fold_metrics_and_their_means(smoke_runs):
    client, _, runs = smoke_runs
    run = next(r for r in runs if r.info.run_name == "sklearn-wine/tan_m_estimate")
    for metric in METRICS:
        history = client.get_metric_history(run.info.run_id, f"fold/{metric}")
        assert sorted(m.step for m in history) == list(range(10))
        assert run.data.metrics[metric] == pytest.approx(sum(m.value for m in history) / 10)


def test_smoke_logs_config_predictions_and_structures(smoke, smoke_runs):
    cwd, _, _ = smoke
    client, experiment, runs = smoke_runs
    assert experiment.artifact_location == (cwd / "runs" / "artifacts" / "smoke").as_uri()
    run = next(r for r in runs if r.info.run_name == "sklearn-iris/kdb1_laplace")
    run_id = run.info.run_id
    assert sorted(a.path for a in client.list_artifacts(run_id)) == [
        "config.yaml",
        "predictions.parquet",
        "structure.json",
    ]
    local = cwd / "downloaded"
    local.mkdir()

    def artifact(path):
        return Path(client.download_artifacts(run_id, path, str(local)))

    config = artifact("config.yaml").read_text()
    assert "name: kdb1_laplace" in config and "${" not in config  # resolved
    predictions = pd.read_parquet(artifact("predictions.parquet"))
    assert len(predictions) == 5 * 150
    assert list(predictions.columns[:5]) == ["fold", "repetition", "row", "y_true", "y_pred"]
    assert len(predictions.columns) == 5 + 3  # one probability column per class
    structures = json.loads(artifact("structure.json").read_text())
    assert [f["fold"] for f in structures["folds"]] == list(range(10))
    assert all(len(ps) <= 1 for f in structures["folds"] for ps in f["parents"].values())  # kDB-1


def test_rerun_skips_every_finished_cell(smoke, run_cli):
    cwd, uri, _ = smoke
    result = run_cli(f"tracking_uri={uri}", "hydra/launcher=basic", cwd=cwd)
    assert result.returncode == 0, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 18 cells, 0 run, 18 skipped (finished before), 0 failed."
    )
    assert (
        len(MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("smoke").experiment_id]))
        == 18
    )


def test_a_run_left_running_is_run_again(smoke, run_cli):
    cwd, uri, _ = smoke
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("smoke").experiment_id
    (done,) = client.search_runs([experiment_id], "attributes.run_name = 'sklearn-iris/nb_laplace'")
    client.delete_run(done.info.run_id)  # as if the process was killed before the run finished:
    stale = client.create_run(experiment_id, run_name=done.info.run_name, tags=done.data.tags).info.run_id
    result = run_cli(
        f"tracking_uri={uri}", "experiment.datasets=[sklearn-iris]", "hydra/launcher=basic", cwd=cwd
    )
    assert result.returncode == 0, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 6 cells, 1 run, 5 skipped (finished before), 0 failed."
    )
    assert client.get_run(stale).info.status == "KILLED"
    (again,) = client.search_runs(
        [experiment_id], "attributes.run_name = 'sklearn-iris/nb_laplace' and attributes.status = 'FINISHED'"
    )
    assert again.data.tags["cfg_hash"] == done.data.tags["cfg_hash"]
    assert again.data.metrics["rmse"] == pytest.approx(done.data.metrics["rmse"])  # deterministic


def test_a_failing_cell_does_not_stop_the_others(tmp_path, run_cli, write_store, simple_schema, new_store):
    store = write_store(tmp_path / "store", {"iris": ("", simple_schema)})
    (store / "iris.csv.gz").write_bytes(b"\x1f\x8b garbage")  # a broken gzip stream
    result = run_cli(
        "experiment.datasets=[iris,sklearn-iris]",
        "experiment.models=[nb_laplace,nb_mle]",
        "experiment.comparisons=[{a: nb_laplace, b: nb_mle}]",
        f"data_dir={tmp_path / 'store'}",
        f"tracking_uri={new_store(tmp_path)}",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 4 cells, 2 run, 0 skipped (finished before), 2 failed."
    )
    assert "bncbench: FAILED iris/nb_laplace, iris/nb_mle: " in result.output
    assert "Traceback" not in result.output
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("smoke").experiment_id])
    status = {r.info.run_name: (r.info.status, r.data.tags.get("error", "")) for r in runs}
    assert status["sklearn-iris/nb_laplace"] == ("FINISHED", "")
    assert status["iris/nb_mle"][0] == "FAILED" and "does not parse" in status["iris/nb_mle"][1]


@pytest.fixture(scope="module")
def bad_data(tmp_path_factory, run_cli, write_store, simple_schema, simple_table, new_store):
    """One run over four store datasets, each broken in its own way."""
    cwd = tmp_path_factory.mktemp("bad_data")
    store = write_store(
        cwd / "store",
        {
            "iris": ("", simple_schema),  # made unparsable below
            "zoo": (simple_table().replace("a,b,class", "a,c,class"), simple_schema),  # schema mismatch
            "tae": (simple_table().replace("a,b,class", "a,b,label"), simple_schema),  # no class column
            "haberman": (simple_table(classes=("p",)), simple_schema),  # a single class
        },
    )
    (store / "iris.csv.gz").write_bytes(b"\x1f\x8b garbage")  # a broken gzip stream, not a gzip'd file
    result = run_cli(
        "experiment.datasets=[iris,zoo,tae,haberman]",
        "experiment.models=[nb_mle]",
        "experiment.comparisons=[]",
        f"data_dir={store}",
        f"tracking_uri={new_store(cwd)}",
        "hydra/launcher=basic",
        cwd=cwd,
    )
    return result


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ("iris", "does not parse as a gzip'd CSV file"),
        ("zoo", "does not match its schema.json entry"),
        ("tae", "The class column 'class' is absent"),
        ("haberman", "has the single value 'p', so there is nothing to classify"),
    ],
)
def test_bad_data_gives_one_clear_message(bad_data, dataset, message):
    assert bad_data.returncode == 1
    assert "Traceback" not in bad_data.output
    (line,) = [
        x for x in bad_data.stdout.splitlines() if x.startswith(f"bncbench: FAILED {dataset}/nb_mle: ")
    ]
    assert message in line
    assert (
        last_line(bad_data)
        == "bncbench: experiment 'smoke': 4 cells, 0 run, 0 skipped (finished before), 4 failed."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["experiment=nope"], "unknown experiment 'nope'; valid experiment names: " + ", ".join(EXPERIMENTS)),
        (["experiment.datasets=[irsi]"], "unknown dataset 'irsi'; valid dataset names: abalone, adult,"),
        (["experiment.models=[nb]"], "unknown model 'nb': a model is <structure>_<estimator> (structures: aode,"),
        (["model=nb_mle"], "override experiment.models instead"),
        (
            ["tracking_uri=sqlite:///{tmp}/a_file/mlflow.db"],
            "cannot open the tracking store 'sqlite:///{tmp}/a_file/mlflow.db'",
        ),
        (["tracking_uri={tmp}/mlruns"], "is a file store"),
        (["tracking_uri=http://127.0.0.1:1"], "cannot open the tracking store 'http://127.0.0.1:1'"),
    ],
)
def test_bad_input_gives_one_line_and_status_2(tmp_path, run_cli, args, message):
    (tmp_path / "a_file").write_text("")
    result = run_cli(*[a.format(tmp=tmp_path) for a in args], cwd=tmp_path)
    assert result.returncode == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("bncbench: error: ")
    assert message.format(tmp=tmp_path) in line
    assert not (tmp_path / "runs" / "artifacts").exists()  # nothing ran


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("structure", "forest", "unknown structure 'forest'; valid structures: aode, direct, fan_aic, fan_bic, kdb1"),
        ("estimator", "hdp2", "unknown estimator 'hdp2'; valid estimators: " + ", ".join(sorted(ESTIMATORS))),
    ],
)
def test_unknown_structure_or_estimator_is_refused_before_running(tmp_path, run_cli, field, value, message):
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    grid = {"structure": "nb", "estimator": "mle", "name": "bad", field: value}
    experiment = {"experiment": {"name": "mine", "datasets": ["iris"], "grids": [grid]}}
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\n" + json.dumps(experiment))
    result = run_cli(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=mine", cwd=tmp_path)
    assert result.returncode == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("bncbench: error: experiment 'mine': model 'bad': ") and message in line
