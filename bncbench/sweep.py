"""The sweep of an experiment's cells, in the launching process (``bncbench.runner`` runs one cell).

``ExperimentCallback`` (Hydra's callback, ``conf/config.yaml``) creates the MLflow store and experiment
before any job starts, and at the end reads the cells' status back from MLflow (``summarise``), writes
the report, says how to browse the runs and sets the exit status. ``numba_threads`` shares this
machine's cores among the cells that run at once.
"""

import os
import shlex
import sys
import time
import traceback
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import joblib
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict
from sqlalchemy.engine import make_url

from bncbench import lease, tracking
from bncbench.compile_cache import warm_kernels
from bncbench.errors import BncbenchError
from bncbench.model_configs import with_model
from bncbench.progress import CellProgress
from bncbench.reuse import COPIED_FROM_TAG
from bncbench.report import write_report
from bncbench.runs_dir import artifact_location


def cell_threads(cfg: DictConfig) -> int:
    """Threads of the numba kernels in one cell of ``cfg``'s sweep: ``numba_threads`` of the config, or
    for ``auto`` a share of this machine's cores (``numba_threads``)."""
    launcher = {}
    if HydraConfig.initialized():
        launcher = OmegaConf.to_container(HydraConfig.get().launcher, resolve=True)
    n_cells = len(cfg.experiment.datasets) * len(cfg.experiment.models)
    return numba_threads(cfg.numba_threads, launcher, n_cells, joblib.cpu_count())


def numba_threads(setting, launcher: dict, n_cells: int, cores: int) -> int:
    """Threads of the numba kernels (``parallel=True``) in each cell, so that the cells running at once
    on one machine do not oversubscribe its cores.

    Parameters
    ----------
    setting : int or "auto"
        The ``numba_threads`` setting; an integer is used as it is.
    launcher : dict
        The Hydra launcher's config (``hydra.launcher``).
    n_cells : int
        Cells of the sweep.
    cores : int
        Cores this process may use (``joblib.cpu_count()``: affinity and CPU quota included, so on a
        cluster node the cores allocated to the job).

    Returns
    -------
    int
        For ``auto``, ``max(1, cores // parallel_cells(launcher, n_cells, cores))``.
    """
    if setting != "auto":
        return int(setting)
    return max(1, cores // parallel_cells(launcher, n_cells, cores))


def parallel_cells(launcher: dict, n_cells: int, cores: int) -> int:
    """How many cells of a sweep run at once on one machine.

    joblib: ``n_jobs`` processes (-1 one per core, -2 all but one, ...), at most one per cell;
    submitit's local executor: every cell at once; the basic launcher: one at a time; a cluster
    launcher (submitit_slurm, ...): one per job, on the cores allocated to the job.
    """
    if "n_jobs" in launcher:
        n_jobs = int(launcher["n_jobs"])
        return max(1, min(n_jobs if n_jobs > 0 else cores + 1 + n_jobs, n_cells))
    if str(launcher.get("_target_", "")).endswith("submitit_launcher.LocalLauncher"):
        return max(1, n_cells)
    return 1


@dataclass
class Summary:
    """Status of each cell of an experiment after a sweep, read back from MLflow."""

    finished: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)  # cells copied from a finished run (bncbench.reuse)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # cell -> error message
    not_applicable: dict[str, str] = field(default_factory=dict)  # cell -> why the model cannot run
    elsewhere: list[str] = field(default_factory=list)  # cells another process is running

    @property
    def total(self) -> int:
        cells = (self.finished, self.copied, self.skipped, self.failed, self.not_applicable, self.elsewhere)
        return sum(map(len, cells))


def summarise(client, experiment_id: str, datasets, models, sweep: str | None) -> Summary:
    """Classify every (dataset, model) cell by its runs.

    The runs tagged ``bncbench.lease.SWEEP_TAG == sweep`` are this sweep's (``None``: every run). A cell
    whose FINISHED run of this sweep is a copy (``bncbench.reuse``) was copied; one whose run of this
    sweep is still RUNNING was interrupted (a signal, a worker that died), and counts as failed. A
    cell with none was skipped when an earlier run FINISHED, is running elsewhere when another
    process holds a live run of it (``bncbench.lease``), else it was not run. A cell whose last run is tagged
    ``not_applicable`` is not applicable, not failed.
    """
    runs = defaultdict(list)
    for run in tracking.cell_runs(client, experiment_id):
        runs[tracking.cell_names(run)].append(run)
    summary = Summary()
    for dataset in datasets:
        for model in models:
            name = f"{dataset}/{model}"
            cell_runs = runs[(str(dataset), str(model))]
            new = [r for r in cell_runs if sweep is None or r.data.tags.get(lease.SWEEP_TAG) == sweep]
            done = [r for r in new if r.info.status == "FINISHED"]
            if done:
                (summary.copied if COPIED_FROM_TAG in done[-1].data.tags else summary.finished).append(name)
            elif new and "not_applicable" in new[-1].data.tags:
                summary.not_applicable[name] = new[-1].data.tags["not_applicable"]
            elif sweep is not None and new and new[-1].info.status == "RUNNING":  # its own, not another's
                summary.failed[name] = "interrupted (its run is left RUNNING; the next sweep runs the cell again)"
            elif new and not (new[-1].info.status == "RUNNING" and lease.is_live(new[-1].data.tags)):
                last = new[-1]
                summary.failed[name] = last.data.tags.get("error", f"run ended {last.info.status}")
            elif any(r.info.status == "FINISHED" for r in cell_runs):
                summary.skipped.append(name)
            elif any(r.info.status == "RUNNING" and lease.is_live(r.data.tags) for r in cell_runs):
                summary.elsewhere.append(name)
            else:
                summary.failed[name] = "not run (see the log of its Hydra job)"
    return summary


class ExperimentCallback(Callback):
    """Hydra callback around the sweep of an experiment's cells, in the launching process.

    ``on_multirun_start`` creates the MLflow store and experiment once, before any worker starts
    (concurrent first connections to a new SQLite file race in its schema migration).
    ``on_multirun_end`` writes the report, prints how to browse the runs (``browse_hint``) and the
    summary, and exits with status 1 if a cell failed or the report could not be written.
    """

    def __init__(self) -> None:
        self.sweep: str | None = None
        self.progress: CellProgress | None = None

    def __getstate__(self) -> dict:
        # Hydra sends its callbacks to the worker processes along with each job: not the progress
        # thread, which belongs to this process.
        return {**self.__dict__, "progress": None}

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        with _exit_on_error():
            client = tracking.open_store(config.tracking_uri)
            experiment_id = tracking.prepare_experiment(client, config.experiment.name, artifact_location(config))
            tracking.mark_sweep(client, experiment_id)
            for key, value in ui_tags(config).items():
                client.set_experiment_tag(experiment_id, key, value)
        self.sweep = start_sweep()
        _export_numba_threads(config)
        _warm_kernels(config)
        n_cells = len(config.experiment.datasets) * len(config.experiment.models)
        self.progress = CellProgress(config.hydra.sweep.dir, n_cells).start()

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self.progress is not None:
            self.progress.stop()
        with _exit_on_error():
            experiment = config.experiment
            client = tracking.open_store(config.tracking_uri)
            experiment_id = tracking.experiment_id(client, experiment.name)
            summary = summarise(client, experiment_id, experiment.datasets, experiment.models, self.sweep)
            report_ok = _write_report(config)
            print(browse_hint(config.tracking_uri, experiment_id))
            _print_by_reason("skipped", summary.not_applicable)
            _print_by_reason("FAILED", summary.failed)
            not_applicable = f"{len(summary.not_applicable)} not applicable, " if summary.not_applicable else ""
            elsewhere = f"{len(summary.elsewhere)} running in another sweep, " if summary.elsewhere else ""
            copied = f"{len(summary.copied)} copied from a finished run of the same config, " if summary.copied else ""
            print(
                f"bncbench: experiment {experiment.name!r}: {summary.total} cells, "
                f"{len(summary.finished)} run, {copied}{len(summary.skipped)} skipped (finished before), "
                f"{not_applicable}{elsewhere}{len(summary.failed)} failed."
            )
        if summary.failed or not report_ok:
            raise SystemExit(1)


def ui_tags(config: DictConfig) -> dict[str, str]:
    """Experiment tags that make ``mlflow ui`` read well: a description (``mlflow.note.content``) and the
    kind ``custom_model_development`` (MLflow 3 otherwise opens an experiment on its GenAI overview)."""
    experiment, cv = config.experiment, config.cv
    comparisons = ", ".join(f"{c.a} vs {c.b}" for c in experiment.comparisons) or "none"
    description = (
        f"bncbench experiment {experiment.name}: {len(experiment.datasets)} datasets x "
        f"{len(experiment.models)} models, {cv.repetitions}x{cv.folds} cross-validation (seed {cv.seed}). "
        "One run per cell, named <dataset>/<model>, with per-fold metrics fold/<metric> (step = fold) and "
        f"their means. Comparisons: {comparisons}. Report: bncbench report experiment={experiment.name}."
    )
    return {"mlflow.note.content": description, "mlflow.experimentKind": "custom_model_development"}


def browse_hint(tracking_uri: str, experiment_id: str) -> str:
    """How to browse the runs in MLflow's UI, landing on the experiment's runs table.

    The UI routes by URL fragment (a hash router); ``#/experiments/<id>/runs`` is the runs table. A
    SQLite store is shown as an absolute URI, so that the command works from any directory.
    """
    runs_table = f"#/experiments/{experiment_id}/runs"
    if urlparse(tracking_uri).scheme in tracking.SERVER_SCHEMES:
        return f"bncbench: browse the runs at {tracking_uri.rstrip('/')}/{runs_table}"
    store = tracking_uri
    if tracking_uri.startswith("sqlite:"):
        url = make_url(tracking_uri)
        store = url.set(database=str(Path(url.database).resolve())).render_as_string(hide_password=False)
    return (
        f"bncbench: browse the runs: mlflow ui --backend-store-uri {shlex.quote(store)}\n"
        f"bncbench: then open http://127.0.0.1:5000/{runs_table}"
    )


def start_sweep() -> str:
    """Name this process's sweep, for the runs its workers start (``bncbench.lease.SWEEP_TAG``)."""
    os.environ[lease.SWEEP_VARIABLE] = f"{lease.owner()}:{time.time():.0f}"
    return os.environ[lease.SWEEP_VARIABLE]


def print_interruption(cfg: DictConfig, signal_name: str, command: str) -> None:
    """After a sweep stopped by a signal: what finished, and that ``command`` (the one stopped) resumes it."""
    experiment = cfg.experiment
    print(f"\nbncbench: stopped by {signal_name}; the cells' workers are stopped.", file=sys.stderr)
    try:
        if not os.environ.get(lease.SWEEP_VARIABLE):
            raise BncbenchError("no cell had started")
        client = tracking.open_store(cfg.tracking_uri, check=False)
        summary = summarise(
            client,
            tracking.experiment_id(client, experiment.name),
            experiment.datasets,
            experiment.models,
            os.environ.get(lease.SWEEP_VARIABLE),
        )
        unfinished = len(summary.failed)
        print(
            f"bncbench: experiment {experiment.name!r}: {summary.total} cells, {len(summary.finished)} run, "
            f"{len(summary.skipped)} skipped (finished before), {len(summary.elsewhere)} running in another "
            f"sweep, {unfinished} not finished (failed or interrupted).",
            file=sys.stderr,
        )
    except Exception as err:  # the store may be what was slow; the resume hint matters more
        print(f"bncbench: the cells' status could not be read back ({err}).", file=sys.stderr)
    print(
        f"bncbench: to resume, run the same command again (finished cells are skipped): {command}",
        file=sys.stderr,
    )


def _export_numba_threads(config: DictConfig) -> None:
    """Size numba's thread pool in the worker processes this machine starts for the cells (joblib,
    submitit's local executor) by ``NUMBA_NUM_THREADS``, which numba reads when it starts: joblib
    would otherwise set it to cores // n_jobs, too few when there are fewer cells than jobs. Jobs on
    other machines (a cluster) size their own from the cores they are given (``run_job``)."""
    launcher = OmegaConf.to_container(config.hydra.launcher, resolve=True)
    n_cells = len(config.experiment.datasets) * len(config.experiment.models)
    if parallel_cells(launcher, n_cells, joblib.cpu_count()) > 1:
        threads = numba_threads(config.numba_threads, launcher, n_cells, joblib.cpu_count())
        os.environ["NUMBA_NUM_THREADS"] = str(threads)


def _warm_kernels(config: DictConfig) -> None:
    """Compile the numba kernels of the experiment's BNCs here, once, before the workers of this
    machine start (``bncbench.compile_cache``); cells on a cluster's nodes compile for their own CPUs."""
    if "Slurm" in str(OmegaConf.select(config, "hydra.launcher._target_") or ""):
        return
    cell = OmegaConf.masked_copy(config, [key for key in config if key != "hydra"])
    models = []
    for name in dict.fromkeys(config.experiment.models):
        with open_dict(cell):
            cell.model = name
        models.append(OmegaConf.to_container(with_model(cell).model, resolve=True))
    compiled, seconds = warm_kernels(models)
    if compiled:
        print(
            f"bncbench: numba compiled the kernels of the experiment's models for this machine in "
            f"{seconds:.0f} s, once: the cells, and the next runs, load them from its cache."
        )


@contextmanager
def _exit_on_error():
    """Leave with an exit status: Hydra would turn an exception raised in a callback into a warning."""
    try:
        yield
    except BncbenchError as err:
        print(f"bncbench: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception:
        traceback.print_exc()
        raise SystemExit(1) from None


def _write_report(config: DictConfig) -> bool:
    """Write the report of the sweep's configuration: the command line's overrides, which Hydra
    keeps in ``hydra.overrides``, select the runs it reads."""
    cfg = OmegaConf.masked_copy(config, [key for key in config if key != "hydra"])
    given = OmegaConf.select(config, "hydra.overrides")
    overrides = None if given is None else [*given.hydra, *given.task]
    try:
        print(f"bncbench: report written to {write_report(cfg, overrides)}")
    except BncbenchError as err:
        print(f"bncbench: report not written: {err}", file=sys.stderr)
        return False
    except OSError as err:  # e.g. a report_dir that cannot be written
        print(
            f"bncbench: report not written: {err}; set report_dir to a writable directory and write it "
            f"again with python -m bncbench.report experiment={cfg.experiment.name} (nothing reruns).",
            file=sys.stderr,
        )
        return False
    except Exception:  # a bug in the report must not hide the summary of the cells
        traceback.print_exc()
        return False
    return True


def _print_by_reason(label: str, reasons: dict[str, str]) -> None:
    """One line per distinct reason: ``bncbench: <label> <cells>: <first line of the reason>``."""
    by_reason = defaultdict(list)
    for cell, reason in reasons.items():
        by_reason[reason].append(cell)
    for reason, cells in by_reason.items():
        shown = ", ".join(cells[:5]) + (f" and {len(cells) - 5} more" if len(cells) > 5 else "")
        print(f"bncbench: {label} {shown}: {reason.splitlines()[0] if reason else ''}")
