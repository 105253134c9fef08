"""Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM (to the launcher alone, as
``kill`` or a scheduler sends it) stop a real sweep: its worker processes end, the runs they leave are
marked KILLED by the sweep, the summary says what finished and how to resume, the exit status is 128 +
the signal, and the same command again (after Ctrl-C) plans the cells that did not finish."""

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Two small datasets, whose cells finish first, then four large ones: the sweep is still running when
#: the signal comes, however late a loaded machine lets the test see the first cells finish (with two
#: large ones, CI once saw the sweep end first).
DATASETS = ["sklearn-iris", "sklearn-wine", "adult", "connect-4", "shuttle", "letter"]
MODELS = ["nb_laplace", "kdb1_m_estimate"]
START_TIMEOUT = 180  # seconds until the first cells finish, on a loaded machine


def _as_from_a_terminal() -> None:
    """Ctrl-C as a shell started the command: pytest-xdist's workers ignore SIGINT, and a process
    inherits an ignored signal (Python then never raises KeyboardInterrupt for it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finished(db, status="FINISHED") -> int:
    try:  # closed at once: an open read keeps a lock that makes the writer wait
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as connection:
            return connection.execute("select count(*) from runs where status = ?", (status,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def live_processes(group: int) -> list[str]:
    """Processes of the group that are not zombies (a zombie holds no memory and runs nothing)."""
    listed = subprocess.run(["ps", "-o", "stat=,cmd=", "-g", str(group)], capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if line.strip() and not line.strip().startswith("Z")]


@pytest.mark.parametrize(("signum", "to_group"), [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_signal_stops_the_workers_and_says_how_to_resume(signum, to_group, tmp_path, new_store, cli_env, run_cli):
    uri = new_store(tmp_path / "store")
    args = [
        f"experiment.datasets=[{','.join(DATASETS)}]",
        f"experiment.models=[{','.join(MODELS)}]",
        "experiment.comparisons=[]",
        f"tracking_uri={uri}",
        "executor.n_jobs=2",
    ]
    sweep = subprocess.Popen(
        [sys.executable, "-m", "bncbench", *args], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=_as_from_a_terminal,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while finished(tmp_path / "store" / "mlflow.db") < 2:
        assert sweep.poll() is None and time.monotonic() < deadline, "no cell finished in time"
        time.sleep(0.2)
    if to_group:
        os.killpg(sweep.pid, signum)
    else:
        os.kill(sweep.pid, signum)
    output, _ = sweep.communicate(timeout=60)
    assert sweep.returncode == 128 + signum, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert f"bncbench: stopped by {signal.Signals(signum).name}; the cells' workers are stopped." in output
    assert "stopped (their runs are marked KILLED)" in output
    assert finished(tmp_path / "store" / "mlflow.db", "RUNNING") == 0  # none is left looking alive
    assert "to resume, run the same command again (finished cells are skipped): python -m bncbench" in output
    deadline = time.monotonic() + 15  # the stopped workers' exit, on a loaded machine
    while live_processes(sweep.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_processes(sweep.pid) == []
    if signum != signal.SIGINT:
        return  # resuming is the same after either signal: plan once

    # The same command plans exactly the cells that did not finish (its dry run reads the store); running
    # them again after a kill is test_runner_resume's.
    done = finished(tmp_path / "store" / "mlflow.db")
    plan = run_cli("run", "--dry-run", *args, cwd=tmp_path)
    cells = len(DATASETS) * len(MODELS)
    assert plan.returncode == 0 and done >= 2, plan.stdout + plan.stderr
    assert f"{cells} cells ({len(DATASETS)} datasets x {len(MODELS)} models): {cells - done} to run, {done} finished before." \
        in plan.stdout, plan.stdout + plan.stderr


def test_the_local_workers_ignore_sigint():
    """Ctrl-C is the sweep's to handle: a worker caught between two cells prints no traceback of its own."""
    from joblib.externals.loky import get_reusable_executor

    from bncbench.app.executors import _ignore_interrupts

    pool = get_reusable_executor(max_workers=2, initializer=_ignore_interrupts, reuse=False)
    assert list(pool.map(signal.getsignal, [signal.SIGINT] * 4)) == [signal.SIG_IGN] * 4
    pool.shutdown()


def test_stopping_the_local_workers_returns_once_they_are_gone(tmp_path, new_store, plan_cell):
    """The sweep marks its runs left RUNNING after ``stop`` returns: a worker still alive then could
    start a run nobody marks (CI saw one on a machine where loky killed the workers after the search)."""
    import threading

    from bncbench.app.executors import LocalProcesses

    uri = new_store(tmp_path / "store")
    cells = [plan_cell(name, "kdb1_m_estimate", f"tracking_uri={uri}") for name in ("adult", "connect-4")]
    executor = LocalProcesses(2)
    consumer = threading.Thread(target=lambda: list(executor.run([c for c, _ in cells], cells[0][1])), daemon=True)
    consumer.start()
    deadline = time.monotonic() + START_TIMEOUT
    while len(live_workers()) < 2:
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.1)
    executor.stop()
    assert live_workers() == []


def live_workers() -> list[str]:
    """The loky worker processes this process started that are not zombies, as "<stat> <command>"."""
    listed = subprocess.run(["ps", "-ww", "-o", "stat=,cmd=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    return [
        line.strip() for line in listed.stdout.splitlines() if "LokyProcess" in line and not line.strip().startswith("Z")
    ]


#: A fit that would take minutes in one call of the sampler: Ctrl-C must not wait for it.
LONG_FIT = """
import sys
from bncbench import BNClassifier
from bncbench.data import MDLDiscretizer, load_dataset
wine = load_dataset({"name": "sklearn-wine", "source": "sklearn", "openml_id": None, "openml_target": None,
                     "drop": []}, None)
X = MDLDiscretizer().fit_transform(wine.X, wine.y)
def fit(iterations):
    BNClassifier(structure="kdb", k=2, estimator="hdp", estimator_params={"iterations": iterations}).fit(X, wine.y)
fit(10)  # the kernels loaded: what follows is the sampler
print("sampling", flush=True)
fit(10_000_000)
"""


def test_ctrl_c_stops_a_long_hdp_fit_at_once_when_the_output_is_a_pipe(cli_env):
    fit = subprocess.Popen(
        [sys.executable, "-c", LONG_FIT], env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal,
    )
    try:
        assert fit.stdout.readline() == "sampling\n", fit.stderr.read()
        time.sleep(1.0)  # well inside the sampler
        fit.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = fit.communicate(timeout=30)
        waited = time.monotonic() - sent
    finally:
        fit.kill()
    assert fit.returncode != 0 and stderr.rstrip().splitlines()[-1] == "KeyboardInterrupt", stderr
    # the fit would take minutes; 20 s leaves room for the interpreter's exit on a loaded machine (5.4 s seen in CI)
    assert waited < 20, f"the fit answered Ctrl-C after {waited:.1f} s"


def test_sigterm_stops_an_import_with_its_experiment_tagged_and_no_half_run(tmp_path, cli_env):
    """An interrupted import died with the shell's "Terminated" and left its experiment untagged, so the printed link
    opened MLflow's GenAI page (issue 42): it stops as Ctrl-C does, says what stays, and the view tags come first."""
    from mlflow import MlflowClient

    bundles = sorted(str(path.parent) for path in (Path(__file__).parents[1] / "reports" / "hdp_vs_m" / "bundles")
                     .glob("*/manifest.json"))[:5]
    db = tmp_path / "mlflow.db"
    importing = subprocess.Popen(
        [sys.executable, "-m", "bncbench", "import", *bundles, f"tracking_uri=sqlite:///{db}"], cwd=tmp_path,
        env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while finished(db) < 3:
        assert importing.poll() is None and time.monotonic() < deadline, "no run imported in time"
        time.sleep(0.5)
    importing.send_signal(signal.SIGTERM)
    _, err = importing.communicate(timeout=60)
    assert importing.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == ("bncbench: import interrupted (SIGTERM): the runs imported before stay, the one "
                                    "being written was deleted; the same command imports the rest.")
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("hdp_vs_m")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    assert runs and {run.info.status for run in runs} == {"FINISHED"}


def test_a_sigterm_lost_in_a_finaliser_is_raised_when_the_block_ends():
    """A SIGTERM whose exception Python drops (raised in a ``__del__`` or a weakref callback: "Exception ignored")
    still stops the command: ``sigterm_as_interrupt`` raises it at the block's end (a CI run saw an import go on)."""
    from bncbench.app.interrupts import Interrupted, sigterm_as_interrupt

    class SignalledWhileCollected:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    finished, before = False, signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted):
        with sigterm_as_interrupt():
            SignalledWhileCollected()  # collected at once: the handler's exception is raised inside __del__, dropped
            finished = True
    assert finished and signal.getsignal(signal.SIGTERM) == before  # the handler before it put back
