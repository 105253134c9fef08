"""The sweep of an experiment: its plan's cells, run through an executor and summed up.

``run_plan`` creates the MLflow store and experiment once, before any worker starts (concurrent first
connections to a new SQLite file race in its schema migration), and reads the store once to find the
cells finished before; ``numba_threads`` shares this machine's cores among the cells that run at once.
"""

import os
import signal
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import joblib

from bncbench import tracking
from bncbench.app import some_of
from bncbench.app.compile_cache import warm_kernels
from bncbench.app.config import Composed
from bncbench.app.cost import Costs, plan_costs
from bncbench.app.datasets import FETCH_FIXES, fetch_missing, fetch_obstacle, missing_datasets
from bncbench.app.executors import LocalProcesses, cells_at_once, make_executor
from bncbench.app.interrupts import signal_of, sigterm_as_interrupt
from bncbench.app.progress import SweepProgress
from bncbench.app.reporting import write_plan_report
from bncbench.app.runner import INTERRUPTED, Destination, Outcome
from bncbench.app.ui import browse_hint, ui_tags
from bncbench.app.schema import Executors, Settings
from bncbench.app.runs_dir import artifact_location, report_dir, runs_dir
from bncbench.data import resolve_data_dir
from bncbench.core.errors import BncbenchError
from bncbench.core.uris import credentials_to_environment, masked
from bncbench.protocol.cell import Cell, Plan
from bncbench.report import plan_runs, unchanged_report
from bncbench.tracking import lease


@dataclass
class Summary:
    """What became of every cell of a sweep."""

    finished: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)  # copied from a finished run (bncbench.tracking.reuse)
    skipped: list[str] = field(default_factory=list)  # finished before
    failed: dict[str, str] = field(default_factory=dict)  # cell -> why
    not_applicable: dict[str, str] = field(default_factory=dict)  # cell -> why the model cannot run
    elsewhere: list[str] = field(default_factory=list)  # cells another process is running
    rerun: list[str] = field(default_factory=list)  # cells whose FINISHED runs lacked metrics: run again

    def add(self, outcome: Outcome) -> None:
        name = outcome.cell.name
        if outcome.status == "failed":
            self.failed[name] = outcome.message or "failed"
        elif outcome.status == "not applicable":
            self.not_applicable[name] = outcome.message
        else:
            {"finished": self.finished, "copied": self.copied, "skipped": self.skipped,
             "running elsewhere": self.elsewhere}[outcome.status].append(name)

    @property
    def total(self) -> int:
        cells = (self.finished, self.copied, self.skipped, self.failed, self.not_applicable, self.elsewhere)
        return sum(map(len, cells))

    def line(self, experiment: str) -> str:
        """``bncbench: experiment 'kdb': 476 cells, 12 run, 464 skipped (finished before), 0 failed.``"""
        parts = [  # (cells, what they are, whether said when there are none)
            (self.finished, "run", True), (self.rerun, "rerun: finished runs missing metrics", False),
            (self.copied, "copied from a finished run of the same config", False),
            (self.skipped, "skipped (finished before)", True), (self.not_applicable, "not applicable", False),
            (self.elsewhere, "running in another sweep", False), (self.failed, "failed", True),
        ]
        said = ", ".join(f"{len(cells)} {what}" for cells, what, always in parts if cells or always)
        return f"bncbench: experiment {experiment!r}: {self.total} cells, {said}."


def run_plan(composed: Composed, command: str, replace: bool = False) -> int:
    """Run the cells of ``composed.plan`` not finished before, write the report, sum up.

    ``command`` is the command line as typed, which resumes an interrupted sweep; ``replace`` lets the
    report replace one in its way (``bncbench.report.writer.report_in_the_way``). Returns the exit
    status: 0 when no cell failed and the report was written, 1 otherwise, 128 + the signal's number
    when interrupted (Ctrl-C: 130, SIGTERM: 143).
    """
    settings = composed.settings
    plan = fetch_missing(composed.plan, resolve_data_dir(settings.data_dir))
    client = tracking.open_store(settings.tracking_uri)
    if settings.artifact_location is not None:
        tracking.check_artifact_location(client, plan.experiment, settings.artifact_location)
    experiment_id = tracking.prepare_experiment(client, plan.experiment, artifact_location(settings))
    tracking.mark_sweep(client, experiment_id)
    for key, value in ui_tags(plan).items():
        client.set_experiment_tag(experiment_id, key, value)
    logged, incomplete = complete_records(tracking.finished_records(settings.tracking_uri, plan.experiment))
    finished = finished_before(logged, plan)
    rerun = _rerun_incomplete(incomplete, plan, finished, client)
    to_run, workers, costs = _print_cost(plan, settings, logged, finished)
    cores = joblib.cpu_count()
    summary = Summary(skipped=[cell.name for cell in plan.cells if cell.key in finished], rerun=rerun)
    sweep = f"{lease.owner()}:{time.time():.0f}"
    if to_run:
        threads = _cell_threads(settings.numba_threads, settings.executor, workers, cores)
        destination = destination_of(settings, plan, threads, sweep, workers)
        executor = make_executor(settings.executor, len(to_run), cores, _submitit_folder(settings, plan))
        if isinstance(executor, LocalProcesses):  # the workers' numba pool, sized when a worker starts
            os.environ["NUMBA_NUM_THREADS"] = str(destination.numba_threads)
        if settings.executor.kind == "local":
            _warm_kernels(to_run)
        progress = SweepProgress(to_run, costs.seconds, workers, lambda: list(executor.running),
                                 done_before=len(finished)).start()
        try:
            with sigterm_as_interrupt():
                for outcome in executor.run(to_run, destination):
                    summary.add(outcome)
                    progress.done(outcome.cell, outcome.status, outcome.seconds)
                    if outcome.status == "failed":
                        reason = masked(outcome.message.splitlines()[0])
                        print(f"bncbench: cell {outcome.cell.name} failed: {reason}", flush=True)
        except KeyboardInterrupt as err:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the summary short
            progress.stop()
            executor.stop()
            signum = signal_of(err)
            _interrupted(client, experiment_id, sweep, plan, summary, signum.name, command)
            return 128 + signum
        finally:
            progress.stop()
    report_ok = _write_report(plan, settings, replace, keep_unchanged=not to_run)
    print(browse_hint(settings.tracking_uri, experiment_id))
    _print_by_reason("skipped", summary.not_applicable)
    _print_by_reason("FAILED", summary.failed)
    print(summary.line(plan.experiment))
    return 1 if summary.failed or not report_ok else 0


def show_plan(composed: Composed) -> int:
    """``bncbench run --dry-run``: what the sweep would run and cost, read from the store if it exists;
    nothing is created or run."""
    settings, plan = composed.settings, composed.plan
    try:
        logged, incomplete = complete_records(tracking.finished_records(settings.tracking_uri, plan.experiment))
    except BncbenchError:  # no store or no experiment yet: nothing finished
        logged, incomplete = [], []
    finished = finished_before(logged, plan)
    _print_cost(plan, settings, logged, finished)
    _rerun_incomplete(incomplete, plan, finished)
    drawn = missing_datasets(plan, drawn=True)
    if drawn:
        print(f"bncbench: the sweep draws the datasets {', '.join(drawn)} into the data directory "
              f"{resolve_data_dir(settings.data_dir)} before its first cell.")
    missing = missing_datasets(plan)
    if missing:
        obstacle = fetch_obstacle(missing)
        fetched = ("the sweep fetches them from OpenML before its first cell." if obstacle is None else
                   f"{obstacle}, so the run would stop before its first cell. {FETCH_FIXES}")
        print(f"bncbench: {len(missing)} datasets are not in the data directory {resolve_data_dir(settings.data_dir)} "
              f"({', '.join(missing)}); {fetched}")
    return 0


def _print_cost(plan: Plan, settings: Settings, logged, finished) -> tuple[list[Cell], int, Costs]:
    """Print what the sweep will run and cost (``bncbench.app.cost``); return the cells to run, smallest first,
    how many run at once, and their costs."""
    costs = plan_costs(plan, resolve_data_dir(settings.data_dir), logged)
    to_run = sorted((cell for cell in plan.cells if cell.key not in finished), key=costs.order)
    workers = cells_at_once(settings.executor, max(1, len(to_run)), joblib.cpu_count())
    print("\n".join(costs.lines(plan, to_run, workers)), flush=True)
    return to_run, workers, costs


def _cell_threads(setting, executor: Executors, workers: int, cores: int) -> int:
    """A cell's numba threads: its share of this machine's cores, or on SLURM the cores its task asks."""
    if executor.kind == "slurm":
        return numba_threads(setting, 1, executor.cpus_per_task)
    return numba_threads(setting, workers, cores)


def destination_of(settings: Settings, plan: Plan, threads: int = 1, sweep: str | None = None,
                   workers: int = 1) -> Destination:
    """Where and how the cells of ``plan`` run, by the composed ``settings``, ``workers``
    cells at once: a password of ``tracking_uri`` is not in it (a cluster's job files hold it) but in this
    process's environment, which the workers inherit (``bncbench.core.uris``)."""
    return Destination(
        tracking_uri=credentials_to_environment(settings.tracking_uri), experiment=plan.experiment,
        artifact_location=artifact_location(settings), data_dir=settings.data_dir, reuse_runs=settings.reuse_runs,
        numba_threads=threads, sweep=sweep,
        out_of_core_bytes=out_of_core_bytes(settings.out_of_core.memory_gb, settings.executor, workers),
        cell_memory_bytes=cell_memory_bytes(settings.executor, workers),
        chunk_rows=settings.out_of_core.chunk_rows, sample_rows=settings.out_of_core.sample_rows,
        scheduler=settings.out_of_core.scheduler, local_workers=settings.out_of_core.local_workers,
    )


def out_of_core_bytes(memory_gb, executor: Executors, workers: int) -> int:
    """The memory above which a cell learns its dataset out of core: ``memory_gb`` GiB, or for ``auto`` half
    a cell's share of the memory (``cell_memory_bytes``)."""
    if memory_gb != "auto":
        return int(float(memory_gb) * 2**30)
    return cell_memory_bytes(executor, workers) // 2


def cell_memory_bytes(executor: Executors, workers: int) -> int:
    """A cell's share of the memory: a SLURM task's ``mem_gb``, else this machine's over the cells at once."""
    if executor.kind == "slurm":
        return executor.mem_gb * 2**30
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // max(1, workers)


def finished_before(logged, plan: Plan) -> set[tuple[str, str]]:
    """The cells of ``plan`` with a FINISHED run (among ``logged``, the experiment's, read in one search)
    of the same ``cfg_hash`` and data digest under their own name: the sweep skips them without
    starting a worker (a cell finished under another name or in another experiment is copied by its
    worker)."""
    return {record.key for record in _of_plan(logged, plan) if record.data_digest is not None}


def complete_records(logged) -> tuple[list, list]:
    """``logged`` (records of FINISHED runs) split into the runs with every metric of a cell
    (``tracking.CELL_METRICS``) and those missing some, which are not finished cells."""
    incomplete = [record for record in logged if record.missing_metrics()]
    return [record for record in logged if not record.missing_metrics()], incomplete


def _of_plan(records, plan: Plan) -> list:
    """The records that are runs of the cells of ``plan``: their name, ``cfg_hash`` and data digest."""
    cells = {cell.key: (cell.cfg_hash, cell.data_digest) for cell in plan.cells}
    return [record for record in records if cells.get(record.key) == (record.cfg_hash, record.data_digest)]


def _rerun_incomplete(incomplete, plan: Plan, finished, client=None) -> list[str]:
    """End FAILED the FINISHED runs of the plan's cells that miss metrics (``complete_records``), saying
    which in their ``error`` tag, so that neither a report nor a later sweep takes them for results;
    return the cells that run again for it (those without a complete run), and say so. Without ``client``
    (a dry run), only say which would."""
    runs = _of_plan(incomplete, plan)
    if client is not None:
        tracking.fail_runs(client, {
            record.run_id: f"FINISHED without the metrics {', '.join(record.missing_metrics())}: not a result; "
            "marked FAILED by a sweep, which ran its cell again"
            for record in runs
        })
    rerun = sorted({"/".join(record.key) for record in runs if record.key not in finished})
    if rerun:
        print(f"bncbench: {len(rerun)} cells {'would run' if client is None else 'run'} again, their FINISHED runs "
              f"missing metrics{'' if client is None else ' (now marked FAILED)'}: {some_of(rerun)}.", flush=True)
    return rerun


def numba_threads(setting, workers: int, cores: int) -> int:
    """Threads of the numba kernels (``parallel=True``) in each cell, so that the cells running at once
    on one machine do not oversubscribe its cores: ``numba_threads`` as set, or for ``auto``
    ``max(1, cores // workers)``."""
    return int(setting) if setting != "auto" else max(1, cores // workers)


def _interrupted(client, experiment_id, sweep, plan: Plan, summary: Summary, signal_name: str, command: str) -> None:
    """After a sweep stopped by a signal: its runs left RUNNING are ended KILLED, then what finished,
    and that ``command`` (the one stopped) resumes it."""
    print(f"\nbncbench: stopped by {signal_name}; the cells' workers are stopped.", file=sys.stderr)
    try:
        stopped = [
            run for run in tracking.cell_runs(client, experiment_id)
            if run.info.status == "RUNNING" and run.data.tags.get(lease.SWEEP_TAG) == sweep
        ]
        tracking.abandon(client, stopped, INTERRUPTED)
        print(f"bncbench: experiment {plan.experiment!r}: {len(plan)} cells, {len(summary.finished)} run, "
              f"{len(summary.copied)} copied, {len(summary.skipped)} skipped (finished before), {len(stopped)} "
              f"stopped (their runs are marked KILLED), {len(summary.failed)} failed.", file=sys.stderr)
    except Exception as err:  # the store may be what was slow; the resume hint matters more
        print(f"bncbench: the cells' runs could not be read back ({err}).", file=sys.stderr)
    print(f"bncbench: to resume, run the same command again (finished cells are skipped): {masked(command)}",
          file=sys.stderr)


def _warm_kernels(cells: list[Cell]) -> None:
    """Compile the numba kernels of the cells' BNCs here, once, before the workers of this machine start
    (``bncbench.app.compile_cache``); cells on a cluster's nodes compile for their own CPUs."""
    compiled, seconds = warm_kernels({cell.model: cell.semantic()["model"] for cell in cells}.values())
    if compiled:
        print(f"bncbench: numba compiled the kernels of the experiment's models for this machine in {seconds:.0f} s, "
              "once: the cells, and the next runs, load them from its cache.", flush=True)


def _submitit_folder(settings: Settings, plan: Plan) -> Path:
    """Where submitit keeps a sweep's jobs: ``<runs_dir>/submitit/<experiment>/<time>``."""
    started = time.strftime("%Y-%m-%d_%H-%M-%S")
    return Path(runs_dir(settings.runs_dir, settings.tracking_uri)) / "submitit" / plan.experiment / started


def _write_report(plan: Plan, settings: Settings, replace: bool = False, keep_unchanged: bool = False) -> bool:
    """Write the report of the sweep's plan; say why when it cannot be. With ``keep_unchanged`` (no cell
    ran), a report made from the same runs, settings and code is left as it is (``unchanged_report``)."""
    try:
        runs = plan_runs(plan, settings.tracking_uri)  # read once, for both
        data_dir = str(resolve_data_dir(settings.data_dir))
        unchanged = keep_unchanged and unchanged_report(plan, runs, report_dir(settings), data_dir)
        if unchanged:
            print(f"bncbench: report unchanged: {unchanged}")
            return True
        place = write_plan_report(plan, runs, report_dir(settings), settings.data_dir, replace=replace,
                                  scratch=settings.report_dir is None, manifest=True)
        print(f"bncbench: report written to {place}")
    except BncbenchError as err:
        print(f"bncbench: report not written: {masked(err)}", file=sys.stderr)
        return False
    except OSError as err:  # e.g. a report_dir that cannot be written
        print(f"bncbench: report not written: {err}; set report_dir to a writable directory and write it again with "
              f"bncbench report experiment={plan.experiment} (nothing reruns).", file=sys.stderr)
        return False
    except Exception:  # a bug in the report must not hide the summary of the cells
        traceback.print_exc()
        return False
    return True


def _print_by_reason(label: str, reasons: dict[str, str]) -> None:
    """One line per distinct reason: ``bncbench: <label> <cells>: <first line of the reason>``, the cells
    by name (not in the order parallel workers ended them)."""
    by_reason = defaultdict(list)
    for cell, reason in sorted(reasons.items()):
        by_reason[reason].append(cell)
    for reason, cells in by_reason.items():
        print(f"bncbench: {label} {some_of(cells)}: {masked(reason.splitlines()[0]) if reason else ''}")

