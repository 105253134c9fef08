"""Every run traceable: what a run records, and resume and the report when a dataset file changes.

Cells run on a copy of the shared ``iris`` in a temporary data directory, logged to a real SQLite
store, and are read back by the report composed from the same overrides.
"""

import gzip
import json
import os
import shutil
import subprocess

import numpy
import pandas as pd
import pytest

import bncbench
from bncbench.tracking import provenance
from bncbench import tracking
from bncbench.app.config import compose
from bncbench.app.sweep import destination_of
from bncbench.report import plan_runs, write_report
from bncbench.app.runner import run_cell

OTHER_COMMIT = "0" * 40
VERSIONS = ("python", "bncbench", "numpy", "numba", "scikit-learn", "scipy", "pandas", "pyarrow", "mlflow", "xgboost")


def git(directory, *args) -> str:
    return subprocess.run(
        ["git", "-C", str(directory), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_versions_name_the_installed_distributions_and_what_is_absent(monkeypatch):
    from importlib import metadata

    found = provenance.versions()
    assert list(found) == list(VERSIONS)
    assert found["xgboost"] == metadata.version("xgboost-cpu")  # what pyproject.toml installs
    monkeypatch.setitem(provenance.PACKAGES, "no-such-package", "no_such_module")
    assert provenance.versions()["no-such-package"] == "not installed"


def test_the_git_state_of_a_checkout_and_of_code_outside_one(tmp_path):
    repo = tmp_path / "repo"
    package = repo / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    clean = provenance.git_state(package)
    assert (clean.commit, clean.dirty) == (git(repo, "rev-parse", "HEAD"), False)

    (package / "__init__.py").write_text("changed = True\n")
    assert provenance.git_state(package).dirty is True

    installed = repo / "venv" / "site-packages" / "pkg"  # a copy some repository holds, untracked
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    untracked = provenance.git_state(installed)
    assert (untracked.commit, untracked.dirty) == ("unknown", None) and "not tracked" in untracked.why

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert provenance.git_state(elsewhere).commit == "unknown"


@pytest.fixture
def iris_store(shared_data_dir, tmp_path):
    """A data directory holding a copy of the shared iris and its schema entry."""
    store = tmp_path / "data"
    store.mkdir()
    shutil.copyfile(shared_data_dir / "iris.csv.gz", store / "iris.csv.gz")
    schema = json.loads((shared_data_dir / "schema.json").read_text())
    (store / "schema.json").write_text(json.dumps({"iris": schema["iris"]}))
    return store


@pytest.fixture
def experiment(iris_store, tmp_path, new_store):
    """``(overrides, run)``: an experiment of one cell, iris x nb_laplace, on ``iris_store``;
    ``run()`` runs the cell as a job of the sweep would and returns ``(status, client, experiment id)``."""
    overrides = [
        "experiment.datasets=[iris]",
        "experiment.models=[nb_laplace]",
        "experiment.comparisons=[]",
        f"data_dir={iris_store}",
        f"tracking_uri={new_store(tmp_path / 'store')}",
        f"artifact_location={tmp_path / 'artifacts'}",
        f"report_dir={tmp_path / 'reports'}",
    ]

    def run():  # composed anew, as a new sweep does: the data digest is the file's as it is now
        composed = compose(overrides)
        client = tracking.open_store(composed.settings.tracking_uri)
        experiment_id = tracking.prepare_experiment(client, "smoke", None)
        outcome = run_cell(composed.plan.cells[0], destination_of(composed.settings, composed.plan))
        return outcome.status, client, experiment_id

    return overrides, run


def report(overrides):
    """The report of the configuration ``overrides`` compose: results.csv and README.md."""
    composed = compose(overrides)
    out = write_report(composed.plan, plan_runs(composed.plan, composed.settings.tracking_uri), composed.settings.report_dir)
    return pd.read_csv(out / "results.csv"), (out / "README.md").read_text()


def test_a_run_records_the_code_its_environment_the_machine_and_the_data(experiment, iris_store):
    status, client, experiment_id = experiment[1]()
    assert status == "finished"
    (run,) = client.search_runs([experiment_id])
    tags = run.data.tags
    checkout = os.path.dirname(os.path.dirname(bncbench.__file__))
    in_git = subprocess.run(["git", "-C", checkout, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if in_git.returncode == 0 and os.path.samefile(in_git.stdout.strip(), checkout):  # a checkout, or -e install
        assert tags["mlflow.source.git.commit"] == git(checkout, "rev-parse", "HEAD")
        dirty = bool(git(checkout, "status", "--porcelain", "--untracked-files=no"))
        assert tags["mlflow.source.git.dirty"] == str(dirty).lower()
    else:  # installed into site-packages (as in CI): no commit to guess
        assert tags["mlflow.source.git.commit"] == tags["mlflow.source.git.dirty"] == provenance.UNKNOWN
    assert tags["mlflow.source.type"] == "LOCAL"
    assert {f"version.{name}" for name in VERSIONS} <= set(tags)
    assert tags["version.numpy"] == numpy.__version__
    assert tags["cpu.count"] == str(os.cpu_count())
    assert tags["cpu.affinity"] == str(len(os.sched_getaffinity(0)))
    assert tags["cpu.model"] and "cores" in tags["mlflow.note.content"]

    (data,) = run.inputs.dataset_inputs
    assert data.dataset.name == "iris" and data.dataset.digest == tags["data_digest"]
    assert json.loads(data.dataset.source) == {"uri": str(iris_store / "iris.csv.gz")}
    class_column = json.loads(data.dataset.schema)["mlflow_colspec"][-1]
    assert class_column == {"type": "string", "name": "class", "required": True}
    assert {tag.key: tag.value for tag in data.tags}["mlflow.data.context"] == "cross-validation"


def test_a_changed_dataset_file_runs_the_cell_again_and_the_report_reads_the_new_run(experiment, iris_store):
    overrides, run = experiment
    status, client, experiment_id = run()
    (first,) = client.search_runs([experiment_id])
    client.set_tag(first.info.run_id, "mlflow.source.git.commit", OTHER_COMMIT)  # as if older code ran it
    assert run()[0] == "skipped"  # another code version is no reason to run again
    results, readme = report(overrides)
    assert list(results["run_id"]) == [first.info.run_id]
    assert f"- git commit: {OTHER_COMMIT}" in readme

    original = (iris_store / "iris.csv.gz").read_bytes()
    rows = gzip.decompress(original).splitlines(keepends=True)
    (iris_store / "iris.csv.gz").write_bytes(gzip.compress(b"".join(rows[:-10])))
    assert run()[0] == "finished"
    second = next(r for r in client.search_runs([experiment_id]) if r.info.run_id != first.info.run_id)
    assert second.data.tags["data_digest"] != first.data.tags["data_digest"]
    assert second.data.tags["cfg_hash"] == first.data.tags["cfg_hash"]
    results, readme = report(overrides)
    assert list(results["run_id"]) == [second.info.run_id]
    assert (
        f"Left out: 1 finished runs of these cells with other settings or data: 1 with "
        f"data_digest={first.data.tags['data_digest'][:8]} (another version of the dataset file)."
    ) in readme
    assert f"- data digests: iris {second.data.tags['data_digest'][:8]}\n" in readme

    (iris_store / "iris.csv.gz").write_bytes(original)  # back as it was: the first run holds again
    assert run()[0] == "skipped"
    results, readme = report(overrides)
    assert list(results["run_id"]) == [first.info.run_id]
    assert len(client.search_runs([experiment_id])) == 2
