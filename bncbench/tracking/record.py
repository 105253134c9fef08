"""``CellRecord``: a cell's logged run as every reader sees it, read from the store in one form.

The report, bundles and reuse read runs as records, never as MLflow's entities, so that the layout of
a logged run (``bncbench.tracking.tags``) is read in one place and MLflow is imported in this package
alone.
"""

import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric

from bncbench.tracking import tags as tag
from bncbench.tracking.runs import (
    cell_runs,
    finished_cell_runs,
    log_inputs,
    log_metric_history,
    log_params,
    missing_metrics,
)
from bncbench.tracking.runs import metric_values as store_metric_values
from bncbench.tracking.store import experiment_id, open_existing_store, read_errors


@dataclass(frozen=True)
class CellRecord:
    """One cell's run: its identity, times, tags, params and mean metrics.

    Attributes
    ----------
    run_id : str
        The run's id in the store it was read from.
    name : str
        ``<dataset>/<model>``.
    status : str
        ``FINISHED``, ``RUNNING``, ``FAILED`` or ``KILLED``.
    start_time, end_time : int or None
        Milliseconds since the epoch.
    tags, params : mapping of str to str
    metrics : mapping of str to float
        The latest value of every metric key (the means; the folds' keys hold the last fold's).
    inputs : sequence of mapping
        The MLflow dataset inputs it logged (the data it read, with its digest), as dictionaries.
    """

    run_id: str
    name: str
    status: str
    start_time: int | None
    end_time: int | None
    tags: Mapping[str, str] = field(repr=False)
    params: Mapping[str, str] = field(repr=False)
    metrics: Mapping[str, float] = field(repr=False, default_factory=dict)
    inputs: Sequence[Mapping] = field(repr=False, default=())

    @classmethod
    def of_run(cls, run) -> "CellRecord":
        """The record of an MLflow ``Run``."""
        info, data = run.info, run.data
        inputs = tuple(found.to_dictionary() for found in (run.inputs.dataset_inputs if run.inputs else []))
        return cls(info.run_id, info.run_name, info.status, info.start_time, info.end_time,
                   dict(data.tags), dict(data.params), dict(data.metrics), inputs)

    @property
    def key(self) -> tuple[str | None, str | None]:
        """``(dataset, model)``, the cell it is a run of."""
        return self.tags.get(tag.DATASET), self.tags.get(tag.MODEL)

    @property
    def cfg_hash(self) -> str | None:
        return self.tags.get(tag.CFG_HASH)

    @property
    def data_digest(self) -> str | None:
        return self.tags.get(tag.DATA_DIGEST)

    @property
    def shown_id(self) -> str:
        """The id a report shows: the original one of a run imported from a bundle, so that a report
        of imported runs is the report of the originals."""
        return self.tags.get(tag.ORIGIN_RUN, self.run_id)

    def numbers(self) -> dict[str, float | None]:
        """The latest value of every metric but the timings (``tag.TIMINGS``), NaN as None (equal to
        itself): what two runs of one cell agree on."""
        return {key: None if math.isnan(value) else value for key, value in self.metrics.items() if not timing(key)}

    def missing_metrics(self) -> list[str]:
        """The metrics every finished cell run has (``CELL_METRICS``) that this one lacks."""
        return missing_metrics(self.metrics)

    def means(self) -> dict[str, float]:
        """The mean over the folds of every metric (the keys without ``FOLD_PREFIX``)."""
        return {key: value for key, value in self.metrics.items() if not key.startswith(tag.FOLD_PREFIX)}


def timing(key: str) -> bool:
    """Whether the metric ``key`` (a mean or ``fold/``) is a timing (``tag.TIMINGS``)."""
    return key.removeprefix(tag.FOLD_PREFIX) in tag.TIMINGS


def finished_records(tracking_uri: str, experiment: str) -> list[CellRecord]:
    """The FINISHED cell runs of ``experiment`` in the store of ``tracking_uri``, in one search.

    Raises
    ------
    ConfigError
        The store cannot be opened or holds no such experiment.
    """
    client = open_existing_store(tracking_uri)
    with read_errors(tracking_uri):
        return [CellRecord.of_run(run) for run in finished_cell_runs(client, experiment_id(client, experiment))]


def metric_values(tracking_uri: str, run_ids, keys) -> pd.DataFrame:
    """``bncbench.tracking.runs.metric_values`` of some runs of the store of ``tracking_uri``."""
    with read_errors(tracking_uri):
        return store_metric_values(open_existing_store(tracking_uri), run_ids, keys)


def cell_records(client, experiment: str) -> list[CellRecord]:
    """Every run of the experiment ``experiment`` (by id), all statuses, oldest first."""
    return [CellRecord.of_run(run) for run in cell_runs(client, experiment)]


def metric_history(client, record: CellRecord) -> list[tuple[str, float, int, int]]:
    """Every value ever logged of every metric of the run: ``(key, value, step, timestamp)``."""
    return [
        (metric.key, metric.value, metric.step, metric.timestamp)
        for key in sorted(record.metrics)
        for metric in client.get_metric_history(record.run_id, key)
    ]


def artifact_sizes(client, run_id: str) -> dict[str, int]:
    """The files the run logged at the top of its artifacts, and their sizes in bytes."""
    return {artifact.path: artifact.file_size or 0 for artifact in client.list_artifacts(run_id) if not artifact.is_dir}


def download_artifact(client, run_id: str, name: str, folder: Path) -> Path:
    """The run's artifact ``name``, downloaded into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(client.download_artifacts(run_id, name, str(folder)))


def write_record(client, run_id: str, record: CellRecord, history: Iterable[tuple],
                 artifacts: Mapping[str, bytes] = ()) -> None:
    """Fill the RUNNING run ``run_id`` (started with the record's name, tags and start time) with the
    record's params and inputs as they are, every ``(key, value, step, timestamp)`` of ``history`` and
    the contents of ``artifacts`` under their names, and end it FINISHED at the record's end time. A
    run that cannot be written whole is deleted."""
    try:
        log_params(client, run_id, record.params)
        log_metric_history(client, run_id, [Metric(k, float(v), int(t), int(s)) for k, v, s, t in history])
        if record.inputs:
            log_inputs(client, run_id, [_dataset_input(found) for found in record.inputs])  # a sweep may log it too
        with tempfile.TemporaryDirectory() as tmp:
            for name, content in dict(artifacts).items():
                named = Path(tmp) / name
                named.write_bytes(content)
                client.log_artifact(run_id, str(named))
        client.set_terminated(run_id, status="FINISHED", end_time=record.end_time)
    except BaseException:
        client.delete_run(run_id)
        raise


def _dataset_input(exported: Mapping) -> DatasetInput:
    """A run's MLflow dataset input from its ``DatasetInput.to_dictionary()``."""
    tags = [InputTag(key, value) for key, value in exported["tags"].items()]
    return DatasetInput(Dataset.from_dictionary(exported["dataset"]), tags)
