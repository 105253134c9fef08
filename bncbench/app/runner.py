"""One cell of an experiment, run and logged to MLflow as one run: the glue between the plan's ``Cell``,
its cross-validation (``bncbench.protocol.cross_validation``) and the store (``bncbench.tracking``).

``run_cell`` is what an executor (``bncbench.app.executors``) calls for each cell, in a worker process
or on a cluster's node; the sweep around it is ``bncbench.app.sweep``.
"""

import contextlib
import json
import logging
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numba
import yaml

from bncbench import tracking
from bncbench.app.diagnostics import diagnostics_record
from bncbench.core.allocation import arrow_pool
from bncbench.core.errors import BncbenchError, NotApplicableError
from bncbench.core.resources import CellResources
from bncbench.data import load_dataset, resolve_data_dir
from bncbench.data.dataset import dataset_file
from bncbench.data.digest import dataset_digest
from bncbench.protocol.cell import Cell
from bncbench.protocol.cross_validation import cross_validate, repetition_seeds
from bncbench.protocol.out_of_core import cross_validate_file, id_cache_bytes, in_memory_bytes
from bncbench.protocol.models import model_tags
from bncbench.tracking import lease, provenance, reuse
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, fold_history, write_record

log = logging.getLogger(__name__)

DISK_FULL = (
    "the disk under the tracking store or its artifacts is full; free space (or set tracking_uri and "
    "artifact_location to a disk that has it) and run the experiment again: this cell runs again"
)


@dataclass(frozen=True)
class Destination:
    """Where and how a sweep's cells are logged: plain data, sent with each cell to its worker."""

    tracking_uri: str
    experiment: str  # the MLflow experiment (experiment.name)
    artifact_location: str | None = None  # the experiment's artifact root when the cell creates it (runs_dir)
    data_dir: str | None = None  # the dataset store (None: the default one)
    reuse_runs: bool = True  # copy a cell another experiment of the store finished on the same data
    numba_threads: int = 1
    sweep: str | None = None  # the sweep's name, tagged on its runs (lease.SWEEP_TAG)
    #: A dataset whose in-memory cross-validation would need more (``bncbench.protocol.out_of_core``) is learnt
    #: out of core; None: never.
    out_of_core_bytes: int | None = None
    #: The cell's share of the memory (``bncbench.app.sweep.cell_memory_bytes``), which bounds what an out-of-core
    #: fit keeps between passes (``bncbench.protocol.out_of_core.id_cache_bytes``); None: not known.
    cell_memory_bytes: int | None = None
    #: Out of core: rows read at a time (None: ``bncbench.bnc.out_of_core.chunk_rows_for``'s), and the
    #: uniform sample of a training fold's rows on which the MDL discretiser is fitted.
    chunk_rows: int | None = None
    sample_rows: int = 100_000
    #: Out of core: where the counting passes run (``bncbench.bnc.distributed.dask_client``): None in the cell's
    #: process, "local" on a dask LocalCluster of ``local_workers`` processes, or a dask scheduler's address.
    scheduler: str | None = None
    local_workers: int = 2


@dataclass(frozen=True)
class Outcome:
    """What became of a cell: ``status`` is "finished", "copied", "skipped", "running elsewhere",
    "not applicable" or "failed"; ``message`` the reason of the last two."""

    cell: Cell
    status: str
    message: str = ""
    seconds: float = 0.0


def run_cell(cell: Cell, destination: Destination) -> Outcome:
    """Cross-validate one cell and log it as one MLflow run. Never raises but for an interruption.

    A cell that already has a FINISHED run with its ``cfg_hash`` that read the same data (tag
    ``data_digest``, ``bncbench.data.digest``) is skipped, whatever code version produced it; a
    changed dataset file makes the cell run again. A cell FINISHED on the same data under another
    model name in this experiment (a renamed model: the hash does not depend on names) is copied from
    that run under its new name ("copied", ``bncbench.tracking.reuse``), and so is one that another
    experiment of the store has FINISHED, unless ``reuse_runs`` is false. A cell another process is
    running (a live lease, ``bncbench.tracking.lease``) is left to it ("running elsewhere"); runs of
    the same cell left RUNNING by a process that died are marked KILLED and the cell runs again. Each
    run is tagged with what produced it (``bncbench.tracking.provenance``). A model that cannot run
    on the dataset (``NotApplicableError``, e.g. HPB with too many sub-patterns) ends the run KILLED
    with the reason, naming the dataset, in the tag ``not_applicable``: the report, which reads
    FINISHED runs only, leaves it out, and the next sweep tries it again (the refusal comes before
    fitting). Any other exception is logged on the run (status FAILED, tag ``error``; a traceback
    artifact unless it is a ``BncbenchError``) and not raised. A ``KeyboardInterrupt`` (Ctrl-C, or
    SIGTERM raised as one) ends the cell's run KILLED, tagged ``error``, and is raised again.
    """
    start = time.perf_counter()
    numba.set_num_threads(max(1, min(destination.numba_threads, launched_threads())))
    try:
        client = tracking.open_store(destination.tracking_uri, check=False)  # checked before the sweep
        experiment_id = tracking.prepare_experiment(client, destination.experiment, destination.artifact_location)
        with tracking.quiet_store():  # a failed write is reported here, without MLflow's own traceback
            status, message = _run_cell(cell, destination, client, experiment_id)
    except Exception as err:  # not even a run could be logged (an interruption is no Exception: it is raised)
        if tracking.disk_full(err):
            _log_disk_full(cell.name, None, None)
            status, message = "failed", DISK_FULL
        else:
            message = str(err) if isinstance(err, BncbenchError) else traceback.format_exc()
            log.info("%s: not run: %s", cell.name, message)
            status, message = "failed", f"not run: {message.strip().splitlines()[-1]}"
    return Outcome(cell, status, message, time.perf_counter() - start)


def launched_threads() -> int:
    """The threads of this process's numba pool, sized when numba started (``NUMBA_NUM_THREADS`` then;
    numba's config may read the variable anew later, its pool does not grow)."""
    from numba.np.ufunc import parallel

    return parallel.NUM_THREADS


def _run_cell(cell: Cell, destination: Destination, client, experiment_id: str) -> tuple[str, str]:
    hash_, digest, name = cell.cfg_hash, cell.data_digest, cell.run_name
    tags = {
        **provenance.run_tags(), tag.DATASET: cell.dataset, tag.MODEL: cell.model,
        **model_tags(cell.semantic()["model"]), tag.CFG_HASH: hash_, "numba_threads": numba.get_num_threads(),
    }
    try:
        claimed = lease.claim_cell(client, experiment_id, name, tags, digest, destination.sweep)
    except Exception as err:
        if not tracking.disk_full(err):
            raise
        _log_disk_full(name, client, None)
        return "failed", DISK_FULL
    if claimed.status == "finished":
        log.info("%s: skipped, finished as run %s", cell.name, claimed.other)
        return "skipped", ""
    if claimed.status == "running elsewhere":
        log.info("%s: skipped, running in another process (run %s)", cell.name, claimed.other)
        return "running elsewhere", ""
    run_id = claimed.run_id
    source = tracking.finished_run(client, experiment_id, hash_, digest) or (  # under another name here
        reuse.computed_elsewhere(client, experiment_id, hash_, digest) if destination.reuse_runs else None
    )
    try:
        with lease.Heartbeat(client, run_id):
            if source is not None:
                reuse.copy_cell(client, source, run_id)
            else:
                with tempfile.TemporaryDirectory(prefix="bncbench-cell-") as scratch:  # the predictions' file
                    write_record(client, run_id, _evaluate(cell, destination, Path(scratch)))
    except NotApplicableError as err:
        reason = f"not applicable to dataset {cell.dataset!r}: {err}"
        tracking.set_tags(client, run_id, {tag.NOT_APPLICABLE: reason})
        tracking.end_run(client, run_id, status="KILLED")
        log.info("%s: skipped: %s", name, reason)
        return "not applicable", reason
    except KeyboardInterrupt:
        _end_interrupted(client, run_id)
        raise
    except Exception as err:  # a failed cell must never stop the others
        if tracking.disk_full(err):
            _log_disk_full(name, client, run_id)
            return "failed", DISK_FULL
        message = str(err) if isinstance(err, BncbenchError) else f"{type(err).__name__}: {err}"
        error = {tag.CONFIG_ARTIFACT: _config(cell, destination)}
        if not isinstance(err, BncbenchError):
            error[tag.TRACEBACK_ARTIFACT] = traceback.format_exc().encode()
        write_record(client, run_id, CellRecord(run_id, name, "FAILED", None, None, {tag.ERROR: message},
                                                _params(cell, destination), artifacts=error))
        log.info("%s: FAILED: %s", name, message)
        return "failed", message
    if source is not None:
        log.info("%s: copied from run %s, named %s in experiment %s (run %s)", name, source.info.run_id,
                 source.info.run_name, tracking.experiment_name(client, source.info.experiment_id), run_id)
        return "copied", ""
    log.info("%s: finished (run %s)", name, run_id)
    return "finished", ""


def _end_interrupted(client, run_id: str) -> None:
    """End the run of a cell stopped by Ctrl-C (or SIGTERM) KILLED, saying so, so that it never shows
    as running; its cell runs again in the next sweep."""
    with contextlib.suppress(Exception):  # the store may be what was interrupted; the next sweep abandons the run
        tracking.abandon(client, [tracking.get_run(client, run_id)], INTERRUPTED)


#: The ``error`` tag of a cell's run stopped by an interruption.
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM) before it finished; the next sweep runs the cell again"


def _log_disk_full(name: str, client, run_id: str | None) -> None:
    """The run of a cell stopped by a full disk marked FAILED, saying so, if the store still takes
    that (a full disk under SQLite refuses it: the run then stays RUNNING and its cell runs again)."""
    log.info("%s: FAILED: %s", name, DISK_FULL)
    if run_id is not None:
        with contextlib.suppress(Exception), tracking.quiet_store():  # the same full disk: the line above says it
            tracking.set_tags(client, run_id, {tag.ERROR: DISK_FULL})
            tracking.end_run(client, run_id, failed=True)


def _evaluate(cell: Cell, destination: Destination, scratch: Path) -> CellRecord:
    """Cross-validate the cell: its run's record, ended FINISHED when written; its predictions written into the
    folder ``scratch`` a chunk at a time (so that they never take the cell's memory), and logged from there."""
    cv, spec, model = cell.cv, cell.semantic()["dataset"], cell.semantic()["model"]
    stored = dataset_file(spec, destination.data_dir)  # fetched or drawn into the store if absent
    data = dataset_digest(spec, destination.data_dir)
    tags, predictions = {tag.DATA_DIGEST: data.digest}, scratch / tag.PREDICTIONS_ARTIFACT
    with CellResources() as resources:  # the data file drawn or fetched and its digest are not the cell's work
        if _out_of_core(stored, destination):
            tags |= {tag.OUT_OF_CORE: "true", tag.OUT_OF_CORE_SAMPLE_ROWS: str(destination.sample_rows)}
            log.info("%s: learnt out of core (%d rows x %d columns)", cell.name, *stored.shape)
            result = cross_validate_file(stored, model, cv.repetitions, cv.folds, cv.seed, cv.discretisation,
                                         destination.chunk_rows, destination.sample_rows, destination.scheduler,
                                         destination.local_workers, predictions,
                                         id_cache_bytes(destination.cell_memory_bytes))
            tags[tag.OUT_OF_CORE_ARROW_POOL] = arrow_pool()
        else:
            dataset = load_dataset(spec, destination.data_dir)
            result = cross_validate(dataset, model, cv.repetitions, cv.folds, cv.seed, cv.discretisation, predictions,
                                    **cv.discretiser_params())
    numbers, files = diagnostics_record(result.diagnostics)
    losses = {name: dict(enumerate(values)) for name, values in result.metrics.items()}
    artifacts = {
        tag.CONFIG_ARTIFACT: _config(cell, destination),
        tag.PREDICTIONS_ARTIFACT: result.predictions_parquet,
        tag.STRUCTURE_ARTIFACT: json.dumps({"folds": result.structures}, indent=2, default=str).encode(),
        **files,
    }
    return CellRecord("", cell.run_name, "FINISHED", None, None, tags, _params(cell, destination),
                      inputs=(provenance.dataset_input(data).to_dictionary(),),
                      history=_history(losses | numbers, resources), artifacts=artifacts)


def _history(per_fold: dict, resources: CellResources) -> list:
    """The cell's metrics as logged: the folds' values and their means (``fold_history``), then the cell's peak
    resident memory (where measured) and CPU seconds, one value each at step 0."""
    now = int(time.time() * 1000)
    measured = {tag.PEAK_RSS: resources.peak_rss_bytes, tag.CPU_SECONDS: resources.cpu_seconds}
    return fold_history(per_fold, now) + [(name, float(value), 0, now) for name, value in measured.items()
                                          if value is not None]


def _config(cell: Cell, destination: Destination) -> bytes:
    """A cell's configuration as its run's ``config.yaml``."""
    config = {"experiment": {"name": destination.experiment}, **cell.semantic(), "data_dir": destination.data_dir}
    return yaml.safe_dump(config, sort_keys=False).encode()


def _params(cell: Cell, destination: Destination) -> dict[str, str]:
    """A cell's run's params: its semantic config flattened, the seeds of its repetitions, where it read data."""
    return {
        **cell.params,
        "cv.seeds": json.dumps(repetition_seeds(cell.cv.seed, cell.cv.repetitions)),
        "data_dir": str(resolve_data_dir(destination.data_dir)),
        "experiment.name": destination.experiment,
    }


def _out_of_core(stored, destination: Destination) -> bool:
    """Whether the dataset of the file ``stored`` (None: scikit-learn's) is too large to learn in memory."""
    if stored is None or stored.shape is None or destination.out_of_core_bytes is None:
        return False
    return in_memory_bytes(*stored.shape) > destination.out_of_core_bytes
