"""Fixtures shared by the runner, tracking, config and CLI tests.

The datasets come from ``$BNCBENCH_DATA_DIR``, else from ``../shared/datasets`` beside the repository;
CLI tests run ``python -m bncbench`` in a subprocess with that directory in the environment.
"""

import contextlib
import fcntl
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_datasets() -> Path:
    if os.environ.get("BNCBENCH_DATA_DIR"):
        return Path(os.environ["BNCBENCH_DATA_DIR"]).resolve()
    return (REPO_ROOT.parent / "shared" / "datasets").resolve()


@pytest.fixture(autouse=True)
def one_numba_thread_per_worker(worker_id):
    """With pytest-xdist, a worker per core: each runs numba's parallel kernels on one thread, as a sweep
    gives each of its cells its share of the cores. Two threads in each of two workers on two cores
    wait for each other at every parallel loop, which costs several times the work. Set before each test,
    as a cell run in this process sets its own; tests of the threads set theirs."""
    if worker_id != "master":
        import numba  # here: not every test needs it

        numba.set_num_threads(1)


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The dataset store of the tests."""
    return shared_datasets()


@pytest.fixture(scope="session")
def cli_env() -> dict:
    """The environment of a bncbench command run by a test: the shared datasets, Hydra's short errors."""
    env = {**os.environ, "BNCBENCH_DATA_DIR": str(shared_datasets())}
    env.pop("HYDRA_FULL_ERROR", None)
    return env


@pytest.fixture(scope="session")
def run_cli(cli_env):
    """``run_cli(*args, cwd=..., module="bncbench")``: run a bncbench command, return the CompletedProcess.

    ``result.output`` is stdout and stderr together.
    """
    env = cli_env

    def run(
        *args: str, cwd: Path, module: str = "bncbench", timeout: float = 300
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "-m", module, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result.output = result.stdout + result.stderr
        return result

    return run


@pytest.fixture(scope="session")
def write_store():
    """``write_store(directory, {name: (csv text or bytes before gzip, schema entry)})`` writes a store."""

    def write(directory: Path, tables: dict) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        for name, (content, _) in tables.items():
            data = content.encode() if isinstance(content, str) else content
            (directory / f"{name}.csv.gz").write_bytes(gzip.compress(data))
        (directory / "schema.json").write_text(
            json.dumps({name: entry for name, (_, entry) in tables.items()})
        )
        return directory

    return write


@pytest.fixture(scope="session")
def simple_schema() -> dict:
    """Schema entry of a table with a numeric attribute ``a``, a nominal ``b`` and the class ``class``."""
    return {
        "attributes": [
            {"name": "a", "type": "numeric"},
            {"name": "b", "type": "nominal", "values": ["x", "y"]},
        ],
        "class": {"name": "class", "type": "nominal", "values": ["p", "q"]},
    }


@pytest.fixture(scope="session")
def simple_table():
    """``simple_table(n, classes)``: CSV text of ``n`` rows matching ``simple_schema``."""

    def table(n: int = 40, classes=("p", "q")) -> str:
        rows = [f"{i % 7}.5,{'xy'[i % 2]},{classes[i % len(classes)]}" for i in range(n)]
        return "a,b,class\n" + "\n".join(rows) + "\n"

    return table


@pytest.fixture(scope="session")
def empty_store_template(tmp_path_factory) -> Path:
    """An empty MLflow SQLite store, its schema created once: creating one takes seconds, copying it none."""
    from mlflow.tracking import MlflowClient  # here: most tests need no MLflow

    path = tmp_path_factory.mktemp("store_template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture(scope="session")
def new_store(empty_store_template):
    """``new_store(directory)``: an empty MLflow store ``<directory>/mlflow.db``; returns its tracking URI."""

    def make(directory: Path) -> str:
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(empty_store_template, directory / "mlflow.db")
        return f"sqlite:///{directory / 'mlflow.db'}"

    return make


@pytest.fixture(scope="session")
def built_once(tmp_path_factory, worker_id):
    """``built_once(name, build)``: the folder ``<name>`` in which ``build(folder)`` ran a bncbench command, and
    the command's result (``returncode``, ``stdout``, ``stderr``, ``output``), run once per test session however
    many pytest-xdist workers ask for it (as xdist's docs do it: under a file lock in the base folder the
    workers share). Read the folder only: a test that writes copies it."""
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # the workers' base folders are beside each other

    def get(name: str, build) -> tuple[Path, SimpleNamespace]:
        folder, record = root / name, root / f"{name}.json"
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not record.exists():
                shutil.rmtree(folder, ignore_errors=True)  # left by a build that failed
                folder.mkdir()
                done = build(folder)
                record.write_text(json.dumps({"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}))
        result = json.loads(record.read_text())
        return folder, SimpleNamespace(**result, output=result["stdout"] + result["stderr"])

    return get


@pytest.fixture(scope="session")
def smoke_store(built_once, run_cli, new_store):
    """The smoke experiment run once per session on two worker processes, from the folder ``cwd`` into the new
    store ``cwd/store`` (``uri``), and its ``result``. Read it only: a test that writes copies it (``copy_store``)."""
    cwd, result = built_once(
        "smoke",
        lambda cwd: run_cli("experiment=smoke", f"tracking_uri={new_store(cwd / 'store')}", "executor.n_jobs=2", cwd=cwd),
    )
    return SimpleNamespace(cwd=cwd, uri=f"sqlite:///{cwd / 'store' / 'mlflow.db'}", result=result)


@pytest.fixture(scope="session")
def copy_store():
    """``copy_store(store, to)``: a copy of the store folder ``store`` (its ``mlflow.db`` and artifacts) at ``to``,
    its runs' artifacts there too; returns its tracking URI."""

    def copy(store: Path, to: Path) -> str:
        shutil.copytree(store, to)
        old, new = store.as_uri(), to.as_uri()
        with contextlib.closing(sqlite3.connect(to / "mlflow.db")) as db, db:
            db.execute("update experiments set artifact_location = replace(artifact_location, ?, ?)", (old, new))
            db.execute("update runs set artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
        return f"sqlite:///{to / 'mlflow.db'}"

    return copy


@pytest.fixture(scope="session")
def weka_missing() -> str:
    """Why Weka's RandomForest cannot run here (no jar, no JDK), or "" when it can: its tests skip, saying
    why, on a machine without Debian's ``weka`` (``.ci/run`` installs it)."""
    import shutil

    from bncbench.baselines.weka_forest import find_weka_jar
    from bncbench.core.errors import ConfigError

    try:
        find_weka_jar()
    except ConfigError as err:
        return str(err)
    return "" if shutil.which("javac") else "no JDK (javac)"


@pytest.fixture(scope="session")
def plan_cell():
    """``plan_cell(dataset, model, *overrides)``: the one cell of the plan the overrides compose with
    ``dataset`` and ``model``, and where a sweep of it logs (``Destination``)."""
    from bncbench.app.config import compose
    from bncbench.app.sweep import destination_of

    def make(dataset: str, model: str, *overrides: str):
        composed = compose(
            [f"experiment.datasets=[{dataset}]", f"experiment.models=[{model}]", "experiment.comparisons=[]", *overrides]
        )
        return composed.plan.cells[0], destination_of(composed.cfg, composed.plan)

    return make


@pytest.fixture(scope="session")
def small_disk():
    """``with small_disk(path, size):`` a real tmpfs of ``size`` mounted at ``path`` (a new folder), to
    fill up; mounting needs root, as in CI (the test is skipped, saying why, where it cannot mount)."""

    @contextlib.contextmanager
    def mount(path: Path, size: str):
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"a small file system needs mount (root): {done.stderr.decode().strip()}")
        try:
            yield path
        finally:
            subprocess.run(["umount", "-l", str(path)], check=True)

    return mount
