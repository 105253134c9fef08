"""A rerun in which no cell runs leaves the report as it is when it was made from the same runs, settings
and code (its manifest.json says so), and rewrites it when anything of that differs or a file of it is
missing or changed (issue 28)."""

import json

import pytest

from bncbench import tracking
from bncbench.app.config import compose
from bncbench.app.runner import run_cell
from bncbench.app.sweep import destination_of, run_plan

CELLS = ["experiment=smoke", "experiment.datasets=[sklearn-iris,sklearn-wine]",
         "experiment.models=[nb_laplace,nb_m_estimate]", "experiment.comparisons=[{a:nb_m_estimate,b:nb_laplace}]",
         "executor.n_jobs=1"]


@pytest.fixture(scope="module")
def store(tmp_path_factory, new_store):
    """A store in which every cell of ``CELLS`` is finished; returns its tracking URI."""
    root = tmp_path_factory.mktemp("finished")
    uri = new_store(root)
    composed = compose([*CELLS, f"tracking_uri={uri}"])
    tracking.prepare_experiment(tracking.open_store(uri), "smoke", str(root / "artifacts"))
    for cell in composed.plan.cells:
        assert run_cell(cell, destination_of(composed.settings, composed.plan)).status == "finished"
    return uri


@pytest.fixture
def rerun(store, tmp_path, capsys):
    """``rerun(*overrides)``: ``bncbench run`` of ``CELLS`` (all finished) with the report in ``tmp_path``;
    returns its line about the report."""

    def run(*overrides: str) -> str:
        composed = compose([*CELLS, f"tracking_uri={store}", f"report_dir={tmp_path}", *overrides])
        assert run_plan(composed, "bncbench run") == 0
        out = capsys.readouterr().out
        assert "0 run, 4 skipped (finished before)" in out
        (line,) = [line for line in out.splitlines() if line.startswith("bncbench: report ")]
        return line

    return run


def files(place) -> dict:
    """Each file of the report: its modification time and bytes."""
    return {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in place.rglob("*") if path.is_file()}


def test_a_report_made_from_the_same_runs_settings_and_code_is_left_as_it_is(rerun, tmp_path):
    place = tmp_path / "smoke"
    assert rerun() == f"bncbench: report written to {place}"
    manifest = json.loads((place / "manifest.json").read_text())
    assert set(manifest["files"]) >= {"README.md", "results.csv", "wdl.md", "figures/scatter_rmse_nb_m_estimate_vs_nb_laplace.png"}
    before = files(place)
    assert rerun() == f"bncbench: report unchanged: {place}"
    assert files(place) == before


def test_a_report_that_differs_from_what_would_be_written_is_written_again(rerun, tmp_path):
    """Each change in turn: a deleted file, an edited one, a deleted manifest, a report setting."""
    place = tmp_path / "smoke"
    rerun()
    written = files(place)
    changes = {
        "a deleted file": lambda: (place / "figures" / "scatter_rmse_nb_m_estimate_vs_nb_laplace.png").unlink(),
        "an edited file": lambda: (place / "wdl.md").write_text("mine"),
        "a deleted manifest": lambda: (place / "manifest.json").unlink(),
    }
    for change, make in changes.items():
        make()
        assert rerun() == f"bncbench: report written to {place}", change
        again = files(place)
        assert {path: data for path, (_, data) in again.items()} == {path: data for path, (_, data) in written.items()}
        assert all(again[path][0] > written[path][0] for path in written), change
        written = again
    assert rerun("report.round=2") == f"bncbench: report written to {place}"
    assert "report.round=2" in (place / "README.md").read_text()
    assert rerun("report.round=2") == f"bncbench: report unchanged: {place}"


def test_a_new_run_in_the_store_makes_the_report_be_written_again(rerun, store, tmp_path):
    """Every finished run of the experiment counts: here one of a cell outside the plan."""
    place = tmp_path / "smoke"
    rerun()
    other = compose(["experiment=smoke", "experiment.datasets=[sklearn-iris]", "experiment.models=[tan_laplace]",
                     "experiment.comparisons=[]", f"tracking_uri={store}"])
    assert run_cell(other.plan.cells[0], destination_of(other.settings, other.plan)).status == "finished"
    assert rerun() == f"bncbench: report written to {place}"
