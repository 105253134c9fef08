"""Read the results of a bncbench experiment back from its MLflow store.

The runner logs one MLflow run per (dataset, model) cell in the MLflow experiment named after the
bncbench experiment: tags ``dataset``, ``model`` and ``cfg_hash``; the mean over the folds of each
metric as ``<metric>``; the per-fold values as ``fold/<metric>`` with step = fold index.
Only FINISHED runs count; a killed run stays RUNNING, a failed one is FAILED, and a cell whose
model cannot run on the dataset (e.g. HPB over its bound) is KILLED with a ``not_applicable`` tag.
Runs without ``dataset`` and ``model`` tags are not cells (e.g. a parent run) and are left out. The
run's config is logged flattened as params (``model.estimator_params.iterations``).

Given the experiment's cells (:func:`bncbench.report.cells.expected_cells`), a cell's run is the latest
FINISHED one with the cell's ``cfg_hash`` and ``data_digest``: runs of other settings (another CV
protocol, ...) or of a dataset file changed since are left out (:func:`left_out_runs`). Without
them, the latest FINISHED run of each cell is read, whatever its settings.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from mlflow.entities import Run, ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT, MLFLOW_GIT_DIRTY
from sqlalchemy.engine import make_url

from bncbench.bundles.format import ORIGIN_RUN_TAG
from bncbench.errors import ConfigError
from bncbench.provenance import DATA_DIGEST_TAG, VERSION_TAG
from bncbench.report.cells import ExpectedCell
from bncbench.semantic import SEMANTIC_KEYS
from bncbench.tracking import open_store

FOLD_PREFIX = "fold/"
MODEL_PARAM_PREFIX = "model."
KEY_COLUMNS = ["dataset", "model", "run_id", "cfg_hash"]
#: What :func:`load_provenance` reads of each run: column -> (``params`` or ``tags``, key).
PROVENANCE = {
    "cv.repetitions": ("params", "cv.repetitions"),
    "cv.folds": ("params", "cv.folds"),
    "cv.seed": ("params", "cv.seed"),
    "iterations": ("params", "model.estimator_params.iterations"),
    "bncbench": ("tags", VERSION_TAG),
    "git_commit": ("tags", MLFLOW_GIT_COMMIT),
    "git_dirty": ("tags", MLFLOW_GIT_DIRTY),
    "data_digest": ("tags", DATA_DIGEST_TAG),
}
#: Params the runner logs that follow from the semantic config rather than belong to it.
_DERIVED_PARAMS = ("cv.seeds",)
Cells = Mapping[tuple[str, str], ExpectedCell]


def load_results(tracking_uri: str, experiment_name: str, cells: Cells | None = None) -> pd.DataFrame:
    """Mean metrics of the finished cells of an experiment, one row per (dataset, model).

    Parameters
    ----------
    tracking_uri : str
        MLflow tracking URI, e.g. ``sqlite:///runs/mlflow.db``.
    experiment_name : str
        Name of the MLflow experiment (= ``experiment.name`` of the bncbench experiment).
    cells : mapping, optional
        The experiment's cells (:func:`bncbench.report.cells.expected_cells`): only their runs with
        the expected ``cfg_hash`` and ``data_digest`` are read. None: every cell's latest run.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``model``, ``run_id`` (of a run imported from a bundle, its original
        id), ``cfg_hash``, then one column per mean metric
        (NaN where a run did not log it), sorted by dataset and model. When a cell has several
        FINISHED runs the one started last counts.

    Raises
    ------
    ConfigError
        If the store cannot be opened or holds no such experiment.
    """
    results = _latest_cells(tracking_uri, experiment_name, _metric_row, cells)
    if results.empty:
        return pd.DataFrame(columns=KEY_COLUMNS)
    metrics = sorted(set(results.columns) - set(KEY_COLUMNS))
    return results[KEY_COLUMNS + metrics]


def load_model_params(tracking_uri: str, experiment_name: str, cells: Cells | None = None) -> pd.DataFrame:
    """The logged config of each model of an experiment, e.g. its estimator's ``iterations``.

    Parameters
    ----------
    tracking_uri, experiment_name, cells
        As in :func:`load_results`.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name, one column per run parameter under ``model.`` as the runner logs
        them flattened (``model.structure``, ``model.k``, ``model.estimator_params.iterations``,
        ...; string values; ``model.name`` left out), taken from the model's latest finished cell;
        NaN where a model's config has no such key.

    Raises
    ------
    ConfigError
        As :func:`load_results`.
    """
    params = _latest_cells(tracking_uri, experiment_name, _params_row, cells)
    if params.empty:
        return pd.DataFrame(index=pd.Index([], name="model"))
    return params.drop_duplicates("model").set_index("model").drop(columns="dataset").sort_index()


def load_provenance(tracking_uri: str, experiment_name: str, cells: Cells | None = None) -> pd.DataFrame:
    """What produced the runs :func:`load_results` reads: their settings and code and data versions.

    Parameters
    ----------
    tracking_uri, experiment_name, cells
        As in :func:`load_results`.

    Returns
    -------
    pandas.DataFrame
        One row per run read: ``dataset``, ``model``, ``run_id``, then the columns of
        :data:`PROVENANCE` (None where a run did not log it, e.g. a run older than the tag).
    """
    return _latest_cells(tracking_uri, experiment_name, _provenance_row, cells)


def left_out_runs(tracking_uri: str, experiment_name: str, cells: Cells) -> pd.DataFrame:
    """The FINISHED runs of the experiment's cells that :func:`load_results` leaves out, and why.

    Parameters
    ----------
    tracking_uri, experiment_name : str
        As in :func:`load_results`.
    cells : mapping
        As in :func:`load_results`; runs of other cells are not counted.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``model``, ``run_id`` and ``differs``: the run's settings that differ
        from the cell's (``cv.repetitions=1, cv.seed=7``), else its other ``data_digest``.
    """
    rows = [
        {
            "dataset": run.data.tags["dataset"],
            "model": run.data.tags["model"],
            "run_id": _run_id(run),
            "differs": _difference(run, cells[_cell(run)]),
        }
        for run in _cell_runs(tracking_uri, experiment_name)
        if _cell(run) in cells and not _belongs(run, cells)
    ]
    return pd.DataFrame(rows, columns=["dataset", "model", "run_id", "differs"])


def load_fold_metrics(
    tracking_uri: str, run_ids: Iterable[str], metrics: Iterable[str]
) -> pd.DataFrame:
    """Per-fold values ``fold/<metric>`` of some runs, e.g. for a 5x2cv t-test per dataset.

    Parameters
    ----------
    tracking_uri : str
        MLflow tracking URI.
    run_ids : iterable of str
        Runs to read, e.g. the ``run_id`` column of :func:`load_results`.
    metrics : iterable of str
        Metric names without the ``fold/`` prefix, e.g. ``["zero_one_loss", "rmse"]``.

    Returns
    -------
    pandas.DataFrame
        Long format, columns ``run_id``, ``metric``, ``fold`` (the step), ``value``; if a step was
        logged twice the later value counts.
    """
    client = _client(tracking_uri)
    metrics = list(metrics)
    rows = []
    with _store_errors(tracking_uri):
        imported = _imported_runs(client)
        for run_id in run_ids:
            for metric in metrics:
                history = client.get_metric_history(imported.get(run_id, run_id), FOLD_PREFIX + metric)
                by_fold = {m.step: m.value for m in sorted(history, key=lambda m: m.timestamp)}
                rows += [(run_id, metric, fold, value) for fold, value in sorted(by_fold.items())]
    return pd.DataFrame(rows, columns=["run_id", "metric", "fold", "value"])


def _imported_runs(client: MlflowClient) -> dict[str, str]:
    """``{original run id: run id here}`` of the runs imported from bundles (``bncbench.bundles``),
    which the report names by their original run id (:func:`_run_id`)."""
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    if not experiments:
        return {}
    found, token = {}, None
    while True:
        page = client.search_runs(
            experiments, f"tags.`{ORIGIN_RUN_TAG}` IS NOT NULL", max_results=1000, page_token=token
        )
        found.update({run.data.tags[ORIGIN_RUN_TAG]: run.info.run_id for run in page})
        token = page.token
        if not token:
            return found


def _run_id(run: Run) -> str:
    """The id the report names a run by: the original one of a run imported from a bundle."""
    return run.data.tags.get(ORIGIN_RUN_TAG, run.info.run_id)


def _client(tracking_uri: str) -> MlflowClient:
    """Open the store without creating it (MLflow would silently create an empty SQLite file), with
    ``tracking.open_store``'s bounded first request: a server down or silent is named at once."""
    if tracking_uri.startswith("sqlite:"):
        database = make_url(tracking_uri).database
        if database and database != ":memory:" and not Path(database).is_file():
            raise ConfigError(
                f"no MLflow store at {Path(database).resolve()} (tracking_uri={tracking_uri!r}); "
                f"run the experiment first or set tracking_uri to the store it logged to "
                f"(a relative sqlite path is relative to the working directory)"
            )
    return open_store(tracking_uri)


@contextmanager
def _store_errors(tracking_uri: str) -> Iterator[None]:
    try:
        yield
    except MlflowException as exc:
        raise ConfigError(
            f"cannot read the MLflow store {tracking_uri!r}: {exc.message}; "
            f"check tracking_uri (e.g. sqlite:///runs/mlflow.db or http://host:5000)"
        ) from exc


def _finished_runs(client: MlflowClient, experiment_id: str) -> Iterator[Run]:
    token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string="attributes.status = 'FINISHED'",
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000,
            page_token=token,
        )
        yield from page
        token = page.token
        if not token:
            return


def _cell_runs(tracking_uri: str, experiment_name: str) -> list[Run]:
    """The FINISHED runs of an experiment that are cells (tagged ``dataset`` and ``model``)."""
    client = _client(tracking_uri)
    with _store_errors(tracking_uri):
        experiment = client.get_experiment_by_name(experiment_name)
        if experiment is None or experiment.lifecycle_stage != "active":
            names = sorted(e.name for e in client.search_experiments())
            raise ConfigError(
                f"no MLflow experiment {experiment_name!r} in {tracking_uri!r} (existing: "
                f"{', '.join(names) or 'none'}); run the experiment first "
                f"(python -m bncbench experiment=...) or set tracking_uri to the store it logged to"
            )
        return [
            run
            for run in _finished_runs(client, experiment.experiment_id)
            if "dataset" in run.data.tags and "model" in run.data.tags
        ]


def _cell(run: Run) -> tuple[str, str]:
    return run.data.tags["dataset"], run.data.tags["model"]


def _belongs(run: Run, cells: Cells) -> bool:
    """Whether a run is one of its cell's expected runs: its ``cfg_hash``, and its ``data_digest``
    unless the dataset's is unknown here."""
    cell = cells.get(_cell(run))
    tags = run.data.tags
    return (
        cell is not None
        and tags.get("cfg_hash") == cell.cfg_hash
        and cell.data_digest in (None, tags.get(DATA_DIGEST_TAG))
    )


def _difference(run: Run, cell: ExpectedCell) -> str:
    """How a run differs from its cell's expected run, briefly."""
    logged = {
        key: value
        for key, value in run.data.params.items()
        if key.split(".")[0] in SEMANTIC_KEYS and key not in _DERIVED_PARAMS
    }
    keys = logged.keys() | cell.params.keys()
    changed = sorted(key for key in keys if logged.get(key) != cell.params.get(key))
    if changed:
        return ", ".join(f"{key}={logged.get(key, '(not set)')}" for key in changed)
    if run.data.tags.get("cfg_hash") != cell.cfg_hash:
        return f"cfg_hash={run.data.tags.get('cfg_hash')}"
    digest = run.data.tags.get(DATA_DIGEST_TAG)
    if digest:
        return f"data_digest={digest[:8]} (another version of the dataset file)"
    return "no data_digest (an older run)"


def _latest_cells(
    tracking_uri: str, experiment_name: str, row: Callable[[Run], dict], cells: Cells | None
) -> pd.DataFrame:
    """``row`` of the latest finished run of each (dataset, model) cell (of ``cells``, with the
    expected ``cfg_hash`` and ``data_digest``, when given), sorted by cell."""
    runs = [
        run
        for run in _cell_runs(tracking_uri, experiment_name)
        if cells is None or _belongs(run, cells)
    ]
    frame = pd.DataFrame(
        [
            {
                "dataset": run.data.tags["dataset"],
                "model": run.data.tags["model"],
                "_start": run.info.start_time,
                "_end": run.info.end_time,
                **row(run),
            }
            for run in runs
        ]
    )
    if frame.empty:
        return frame
    return (
        frame.sort_values(["_start", "_end"], ascending=False)
        .drop_duplicates(["dataset", "model"])
        .sort_values(["dataset", "model"])
        .drop(columns=["_start", "_end"])
        .reset_index(drop=True)
    )


def _metric_row(run: Run) -> dict:
    means = {k: v for k, v in run.data.metrics.items() if not k.startswith(FOLD_PREFIX)}
    return {"run_id": _run_id(run), "cfg_hash": run.data.tags.get("cfg_hash"), **means}


def _params_row(run: Run) -> dict:
    return {
        key: value
        for key, value in run.data.params.items()
        if key.startswith(MODEL_PARAM_PREFIX) and key != MODEL_PARAM_PREFIX + "name"
    }


def _provenance_row(run: Run) -> dict:
    found = {"params": run.data.params, "tags": run.data.tags}
    return {
        "run_id": _run_id(run),
        **{column: found[kind].get(key) for column, (kind, key) in PROVENANCE.items()},
    }
