"""The MLflow store of an experiment: opening and checking it, creating the MLflow experiment."""

import errno
import logging
import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager, nullcontext, suppress
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from sqlalchemy.engine import make_url

from bncbench.core.errors import ConfigError
from bncbench.core.files import locked
from bncbench.core.terminal import is_terminal
from bncbench.core.uris import masked

#: Where artifacts go by default (``artifact_location: null``) when the tracking store is a database
#: the client writes to itself (SQLite), relative to the working directory.
DEFAULT_ARTIFACT_DIR = "runs/artifacts"
#: Tracking URIs of a tracking server, which stores (or proxies) the artifacts itself.
SERVER_SCHEMES = ("http", "https")
#: Limits of every request to an mlflow server where the user has not set MLflow's own variables: a
#: server that is down or never answers is reported within about a minute and a half, not after
#: MLflow's defaults (120 s per request, 7 retries with growing back-off: minutes, or no end).
SERVER_LIMITS = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
}
#: Seconds of the one request that checks a store before anything runs (no retry), or fewer if
#: ``MLFLOW_HTTP_REQUEST_TIMEOUT`` says so.
FIRST_REQUEST_TIMEOUT = 10
_SQLITE_HEADER = b"SQLite format 3\x00"
#: How SQLite and the C library say that a disk is full, in errors that MLflow and SQLAlchemy wrap.
DISK_FULL_MESSAGES = ("database or disk is full", "No space left on device", "Disk quota exceeded")
#: Tables every MLflow SQLite store has; a database with other tables and not these is not a store.
_MLFLOW_TABLES = {"alembic_version", "experiments", "runs"}
_STORE_FIX = (
    "Set tracking_uri to a writable SQLite file, e.g. tracking_uri=sqlite:///runs/mlflow.db, "
    "or to the http(s):// address of a running `mlflow server`."
)


def open_store(tracking_uri: str, check: bool = True) -> MlflowClient:
    """A client on ``tracking_uri``, creating a SQLite database (and its directory) when absent.

    With ``check``, one request is made at once, without MLflow's retries and limited to ``FIRST_REQUEST_TIMEOUT``
    seconds (MLflow's ``MLFLOW_HTTP_REQUEST_TIMEOUT`` if lower), so that a store that cannot be opened (a server
    down, or one that never answers) is reported before anything runs. With an mlflow server, every later request
    of this process and of the workers it starts is bounded by ``SERVER_LIMITS``.

    Raises
    ------
    ConfigError
        The store cannot be opened; the message names the URI and what would work instead.
    """
    if not str(tracking_uri or "").strip():
        raise ConfigError(f"tracking_uri is empty. {_STORE_FIX}")
    scheme = urlparse(str(tracking_uri)).scheme
    creation, announce = nullcontext(), None
    if scheme == "sqlite":
        path = _sqlite_path(str(tracking_uri))
        try:
            _check_sqlite_file(path)
            new = check and not path.exists()
            if new:
                _confirm_new_store(tracking_uri, path)
                announce = f"bncbench: a new MLflow store at {path.resolve()}{_other_stores(path)}"
            path.parent.mkdir(parents=True, exist_ok=True)
            if new:
                _check_writable(path.parent)
            if check:
                creation = _creation_lock(path)
        except OSError as err:
            raise ConfigError(
                f"cannot open the tracking store {masked(tracking_uri)!r}: {err}. {_STORE_FIX}"
            ) from None
    elif scheme in SERVER_SCHEMES:
        for name, value in SERVER_LIMITS.items():
            os.environ.setdefault(name, value)  # read by MLflow at each request, and by worker processes
    elif scheme in ("", "file"):
        raise ConfigError(
            f"tracking_uri {masked(tracking_uri)!r} is a file store, which MLflow 3 no longer supports. {_STORE_FIX}"
        )
    try:
        with creation:
            client = MlflowClient(tracking_uri=str(tracking_uri))
            if check:
                with environment(
                    MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", MLFLOW_HTTP_REQUEST_TIMEOUT=_first_request_timeout()
                ):
                    client.search_experiments(max_results=1)
    except Exception as err:  # MLflow raises many types (MlflowException, SQLAlchemy, requests)
        raise ConfigError(
            f"cannot open the tracking store {masked(tracking_uri)!r}: {_reason(err)}. {_STORE_FIX}"
        ) from None
    if announce:
        print(announce, file=sys.stderr)
    return client


@contextmanager
def _creation_lock(path: Path):
    """Hold a lock beside a SQLite store while opening it: processes creating one new database at once
    race in MLflow's schema migration (one of them fails); the lock makes the later one find it made."""
    with ExitStack() as lock:
        with suppress(OSError):  # a read-only directory: no process can create the store there, nor race
            lock.enter_context(locked(path.parent / f".{path.name}.lock"))  # never through a planted link
        yield


def _sqlite_path(tracking_uri: str) -> Path:
    """The database file of a ``sqlite:`` URI; an in-memory database is refused, as its results would
    vanish when the process ends (and each worker process would have its own)."""
    database = tracking_uri.removeprefix("sqlite:").removeprefix("//").split("?")[0]
    if database in ("", "/", "/:memory:") or ("mode=memory" in tracking_uri):
        raise ConfigError(
            f"tracking_uri {masked(tracking_uri)!r} is an in-memory SQLite database: the results would be lost "
            f"when the command ends. {_STORE_FIX}"
        )
    return Path(database.removeprefix("/"))


def _check_writable(directory: Path) -> None:
    """Raise OSError unless a file can be made in ``directory``, that of a new store: MLflow would
    retry creating the database there for minutes."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        raise OSError(f"cannot write in {directory} ({err.strerror})") from None


#: How long opening a SQLite store waits for another process's lock on it before it says so.
LOCK_WAIT_SECONDS = 30.0


def _check_sqlite_file(path: Path) -> None:
    """Raise OSError unless ``path`` is absent, empty or an MLflow SQLite database: MLflow would retry
    opening anything else for minutes, and would add its tables to another application's database."""
    if not path.exists():
        return
    if not path.is_file():
        raise IsADirectoryError(f"{path} is a directory, not a SQLite file")
    with open(path, "rb") as file:
        header = file.read(len(_SQLITE_HEADER))
    if header and header != _SQLITE_HEADER:
        raise OSError(f"{path} is not a SQLite database")
    if header:
        try:
            with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                         timeout=LOCK_WAIT_SECONDS)) as database:
                tables = {row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.OperationalError as err:
            raise OSError(f"{path} could not be read ({err}) after waiting {LOCK_WAIT_SECONDS:g} s: another process "
                          "holds it locked; try again when it is done") from None
        if tables and not _MLFLOW_TABLES <= tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise OSError(
                f"{path} is the SQLite database of another application (tables {shown}), not an MLflow "
                "store; bncbench will not add MLflow's tables to it"
            )


def _confirm_new_store(tracking_uri: str, path: Path) -> None:
    """On a terminal, ask before creating a store beside other stores (a mistyped name would start an
    empty one, and nothing would resume); elsewhere the new store is announced, not asked about."""
    if not _other_stores(path) or not is_terminal(sys.stdin):
        return
    answer = input(f"bncbench: no MLflow store at {path.resolve()}{_other_stores(path)}. Create it? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise ConfigError(f"no store created at {path.resolve()}; check tracking_uri={masked(tracking_uri)!r}.")


def _other_stores(path: Path) -> str:
    """A hint naming the other SQLite stores beside ``path``, in case its name is mistyped."""
    if not path.parent.is_dir():
        return ""
    others = sorted(p.name for p in path.parent.glob("*.db") if p.is_file() and p.name != path.name)
    if not others:
        return ""
    return f" (nothing to resume there; other stores in {path.parent.resolve()}: {', '.join(others[:5])})"


def disk_full(err: BaseException) -> bool:
    """Whether ``err`` (or an error it was raised from) says that a disk is full: an OSError ENOSPC or
    EDQUOT writing an artifact, SQLite's "database or disk is full" under the store."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(err) for text in DISK_FULL_MESSAGES):
            return True
        err = err.__cause__ or err.__context__
    return False


def _reason(err: Exception) -> str:
    """The first line of an error's message (a password in a URI masked), or its type when it has none."""
    text = masked(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _first_request_timeout() -> str:
    """``FIRST_REQUEST_TIMEOUT``, or the user's ``MLFLOW_HTTP_REQUEST_TIMEOUT`` (whole seconds, as MLflow
    reads it) if it is lower."""
    try:
        asked = max(1, int(os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"]))
    except (KeyError, ValueError):
        asked = FIRST_REQUEST_TIMEOUT
    return str(min(asked, FIRST_REQUEST_TIMEOUT))


@contextmanager
def environment(**variables: str):
    """A block with these environment variables set (MLflow reads some of its settings from them)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def quiet_store():
    """A block without MLflow's own traceback of each failed database write (bncbench reports it)."""
    logger = logging.getLogger("mlflow.store.db.utils")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def prepare_experiment(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """Id of the MLflow experiment ``name``, created if absent (see ``artifact_root`` for where a new
    one keeps its artifacts).

    Raises
    ------
    ConfigError
        The experiment is deleted, or cannot be created (e.g. a read-only store).
    """
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            with quiet_store():
                return client.create_experiment(
                    name, artifact_location=artifact_root(client.tracking_uri, artifact_location, name)
                )
        except MlflowException as err:
            experiment = client.get_experiment_by_name(name)  # created meanwhile by another process
            if experiment is None:
                raise ConfigError(
                    f"cannot create the MLflow experiment {name!r} in {masked(client.tracking_uri)!r}: "
                    f"{_reason(err)}. Check that the store is writable, or set tracking_uri to one that is."
                ) from None
    if experiment.lifecycle_stage != "active":
        raise ConfigError(
            f"the MLflow experiment {name!r} is deleted; restore it "
            f"(mlflow experiments restore --experiment-id {experiment.experiment_id}) or remove it for good "
            "(mlflow gc), then run again."
        )
    return experiment.experiment_id


def check_artifact_location(client: MlflowClient, name: str, artifact_location: str) -> None:
    """Refuse an ``artifact_location`` given for the MLflow experiment ``name`` when it exists and keeps
    its artifacts elsewhere: MLflow fixes an experiment's artifact location when it creates it.

    Raises
    ------
    ConfigError
    """
    experiment = client.get_experiment_by_name(name)
    wanted = artifact_root(client.tracking_uri, artifact_location, name)
    if experiment is not None and experiment.artifact_location != wanted:
        raise ConfigError(
            f"artifact_location={artifact_location}: the MLflow experiment {name!r} of {client.tracking_uri} "
            f"keeps its artifacts in {experiment.artifact_location}, set when it was created, and MLflow cannot "
            "change it. Leave artifact_location out, or run under another experiment.name or store."
        )


def artifact_root(tracking_uri: str, artifact_location: str | None, name: str) -> str | None:
    """Artifact location of a new MLflow experiment ``name``: ``<artifact_location>/<name>``.

    A plain path is made an absolute ``file://`` URI (relative to the working directory); a URI
    (``s3://...``, ``file://...``) is kept. ``artifact_location=None`` means ``DEFAULT_ARTIFACT_DIR``
    with a database store, and with a tracking server (``http(s)://``) the server's choice: its
    ``--artifacts-destination``, which clients on other machines reach through the server.
    """
    if artifact_location is None:
        if urlparse(str(tracking_uri)).scheme in SERVER_SCHEMES:
            return None
        artifact_location = DEFAULT_ARTIFACT_DIR
    location = str(artifact_location)
    if len(urlparse(location).scheme) > 1:  # one letter: a Windows drive
        return f"{location.rstrip('/')}/{name}"
    return (Path(location) / name).resolve().as_uri()


def mark_sweep(client: MlflowClient, experiment_id: str) -> None:
    """Tag the experiment with the start of a sweep (``bncbench.last_sweep``), which also checks, before
    any cell runs, that the store takes writes.

    Raises
    ------
    ConfigError
        The store cannot be written.
    """
    try:
        with quiet_store():
            started = datetime.now().isoformat(timespec="seconds")
            client.set_experiment_tag(experiment_id, "bncbench.last_sweep", started)
    except Exception as err:  # MLflow raises many types (MlflowException, SQLAlchemy, requests)
        raise ConfigError(
            f"cannot write to the tracking store {masked(client.tracking_uri)!r}: {_reason(err)}. "
            "Check that it is writable (file permissions, a read-only file system), or set tracking_uri "
            "to one that is."
        ) from None


def experiment_id(client: MlflowClient, name: str) -> str:
    """Id of the existing, active MLflow experiment ``name``.

    Raises
    ------
    ConfigError
        There is no such experiment (or it is deleted); the message names those of the store.
    """
    experiment = client.get_experiment_by_name(name)
    if experiment is None or experiment.lifecycle_stage != "active":
        names = sorted(e.name for e in client.search_experiments())
        raise ConfigError(
            f"no MLflow experiment {name!r} in {masked(client.tracking_uri)!r} (existing: "
            f"{', '.join(names) or 'none'}); run the experiment first "
            f"(python -m bncbench experiment=...) or set tracking_uri to the store it logged to"
        )
    return experiment.experiment_id


def experiment_name(client: MlflowClient, experiment_id: str) -> str:
    """Name of the MLflow experiment ``experiment_id``."""
    return client.get_experiment(experiment_id).name


def open_existing_store(tracking_uri: str) -> MlflowClient:
    """:func:`open_store` on a store that must exist already (MLflow would silently create an empty
    SQLite file), for reading what an experiment logged.

    Raises
    ------
    ConfigError
        No SQLite file at the URI's path, or the store cannot be opened.
    """
    if tracking_uri.startswith("sqlite:"):
        database = make_url(tracking_uri).database
        if database and database != ":memory:" and not Path(database).is_file():
            raise ConfigError(
                f"no MLflow store at {Path(database).resolve()} (tracking_uri={masked(tracking_uri)!r}); "
                f"run the experiment first or set tracking_uri to the store it logged to "
                f"(a relative sqlite path is relative to the working directory)"
            )
    return open_store(tracking_uri)


@contextmanager
def read_errors(tracking_uri: str) -> Iterator[None]:
    """A block reading a store, where MLflow's errors become a ConfigError naming the store."""
    try:
        yield
    except MlflowException as exc:
        raise ConfigError(
            f"cannot read the MLflow store {masked(tracking_uri)!r}: {masked(exc.message)}; "
            f"check tracking_uri (e.g. sqlite:///runs/mlflow.db or http://host:5000)"
        ) from exc
