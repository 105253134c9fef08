"""Beyond one machine: cells run as submitit jobs logging over HTTP to an ``mlflow server``.

``executor=submitit_local`` is submitit's local stand-in for ``executor=slurm`` (the same
executor code: each cell a pickled job in its own process, its output under ``<runs_dir>/submitit``). The server is started here on the loopback interface, with its own SQLite backend and
artifact destination, as on a cluster's head node.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import joblib
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.app.config import compose
from bncbench.core.errors import ConfigError

SERVER_TIMEOUT = 120  # seconds for the server to answer, on a loaded machine
MODELS = ["nb_laplace", "kdb1_m_estimate"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory, new_store, cli_env):
    root = tmp_path_factory.mktemp("server")
    port = free_port()
    log = open(root / "server.log", "wb")
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("mlflow")),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            new_store(root / "backend"),
            "--artifacts-destination",
            str(root / "artifacts"),
        ],
        env={**cli_env, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (root / "server.log").read_text()
            assert time.monotonic() < deadline, f"no answer from {uri} in {SERVER_TIMEOUT} s"
            time.sleep(0.2)
        yield SimpleNamespace(uri=uri, artifacts=root / "artifacts")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def cluster_run(mlflow_server, tmp_path_factory, run_cli):
    cwd = tmp_path_factory.mktemp("cluster")
    result = run_cli(
        "experiment.datasets=[sklearn-iris]",
        f"experiment.models=[{','.join(MODELS)}]",
        "experiment.comparisons=[{a: kdb1_m_estimate, b: nb_laplace}]",
        f"tracking_uri={mlflow_server.uri}",
        "executor=submitit_local",
        "executor.timeout_min=10",
        cwd=cwd,
    )
    client = MlflowClient(mlflow_server.uri)
    experiment = client.get_experiment_by_name("smoke")
    return SimpleNamespace(cwd=cwd, result=result, client=client, experiment=experiment)


def test_every_cell_runs_as_a_submitit_job(cluster_run):
    result = cluster_run.result
    assert result.returncode == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == (
        "bncbench: experiment 'smoke': 2 cells, 2 run, 0 skipped (finished before), 0 failed."
    )
    (sweep,) = (cluster_run.cwd / "runs" / "submitit" / "smoke").iterdir()
    logs = sorted(p.name for p in sweep.rglob("*_log.out"))
    assert len(logs) == 2, logs  # one job per cell


def test_runs_and_metrics_are_on_the_server(cluster_run):
    client, experiment = cluster_run.client, cluster_run.experiment
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [f"sklearn-iris/{m}" for m in sorted(MODELS)]
    for run in runs:
        assert run.info.status == "FINISHED"
        assert len(client.get_metric_history(run.info.run_id, "fold/rmse")) == 10
        assert int(run.data.tags["numba_threads"]) == max(1, joblib.cpu_count() // 2)  # 2 jobs at once


def test_artifacts_go_through_the_server_to_its_destination(cluster_run, mlflow_server, tmp_path):
    client, experiment = cluster_run.client, cluster_run.experiment
    assert experiment.artifact_location.startswith("mlflow-artifacts:")  # the server's choice
    assert not (cluster_run.cwd / "runs" / "artifacts").exists()  # nothing written beside the jobs
    stored = sorted(p.name for p in mlflow_server.artifacts.rglob("predictions.parquet"))
    assert len(stored) == 2
    run = client.search_runs([experiment.experiment_id], "attributes.run_name = 'sklearn-iris/nb_laplace'")[0]
    predictions = pd.read_parquet(client.download_artifacts(run.info.run_id, "predictions.parquet", str(tmp_path)))
    assert len(predictions) == 5 * 150


def test_the_report_is_written_from_the_server(cluster_run):
    results = pd.read_csv(cluster_run.cwd / "runs" / "reports" / "smoke" / "results.csv")  # runs_dir: runs/
    assert sorted(results["model"]) == sorted(MODELS)
    assert (cluster_run.cwd / "runs" / "reports" / "smoke" / "wdl.md").is_file()


def test_a_cluster_launcher_refuses_a_sqlite_store():
    with pytest.raises(ConfigError, match="SQLite on a network file system is unsafe"):
        compose(["executor=slurm"])
    cfg = compose(["executor=slurm", "tracking_uri=http://127.0.0.1:5000"]).settings
    assert cfg.tracking_uri == "http://127.0.0.1:5000"
