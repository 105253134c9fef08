"""``CellRecord``: a cell's logged run, the one form in which it is written and read.

Every writer of a cell's run builds a record and hands it to :func:`write_record`: the runner (a cell just
cross-validated), reuse (a copy of another experiment's run), a bundle's import and the tests' stores. Every
reader gets records: resume, the report, export and bundles (:meth:`CellRecord.of_run`). The names of a
logged run are those of ``bncbench.tracking.tags``; the layout of its metrics is :func:`fold_history`. MLflow is
imported in this package alone.
"""

import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric

from bncbench.tracking import tags as tag
from bncbench.tracking.runs import (cell_runs, download_artifacts, finished_cell_runs, log_artifacts, log_inputs,
                                    log_metric_history, log_params, missing_metrics, replace_tags)
from bncbench.tracking.runs import metric_values as store_metric_values
from bncbench.tracking.store import experiment_id, open_existing_store, read_errors

#: One logged value of a metric: ``(key, value, step, timestamp in milliseconds)``.
Logged = tuple[str, float, int, int]


@dataclass(frozen=True)
class CellRecord:
    """One cell's run: its identity, times, tags, params, metrics, inputs and artifacts.

    Attributes
    ----------
    run_id : str
        The run's id in the store it was read from ("" for a record not written yet).
    name : str
        ``<dataset>/<model>``.
    status : str
        ``FINISHED``, ``RUNNING``, ``FAILED`` or ``KILLED``.
    start_time, end_time : int or None
        Milliseconds since the epoch (None when written: the time of writing).
    tags, params : mapping of str to str
    metrics : mapping of str to float
        The latest value of every metric key (the means; the folds' keys hold the last fold's), as read.
    inputs : sequence of mapping
        The MLflow dataset inputs it logged (the data it read, with its digest), as dictionaries.
    history : sequence of ``Logged``
        Every value of every metric, written as it is (:func:`fold_history` lays a cell's out); read, empty
        (:func:`metric_history` reads it).
    artifacts : mapping of str to bytes or Path
        Files by name, written (their bytes, or a file's path: a large one is never read into memory); read,
        empty (the store's artifacts are read on request).
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
    history: Sequence[Logged] = field(repr=False, default=())
    artifacts: Mapping[str, bytes | Path] = field(repr=False, default_factory=dict)

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


def metric_history(client, record: CellRecord) -> list[Logged]:
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


def fold_history(per_fold: Mapping[str, Mapping[int, float]], timestamp: int) -> list[Logged]:
    """The layout of a cell's metrics: each fold's value of each metric as ``FOLD_PREFIX + <name>`` with step =
    fold, and its mean over the folds as ``<name>`` at step 0, all at ``timestamp``."""
    history = [
        (tag.FOLD_PREFIX + name, float(value), int(fold), timestamp)
        for name, values in per_fold.items()
        for fold, value in values.items()
    ]
    return history + [(name, float(np.mean(list(values.values()))), 0, timestamp) for name, values in per_fold.items()]


def write_record(client, run_id: str, record: CellRecord, removed_tags: Iterable[str] = ()) -> None:
    """Write ``record`` into the RUNNING run ``run_id`` (started with its name): its tags (deleting those of
    ``removed_tags`` it does not set), params, inputs, every value of its history as it is and its
    artifacts; then end the run with the record's status at its end time (now if None), unless RUNNING."""
    replace_tags(client, run_id, record.tags, removed_tags)
    log_params(client, run_id, record.params)
    log_metric_history(client, run_id, [Metric(k, float(v), int(t), int(s)) for k, v, s, t in record.history])
    if record.inputs:
        log_inputs(client, run_id, [_dataset_input(found) for found in record.inputs])  # a sweep may log it too
    if record.artifacts:
        with tempfile.TemporaryDirectory() as tmp:
            for name, content in record.artifacts.items():
                named = Path(tmp, name)
                named.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, Path):
                    _place(content, named)
                else:
                    named.write_bytes(content)
            log_artifacts(client, run_id, tmp)
    if record.status != "RUNNING":
        client.set_terminated(run_id, status=record.status, end_time=record.end_time)


def _place(file: Path, named: Path) -> None:
    """``file`` at ``named`` for logging: a hard link where both are on one file system (a cell's predictions of
    20M rows are 3.4 GB, which MLflow copies once more into the store), else a copy."""
    try:
        os.link(file, named)
    except OSError:
        shutil.copyfile(file, named)


def stored_artifacts(client, run_id: str) -> dict[str, bytes]:
    """Every artifact of a run, by its path under the run's artifacts."""
    with tempfile.TemporaryDirectory() as tmp:
        if not download_artifacts(client, run_id, tmp):
            return {}
        return {path.relative_to(tmp).as_posix(): path.read_bytes() for path in sorted(Path(tmp).rglob("*"))
                if path.is_file()}


def _dataset_input(exported: Mapping) -> DatasetInput:
    """A run's MLflow dataset input from its ``DatasetInput.to_dictionary()``."""
    tags = [InputTag(key, value) for key, value in exported["tags"].items()]
    return DatasetInput(Dataset.from_dictionary(exported["dataset"]), tags)
