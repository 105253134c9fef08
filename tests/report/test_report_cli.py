"""``bncbench report``: composes the project's config and writes the report."""

import os
import subprocess
import sys
from pathlib import Path

import bncbench
from bncbench.app.cli import main


def test_cli_writes_report_of_composed_experiment(store, tmp_path, capsys):
    uri, _ = store
    assert main(["report", "experiment=smoke", f"tracking_uri={uri}", f"report_dir={tmp_path}"]) == 0
    assert capsys.readouterr().out == (
        f"report written to {tmp_path / 'smoke'}\n"
        "bncbench: 2 of the 18 cells of this configuration have a finished run; to report only the cells a subset "
        "run made, give its overrides (experiment.datasets=[...] experiment.models=[...]).\n"
    )
    lines = (tmp_path / "smoke" / "wdl.md").read_text().splitlines()
    assert lines[-7:] == [
        "| comparison | zero_one_loss | rmse | log_loss |",
        "| --- | --- | --- | --- |",
        "| nb_m_estimate vs nb_laplace |" + " 1–0–0 (p = 1, 2 missing) |" * 3,
        "| tan_m_estimate vs tan_laplace |" + " 0–0–0 (p = 1, 3 missing) |" * 3,
        "| kdb1_m_estimate vs kdb1_laplace |" + " 0–0–0 (p = 1, 3 missing) |" * 3,
        "| tan_m_estimate vs nb_m_estimate |" + " 0–0–0 (p = 1, 3 missing) |" * 3,
        "| kdb1_m_estimate vs nb_m_estimate |" + " 0–0–0 (p = 1, 3 missing) |" * 3,
    ]


def test_cli_user_error_is_one_message(tmp_path, capsys):
    missing = tmp_path / "none.db"
    assert main(["report", "experiment=smoke", f"tracking_uri=sqlite:///{missing}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bncbench: error: no MLflow store at {missing}")
    assert not missing.exists()


def test_python_m_exit_code_and_no_traceback():
    root = Path(bncbench.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "bncbench", "report", "experiment=nope"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("bncbench: error: unknown experiment 'nope'; valid experiment names: ")
    assert "Traceback" not in done.stderr


def test_a_report_of_other_cells_replaced_beside_the_store_is_said(store, tmp_path, capsys, monkeypatch):
    """`bncbench report experiment=kdb` after a subset run replaced that report with the whole configuration's, 472
    of its 476 cells missing, without a word (issue 42)."""
    uri, _ = store
    monkeypatch.chdir(tmp_path)
    place = [f"tracking_uri={uri}", "runs_dir=runs"]
    subset = ["experiment=smoke", "experiment.datasets=[sklearn-iris]", "experiment.models=[nb_m_estimate,nb_laplace]",
              "experiment.comparisons=[{a: nb_m_estimate, b: nb_laplace}]", *place]
    assert main(["report", *subset]) == 0
    assert capsys.readouterr().out == "report written to runs/reports/smoke\n"  # every cell of it has a run
    assert main(["report", "experiment=smoke", *place]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "bncbench: 2 of the 18 cells of this configuration have a finished run; to report only the cells a subset "
        "run made, give its overrides (experiment.datasets=[...] experiment.models=[...]).")
    assert main(["report", "experiment=smoke", "experiment.datasets=[sklearn-iris]", "experiment.models=[nb_laplace]",
                 "experiment.comparisons=[]", *place]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "bncbench: 1 of the 1 cells of this configuration have a finished run; it replaced the report of 2 cells that "
        "was there.")
