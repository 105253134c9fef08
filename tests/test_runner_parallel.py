"""Parallel cells on one machine: how many numba threads each cell gets, and that results do not
depend on it; the progress lines of a sweep and of a long fit."""

import io
import os
import re
import subprocess
import sys
import time
from functools import partial

import numba
import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.hdp import estimator as hdp
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.bnc import progress
from bncbench.bnc.progress import CHUNK_SECONDS, iteration_chunks, task
from bncbench.core.terminal import duration
from bncbench.app.executors import InProcess, LocalProcesses, cells_at_once, make_executor
from bncbench.app.progress import SweepProgress
from bncbench.app.schema import LocalExecutor, SubmititLocalExecutor
from bncbench.app.sweep import numba_threads
from bncbench.protocol.cell import Cell, CrossValidationSettings
from bncbench.protocol.cross_validation import cross_validate


@pytest.mark.parametrize(
    ("setting", "executor", "cells", "cores", "parallel", "threads"),
    [
        ("auto", LocalExecutor("local", -1), 100, 8, 8, 1),  # the default: one process per core
        ("auto", LocalExecutor("local", 2), 100, 8, 2, 4),
        ("auto", LocalExecutor("local", -2), 100, 8, 7, 1),
        ("auto", LocalExecutor("local", -1), 3, 8, 3, 2),  # fewer cells than cores
        ("auto", LocalExecutor("local", 16), 100, 8, 16, 1),
        ("auto", LocalExecutor("local", 1), 100, 8, 1, 8),  # one cell at a time
        ("auto", SubmititLocalExecutor("submitit_local", 60, 1, array_parallelism=64), 2, 8, 2, 4),  # every job at once
        (3, LocalExecutor("local", -1), 100, 8, 8, 3),
    ],
)
def test_threads_per_cell_share_the_cores(setting, executor, cells, cores, parallel, threads):
    assert cells_at_once(executor, cells, cores) == parallel
    assert numba_threads(setting, parallel, cores) == threads


def test_one_job_runs_the_cells_in_this_process(tmp_path):
    assert isinstance(make_executor(LocalExecutor("local", 1), 10, 8, tmp_path), InProcess)
    assert isinstance(make_executor(LocalExecutor("local", -1), 10, 8, tmp_path), LocalProcesses)
    assert isinstance(make_executor(LocalExecutor("local", -1), 1, 8, tmp_path), InProcess)


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


def _cells(*names):
    spec = {"name": "d", "source": "sklearn"}
    return [Cell.of(d, m, spec, {"structure": "nb", "estimator": "mle"}, CrossValidationSettings(), None)
            for d, m in (name.split("/") for name in names)]


def test_sweep_progress_estimates_the_time_left_from_the_cost_model(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (3.94, 3.0, 2.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    cells = _cells("a/m", "b/m", "c/m", "d/m")
    predicted = {cell.key: seconds for cell, seconds in zip(cells, [10.0, 20.0, 30.0, 40.0])}
    running = []
    progress = SweepProgress(cells, predicted, workers=2, running=lambda: running, stream=Terminal())
    assert progress.seconds_left(now=0.0) == pytest.approx(100.0 / 2)  # nothing done: the model alone
    progress.done(cells[0], "finished", 10.0 + 2 * 60.0)  # this machine took 3x (with the prior's 60 s)
    running.append(cells[1])
    # factor (130 + 60) / (10 + 60); c and d waiting over 2 workers, b started just now
    factor = 190.0 / 70.0
    assert progress.seconds_left(now=0.0) == pytest.approx(70.0 * factor / 2 + 20.0 * factor)
    assert progress.seconds_left(now=15.0) == pytest.approx(70.0 * factor / 2 + 20.0 * factor - 15.0)
    progress.done(cells[2], "skipped", 0.0)  # takes no time, teaches nothing of the speed
    line = progress.line(now=progress._start + 65.0)
    assert line.startswith("bncbench: 2/4 cells done; running: b/m; 1 min 5 s elapsed, about ")
    assert "ETA" in line
    # an ETA far from the plan's says so, and what the machine's load is (issue 42: twice the plan, no word)
    assert line.endswith("; the cells done took 2.7x the time the plan predicted (load average 3.9 on 2 cores)")
    progress.done(cells[1], "finished", 20.0)
    progress._actual, progress._expected = 100.0, 90.0  # within SLOWER_SAID of the plan: nothing said
    assert progress.line(now=progress._start + 65.0).endswith(")")


def test_sweep_progress_prints_on_a_terminal_when_cells_end(monkeypatch):
    monkeypatch.setattr("bncbench.app.progress.INTERVAL", 0.01)
    cells = _cells("a/m", "b/m")
    terminal, log = Terminal(), io.StringIO()
    shown = SweepProgress(cells, {}, 1, lambda: [], stream=terminal).start()
    quiet = SweepProgress(cells, {}, 1, lambda: [], stream=log).start()
    for progress in (shown, quiet):
        progress.done(cells[0], "finished", 1.0)
    time.sleep(0.3)
    for progress in (shown, quiet):
        progress.done(cells[1], "failed", 1.0)
    time.sleep(0.3)
    shown.stop()
    quiet.stop()
    lines = terminal.getvalue().splitlines()
    assert lines[0].startswith("bncbench: 1/2 cells done; ") and "ETA" in lines[0]
    assert lines[-1].startswith("bncbench: 2/2 cells done (1 failed); ")
    assert log.getvalue() == ""  # a log gets a line every LOG_INTERVAL only


def test_progress_lines_name_their_task():
    terminal = Terminal()
    with task("vote/nb_hdp fold 3/10"):
        list(iteration_chunks(100, "HDP sampler", stream=terminal, interval=0))
    list(iteration_chunks(100, "HDP sampler", stream=terminal, interval=0))
    lines = terminal.getvalue().splitlines()
    assert re.match(r"HDP sampler \(vote/nb_hdp fold 3/10\): \d+/100 iterations, ", lines[0])
    assert lines[-1].startswith("HDP sampler: 73/100 iterations, ")


class Clock:
    """A ``time.monotonic`` (and ``time.process_time``) that moves only when told, so chunk sizes do not
    depend on the machine's load."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_iteration_chunks_cover_the_loop_in_chunks_of_the_time_asked_on_a_terminal_or_not(monkeypatch):
    log = io.StringIO()
    chunks = list(iteration_chunks(5000, "HDP sampler", stream=log, interval=0))
    assert chunks[:4] == [(0, 1), (1, 9), (9, 73), (73, 585)]  # a quick loop: GROWTH times larger each
    assert chunks[-1][1] == 5000 and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert log.getvalue() == ""
    clock = Clock()
    with monkeypatch.context() as patched:
        patched.setattr(progress.time, "process_time", clock)
        slow = []
        for first, last in iteration_chunks(200, "HDP sampler", stream=log, seconds=20 * 2**-10):
            clock.now += 2**-10 * (last - first)  # about 1 ms an iteration (exact in floating point): chunks of 20
            slow.append(last - first)
    assert slow[:3] == [1, 8, 20] and set(slow[3:-1]) == {20} and sum(slow) == 200
    terminal = Terminal()
    chunks = list(iteration_chunks(5000, "HDP sampler", stream=terminal, interval=0))
    lines = terminal.getvalue().splitlines()
    assert len(lines) == len(chunks) - 2 and lines[0].startswith(f"HDP sampler: {chunks[1][1]}/5000 iterations, ")
    quick = Terminal()
    list(iteration_chunks(5000, "HDP sampler", stream=quick))
    assert quick.getvalue() == ""  # done within the interval: nothing to show


def test_a_busy_machine_does_not_shrink_the_ranges(monkeypatch):
    """Beside other jobs a range takes 50 times longer on the clock for the same CPU time: the ranges stay
    those of a quiet machine (sized by CPU time), not one iteration each (issue 44)."""
    wall, cpu = Clock(), Clock()
    monkeypatch.setattr(progress.time, "monotonic", wall)
    monkeypatch.setattr(progress.time, "process_time", cpu)
    sizes = []
    for first, last in iteration_chunks(200, "HDP sampler", stream=io.StringIO(), seconds=20 * 2**-10):
        cpu.now += 2**-10 * (last - first)
        wall.now += 50 * 2**-10 * (last - first)
        sizes.append(last - first)
    assert sizes[:3] == [1, 8, 20] and set(sizes[3:-1]) == {20}


def test_the_time_left_is_that_of_the_speed_now_not_of_a_slow_first_iteration(monkeypatch):
    """A warm-up's first iteration, compiling its kernel, took 18 s: the line promised 15 minutes for a fit of one
    second (issue 42). The first range prints nothing, and the time left is at the last range's speed."""
    clock, terminal = Clock(), Terminal()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    monkeypatch.setattr(progress.time, "process_time", clock)
    for first, last in iteration_chunks(50, "HDP sampler", stream=terminal, interval=0, seconds=0.02):
        clock.now += 18.0 if first == 0 else 0.002 * (last - first)
    lines = terminal.getvalue().splitlines()
    assert lines[0] == "HDP sampler: 2/50 iterations, 18 s elapsed, about 0 s left"
    assert all(line.endswith("about 0 s left") for line in lines)


@pytest.mark.parametrize("seconds", [0, CHUNK_SECONDS])
def test_an_hdp_fit_in_chunks_gives_the_numbers_of_one_run(monkeypatch, seconds):
    wine = load_dataset(WINE, None)
    X = MDLDiscretizer().fit_transform(wine.X, wine.y)

    def fit():
        params = {"iterations": 430}  # concentration updates every 5th, burn-in 43: chunks cut across both
        return BNClassifier(structure="tan", estimator="hdp", estimator_params=params, random_state=0).fit(X, wine.y)

    monkeypatch.setattr(hdp, "iteration_chunks", lambda total, label: [(0, total)])
    plain = fit()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(hdp, "iteration_chunks", partial(iteration_chunks, interval=0, seconds=seconds))
    chunked = fit()  # seconds=0: one iteration a call
    first_line = re.match(r"HDP sampler: (\d+)/430 iterations, ", terminal.getvalue())
    assert first_line and int(first_line[1]) >= 2  # the first range, one iteration, prints no line
    for tree_plain, tree_chunked in zip(plain.tables_, chunked.tables_, strict=True):
        for level_plain, level_chunked in zip(tree_plain, tree_chunked, strict=True):
            np.testing.assert_array_equal(level_plain, level_chunked)
    np.testing.assert_array_equal(plain.estimator_.concentration_trace_, chunked.estimator_.concentration_trace_)
    np.testing.assert_array_equal(plain.predict_proba(X), chunked.predict_proba(X))


def test_a_one_thread_numba_pool_runs_the_cells_in_this_process(tmp_path, cli_env):
    """``NUMBA_NUM_THREADS=1`` (the papers' one cell per core) with the cells in the launching process,
    whose share of the cores would ask numba for more threads than its pool has: the cells run on one."""
    args = [
        sys.executable, "-m", "bncbench", "experiment.datasets=[sklearn-iris]", "experiment.models=[nb_laplace]",
        "experiment.comparisons=[]", "executor.n_jobs=1", f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
    ]
    done = subprocess.run(args, cwd=tmp_path, env={**cli_env, "NUMBA_NUM_THREADS": "1"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].endswith("1 cells, 1 run, 0 skipped (finished before), 0 failed.")
