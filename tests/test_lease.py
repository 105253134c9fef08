"""Leases on running cells (``bncbench.tracking.lease``): a live run of another process is neither run again nor
marked KILLED; a run whose process died is. Two real launchers on one store run every cell once."""

import os
import sqlite3
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from bncbench.tracking import lease
from bncbench import tracking
from bncbench.app.runner import run_cell


def dead_process_owner() -> str:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    owner = lease.owner(child.pid)
    child.wait()
    return owner


def test_a_run_of_this_host_is_live_while_its_process_lives():
    assert lease.is_live({lease.OWNER_TAG: lease.owner()})
    assert not lease.is_live({lease.OWNER_TAG: dead_process_owner()})
    where, pid, start = lease.owner().rsplit(":", 2)
    assert not lease.is_live({lease.OWNER_TAG: f"{where}:{pid}:{int(start) + 1}"})  # the pid, reused
    assert not lease.is_live({})  # a run of a bncbench before leases


def test_a_run_of_another_host_is_live_while_it_beats():
    now = time.time()
    elsewhere = {lease.OWNER_TAG: "node17/1a2b3c4d:4242:99"}
    assert lease.is_live({**elsewhere, lease.HEARTBEAT_TAG: f"{now - 30:.0f}"}, now)
    assert not lease.is_live({**elsewhere, lease.HEARTBEAT_TAG: f"{now - lease.LEASE_SECONDS - 1:.0f}"}, now)
    assert not lease.is_live({**elsewhere, lease.HEARTBEAT_TAG: "yesterday"}, now)
    assert not lease.is_live(elsewhere, now)


def test_a_run_claims_its_cell_alone_and_gives_way_to_a_claimed_or_earlier_one():
    def run(start, run_id, claimed=False):
        tags = {lease.CLAIM_TAG: "1"} if claimed else {}
        return SimpleNamespace(info=SimpleNamespace(start_time=start, run_id=run_id), data=SimpleNamespace(tags=tags))

    assert lease.decision(run(2, "a"), []) == "claim"
    assert lease.decision(run(2, "a"), [run(1, "b")]) == "give way"
    assert lease.decision(run(1, "b"), [run(1, "a")]) == "give way"  # same millisecond: the smaller id
    assert lease.decision(run(1, "b"), [run(2, "a", claimed=True)]) == "give way"
    assert lease.decision(run(1, "b"), [run(2, "a")]) == "wait"  # the earliest waits for the other to decide


def test_the_heartbeat_is_renewed_while_the_cell_runs(tmp_path, new_store):
    client = tracking.open_store(new_store(tmp_path))
    exp = tracking.prepare_experiment(client, "e", str(tmp_path))
    run_id = tracking.start_run(client, exp, "d/m", {lease.HEARTBEAT_TAG: "0"})
    started = time.time()
    with lease.Heartbeat(client, run_id, interval=0.05):
        deadline = time.monotonic() + 60  # however late a loaded machine runs the heartbeat's thread
        while (beat := client.get_run(run_id).data.tags[lease.HEARTBEAT_TAG]) == "0":
            assert time.monotonic() < deadline, "no heartbeat written in 60 s"
            time.sleep(0.05)
    assert started - 1 <= float(beat) <= time.time() + 1  # written now (to the second), not before


@pytest.fixture
def cell(tmp_path, new_store, plan_cell):
    job = plan_cell(
        "sklearn-iris", "nb_laplace", f"tracking_uri={new_store(tmp_path)}", f"artifact_location={tmp_path}/artifacts"
    )
    client = tracking.open_store(job[1].tracking_uri)
    exp = tracking.prepare_experiment(client, "smoke", None)
    return job, client, exp


def held_run(job, client, exp, owner):
    tags = {"cfg_hash": job[0].cfg_hash, "dataset": "sklearn-iris", "model": "nb_laplace",
            lease.OWNER_TAG: owner, lease.HEARTBEAT_TAG: f"{time.time():.0f}"}
    return tracking.start_run(client, exp, "sklearn-iris/nb_laplace", tags)


def test_a_cell_another_live_process_runs_is_left_to_it(cell):
    job, client, exp = cell
    other = held_run(job, client, exp, lease.owner(os.getppid()))  # the parent: alive
    assert run_cell(*job).status == "running elsewhere"
    (run,) = client.search_runs([exp])
    assert run.info.run_id == other and run.info.status == "RUNNING" and "error" not in run.data.tags


def test_a_cell_whose_process_died_is_marked_killed_and_run_again(cell):
    job, client, exp = cell
    abandoned = held_run(job, client, exp, dead_process_owner())
    assert run_cell(*job).status == "finished"
    assert client.get_run(abandoned).info.status == "KILLED"
    assert "left RUNNING by an interrupted process" in client.get_run(abandoned).data.tags["error"]
    names = {run.info.run_name: run.info.status for run in client.search_runs([exp])}
    assert names == {"sklearn-iris/nb_laplace": "FINISHED", "sklearn-iris/nb_laplace (killed)": "KILLED"}  # told apart


def test_a_live_run_started_just_after_this_process_looked_is_not_marked_killed(cell, monkeypatch):
    """The race two launchers ran into: another process starts the cell between this process's first
    look and its clean-up of abandoned runs; its run is live, so it is left to it."""
    job, client, exp = cell
    look = lease.live_rivals
    other = []

    def another_process_starts_after_the_first_look(*args, **kwargs):
        found = look(*args, **kwargs)
        if not other:
            other.append(held_run(job, client, exp, lease.owner(os.getppid())))
        return found

    monkeypatch.setattr(lease, "live_rivals", another_process_starts_after_the_first_look)
    assert run_cell(*job).status == "running elsewhere"
    run = client.get_run(other[0])
    assert run.info.status == "RUNNING" and "error" not in run.data.tags


def earlier_run(job, client, exp, before):
    """This process's run of the cell, stamped a second before run ``before`` though written after it."""
    tags = {"cfg_hash": job[0].cfg_hash, "dataset": "sklearn-iris", "model": "nb_laplace",
            lease.OWNER_TAG: lease.owner(), lease.HEARTBEAT_TAG: f"{time.time():.0f}"}
    start = client.get_run(before).info.start_time - 1000
    return client.create_run(exp, start_time=start, tags=tags, run_name="sklearn-iris/nb_laplace")


@pytest.mark.parametrize("other_decides", ["claims", "gives way"])
def test_the_earlier_stamped_of_two_runs_waits_for_the_other_to_decide(cell, other_decides):
    """The race two launchers ran into: the other process looked before this process's run, stamped
    earlier, was written; it saw no rival and went on (claims) or, having seen it, deletes its run."""
    job, client, exp = cell
    other = held_run(job, client, exp, lease.owner(os.getppid()))
    own = earlier_run(job, client, exp, other)
    assert lease.decision(own, lease.live_rivals(client, exp, own.data.tags["cfg_hash"], own)) == "wait"

    def decide():
        time.sleep(3 * lease.DECISION_POLL_SECONDS)
        if other_decides == "claims":
            tracking.set_tags(client, other, {lease.CLAIM_TAG: "1"})
        else:
            tracking.delete_run(client, other)

    deciding = threading.Thread(target=decide)
    deciding.start()
    taken = lease.claim(client, exp, own, None)
    deciding.join()
    if other_decides == "claims":
        assert taken == lease.Claim("running elsewhere", other=other)
        assert lease.CLAIM_TAG not in client.get_run(own.info.run_id).data.tags
    else:
        assert taken == lease.Claim("claimed", run_id=own.info.run_id)
        assert client.get_run(own.info.run_id).data.tags[lease.CLAIM_TAG] == "1"


DATASETS = ["sklearn-iris", "sklearn-wine", "vote", "car", "tic-tac-toe", "zoo"]
MODELS = ["nb_laplace", "kdb1_m_estimate"]


def runs_by_status(db) -> dict:
    with sqlite3.connect(db) as connection:
        return dict(connection.execute(
            "select status, count(*) from runs where lifecycle_stage = 'active' group by status").fetchall())


@pytest.mark.parametrize("store", ["new", "existing"])
def test_two_launchers_on_one_store_run_every_cell_once(store, tmp_path, new_store, start_cli):
    uri = new_store(tmp_path / "store") if store == "existing" else f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    args = [
        f"experiment.datasets=[{','.join(DATASETS)}]", f"experiment.models=[{','.join(MODELS)}]",
        "experiment.comparisons=[]", f"tracking_uri={uri}", "executor.n_jobs=1",
    ]
    launchers = [start_cli(*args, cwd=tmp_path, stderr="stdout") for _ in range(2)]
    ended = [launcher.wait(timeout=600) for launcher in launchers]
    outputs = [launcher.stdout for launcher in ended]
    for launcher, output in zip(ended, outputs):
        assert launcher.returncode == 0, output
    assert runs_by_status(tmp_path / "store" / "mlflow.db") == {"FINISHED": len(DATASETS) * len(MODELS)}
    assert not any("interrupted process" in output or "Traceback" in output for output in outputs)


def test_a_claim_stopped_by_ctrl_c_or_sigterm_leaves_no_run_looking_alive(cell, monkeypatch):
    """An import stopped by SIGTERM while it claimed a cell left a RUNNING run with no metrics (issue 42)."""
    job, client, exp = cell

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lease, "claim", interrupted)
    tags = {"cfg_hash": job[0].cfg_hash, "dataset": "sklearn-iris", "model": "nb_laplace"}
    with pytest.raises(KeyboardInterrupt):
        lease.claim_cell(client, exp, "sklearn-iris/nb_laplace", tags, None)
    assert client.search_runs([exp]) == []  # the run started for the claim is deleted
