"""Export the finished cells of an experiment from an MLflow store to a bundle (``bncbench.bundles``)."""

import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from bncbench import tracking
from bncbench.bundles.format import MAX_CARRIED_BYTES, METRIC_COLUMNS, PREDICTIONS_ARTIFACT, RUN_COLUMNS
from bncbench.bundles.format import carried, write_bundle
from bncbench.core.errors import ConfigError
from bncbench.core.names import check_path_name
from bncbench.protocol.cell import Cell
from bncbench.tracking import lease
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, artifact_sizes, cell_records, download_artifact, metric_history

#: Tags that do not travel: who held a run's lease (``bncbench.tracking.lease``), where an imported run came
#: from (set again on import), and the run name (MLflow sets it from the run's name).
LOCAL_TAGS = (*lease.LEASE_TAGS, tag.ORIGIN_RUN, tag.ORIGIN_BUNDLE, "mlflow.runName")


def export_bundle(tracking_uri: str, experiment: str, out_dir: str | Path, *,
                  cells: Mapping[tuple[str, str], Cell] | None = None, predictions: bool = False) -> Path:
    """Write the finished cells of ``experiment`` to a new bundle in ``out_dir``.

    Of each cell's FINISHED runs (a cell: a dataset and a model name), the latest with each ``cfg_hash`` and
    ``data_digest`` travels (the one the report would read for that configuration and data): its name, start and
    end times, tags (but ``LOCAL_TAGS``), params, MLflow dataset inputs, the full history of every metric, and the
    artifacts that say what produced its numbers (``CARRIED_ARTIFACTS`` of at most ``MAX_CARRIED_BYTES``: its
    config, learned structures and diagnostics tables), keyed by its original run id (the
    ``bncbench.origin.run_id`` tag of a run imported before, else its own).

    Parameters
    ----------
    tracking_uri : str
        The store, e.g. ``sqlite:///runs/mlflow.db`` or ``http://host:5000``.
    experiment : str
        The bncbench experiment (MLflow experiment) name.
    out_dir : str or Path
        The folder the bundle is written into (created if absent).
    cells : mapping, optional
        The cells of one configuration of the experiment (``Plan.by_key``, ``bncbench.protocol.cell``): only their
        runs of that ``cfg_hash`` (and data digest, where it is known) travel, the runs the report of that
        configuration reads. None: every finished cell, in every configuration.
    predictions : bool
        Also carry each run's ``predictions.parquet`` artifact (large for large datasets).

    Returns
    -------
    Path
        The bundle, ``<out_dir>/<experiment>-<bundle id>``; the id is a hash of its files, so exporting the same
        runs again returns the bundle already there.

    Raises
    ------
    ConfigError
        The store or the experiment does not exist, or the experiment has no finished cell.
    """
    check_path_name("experiment", experiment)
    client = tracking.open_existing_store(tracking_uri)
    runs = _exported_runs(cell_records(client, tracking.experiment_id(client, experiment)), cells)
    if not runs:
        which = "finished cell" if cells is None else "finished cell of this configuration (settings, datasets, models)"
        raise ConfigError(
            f"experiment {experiment!r} in {tracking_uri!r} has no {which} to export; run it first "
            "(bncbench run experiment=... with the same overrides)."
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".export-") as tmp:  # never a half bundle in out_dir
        staging, downloads = Path(tmp) / "bundle", Path(tmp) / "artifacts"
        staging.mkdir()
        rows, metrics, prediction_files, artifact_files, travelled = [], [], {}, {}, set()
        for run in runs:
            # a copy (bncbench.tracking.reuse) shows its source's id; beside its source it travels as itself
            original = run.run_id if run.shown_id in travelled else run.shown_id
            travelled.add(original)
            tags = {key: value for key, value in run.tags.items() if key not in LOCAL_TAGS}
            rows.append((original, run.name, run.start_time, run.end_time, tags, dict(run.params), list(run.inputs)))
            metrics += [(original, *value) for value in metric_history(client, run)]
            sizes = artifact_sizes(client, run.run_id)
            if predictions and PREDICTIONS_ARTIFACT not in sizes:
                warnings.warn(f"run {run.run_id} ({run.name}) has no {PREDICTIONS_ARTIFACT} artifact: it is exported "
                              "without predictions.", stacklevel=2)
            elif predictions:
                prediction_files[original] = download_artifact(client, run.run_id, PREDICTIONS_ARTIFACT,
                                                               downloads / original)
            artifact_files[original] = {
                name: download_artifact(client, run.run_id, name, downloads / original / "carried").read_bytes()
                for name, size in sizes.items() if size <= MAX_CARRIED_BYTES and carried(name)
            }
        manifest = write_bundle(staging, experiment, pd.DataFrame(rows, columns=RUN_COLUMNS),
                                pd.DataFrame(metrics, columns=METRIC_COLUMNS), prediction_files, artifact_files)
        place = out_dir / f"{experiment}-{manifest['id']}"
        if not place.exists():
            staging.rename(place)
    return place


def _exported_runs(runs: list[CellRecord], cells: Mapping[tuple[str, str], Cell] | None) -> list[CellRecord]:
    """The latest FINISHED cell run of each (model, ``cfg_hash``, ``data_digest``), of ``cells`` if given,
    by dataset and model: a cell copied under a renamed model (same ``cfg_hash``) travels under each name."""
    latest = {}
    for run in runs:
        if run.status != "FINISHED" or not set(tag.CELL) <= set(run.tags):
            continue
        if cells is not None and not _of_configuration(run, cells):
            continue
        key = (run.tags[tag.MODEL], run.cfg_hash, run.data_digest)
        if key not in latest or _started(run) >= _started(latest[key]):
            latest[key] = run
    return sorted(latest.values(), key=lambda r: (*r.key, _started(r)))


def _of_configuration(run: CellRecord, cells: Mapping[tuple[str, str], Cell]) -> bool:
    cell = cells.get(run.key)
    return cell is not None and run.cfg_hash == cell.cfg_hash and cell.data_digest in (None, run.data_digest)


def _started(run: CellRecord) -> tuple[int, int]:
    return run.start_time or 0, run.end_time or 0

