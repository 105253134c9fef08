"""Executors: what runs a sweep's cells, chosen by the config group ``executor`` (``conf/executor/``).

Each runs ``run_cell(cell, destination)`` (``bncbench.app.runner``) for the cells it is given, in the
order given, and yields each ``Outcome`` as its cell ends, saying meanwhile which cells are running:

- ``local``: worker processes of this machine (joblib's loky), ``n_jobs`` at once, a new cell handed to
  a worker as soon as it is free; with one job, the cells run in this process, one after another;
- ``slurm``: one task of a SLURM job array per cell, through submitit;
- ``submitit_local``: submitit's stand-in for SLURM on this machine (each cell a pickled job in a
  process of its own), to try the cluster's code path without a cluster.

The workers of this machine ignore Ctrl-C (a terminal sends it to the whole process group): the
sweep alone decides, stops them (``stop``) and marks the runs they leave RUNNING as KILLED.
"""

import abc
import concurrent.futures
import dataclasses
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from bncbench.app.runner import Destination, Outcome, run_cell
from bncbench.app.schema import Executors, LocalExecutor
from bncbench.protocol.cell import Cell

#: Seconds between two looks at a cluster's jobs: SLURM's accounting is asked each time (submitit
#: caches its answers), a local job's process is only looked at.
POLL_SECONDS = {"slurm": 5.0, "local": 0.5}


class Executor(abc.ABC):
    """Runs cells; ``running`` lists the cells started and not yet ended."""

    #: How many cells run at once (at most).
    workers: int = 1

    def __init__(self) -> None:
        self.running: list[Cell] = []

    @abc.abstractmethod
    def run(self, cells: Sequence[Cell], destination: Destination) -> Iterator[Outcome]:
        """Run ``cells`` in their order and yield each one's outcome as it ends."""

    def stop(self) -> None:
        """Stop the cells still running (after an interruption); their runs stay RUNNING."""


class InProcess(Executor):
    """One cell after another, in this process."""

    def run(self, cells, destination):
        for cell in cells:
            self.running = [cell]
            yield run_cell(cell, destination)
        self.running = []


def _ignore_interrupts() -> None:
    """Run first in each worker: Ctrl-C is the sweep's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalProcesses(Executor):
    """``workers`` processes of this machine (joblib's loky), each given a new cell when it is free."""

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.workers = workers
        self._pool = None

    def run(self, cells, destination):
        from joblib.externals.loky import get_reusable_executor

        self._pool = get_reusable_executor(max_workers=self.workers, initializer=_ignore_interrupts, reuse=False)
        waiting = list(reversed(cells))
        started: dict[concurrent.futures.Future, Cell] = {}
        while waiting or started:
            while waiting and len(started) < self.workers:
                cell = waiting.pop()
                started[self._pool.submit(run_cell, cell, destination)] = cell
                self.running = list(started.values())
            done, _ = concurrent.futures.wait(started, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                cell = started.pop(future)
                self.running = list(started.values())
                yield _outcome(future, cell)
        self._pool.shutdown(wait=True)

    def stop(self):
        """Kill the workers and return once they are gone: a worker still alive when the sweep marks
        the runs left RUNNING could start one after (loky kills in its manager thread, joined here)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, kill_workers=True)


class Submitit(Executor):
    """Each cell a submitit job: a task of a SLURM job array (``cluster="slurm"``), or a process of
    this machine (``cluster="local"``); the job's output goes to ``folder``."""

    def __init__(self, cluster: str, folder: Path, parameters: dict) -> None:
        super().__init__()
        self.cluster, self.folder, self.parameters = cluster, Path(folder), dict(parameters)
        self.workers = int(self.parameters.get("array_parallelism", 1))
        self._jobs = []

    def run(self, cells, destination):
        import submitit

        executor = submitit.AutoExecutor(folder=self.folder, cluster=self.cluster)
        executor.update_parameters(**_submitit_parameters(self.parameters, self.cluster))
        with executor.batch():
            jobs = [executor.submit(run_cell, cell, destination) for cell in cells]
        self._jobs = list(zip(jobs, cells, strict=True))
        pending = dict(self._jobs)
        self.running = list(pending.values())
        while pending:
            for job in [job for job in pending if job.done()]:
                cell = pending.pop(job)
                self.running = list(pending.values())
                yield _outcome_of_job(job, cell)
            if pending:
                time.sleep(POLL_SECONDS[self.cluster])

    def stop(self):
        for job, _ in self._jobs:
            if not job.done():
                job.cancel(check=False)


def make_executor(settings: Executors, n_cells: int, cores: int, folder: Path) -> Executor:
    """The executor of the ``executor`` settings (``conf/executor/<name>.yaml``), for ``n_cells`` cells (no more
    local workers than that) on ``cores`` cores (``joblib.cpu_count()``); submitit keeps its jobs in ``folder``."""
    if isinstance(settings, LocalExecutor):
        workers = local_workers(settings.n_jobs, n_cells, cores)
        return InProcess() if workers == 1 else LocalProcesses(workers)
    parameters = {key: value for key, value in dataclasses.asdict(settings).items() if key != "kind"}
    return Submitit("slurm" if settings.kind == "slurm" else "local", folder, parameters)


def local_workers(n_jobs: int, n_cells: int, cores: int) -> int:
    """Processes of a local sweep: ``n_jobs`` (-1 one per core, -2 all but one, ...), at most one per
    cell, at least one."""
    wanted = n_jobs if n_jobs > 0 else cores + 1 + n_jobs
    return max(1, min(wanted, n_cells))


def cells_at_once(settings: Executors, n_cells: int, cores: int) -> int:
    """How many cells of a sweep run at once: for the cost's wall time and each cell's numba threads."""
    if isinstance(settings, LocalExecutor):
        return local_workers(settings.n_jobs, n_cells, cores)
    return max(1, min(settings.array_parallelism, n_cells))


def _outcome(future: concurrent.futures.Future, cell: Cell) -> Outcome:
    try:
        return future.result()
    except Exception as err:  # the worker died (killed, out of memory): run_cell itself never raises
        return Outcome(cell, "failed", f"its worker process ended before the cell did: {err}")


def _outcome_of_job(job, cell: Cell) -> Outcome:
    try:
        return job.result()
    except Exception as err:  # the job failed outside run_cell: timeout, node failure, cancelled
        reason = str(err).strip().splitlines()
        last = reason[-1] if reason else err
        return Outcome(cell, "failed", f"its job {job.job_id} ended before the cell did: {last}")


def _submitit_parameters(parameters: dict, cluster: str) -> dict:
    """The executor settings as submitit names them: its generic names as they are, SLURM's own with
    the ``slurm_`` prefix (which the local executor has no use for)."""
    generic = {"timeout_min", "cpus_per_task", "mem_gb"}
    return {
        key if key in generic else f"slurm_{key}": value
        for key, value in parameters.items()
        if value not in (None, [], {}) and (key in generic or cluster == "slurm")
    }
