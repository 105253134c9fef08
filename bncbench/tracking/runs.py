"""The runs of an experiment's cells: looking them up, logging them, and reading them back in bulk.

Layout (read by ``bncbench.report``): one MLflow experiment per bncbench experiment, named ``experiment.name``;
one run per (dataset, model) cell, under the names of ``bncbench.tracking.tags`` and with what produced it
(``bncbench.tracking.provenance``); failed cells have status FAILED and an ``error`` tag. A FINISHED run without
every metric of ``CELL_METRICS`` (lost since, e.g. deleted from the database) is not a finished cell:
``finished_run`` passes it by, and the sweep ends it FAILED (``fail_runs``) and runs its cell again.
"""

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
from mlflow.entities import DatasetInput, Metric, Param, Run, RunStatus, RunTag
from mlflow.tracking import MlflowClient

from bncbench.core.metrics import LOSSES
from bncbench.tracking import tags as tag
from bncbench.tracking.folds import VALUE_COLUMNS, fold_frame, fold_keys
from bncbench.tracking.store import environment

#: MLflow tag values are limited in length; longer error messages are cut there.
MAX_TAG_LENGTH = 5000
#: Runs per page of a search, the most an MLflow store returns at once.
_PAGE = 1000
#: Metric values per ``log_batch`` request, the most MLflow takes.
_BATCH = 1000
#: Runs per query of the per-fold metrics: an SQL ``IN`` list this long stays far below SQLite's limit
#: on bound variables.
_RUNS_PER_QUERY = 500
#: The metrics every finished cell run has logged: each loss's mean over the folds and its per-fold values.
CELL_METRICS = (*LOSSES, *(tag.FOLD_PREFIX + loss for loss in LOSSES))


def missing_metrics(metrics: Mapping[str, float]) -> list[str]:
    """The names of ``CELL_METRICS`` absent from a run's ``metrics`` (its latest values by name)."""
    return [name for name in CELL_METRICS if name not in metrics]


def finished_run(client: MlflowClient, experiment_id: str, hash_: str, data_digest: str | None,
                 cell: tuple[str, str] | None = None):
    """The latest FINISHED run with ``cfg_hash == hash_`` that read the data ``data_digest``, or None (always None
    when the digest is unknown, a dataset not fetched yet); with ``cell``, only a run tagged with that ``(dataset,
    model)`` counts (the hash does not depend on the names). Runs of other code versions count: a cell is not run
    again for them; a run missing metrics (``missing_metrics``) does not."""
    if data_digest is None:
        return None
    runs = _latest_finished(client, [experiment_id], hash_, data_digest)
    return next((run for run in runs if cell is None or cell_names(run) == cell), None)


def cell_names(run: Run) -> tuple[str | None, str | None]:
    """The ``(dataset, model)`` a run is tagged with: its cell."""
    return run.data.tags.get(tag.DATASET), run.data.tags.get(tag.MODEL)


def finished_run_in_other_experiments(
    client: MlflowClient, experiment_id: str, hash_: str, data_digest: str | None
) -> Run | None:
    """:func:`finished_run` over the store's other active experiments (``bncbench.tracking.reuse``)."""
    if data_digest is None:
        return None
    others = [e.experiment_id for e in _every_page(client.search_experiments) if e.experiment_id != experiment_id]
    found = [
        run
        for start in range(0, len(others), _PAGE)
        for run in _latest_finished(client, others[start : start + _PAGE], hash_, data_digest)
    ]
    return max(found, key=lambda run: run.info.start_time, default=None)


def _latest_finished(client: MlflowClient, experiment_ids: list[str], hash_: str, data_digest: str) -> list[Run]:
    """The FINISHED runs with all their metrics of a cfg_hash and data digest, latest first."""
    runs = client.search_runs(
        experiment_ids,
        filter_string=(
            f"tags.{tag.CFG_HASH} = '{hash_}' and tags.{tag.DATA_DIGEST} = '{data_digest}' "
            "and attributes.status = 'FINISHED'"
        ),
        order_by=["attributes.start_time DESC"],
        max_results=_PAGE,
    )
    return [run for run in runs if not missing_metrics(run.data.metrics)]


def running_runs(client: MlflowClient, experiment_id: str, hash_: str) -> list:
    """The RUNNING runs with ``cfg_hash == hash_`` (live or abandoned: ``bncbench.tracking.lease``)."""
    return client.search_runs(
        [experiment_id], filter_string=f"tags.{tag.CFG_HASH} = '{hash_}' and attributes.status = 'RUNNING'"
    )


def abandon(client: MlflowClient, runs, reason: str) -> None:
    """Mark RUNNING runs whose process died (or was stopped) as KILLED, with ``reason`` in their ``error`` tag and
    ``KILLED_SUFFIX`` after their name, so that the runs table tells each from its cell's rerun."""
    for run in runs:
        set_tags(client, run.info.run_id, {tag.ERROR: reason})
        end_run(client, run.info.run_id, status="KILLED")
        if not run.info.run_name.endswith(KILLED_SUFFIX):
            client.update_run(run.info.run_id, name=run.info.run_name + KILLED_SUFFIX)


#: What the name of a run stopped before it finished ends with (``<dataset>/<model> (killed)``).
KILLED_SUFFIX = " (killed)"


def fail_runs(client: MlflowClient, reasons: Mapping[str, str]) -> None:
    """Mark the runs ``reasons`` names (by id) FAILED, each with its reason in its ``error`` tag."""
    for run_id, reason in reasons.items():
        set_tags(client, run_id, {tag.ERROR: reason})
        end_run(client, run_id, failed=True)


def start_run(
    client: MlflowClient, experiment_id: str, run_name: str, tags: Mapping[str, str], start_time: int | None = None
) -> str:
    """Create a RUNNING run (started now, or at ``start_time`` in milliseconds) and return its id."""
    return client.create_run(
        experiment_id, start_time=start_time, run_name=run_name, tags={k: str(v) for k, v in tags.items()}
    ).info.run_id


def get_run(client: MlflowClient, run_id: str) -> Run:
    """The run ``run_id`` as the store holds it now."""
    return client.get_run(run_id)


def delete_run(client: MlflowClient, run_id: str) -> None:
    """Delete a run (one started twice for a cell: the later gives way)."""
    client.delete_run(run_id)


def log_params(client: MlflowClient, run_id: str, params: Mapping[str, str]) -> None:
    items = [Param(k, str(v)) for k, v in params.items()]
    for start in range(0, len(items), 100):  # MLflow takes at most 100 params per batch
        client.log_batch(run_id, params=items[start : start + 100])


def set_tags(client: MlflowClient, run_id: str, tags: Mapping[str, str]) -> None:
    client.log_batch(run_id, tags=[RunTag(k, str(v)[:MAX_TAG_LENGTH]) for k, v in tags.items()])


def replace_tags(client: MlflowClient, run_id: str, tags: Mapping[str, str], removed: Iterable[str]) -> None:
    """Set ``tags`` on a run and delete those of ``removed`` that it has and ``tags`` does not set."""
    if tags:
        set_tags(client, run_id, tags)
    removed = sorted(set(removed) - set(tags))
    present = client.get_run(run_id).data.tags if removed else {}
    for key in removed:
        if key in present:
            client.delete_tag(run_id, key)


def log_metric_history(client: MlflowClient, run_id: str, history: list[Metric]) -> None:
    """Log metric values as they are (key, value, timestamp, step), in batches."""
    for start in range(0, len(history), _BATCH):
        client.log_batch(run_id, metrics=history[start : start + _BATCH])


def log_inputs(client: MlflowClient, run_id: str, datasets: list[DatasetInput], attempts: int = 3) -> None:
    """Record the datasets a run read (``bncbench.tracking.provenance.dataset_input``).

    MLflow looks a dataset up, then inserts it when absent: two runs logging the same new dataset at
    once (parallel jobs of one dataset, a sweep beside an import) make one insert fail on the table's
    unique constraint. That one, tried again, finds the dataset and links its run to it.
    """
    for attempt in range(attempts):
        try:
            client.log_inputs(run_id, datasets=datasets)
            return
        except Exception as err:  # MlflowException from a local store, RestException from a server
            message = str(err).lower()
            if attempt == attempts - 1 or "unique constraint" not in message or "datasets" not in message:
                raise


def log_artifacts(client: MlflowClient, run_id: str, path: Path | str) -> None:
    """A file, or every file of a directory, as artifacts of a run."""
    if Path(path).is_dir():
        client.log_artifacts(run_id, str(path))
    else:
        client.log_artifact(run_id, str(path))


def download_artifacts(client: MlflowClient, run_id: str, folder: Path | str) -> bool:
    """Download every artifact of a run into ``folder``; False when it has none."""
    if not client.list_artifacts(run_id):
        return False
    with environment(MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false"):  # a bar per cell in a sweep's log
        client.download_artifacts(run_id, "", str(folder))
    return True


def end_run(client: MlflowClient, run_id: str, failed: bool = False, status: str | None = None) -> None:
    """End a run FINISHED, FAILED when ``failed``, or with another terminal ``status`` (KILLED)."""
    if status is None:
        status = RunStatus.to_string(RunStatus.FAILED if failed else RunStatus.FINISHED)
    client.set_terminated(run_id, status=status)


def _every_page(search, *args, **kwargs) -> list:
    """Every result of an MLflow search (``search_runs``, ``search_experiments``), read page after page."""
    found, token = [], None
    while True:
        page = search(*args, max_results=_PAGE, page_token=token, **kwargs)
        found += page
        token = page.token
        if not token:
            return found


def cell_runs(client: MlflowClient, experiment_id: str) -> list[Run]:
    """Every run of the experiment (all statuses), oldest first."""
    return _every_page(client.search_runs, [experiment_id], order_by=["attributes.start_time ASC"])


def finished_cell_runs(client: MlflowClient, experiment_id: str) -> list[Run]:
    """The FINISHED runs of the experiment that are cells (tagged ``dataset`` and ``model``; not, e.g.,
    a parent run), with their params, tags and mean metrics: one search, however many pages."""
    runs = _every_page(client.search_runs, [experiment_id], "attributes.status = 'FINISHED'")
    return [run for run in runs if tag.DATASET in run.data.tags and tag.MODEL in run.data.tags]


def fold_metrics(client: MlflowClient, run_ids: Iterable[str], metrics: Iterable[str]) -> pd.DataFrame:
    """The per-fold values ``fold/<metric>`` of some runs (:func:`bncbench.tracking.folds.fold_frame`),
    read in bulk (:func:`metric_values`)."""
    run_ids, metrics = list(dict.fromkeys(run_ids)), list(metrics)
    return fold_frame(metric_values(client, run_ids, fold_keys(metrics)), run_ids, metrics)


def metric_values(client: MlflowClient, run_ids: Iterable[str], keys: Iterable[str]) -> pd.DataFrame:
    """Every logged value of the metrics ``keys`` of some runs, read in bulk: columns ``run_id``,
    ``key``, ``step``, ``value``, ``timestamp``.

    A database store answers one query per metric for up to ``_RUNS_PER_QUERY`` runs (the store's
    ``get_metric_history_bulk``, which ``MlflowClient`` does not expose); a tracking server, which
    has no such request, one per run and metric.
    """
    run_ids = list(dict.fromkeys(run_ids))
    store = client._tracking_client.store  # the bulk read is the store's, not the client's
    bulk = getattr(store, "get_metric_history_bulk", None)
    logged = []
    for key in keys:
        if bulk is None:
            logged += [(run_id, m) for run_id in run_ids for m in client.get_metric_history(run_id, key)]
            continue
        for start in range(0, len(run_ids), _RUNS_PER_QUERY):
            chunk = run_ids[start : start + _RUNS_PER_QUERY]
            logged += [(m.run_id, m) for m in bulk(chunk, key, max_results=None)]
    return pd.DataFrame([(run_id, m.key, m.step, m.value, m.timestamp) for run_id, m in logged], columns=VALUE_COLUMNS)
