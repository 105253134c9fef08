"""Fixtures shared by the runner, tracking, config and CLI tests.

The datasets come from ``$BNCBENCH_DATA_DIR``, else from ``../shared/datasets`` beside the repository;
CLI tests run ``python -m bncbench`` in a process of its own with that directory in the environment: a
child of the pytest worker's zygote (tests/zygote.py), which starts with bncbench's libraries imported,
or a fresh Python process where the process itself is tested.
"""

import contextlib
import fcntl
import gzip
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from multiprocessing.connection import Connection
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
    """The environment of a bncbench command run by a test: the shared datasets, Hydra's short errors, and
    one core as joblib counts them (``LOKY_MAX_CPU_COUNT``): the pytest workers already take every core, so a
    sweep at the default ``executor.n_jobs=-1`` runs its cells in its own process instead of starting worker
    processes; the tests of the workers ask for ``executor.n_jobs=2``."""
    env = {**os.environ, "BNCBENCH_DATA_DIR": str(shared_datasets()), "LOKY_MAX_CPU_COUNT": "1"}
    env.pop("HYDRA_FULL_ERROR", None)
    return env


#: The environment variables read when the zygote's modules load (by Python at start-up, numba, MLflow's
#: logging, joblib, the BLAS and OpenMP thread pools), by prefix: a command whose environment differs from the
#: zygote's in one of them runs in a fresh process, which reads them.
READ_AT_IMPORT = ("PYTHON", "LANG", "LC_", "NUMBA_", "MLFLOW_LOGGING_LEVEL", "MLFLOW_CONFIGURE_LOGGING", "JOBLIB_",
                  "OMP_", "OPENBLAS_", "MKL_")


class Zygote:
    """One process of tests/zygote.py, which imported bncbench's libraries once (started at its first command, in
    the environment ``env``) and runs one command at a time in a child of its own."""

    def __init__(self, env: dict, folder: Path):
        self.env, self.folder = env, folder
        self.process = self.requests = self.replies = None

    def start(self, module: str, args, cwd: Path, env: dict, stdout: Path, stderr: Path | str,
              session: bool) -> int:
        """Start ``python -m <module> <args>`` in a child; return its pid."""
        if self.process is None:
            self._start()
        self.requests.send_bytes(json.dumps({
            "module": module, "argv": list(args), "cwd": str(Path(cwd).absolute()), "env": env,
            "stdout": str(stdout), "stderr": str(stderr), "session": session,
        }).encode())
        return self._reply()["pid"]

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The exit status of the child ``pid`` (minus the signal's number if a signal ended it), once the
        zygote has reaped it; None if it still ran after ``timeout`` seconds: then it is killed and reaped."""
        ended = self._reply(timeout)
        if ended is None:
            os.kill(pid, signal.SIGKILL)
            self._reply()
        self._reply()  # reaped: the pid is free
        return None if ended is None else ended["returncode"]

    def close(self) -> None:
        """End the zygote (its request pipe closed, it returns; killed if it does not within seconds)."""
        if self.process is None:
            return
        self.requests.close()
        self.replies.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _start(self) -> None:
        request_reader, request_writer = os.pipe()
        reply_reader, reply_writer = os.pipe()
        with open(self.folder / "zygote.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("zygote.py")), str(request_reader), str(reply_writer)],
                pass_fds=(request_reader, reply_writer), env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=log,
            )
        os.close(request_reader)
        os.close(reply_writer)
        self.requests = Connection(request_writer, readable=False)
        self.replies = Connection(reply_reader, writable=False)
        self._reply()  # ready: the libraries imported

    def _reply(self, timeout: float | None = None) -> dict | None:
        """The zygote's next message, or None if none came within ``timeout`` seconds."""
        if not self.replies.poll(timeout):
            return None
        try:
            return json.loads(self.replies.recv_bytes())
        except EOFError:
            raise RuntimeError(f"the zygote ended: {(self.folder / 'zygote.log').read_text()}") from None


class Command:
    """A command ``Zygotes.start`` started: a child of ``zygote``, or a fresh process (``process``); its output in
    the files ``stdout`` and ``stderr`` (None where it went elsewhere: the same file, a terminal)."""

    def __init__(self, args: list, stdout: Path, stderr: Path | None, zygotes: "Zygotes",
                 zygote: Zygote | None = None, pid: int | None = None, process: subprocess.Popen | None = None):
        self.args, self.stdout, self.stderr = args, stdout, stderr
        self.zygotes, self.zygote, self.process = zygotes, zygote, process
        self.pid = process.pid if process else pid

    def wait(self, timeout: float | None = 300) -> subprocess.CompletedProcess:
        """Its end, as ``subprocess.run(..., capture_output=True, text=True, timeout=timeout)`` says it: killed
        and ``subprocess.TimeoutExpired`` raised if it still ran after ``timeout`` seconds."""
        if self.process is not None:
            try:
                code = self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                code = None
        else:
            try:
                code = self.zygote.wait(self.pid, timeout)
            finally:
                self.zygotes.idle.append(self.zygote)
        stdout, stderr = self.stdout.read_text(), self.stderr.read_text() if self.stderr else ""
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(self.args, code, stdout, stderr)


class Zygotes:
    """``python -m <module> <args>`` run in a child of a ``Zygote`` (started in the environment ``env``: one per
    command running at once, kept for the next), or in a fresh process where the command's environment differs
    from ``env`` in a variable read at import (``READ_AT_IMPORT``) or where asked."""

    def __init__(self, env: dict, folder: Path):
        self.env, self.folder = env, folder
        self.idle: list[Zygote] = []  # list.pop and .append are atomic: threads of a test may start commands
        self.started: list[Zygote] = []
        self.commands = itertools.count()

    def start(self, module: str, args, cwd: Path, env: dict, *, stderr: str | Path = "own", session: bool = False,
              fresh: bool = False) -> Command:
        """Start the command; its stderr in a file of its own (``"own"``), in its stdout's (``"stdout"``), or at
        a path (a terminal's); in a new session if ``session``."""
        folder = self.folder / f"command-{next(self.commands)}"
        folder.mkdir()
        stdout = folder / "stdout"
        stdout.write_bytes(b"")
        own = folder / "stderr" if stderr == "own" else None
        if own:
            own.write_bytes(b"")
        command = [sys.executable, "-m", module, *args]
        if fresh or self.reads_at_import_apart(env):
            with contextlib.ExitStack() as files:
                out = files.enter_context(open(stdout, "wb"))
                err = subprocess.STDOUT if stderr == "stdout" else files.enter_context(open(own or stderr, "wb"))
                process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                           stderr=err, start_new_session=session)
            return Command(command, stdout, own, self, process=process)
        zygote = self._idle_zygote()
        try:
            pid = zygote.start(module, args, cwd, env, stdout, own or (stdout if stderr == "stdout" else stderr),
                               session)
        except BaseException:
            self.idle.append(zygote)
            raise
        return Command(command, stdout, own, self, zygote=zygote, pid=pid)

    def run(self, module: str, args, cwd: Path, env: dict, timeout: float,
            fresh: bool = False) -> subprocess.CompletedProcess:
        """Run the command as ``subprocess.run(..., capture_output=True, text=True, timeout=timeout)`` does."""
        return self.start(module, args, cwd, env, fresh=fresh).wait(timeout)

    def reads_at_import_apart(self, env: dict) -> bool:
        """Whether ``env`` and the zygotes' differ in a variable read at import."""
        return any(env.get(name) != self.env.get(name) for name in {*env, *self.env} if name.startswith(READ_AT_IMPORT))

    def close(self) -> None:
        for zygote in self.started:
            zygote.close()

    def _idle_zygote(self) -> Zygote:
        try:
            return self.idle.pop()
        except IndexError:
            folder = self.folder / f"zygote-{len(self.started)}"
            folder.mkdir()
            self.started.append(Zygote(self.env, folder))
            return self.started[-1]


@pytest.fixture(scope="session")
def zygote(cli_env, tmp_path_factory):
    """This pytest worker's ``Zygotes``, in the ``cli_env`` environment; ended with the session."""
    zygotes = Zygotes(cli_env, tmp_path_factory.mktemp("zygote"))
    yield zygotes
    zygotes.close()


@pytest.fixture(scope="session")
def run_cli(cli_env, zygote):
    """``run_cli(*args, cwd=..., module="bncbench", env=cli_env, fresh=False)``: run a bncbench command in a
    process of its own, a child of the zygote unless ``fresh`` (a new Python process, for a test of the process
    itself: its signals, start-up, pipes); return the CompletedProcess.

    ``result.output`` is stdout and stderr together.
    """

    def run(*args: str, cwd: Path, module: str = "bncbench", timeout: float = 300, env: dict | None = None,
            fresh: bool = False) -> subprocess.CompletedProcess:
        result = zygote.run(module, args, cwd, cli_env if env is None else env, timeout, fresh)
        result.output = result.stdout + result.stderr
        return result

    return run


@pytest.fixture(scope="session")
def start_cli(cli_env, zygote):
    """``start_cli(*args, cwd=..., stderr="own", session=False, env=cli_env)``: start a bncbench command as
    ``run_cli`` runs one, without waiting: several may run at once (a zygote each), and a test may signal one
    (``session``: in a new session, as ``subprocess``'s ``start_new_session``). Returns a ``Command``: its
    ``pid``, and ``wait(timeout)`` for the CompletedProcess; ``stderr`` as ``Zygotes.start`` takes it."""

    def start(*args: str, cwd: Path, stderr: str | Path = "own", session: bool = False,
              env: dict | None = None) -> Command:
        return zygote.start("bncbench", args, cwd, cli_env if env is None else env, stderr=stderr, session=session)

    return start


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
        return composed.plan.cells[0], destination_of(composed.settings, composed.plan)

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
