"""Read the results of a bncbench experiment back from its MLflow store.

The runner logs one MLflow run per (dataset, model) cell in the MLflow experiment named after the
bncbench experiment: tags ``dataset``, ``model`` and ``cfg_hash``; the mean over the folds of each
metric as ``<metric>``; the per-fold values as ``fold/<metric>`` with step = fold index.
Only FINISHED runs count; a killed run stays RUNNING, a failed one is FAILED, and a cell whose
model cannot run on the dataset (e.g. HPB over its bound) is KILLED with a ``not_applicable`` tag.
Runs without ``dataset`` and ``model`` tags are not cells (e.g. a parent run) and are left out. The
run's config is logged flattened as params (``model.estimator_params.iterations``).

The store is searched once (:func:`read_runs`), and the per-fold values of the runs compared are
read in bulk (:func:`bncbench.tracking.metric_values`). Committed bundles give the same records without a
store (``bncbench.bundles.bundle_runs``): :class:`LoggedRuns` is what the report reads either way. Given the
experiment's cells (``Plan.by_key``, :mod:`bncbench.protocol.cell`), a cell's run is the latest FINISHED one with the
cell's ``cfg_hash`` and ``data_digest``: runs of other settings (another CV protocol, ...) or of a
dataset file changed since are left out (:meth:`LoggedRuns.left_out`). Without them, the latest
FINISHED run of each cell is read, whatever its settings.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.core.metrics import COUNTS
from bncbench.protocol.cell import DERIVED_PARAMS, SEMANTIC_KEYS
from bncbench.tracking import tags as tag
from bncbench.tracking.folds import fold_frame, fold_keys

if TYPE_CHECKING:
    from bncbench.protocol.cell import Cell
    from bncbench.tracking.record import CellRecord

MODEL_PARAM_PREFIX = "model."
KEY_COLUMNS = ["dataset", "model", "run_id", "cfg_hash"]
#: What :meth:`LoggedRuns.provenance` reads of each run: column -> (``params`` or ``tags``, key).
PROVENANCE = {
    "cv.repetitions": ("params", "cv.repetitions"),
    "cv.folds": ("params", "cv.folds"),
    "cv.seed": ("params", "cv.seed"),
    "iterations": ("params", "model.estimator_params.iterations"),
    "bncbench": ("tags", tag.VERSION),
    "git_commit": ("tags", tag.GIT_COMMIT),
    "git_dirty": ("tags", tag.GIT_DIRTY),
    "data_digest": ("tags", tag.DATA_DIGEST),
    "experiment": ("params", "experiment.name"),  # the experiment that computed it (bncbench.tracking.reuse)
    "cv.discretisation": ("params", "cv.discretisation.method"),  # logged off the default (MDL) only
    "cv.bins": ("params", "cv.discretisation.bins"),
    "bundle": ("tags", tag.ORIGIN_BUNDLE),  # the bundle it was imported from (bncbench.bundles)
}
Cells = Mapping[tuple[str, str], "Cell"]
#: ``(run ids, metric keys) -> every logged value of those keys of those runs`` (columns
#: ``bncbench.tracking.folds.VALUE_COLUMNS``), by the ids of the records.
MetricValues = Callable[[Sequence[str], Sequence[str]], pd.DataFrame]


@dataclass(frozen=True)
class LoggedRuns:
    """The FINISHED cell runs of an experiment, read once (from a store or from bundles), and what is
    made of them.

    Attributes
    ----------
    experiment : str
        The experiment's name (``experiment.name``).
    source : str
        Where they were read: the tracking URI, or the bundle folders named.
    runs : tuple of CellRecord
        Every FINISHED run of the experiment tagged ``dataset`` and ``model``.
    cells : mapping or None
        The experiment's cells (``Plan.by_key``, :mod:`bncbench.protocol.cell`) the runs are checked
        against; None: each cell's latest run counts, whatever its settings.
    values : MetricValues
        Reads the logged values of the runs' metrics (the per-fold ones, :meth:`fold_metrics`).
    bundles : tuple of str
        The bundle folders named, when the runs were read from bundles rather than a store.
    repeats : dict
        ``{bundle id: runs}`` passed over in those bundles: cells a bundle read before holds with the same numbers
        (``bncbench.bundles.BundleRuns.repeats``).
    """

    experiment: str
    source: str
    runs: tuple["CellRecord", ...]
    cells: Cells | None
    values: MetricValues = field(repr=False)
    bundles: tuple[str, ...] = ()
    repeats: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of_records(cls, experiment: str, source: str, records: Iterable["CellRecord"], values: MetricValues,
                   cells: Cells | None = None, bundles: Sequence[str] = (),
                   repeats: Mapping[str, int] | None = None) -> "LoggedRuns":
        """The runs ``records`` (the FINISHED cell runs of ``experiment``) checked against ``cells``: each
        dataset whose digest is unknown here is read in the version of its latest run of the configuration."""
        records = tuple(records)
        cells = None if cells is None else _one_version_per_dataset(records, cells)
        return cls(experiment, source, records, cells, values, tuple(bundles), dict(repeats or {}))

    def results(self) -> pd.DataFrame:
        """Mean metrics of the cells, one row per (dataset, model).

        Returns
        -------
        pandas.DataFrame
            Columns ``dataset``, ``model``, ``run_id`` (``CellRecord.shown_id``), ``cfg_hash``, then one
            column per mean metric (NaN where a run did not log it), sorted by dataset and model. When a cell has
            several runs that count (with the same numbers: see :meth:`_latest`), the one started last is read.
        """
        results = self._latest(_metric_row)
        if results.empty:
            return pd.DataFrame(columns=KEY_COLUMNS)
        metrics = sorted(set(results.columns) - set(KEY_COLUMNS))
        return results[KEY_COLUMNS + metrics]

    def model_params(self) -> pd.DataFrame:
        """The logged config of each model, e.g. its estimator's ``iterations``.

        Returns
        -------
        pandas.DataFrame
            Indexed by model name, one column per run parameter under ``model.`` as the runner logs
            them flattened (``model.structure``, ``model.k``, ``model.estimator_params.iterations``,
            ...; string values; ``model.name`` left out), taken from the model's latest cell read;
            NaN where a model's config has no such key.
        """
        name = MODEL_PARAM_PREFIX + "name"
        return self._params_by("model", lambda key: key.startswith(MODEL_PARAM_PREFIX) and key != name)

    def dataset_params(self) -> pd.DataFrame:
        """The logged config of each dataset (``dataset.source``, ``dataset.synthetic.rows``, ...) and the
        cross-validation's ``cv.folds``, from the dataset's latest cell read; indexed by dataset name,
        string values, NaN where a dataset's config has no such key."""
        return self._params_by("dataset", lambda key: key.startswith("dataset.") or key == "cv.folds")

    def _params_by(self, index: str, kept: Callable[[str], bool]) -> pd.DataFrame:
        """The run params ``kept`` of the latest cell read of each dataset or model (``index``), indexed by it."""
        params = self._latest(lambda run: {key: value for key, value in run.params.items() if kept(key)})
        if params.empty:
            return pd.DataFrame(index=pd.Index([], name=index))
        other = "dataset" if index == "model" else "model"
        return params.drop_duplicates(index).set_index(index).drop(columns=other).sort_index()

    def provenance(self) -> pd.DataFrame:
        """What produced the runs :meth:`results` reads: their settings and code and data versions.

        Returns
        -------
        pandas.DataFrame
            One row per run read: ``dataset``, ``model``, ``run_id``, then the columns of
            :data:`PROVENANCE` (None where a run did not log it, e.g. a run older than the tag).
        """
        return self._latest(_provenance_row)

    def left_out(self) -> pd.DataFrame | None:
        """The FINISHED runs of the cells that :meth:`results` leaves out, and why; None without cells.

        Returns
        -------
        pandas.DataFrame or None
            Columns ``dataset``, ``model``, ``run_id`` and ``differs``: the run's settings that
            differ from the cell's (``cv.repetitions=1, cv.seed=7``), else its other ``data_digest``.
            Runs of other cells are not counted.
        """
        if self.cells is None:
            return None
        rows = [[run.tags[tag.DATASET], run.tags[tag.MODEL], run.shown_id, _difference(run, self.cells[run.key])]
                for run in self.runs if run.key in self.cells and not _belongs(run, self.cells)]
        return pd.DataFrame(rows, columns=["dataset", "model", "run_id", "differs"])

    def fold_metrics(self, run_ids: Iterable[str], metrics: Iterable[str]) -> pd.DataFrame:
        """Per-fold values of some of the runs (:func:`bncbench.tracking.folds.fold_frame`), by the ids
        the results show (``CellRecord.shown_id``)."""
        in_store = {run.shown_id: run.run_id for run in self.runs}
        shown = {store_id: run_id for run_id, store_id in in_store.items()}
        run_ids, metrics = [in_store.get(r, r) for r in dict.fromkeys(run_ids)], list(metrics)
        folds = fold_frame(self.values(run_ids, fold_keys(metrics)), run_ids, metrics)
        return folds.assign(run_id=folds["run_id"].map(lambda r: shown.get(r, r)))

    def _latest(self, row: Callable[["CellRecord"], dict]) -> pd.DataFrame:
        """``row`` of the latest run of each (dataset, model) cell (with the expected ``cfg_hash``
        and ``data_digest``, when the cells are given), sorted by cell.

        Raises
        ------
        ConfigError
            Two runs of a cell with the same ``cfg_hash`` and ``data_digest`` hold other numbers
            (``CellRecord.numbers``): which one is right is not the report's to choose.
        """
        counted = [run for run in self.runs if self.cells is None or _belongs(run, self.cells)]
        _check_one_result_per_cell(counted)
        frame = pd.DataFrame([{"dataset": run.tags[tag.DATASET], "model": run.tags[tag.MODEL], "_start": run.start_time,
                               "_end": run.end_time, **row(run)} for run in counted])
        if frame.empty:
            return frame
        return (
            frame.sort_values(["_start", "_end"], ascending=False)
            .drop_duplicates(["dataset", "model"])
            .sort_values(["dataset", "model"])
            .drop(columns=["_start", "_end"])
            .reset_index(drop=True)
        )


def read_runs(tracking_uri: str, experiment_name: str, cells: Cells | None = None) -> LoggedRuns:
    """The FINISHED cell runs of an experiment, in one search of its store.

    Parameters
    ----------
    tracking_uri : str
        MLflow tracking URI, e.g. ``sqlite:///runs/mlflow.db``.
    experiment_name : str
        Name of the MLflow experiment (= ``experiment.name`` of the bncbench experiment).
    cells : mapping, optional
        The experiment's cells (``Plan.by_key``, :mod:`bncbench.protocol.cell`): only their runs with
        the expected ``cfg_hash`` and ``data_digest`` are read (a dataset with no file here: the
        version its latest run read). None: every cell's latest run.

    Raises
    ------
    ConfigError
        If the store cannot be opened or holds no such experiment.
    """
    from bncbench.tracking.record import finished_records, metric_values  # here: MLflow only when a store is read

    return LoggedRuns.of_records(experiment_name, tracking_uri, finished_records(tracking_uri, experiment_name),
                                 lambda run_ids, keys: metric_values(tracking_uri, run_ids, keys), cells)


def _one_version_per_dataset(runs, cells: Cells) -> Cells:
    """``cells`` with each dataset whose digest is unknown here (no file for it, e.g. on a tracking
    server) given the ``data_digest`` of its latest run of the configuration: the cells of a dataset
    then read one version of it, and runs on another are left out as such."""
    logged = {}
    for run in sorted(runs, key=lambda run: run.start_time):
        cell = cells.get(run.key)
        if cell is not None and cell.data_digest is None and run.cfg_hash == cell.cfg_hash:
            logged[run.tags[tag.DATASET]] = run.data_digest
    return {key: replace(cell, data_digest=logged.get(key[0])) if cell.data_digest is None else cell
            for key, cell in cells.items()}


def load_results(tracking_uri: str, experiment_name: str, cells: Cells | None = None) -> pd.DataFrame:
    """:meth:`LoggedRuns.results` of :func:`read_runs`."""
    return read_runs(tracking_uri, experiment_name, cells).results()


def load_fold_metrics(tracking_uri: str, run_ids: Iterable[str], metrics: Iterable[str]) -> pd.DataFrame:
    """Per-fold values ``fold/<metric>`` of some runs of a store (:func:`bncbench.tracking.folds.fold_frame`), e.g.
    for a 5x2cv t-test per dataset."""
    from bncbench.tracking.record import metric_values  # here: MLflow only when a store is read

    run_ids, metrics = list(dict.fromkeys(run_ids)), list(metrics)
    return fold_frame(metric_values(tracking_uri, run_ids, fold_keys(metrics)), run_ids, metrics)


def _check_one_result_per_cell(runs: Iterable["CellRecord"]) -> None:
    """Raise ConfigError if two of ``runs`` of one cell, ``cfg_hash`` and ``data_digest`` hold other numbers."""
    first = {}
    for run in runs:
        other = first.setdefault((*run.key, run.cfg_hash, run.data_digest), run)
        if other.numbers() != run.numbers():
            raise ConfigError(
                f"cell {run.name} has two finished runs of one configuration and data (cfg_hash {run.cfg_hash}) "
                f"with other numbers: run {other.run_id}{_origin(other)} and run {run.run_id}{_origin(run)}; the "
                "report will not choose between them. Delete the wrong one (mlflow runs delete --run-id <id>) and "
                "report again."
            )


def _origin(run: "CellRecord") -> str:
    bundle = run.tags.get(tag.ORIGIN_BUNDLE)
    return f" (imported from bundle {bundle})" if bundle else ""


def _belongs(run: "CellRecord", cells: Cells) -> bool:
    """Whether a run is one of its cell's expected runs: its ``cfg_hash``, and its ``data_digest``
    unless the dataset's is unknown here."""
    cell = cells.get(run.key)
    return (cell is not None and run.tags.get(tag.CFG_HASH) == cell.cfg_hash
            and cell.data_digest in (None, run.tags.get(tag.DATA_DIGEST)))


def _difference(run: "CellRecord", cell: "Cell") -> str:
    """How a run differs from its cell's expected run, briefly."""
    logged = {key: value for key, value in run.params.items()
              if key.split(".")[0] in SEMANTIC_KEYS and key not in DERIVED_PARAMS}
    keys = logged.keys() | cell.params.keys()
    changed = sorted(key for key in keys if logged.get(key) != cell.params.get(key))
    if changed:
        return ", ".join(f"{key}={logged.get(key, '(not set)')}" for key in changed)
    if run.cfg_hash != cell.cfg_hash:
        return f"cfg_hash={run.tags.get('cfg_hash')}"
    digest = run.data_digest
    if digest:
        return f"data_digest={digest[:8]} (another version of the dataset file)"
    return "no data_digest (an older run)"


def _metric_row(run: "CellRecord") -> dict:
    """The run's mean metrics; not the means of the folds' whole counts, which the report sums instead
    (``bncbench.report.error_counts``)."""
    means = {name: value for name, value in run.means().items() if name not in COUNTS}
    return {"run_id": run.shown_id, "cfg_hash": run.cfg_hash, **means}


def _provenance_row(run: "CellRecord") -> dict:
    found = {"params": run.params, "tags": run.tags}
    return {"run_id": run.shown_id, **{column: found[kind].get(key) for column, (kind, key) in PROVENANCE.items()}}
