"""Each cell's run logs its peak resident memory and its CPU time, measured over that cell alone."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from bncbench.app.runner import run_cell
from bncbench.core import resources
from bncbench.core.resources import CellResources
from bncbench.tracking import tags as tag

LINUX = sys.platform.startswith("linux") and Path("/proc/self/clear_refs").exists()


def run_and_read(plan_cell, new_store, directory, dataset):
    """The logged run of ``dataset``'s NB cell (one repetition of 2 folds, in memory) in a new store."""
    uri = new_store(directory)
    cell, destination = plan_cell(dataset, "nb_m_estimate", f"tracking_uri={uri}",
                                  f"data_dir={directory.parent / 'data'}", "out_of_core.memory_gb=1000",
                                  "cv.repetitions=1")
    assert run_cell(cell, destination).status == "finished"
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(destination.experiment).experiment_id])
    return client, run


def test_a_cell_logs_its_cpu_time_and_its_own_peak_memory(plan_cell, new_store, tmp_path):
    """Run after the small cell, in the same process, the cell of ten times its rows has the larger peak: the
    high-water mark is reset at each cell's start. Each is one value for the cell, with no fold values."""
    client, small = run_and_read(plan_cell, new_store, tmp_path / "small", "synthetic-kdb2-1e4")
    _, large = run_and_read(plan_cell, new_store, tmp_path / "large", "synthetic-kdb2-1e5")
    for run in (small, large):
        assert run.data.metrics[tag.CPU_SECONDS] > 0
        assert tag.FOLD_PREFIX + tag.CPU_SECONDS not in run.data.metrics
    assert [m.step for m in client.get_metric_history(small.info.run_id, tag.CPU_SECONDS)] == [0]
    if not LINUX:
        assert tag.PEAK_RSS not in small.data.metrics
        return
    assert small.data.metrics[tag.PEAK_RSS] > 0
    # the 1e5 rows' 20 attributes take tens of MB more than the 1e4 rows' in memory
    assert large.data.metrics[tag.PEAK_RSS] > small.data.metrics[tag.PEAK_RSS] + 20 * 2**20


@pytest.mark.skipif(not LINUX, reason="needs /proc/self/clear_refs")
def test_the_peak_is_that_since_the_cell_started_not_since_the_process_did():
    held = b"x" * (200 * 2**20)  # written, so resident (a zeroed bytearray may not be)
    del held
    with CellResources() as measured:
        small = b"x" * (10 * 2**20)
    assert small and 0 < measured.peak_rss_bytes
    with CellResources() as larger:
        large = b"x" * (100 * 2**20)
    assert large and larger.peak_rss_bytes >= measured.peak_rss_bytes + 80 * 2**20
    assert measured.cpu_seconds >= 0 and larger.cpu_seconds >= 0


def test_without_proc_no_peak_is_measured(monkeypatch, tmp_path):
    """As on macOS: no /proc, so no number rather than a wrong one; the CPU time is still measured."""
    monkeypatch.setattr(resources, "CLEAR_REFS", tmp_path / "absent" / "clear_refs")
    with CellResources() as measured:
        sum(range(10_000))
    assert measured.peak_rss_bytes is None and measured.cpu_seconds >= 0


GLIBC = platform.libc_ver()[0] == "glibc"
HEAP_AFTER_A_LARGE_FREE = """
import ctypes, sys
import numpy as np
from bncbench.core.allocation import give_back_freed_memory
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
if sys.argv[1] == "fixed":
    assert give_back_freed_memory()
large = np.ones(20 * 2**20 // 8)
del large  # freed: glibc raises its mmap threshold to 20 MiB, unless fixed
top = libc.sbrk(0)
arrays = [np.ones(2**20 // 8) for _ in range(8)]
print(libc.sbrk(0) - top)
"""


@pytest.mark.skipif(not GLIBC, reason="mallopt's mmap threshold is glibc's")
def test_arrays_of_a_mib_stay_out_of_the_heap_once_the_threshold_is_fixed():
    """After a 20 MiB array is freed, eight arrays of 1 MiB come from the heap (it grows by 8 MiB), unless the
    threshold is fixed (``give_back_freed_memory``): then each is mapped on its own and the heap stays."""
    grown = {how: int(subprocess.run([sys.executable, "-c", HEAP_AFTER_A_LARGE_FREE, how], capture_output=True,
                                     text=True, check=True).stdout) for how in ("dynamic", "fixed")}
    assert grown["dynamic"] > 7 * 2**20 and grown["fixed"] < 2**20, grown


POOL_AFTER_GIVING_BACK = """
import pyarrow as pa
from bncbench.core.allocation import give_back_freed_memory
give_back_freed_memory()
print(pa.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize("chosen", [None, "mimalloc", "system"])
def test_pyarrow_allocates_from_jemalloc_unless_the_user_chose_a_pool(chosen):
    """mimalloc, pyarrow's default in its wheels, keeps what it freed; jemalloc (malloc where pyarrow lacks it) gives
    it back. A pool the user named in ``ARROW_DEFAULT_MEMORY_POOL`` is theirs."""
    environment = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        environment["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    try:
        giving_back = pa.jemalloc_memory_pool().backend_name
    except NotImplementedError:
        giving_back = "system"
    pool = subprocess.run([sys.executable, "-c", POOL_AFTER_GIVING_BACK], capture_output=True, text=True, check=True,
                          env=environment).stdout.strip()
    assert pool == (chosen or giving_back)
