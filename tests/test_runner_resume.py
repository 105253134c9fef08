"""An experiment killed by SIGKILL half-way, then run again: every cell finishes exactly once.

The first run is a real ``python -m bncbench`` process group, killed with SIGKILL once some cells are
FINISHED in the store and one is RUNNING; the second run goes on, in a pseudo-terminal, so that its
progress lines show.
"""

import os
import pty
import signal
import sqlite3
import threading
import time
from types import SimpleNamespace

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench import tracking

DATASETS = ["vote", "kr-vs-kp", "tic-tac-toe"]
MODELS = ["nb_laplace", "skdb_m_estimate"]  # SkDB on kr-vs-kp takes seconds: a cell to kill
CELLS = {f"{d}/{m}" for d in DATASETS for m in MODELS}
START_TIMEOUT = 180  # seconds until the first cells finish, on a loaded machine


def statuses(db) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            return dict(connection.execute("select status, count(*) from runs group by status").fetchall())
    except sqlite3.Error:  # not created yet, or locked by a writer for longer than the timeout
        return {}


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory, new_store, start_cli):
    cwd = tmp_path_factory.mktemp("resume")
    uri = new_store(cwd / "store")
    db = cwd / "store" / "mlflow.db"
    args = [
        f"experiment.datasets=[{','.join(DATASETS)}]",
        f"experiment.models=[{','.join(MODELS)}]",
        "experiment.comparisons=[{a: skdb_m_estimate, b: nb_laplace}]",
        f"tracking_uri={uri}",
        "executor.n_jobs=1",
    ]
    first = start_cli(*args, cwd=cwd, stderr="stdout", session=True)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            seen = statuses(db)
            if seen.get("FINISHED", 0) >= 2 and seen.get("RUNNING", 0) >= 1:
                break
            assert not ended(first.pid), f"the experiment ended before it could be killed: {seen}"
            assert time.monotonic() < deadline, f"no cell finished in {START_TIMEOUT} s: {seen}"
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first_output = first.wait(timeout=60).stdout
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("smoke").experiment_id
    at_kill = {r.info.run_id: r for r in client.search_runs([experiment_id])}

    again = run_in_terminal(start_cli, args, cwd)
    return SimpleNamespace(
        cwd=cwd, client=client, experiment_id=experiment_id, at_kill=at_kill, first_output=first_output, again=again
    )


def ended(pid: int) -> bool:
    """Whether the process ``pid`` (a child of a zygote: this process cannot wait for it) has ended: it is gone,
    or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def run_in_terminal(start_cli, args, cwd, timeout=300):
    """Run with stderr on a pseudo-terminal (read as it comes, so the child never blocks on it)."""
    controller, terminal = pty.openpty()
    chunks = []

    def drain():
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = start_cli(*args, cwd=cwd, stderr=os.ttyname(terminal)).wait(timeout)
    finally:
        os.close(terminal)  # the child's end closed too: the reader sees the terminal close
    reader.join(timeout=10)
    os.close(controller)
    done.terminal = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    done.stdout_text = done.stdout
    return done


def test_the_kill_left_some_cells_finished_and_one_running(killed_and_resumed):
    at_kill, first_output = killed_and_resumed.at_kill, killed_and_resumed.first_output
    by_status = {}
    for run in at_kill.values():
        by_status.setdefault(run.info.status, []).append(run.info.run_name)
    assert len(by_status.get("FINISHED", [])) >= 2
    assert len(by_status.get("RUNNING", [])) == 1, by_status
    assert len(at_kill) < len(CELLS)
    assert "cells done" not in first_output  # not a terminal: no progress lines


def test_running_again_finishes_every_cell_exactly_once(killed_and_resumed):
    client, experiment_id = killed_and_resumed.client, killed_and_resumed.experiment_id
    at_kill, again = killed_and_resumed.at_kill, killed_and_resumed.again
    assert again.returncode == 0, again.stdout_text + again.terminal
    done_before = [r for r in at_kill.values() if r.info.status == "FINISHED"]
    assert again.stdout_text.strip().splitlines()[-1] == (
        f"bncbench: experiment 'smoke': {len(CELLS)} cells, {len(CELLS) - len(done_before)} run, "
        f"{len(done_before)} skipped (finished before), 0 failed."
    )
    runs = client.search_runs([experiment_id])
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert sorted(r.info.run_name for r in finished) == sorted(CELLS)  # each cell once
    assert {r.info.run_id for r in done_before} <= {r.info.run_id for r in finished}  # none lost or redone
    for run in done_before:
        assert client.get_run(run.info.run_id).data.metrics == run.data.metrics
    assert len(runs) == len(CELLS) + 1  # and the killed one


def test_the_run_left_running_is_marked_killed_and_its_cell_rerun(killed_and_resumed):
    client, experiment_id, at_kill = (
        killed_and_resumed.client,
        killed_and_resumed.experiment_id,
        killed_and_resumed.at_kill,
    )
    (stale,) = [r for r in at_kill.values() if r.info.status == "RUNNING"]
    now = client.get_run(stale.info.run_id)
    assert now.info.status == "KILLED"
    assert "interrupted" in now.data.tags["error"]
    assert now.info.run_name == f"{stale.info.run_name} (killed)"  # the runs table tells it from its rerun (issue 42)
    (rerun,) = client.search_runs(
        [experiment_id], f"attributes.run_name = '{stale.info.run_name}' and attributes.status = 'FINISHED'"
    )
    assert rerun.data.tags["cfg_hash"] == stale.data.tags["cfg_hash"]


def test_the_report_counts_one_run_per_cell(killed_and_resumed):
    client, experiment_id = killed_and_resumed.client, killed_and_resumed.experiment_id
    results = pd.read_csv(killed_and_resumed.cwd / "store" / "reports" / "smoke" / "results.csv")
    assert sorted(results["dataset"] + "/" + results["model"]) == sorted(CELLS)
    finished = {r.info.run_id for r in client.search_runs([experiment_id], "attributes.status = 'FINISHED'")}
    assert set(results["run_id"]) == finished


def test_progress_shows_on_a_terminal(killed_and_resumed):
    again = killed_and_resumed.again
    lines = [x for x in again.terminal.splitlines() if "cells done" in x]
    assert lines, again.terminal
    assert lines[-1].startswith(f"bncbench: {len(CELLS)}/{len(CELLS)} cells done; ")
    assert "cells done" not in again.stdout_text


def test_a_finished_run_whose_metrics_are_gone_is_run_again(tmp_path, new_store, run_cli):
    uri = new_store(tmp_path / "store")
    args = ["experiment.datasets=[sklearn-iris,sklearn-wine,vote]", "experiment.models=[nb_laplace]",
            "experiment.comparisons=[]", f"tracking_uri={uri}", "executor.n_jobs=1"]
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("smoke").experiment_id
    runs = {r.info.run_name: r.info.run_id for r in client.search_runs([experiment_id])}
    gone = {runs["sklearn-iris/nb_laplace"]: "%", runs["vote/nb_laplace"]: "fold/rmse"}  # all, or one
    with sqlite3.connect(tmp_path / "store" / "mlflow.db") as db:
        for run_id, key in gone.items():
            for table in ("metrics", "latest_metrics"):
                db.execute(f"delete from {table} where run_uuid = ? and key like ?", (run_id, key))

    dry = run_cli(*args, "--dry-run", cwd=tmp_path)
    assert "2 cells would run again, their FINISHED runs missing metrics: sklearn-iris/nb_laplace, vote/nb_laplace" \
        in dry.stdout, dry.output
    assert client.get_run(runs["vote/nb_laplace"]).info.status == "FINISHED"  # a dry run changes nothing

    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.output
    assert again.stdout.strip().splitlines()[-1] == (
        "bncbench: experiment 'smoke': 3 cells, 2 run, 2 rerun: finished runs missing metrics, "
        "1 skipped (finished before), 0 failed."
    )
    for run_id in gone:
        marked = client.get_run(run_id)
        assert marked.info.status == "FAILED"
        assert marked.data.tags["error"].startswith("FINISHED without the metrics ")
    assert "fold/rmse: not a result" in client.get_run(runs["vote/nb_laplace"]).data.tags["error"]
    finished = client.search_runs([experiment_id], "attributes.status = 'FINISHED'")
    assert sorted(r.info.run_name for r in finished) == ["sklearn-iris/nb_laplace", "sklearn-wine/nb_laplace",
                                                          "vote/nb_laplace"]
    assert all(not tracking.missing_metrics(r.data.metrics) for r in finished)
    third = run_cli(*args, cwd=tmp_path)  # and now all is finished
    assert third.stdout.strip().splitlines()[-1].endswith("0 run, 3 skipped (finished before), 0 failed."), third.output
