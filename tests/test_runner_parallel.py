"""Parallel cells on one machine: how many numba threads each cell gets, and that results do not
depend on it; the progress lines of a sweep and of a long fit."""

import io
import sys
import time
from collections import Counter
from functools import partial

import numba
import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.hdp import estimator as hdp
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.bnc.progress import duration, iteration_chunks, task
from bncbench.app.progress import CellProgress, mark_cell_done
from bncbench.app.runner import cross_validate
from bncbench.app.sweep import numba_threads, parallel_cells

JOBLIB = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
BASIC = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
SUBMITIT_LOCAL = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"
SUBMITIT_SLURM = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"


@pytest.mark.parametrize(
    ("setting", "launcher", "cells", "cores", "parallel", "threads"),
    [
        ("auto", {"_target_": JOBLIB, "n_jobs": -1}, 100, 8, 8, 1),  # the default: one process per core
        ("auto", {"_target_": JOBLIB, "n_jobs": 2}, 100, 8, 2, 4),
        ("auto", {"_target_": JOBLIB, "n_jobs": -2}, 100, 8, 7, 1),
        ("auto", {"_target_": JOBLIB, "n_jobs": -1}, 3, 8, 3, 2),  # fewer cells than cores
        ("auto", {"_target_": JOBLIB, "n_jobs": 16}, 100, 8, 16, 1),
        ("auto", {"_target_": BASIC}, 100, 8, 1, 8),  # one cell at a time
        ("auto", {"_target_": SUBMITIT_LOCAL}, 2, 8, 2, 4),  # every job at once
        ("auto", {"_target_": SUBMITIT_SLURM, "cpus_per_task": 4}, 100, 4, 1, 4),  # the job's own cores
        (3, {"_target_": JOBLIB, "n_jobs": -1}, 100, 8, 8, 3),
    ],
)
def test_threads_per_cell_share_the_cores(setting, launcher, cells, cores, parallel, threads):
    assert parallel_cells(launcher, cells, cores) == parallel
    assert numba_threads(setting, launcher, cells, cores) == threads


WINE = {"name": "sklearn-wine", "source": "sklearn", "openml_id": None, "openml_target": None, "drop": []}


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize(
    "model",
    [
        {"structure": "skdb", "k": 2, "structure_params": {}, "estimator": "m_estimate", "estimator_params": {}},
        {"structure": "tan", "k": 0, "structure_params": {}, "estimator": "hdp", "estimator_params": {"iterations": 300}},
    ],
    ids=["skdb_m_estimate", "tan_hdp"],
)
def test_a_cells_results_do_not_depend_on_the_threads(model):
    wine = load_dataset(WINE, None)
    before = numba.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(cross_validate(wine, model, repetitions=2, folds=2, seed=3))
    finally:
        numba.set_num_threads(before)
    one, two = results
    losses = ["zero_one_loss", "rmse", "log_loss"]
    pd.testing.assert_frame_equal(one.metrics[losses], two.metrics[losses], check_exact=True)
    pd.testing.assert_frame_equal(one.predictions, two.predictions, check_exact=True)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_duration():
    assert [duration(s) for s in (4.6, 65, 3725, 90000)] == ["5 s", "1 min 5 s", "1 h 2 min", "1 d 1 h"]


def test_cell_progress_counts_markers_and_estimates_the_time_left(tmp_path):
    progress = CellProgress(tmp_path, total=10, stream=Terminal())
    assert progress.counts() == Counter()
    for job, status in enumerate(["skipped", "skipped", "finished", "failed"]):
        mark_cell_done(tmp_path, job, status)
    counts = progress.counts()
    assert counts == Counter(skipped=2, finished=1, failed=1)
    now = time.mktime((2030, 1, 1, 12, 0, 0, 0, 0, -1))
    # 2 cells ran in 60 s (the skipped ones took none): 6 left, 3 min
    assert progress.line(counts, 60, now=now) == (
        "bncbench: 4/10 cells done (1 failed), 1 min 0 s elapsed, ETA 12:03 (about 3 min 0 s left)"
    )
    assert progress.line(Counter(skipped=3), 1) == "bncbench: 3/10 cells done, 1 s elapsed"  # no rate yet
    assert progress.line(Counter(finished=10), 5) == "bncbench: 10/10 cells done, 5 s elapsed"


def test_cell_progress_prints_on_a_terminal_only(tmp_path):
    terminal, log = Terminal(), io.StringIO()
    shown = CellProgress(tmp_path, total=2, stream=terminal, interval=0.01).start()
    quiet = CellProgress(tmp_path, total=2, stream=log, interval=0.01).start()
    mark_cell_done(tmp_path, 0, "finished")
    time.sleep(0.2)
    mark_cell_done(tmp_path, 1, "finished")
    shown.stop()
    quiet.stop()
    lines = terminal.getvalue().splitlines()
    assert lines[0].startswith("bncbench: 1/2 cells done, ") and "ETA" in lines[0]
    assert lines[-1].startswith("bncbench: 2/2 cells done, ")
    assert len(lines) == len(set(lines))  # a line only when the count changes
    assert log.getvalue() == ""


def test_progress_lines_name_their_task():
    terminal = Terminal()
    with task("vote/nb_hdp fold 3/10"):
        list(iteration_chunks(100, "HDP sampler", stream=terminal, interval=0))
    list(iteration_chunks(100, "HDP sampler", stream=terminal, interval=0))
    lines = terminal.getvalue().splitlines()
    assert lines[0].startswith("HDP sampler (vote/nb_hdp fold 3/10): 5/100 iterations, ")
    assert lines[-1].startswith("HDP sampler: 95/100 iterations, ")


def test_iteration_chunks_are_one_call_unless_on_a_terminal():
    log = io.StringIO()
    assert list(iteration_chunks(5000, "HDP sampler", stream=log, interval=0)) == [(0, 5000)]
    assert log.getvalue() == ""
    terminal = Terminal()
    chunks = list(iteration_chunks(5000, "HDP sampler", stream=terminal, interval=0))
    assert len(chunks) == 20 and chunks[0][0] == 0 and chunks[-1][1] == 5000
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    lines = terminal.getvalue().splitlines()
    assert len(lines) == 19 and lines[0].startswith("HDP sampler: 250/5000 iterations, ")
    quick = Terminal()
    assert len(list(iteration_chunks(5000, "HDP sampler", stream=quick))) == 20
    assert quick.getvalue() == ""  # done within the interval: nothing to show


def test_an_hdp_fit_in_chunks_on_a_terminal_gives_the_numbers_of_one_run(monkeypatch):
    wine = load_dataset(WINE, None)
    X = MDLDiscretizer().fit_transform(wine.X, wine.y)

    def fit():
        params = {"iterations": 430}  # chunks of 21 or 22 iterations: concentration updates every 5th
        return BNClassifier(structure="tan", estimator="hdp", estimator_params=params, random_state=0).fit(X, wine.y)

    plain = fit()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(hdp, "iteration_chunks", partial(iteration_chunks, interval=0))
    chunked = fit()
    assert terminal.getvalue().splitlines()[0].startswith("HDP sampler: 22/430 iterations, ")
    for tree_plain, tree_chunked in zip(plain.tables_, chunked.tables_, strict=True):
        for level_plain, level_chunked in zip(tree_plain, tree_chunked, strict=True):
            np.testing.assert_array_equal(level_plain, level_chunked)
    np.testing.assert_array_equal(plain.estimator_.concentration_trace_, chunked.estimator_.concentration_trace_)
    np.testing.assert_array_equal(plain.predict_proba(X), chunked.predict_proba(X))
