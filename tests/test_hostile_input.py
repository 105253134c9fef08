"""Hostile or careless input: nothing outside the place the user named is read or written, and a store
that would lose or mix results is refused. Each case is one clear message, never a silent result."""

import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bncbench import tracking
from bncbench.__main__ import main
from bncbench.app.config import compose
from bncbench.data import Dataset, load_dataset
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.names import check_path_name
from bncbench.core.uris import masked
from bncbench.data.store import write_store_table
from bncbench.protocol.cross_validation import cross_validate

NB = {"structure": "nb", "k": None, "structure_params": {}, "estimator": "laplace", "estimator_params": {}}

BAD_NAMES = ["..", ".", "../outside/secret", "/etc/passwd", "a/b", "a\\b", ".hidden", "", "two\nlines", "tab\there",
             "nul\x00", "x" * 201, "é" * 101, "日本" * 34, "lone\udc80surrogate"]  # 202 and 204 bytes in UTF-8


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_that_is_a_path_is_refused(name):
    with pytest.raises(ConfigError, match="it becomes a file or folder name"):
        check_path_name("dataset", name)


@pytest.mark.parametrize("name", ["kr-vs-kp", "waveform-5000", "sklearn-iris", "kdb5_hdp_level_it500", "données",
                                  "v1.2", "é" * 100, "x" * 200])
def test_plain_names_pass(name):
    assert check_path_name("dataset", name) == name


@pytest.mark.parametrize("name", ["..", ".", "../../tmp", "/tmp/elsewhere", "a/b"])
def test_an_experiment_name_that_is_a_path_stops_the_command(name, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("mine")
    monkeypatch.setattr(sys, "argv", ["bncbench", f"experiment.name='{name}'"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert "experiment.name" in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


@pytest.mark.parametrize("name", ["../outside/secret", "/etc/hostname", "sub/dir"])
def test_a_dataset_name_outside_the_data_directory_is_neither_read_nor_fetched(name, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv.gz").write_bytes(b"")
    spec = {"name": name, "source": "store", "openml_id": 61, "openml_target": None, "drop": []}
    with pytest.raises(ConfigError, match="it becomes a file or folder name"):
        load_dataset(spec, store)
    assert list(store.iterdir()) == []  # nothing fetched or written


def test_an_in_memory_or_empty_sqlite_uri_is_refused(tmp_path):
    for uri in ("sqlite://", "sqlite:///:memory:", "sqlite:///file::memory:?mode=memory&cache=shared"):
        with pytest.raises(ConfigError, match="in-memory SQLite database: the results would be lost"):
            tracking.open_store(uri)


def test_another_applications_sqlite_database_is_left_untouched(tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as database:
        database.execute("CREATE TABLE users (id INTEGER)")
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="database of another application .*tables users"):
        tracking.open_store(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_a_new_store_is_announced_with_the_stores_beside_it(tmp_path, capsys):
    tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert f"a new MLflow store at {tmp_path / 'mlflow.db'}" in capsys.readouterr().err
    tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")  # an existing store: said nothing
    assert capsys.readouterr().err == ""
    tracking.open_store(f"sqlite:///{tmp_path / 'mlfow.db'}")  # a typo
    assert f"other stores in {tmp_path}: mlflow.db" in capsys.readouterr().err


def _plant_link(lock: Path, target: Path) -> None:
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.symlink_to(target)


@pytest.mark.parametrize("target_exists", [True, False])
@pytest.mark.parametrize("where", ["tracking store", "dataset store"])
def test_a_link_planted_at_a_lock_file_is_never_followed(tmp_path, where, target_exists):
    target = tmp_path / "precious.txt"
    if target_exists:
        target.write_text("precious")
    if where == "tracking store":
        _plant_link(tmp_path / "runs" / ".mlflow.db.lock", target)
        with pytest.raises(ConfigError, match="is a symbolic link, where bncbench keeps a lock file of its own"):
            tracking.open_store(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    else:
        _plant_link(tmp_path / "data" / ".schema.json.lock", target)
        frame = pd.DataFrame({"a": ["x", "y"], "class": ["p", "q"]})
        entry = {"attributes": [{"name": "a", "type": "nominal", "values": ["x", "y"]}],
                 "class": {"name": "class", "type": "nominal", "values": ["p", "q"]}}
        with pytest.raises(ConfigError, match="is a symbolic link"):
            write_store_table(tmp_path / "data", "d", frame, entry)
        assert not (tmp_path / "data" / "d.csv.gz").exists()
    assert (target.read_text() == "precious") if target_exists else not target.exists()  # neither cut nor made


def test_a_lock_file_is_never_truncated(tmp_path):
    lock = tmp_path / ".mlflow.db.lock"
    lock.write_text("left by someone")
    tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert lock.read_text() == "left by someone"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://alice:s3cret@host:5000", "http://alice:***@host:5000"),
        ("cannot open 'https://bob:p%40ss@h/x': refused", "cannot open 'https://bob:***@h/x': refused"),
        ("tracking_uri: http://:token@h", "tracking_uri: http://:***@h"),
        ("http://host:5000/path@x and sqlite:///a/b.db", "http://host:5000/path@x and sqlite:///a/b.db"),
        ("http://alice@host", "http://alice@host"),  # no password
        # tokens in the query, the path parameters and the fragment (issue 42), masked in any text
        ("cannot reach 'https://h/api?token=abc&x=1': refused", "cannot reach 'https://h/api?token=***&x=***': refused"),
        ("https://h/mlflow;jsessionid=abc/runs?k", "https://h/mlflow;jsessionid=***/runs?k"),
        ("https://h/#access_token=abc", "https://h/#***"),
        ("http://alice:s3cret@host:5000/x;a=b?c=d#e", "http://alice:***@host:5000/x;a=***?c=***#***"),
        ("sqlite:///runs/mlflow.db", "sqlite:///runs/mlflow.db"),
        ("Max retries exceeded with url: /api;sid=abc?token=abc (Caused", "Max retries exceeded with url: /api;sid=***?token=*** (Caused"),
        ("no file /data/a.csv or ./b/c.csv", "no file /data/a.csv or ./b/c.csv"),
    ],
)
def test_credentials_in_uris_are_masked(text, shown):
    assert masked(text) == shown


def test_a_dataset_that_stratified_folds_cannot_split_is_refused_with_the_reason():
    X = pd.DataFrame({"a": ["x", "y", "x"]})
    dataset = Dataset(name="tiny", X=X, y=pd.Series(["p", "q", "r"]), numeric=[])
    with pytest.raises(DatasetError, match=r"'tiny' has 3 rows and at most 1 per class .*cv.folds"):
        cross_validate(dataset, NB, repetitions=1, folds=2)


def test_classes_rarer_than_the_folds_are_part_of_the_protocol():
    X = pd.DataFrame({"a": np.arange(9) % 2})
    dataset = Dataset(name="rare", X=X, y=pd.Series(["p"] * 8 + ["q"]), numeric=[])
    assert len(cross_validate(dataset, NB, repetitions=1, folds=2).metrics) == 2



@pytest.mark.parametrize(
    ("override", "kind"),
    [("experiment.datasets=[../outside/secret]", "dataset"), ("experiment.models=['a/b']", "model"),
     ("experiment.datasets=['.hidden']", "dataset")],
)
def test_names_in_an_experiments_lists_that_are_paths_are_refused_before_running(override, kind):
    with pytest.raises(ConfigError, match=f"^{kind} .* it becomes a file or folder name"):
        compose([override])


@pytest.mark.parametrize(("answer", "created"), [("n", False), ("y", True)])
def test_on_a_terminal_a_new_store_beside_others_is_asked_for(answer, created, tmp_path):
    """A real pseudo-terminal as standard input, answered as a person would."""
    tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    primary, secondary = pty.openpty()
    script = f"from bncbench import tracking; tracking.open_store('sqlite:///{tmp_path / 'mlfow.db'}')"
    child = subprocess.Popen([sys.executable, "-c", script], stdin=secondary, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    os.close(secondary)
    os.write(primary, f"{answer}\n".encode())
    _, err = child.communicate(timeout=120)
    os.close(primary)
    assert (child.returncode == 0) == created, err
    assert (tmp_path / "mlfow.db").exists() == created
    if not created:
        assert "no store created at" in err


def test_a_store_another_process_holds_locked_is_waited_for_with_a_bound_then_said_in_one_line(tmp_path, monkeypatch):
    """Not sqlite3.OperationalError out of the command (issue 42)."""
    import time

    from bncbench.tracking import store

    tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], "
                               "isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); "
                               "time.sleep(60)", str(tmp_path / "mlflow.db")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(store, "LOCK_WAIT_SECONDS", 1.0)
        started = time.monotonic()
        with pytest.raises(ConfigError, match=r"could not be read \(database is locked\) after waiting 1 s: another "
                                              "process holds it locked; try again when it is done"):
            tracking.open_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
        assert time.monotonic() - started < 30
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_met_after_the_store_opened_is_one_line_from_the_command(capsys, monkeypatch):
    import sqlalchemy.exc
    from mlflow.exceptions import MlflowException

    from bncbench.app import cli

    def locked_report(*arguments):  # as cli.report, whatever its arguments
        try:
            try:
                raise sqlite3.OperationalError("database is locked")
            except sqlite3.OperationalError as err:
                raise sqlalchemy.exc.OperationalError("SELECT 1", {}, err) from err
        except sqlalchemy.exc.OperationalError as err:
            raise MlflowException(f"(sqlite3.OperationalError) {err.orig}") from err

    monkeypatch.setattr(cli, "report", locked_report)
    assert cli.main(["report", "experiment=smoke"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("bncbench: error: the SQLite store is locked by another process") and said.count("\n") == 1
