"""One cell of an experiment: 5x2 cross-validation of a (dataset, model) pair, logged to MLflow.

``bncbench run`` is a Hydra multirun whose sweep is the experiment's datasets x models (see
``conf/config.yaml``); each Hydra job calls ``run_job`` on one cell, whichever launcher runs it (joblib
locally, or e.g. submitit on a cluster). The sweep around the jobs is ``bncbench.sweep``.
"""

import json
import logging
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from sklearn.model_selection import StratifiedKFold

from bncbench import lease, provenance, reuse, semantic, tracking
from bncbench.bnc.classifier import BNClassifier
from bncbench.data import MDLDiscretizer, load_dataset, resolve_data_dir
from bncbench.data.digest import dataset_digest
from bncbench.errors import BncbenchError, DatasetError, NotApplicableError
from bncbench.metrics import CLIPPING, LOSSES
from bncbench.model_configs import with_model
from bncbench.models import discretises, make_model, model_tags
from bncbench.bnc.progress import task
from bncbench.progress import mark_cell_done
from bncbench.report.figures import heat_map
from bncbench.runs_dir import artifact_location
from bncbench.sweep import cell_threads
from bncbench.timing import timed

log = logging.getLogger(__name__)

DISK_FULL = (
    "the disk under the tracking store or its artifacts is full; free space (or set tracking_uri and "
    "artifact_location to a disk that has it) and run the experiment again: this cell runs again"
)

#: Rows of the untimed fit that compiles a cell's numba kernels before its first timed fit.
WARM_UP_ROWS = 100


@dataclass
class CrossValidation:
    """Results of the repeated cross-validation of one cell; fold ``i`` is row/entry ``i``."""

    seeds: list[int]
    metrics: pd.DataFrame  # one row per fold: the losses, the clipped rows and the timings
    predictions: pd.DataFrame  # one row per (fold, test row)
    structures: list[dict] = field(default_factory=list)  # per fold: repetition, parents_
    diagnostics: list[dict] = field(default_factory=list)  # per fold: BNClassifier.diagnostics()


def repetition_seeds(seed: int, repetitions: int) -> list[int]:
    """Seeds of the repetitions' fold splits, derived from ``seed`` by NumPy's SeedSequence.

    Unlike ``seed + r``, the seeds of two base seeds share no repetition.
    """
    return [int(s) for s in np.random.SeedSequence(int(seed)).generate_state(int(repetitions))]


def cross_validate(
    dataset, model: dict, repetitions: int = 5, folds: int = 2, seed: int = 1
) -> CrossValidation:
    """``repetitions`` x stratified ``folds``-fold CV of a model (``bncbench.models``) on ``dataset``.

    Per fold, ``MDLDiscretizer`` is fitted on the training part only and applied to both parts (unless
    a baseline asks for the raw data); the classifier gets ``random_state`` = the repetition's seed.
    ``fit_seconds`` times the classifier's ``fit``, ``predict_seconds`` its ``predict_proba`` (the
    predicted class is the arg-max), both by ``time.perf_counter``; discretisation is timed by neither,
    and neither holds numba's compilation (``bncbench.timing.timed``, after an untimed warm-up fit on
    a few rows of the first fold, ``_warm_up``).

    The losses (``bncbench.metrics``) are computed over all classes of the dataset: a class missing
    from a training fold gets probability 0 for every test row, which ``log_loss`` clips at
    ``bncbench.metrics.PROBABILITY_FLOOR`` (1e-15). Each fold also counts the rows so clipped and the
    part of its log loss they make (``bncbench.metrics.CLIPPING``).

    Parameters
    ----------
    dataset : bncbench.data.Dataset
    model : dict
        A model config (``conf/model``): BNClassifier arguments or a baseline.
    repetitions, folds, seed : int
        The CV protocol; see ``repetition_seeds``.
    """
    seeds = repetition_seeds(seed, repetitions)
    classes = np.array(sorted(dataset.y.unique()), dtype=object)
    y_codes = np.searchsorted(classes, dataset.y.to_numpy(dtype=object))
    _check_folds(dataset.name, np.bincount(y_codes), int(folds))
    fold_metrics, predictions, structures, diagnostics = [], [], [], []
    for repetition, rep_seed in enumerate(seeds):
        splitter = StratifiedKFold(n_splits=int(folds), shuffle=True, random_state=rep_seed)
        with warnings.catch_warnings():  # a class rarer than `folds` is part of the protocol, not news
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            splits = list(splitter.split(np.zeros(len(y_codes)), y_codes))
        for train, test in splits:
            index = len(fold_metrics)
            with task(f"{dataset.name}/{model.get('name', 'model')} fold {index + 1}/{repetitions * folds}"):
                proba, seconds, classifier = _fit_predict(
                    dataset, train, test, model, rep_seed, classes, warm_up=index == 0
                )
            losses = {name: loss(proba, y_codes[test]) for name, loss in LOSSES.items()}
            clipping = {name: count(proba, y_codes[test]) for name, count in CLIPPING.items()}
            fold_metrics.append({**losses, **clipping, **seconds})
            predictions.append(_prediction_frame(index, repetition, test, classes, y_codes[test], proba))
            if isinstance(classifier, BNClassifier):
                parents = {str(a): [str(p) for p in ps] for a, ps in classifier.parents_.items()}
                structures.append({"fold": index, "repetition": repetition, "parents": parents})
                diagnostics.append(classifier.diagnostics())
    return CrossValidation(
        seeds, pd.DataFrame(fold_metrics), pd.concat(predictions, ignore_index=True), structures, diagnostics
    )


def _check_folds(name: str, class_counts: np.ndarray, folds: int) -> None:
    """Refuse a dataset that stratified ``folds``-fold CV cannot split: scikit-learn needs a class with
    at least ``folds`` rows (classes rarer than that are part of the papers' protocol: they miss from
    some training folds)."""
    if class_counts.max() < folds:
        raise DatasetError(
            f"dataset {name!r} has {class_counts.sum()} rows and at most {class_counts.max()} per class "
            f"({len(class_counts)} classes): stratified {folds}-fold cross-validation needs a class with at "
            f"least {folds} rows. Use fewer folds (cv.folds=...) or a larger dataset."
        )


def _fit_predict(dataset, train, test, model, random_state, classes, warm_up=False):
    X_train, X_test = dataset.X.iloc[train], dataset.X.iloc[test]
    y_train = dataset.y.iloc[train]
    if discretises(model):
        discretizer = MDLDiscretizer().fit(X_train, y_train)
        X_train, X_test = discretizer.transform(X_train), discretizer.transform(X_test)
    if warm_up:
        _warm_up(model, X_train, y_train, X_test, random_state)
    classifier = make_model(model, random_state)
    _, fit_seconds = timed(lambda: classifier.fit(X_train, y_train), "fit")
    fold_proba, predict_seconds = timed(lambda: classifier.predict_proba(X_test), "predict_proba")
    proba = np.zeros((len(test), len(classes)))
    proba[:, np.searchsorted(classes, np.asarray(classifier.classes_, dtype=object))] = fold_proba
    return proba, {"fit_seconds": fit_seconds, "predict_seconds": predict_seconds}, classifier


def _warm_up(model, X_train, y_train, X_test, random_state) -> None:
    """Fit and predict the model untimed on at most ``WARM_UP_ROWS`` training rows (every class among
    them), so that numba compiles or loads the kernels of the timed calls before they are timed.

    The codes are int64 whatever the data, so a few rows call the kernels with the types of the whole
    fold. A model that cannot fit so few rows is left cold: ``bncbench.timing.timed`` then repeats
    the call that compiles, so the timings hold no compilation either way.
    """
    per_class = max(1, WARM_UP_ROWS // y_train.nunique())
    rows = np.flatnonzero(y_train.groupby(y_train, observed=True).cumcount().to_numpy() < per_class)
    classifier = make_model(model, random_state)
    try:
        classifier.fit(X_train.iloc[rows], y_train.iloc[rows]).predict_proba(X_test.iloc[:WARM_UP_ROWS])
    except Exception as err:  # the real fit reports the model's errors; this one only saves time
        log.debug("warm-up of %s not done: %s", model.get("name", "model"), err)


def _prediction_frame(fold, repetition, test, classes, y_codes, proba) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "fold": fold,
            "repetition": repetition,
            "row": test,
            "y_true": classes[y_codes].astype(str),
            "y_pred": classes[np.argmax(proba, axis=1)].astype(str),
        }
    )
    probabilities = pd.DataFrame(proba, columns=[f"proba_{c}" for c in classes])
    return pd.concat([frame, probabilities], axis=1)


def cell_names(cfg: DictConfig) -> tuple[str, str]:
    """(dataset, model) names of the cell: the dataset's config name (Hydra's choice in a job, else
    its ``name``) and the model's name (``cfg.model``, or its node's ``name``)."""
    model = cfg.model if isinstance(cfg.model, str) else cfg.model.name
    if HydraConfig.initialized():
        return str(HydraConfig.get().runtime.choices.get("dataset")), str(model)
    return str(cfg.dataset.name), str(model)


def run_cell(cfg: DictConfig, client, experiment_id: str, dataset_name: str, model_name: str) -> str:
    """Cross-validate one cell and log it as one MLflow run; return "finished", "copied", "skipped",
    "running elsewhere", "not applicable" or "failed".

    ``cfg.model`` is the model's name, as Hydra's sweep sets it, or its node (``bncbench.model_configs``).
    A cell whose semantic config (``semantic.cfg_hash``) already has a FINISHED run that read the
    same data (tag ``data_digest``, ``bncbench.data.digest``) is skipped, whatever code version
    produced it; a changed dataset file makes the cell run again. A cell FINISHED on the same data
    under another model name in this experiment (a renamed model: the hash does not depend on names) is
    copied from that run under its new name ("copied", ``bncbench.reuse``), and so is one that another
    experiment of the store has FINISHED, unless ``reuse_runs`` is false. A cell another process is
    running (a live lease, ``bncbench.lease``) is left to it ("running elsewhere"); runs of the same
    config left RUNNING by a process that died are marked KILLED and the cell runs again. Each run is
    tagged with what produced it (``bncbench.provenance``). A model that cannot run on the dataset
    (``NotApplicableError``, e.g. HPB with too many sub-patterns) ends the run KILLED with the reason,
    naming the dataset, in the tag ``not_applicable``: the report, which reads FINISHED runs only,
    leaves it out, and the next sweep tries it again (the refusal comes before fitting).
    Any other exception is logged on the run (status FAILED, tag ``error``; a traceback artifact
    unless it is a ``BncbenchError``) and not raised.
    """
    with_model(cfg)
    with tracking.quiet_store():  # a failed write is reported here, without MLflow's own traceback
        return _run_cell(cfg, client, experiment_id, dataset_name, model_name)


def _run_cell(cfg: DictConfig, client, experiment_id: str, dataset_name: str, model_name: str) -> str:
    hash_ = semantic.cfg_hash(cfg)
    cell = (dataset_name, model_name)
    name = "/".join(cell)
    try:
        data = dataset_digest(OmegaConf.to_container(cfg.dataset, resolve=True), cfg.data_dir)
    except (BncbenchError, OSError):  # an unreadable store: the run below logs what is wrong with it
        data = None
    digest = data.digest if data else None
    taken = _taken_by_another(client, experiment_id, hash_, digest, cell)
    if taken:
        return taken
    tracking.abandon(
        client,
        [run for run in tracking.running_runs(client, experiment_id, hash_) if not lease.is_live(run.data.tags)],
        "left RUNNING by an interrupted process (it ended before the run finished); run again",
    )  # a live run started by another process since the check above is that process's, not abandoned
    tags = {
        **provenance.run_tags(),
        "dataset": dataset_name,
        "model": model_name,
        **model_tags(OmegaConf.to_container(cfg.model, resolve=True)),
        "cfg_hash": hash_,
        "numba_threads": numba.get_num_threads(),
    }
    try:
        run_id = tracking.start_run(client, experiment_id, name, {**tags, **lease.lease_tags()})
    except Exception as err:
        if not tracking.disk_full(err):
            raise
        _log_disk_full(name, client, None)
        return "failed"
    taken = _claim(client, experiment_id, hash_, digest, cell, tracking.get_run(client, run_id))
    if taken:  # another process started or finished the cell meanwhile
        tracking.delete_run(client, run_id)
        return taken
    source = tracking.finished_run(client, experiment_id, hash_, digest) or (  # under another name here
        reuse.computed_elsewhere(client, experiment_id, hash_, digest) if cfg.reuse_runs else None
    )
    try:
        with lease.Heartbeat(client, run_id):
            if source is not None:
                reuse.copy_cell(client, source, run_id)
            else:
                _evaluate_and_log(cfg, client, run_id)
    except NotApplicableError as err:
        reason = f"not applicable to dataset {dataset_name!r}: {err}"
        tracking.set_tags(client, run_id, {"not_applicable": reason})
        tracking.end_run(client, run_id, status="KILLED")
        log.warning("%s: skipped: %s", name, reason)
        return "not applicable"
    except Exception as err:  # a failed cell must never stop the others
        if tracking.disk_full(err):
            _log_disk_full(name, client, run_id)
            return "failed"
        message = str(err) if isinstance(err, BncbenchError) else f"{type(err).__name__}: {err}"
        tracking.set_tags(client, run_id, {"error": message})
        if not isinstance(err, BncbenchError):
            tracking.log_text(client, run_id, traceback.format_exc(), "error.txt")
        tracking.end_run(client, run_id, failed=True)
        log.error("%s: FAILED: %s", name, message)
        return "failed"
    tracking.end_run(client, run_id, failed=False)
    if source is not None:
        log.info("%s: copied from run %s, named %s in experiment %s (run %s)", name, source.info.run_id,
                 source.info.run_name, tracking.experiment_name(client, source.info.experiment_id), run_id)
        return "copied"
    log.info("%s: finished (run %s)", name, run_id)
    return "finished"


def _taken_by_another(client, experiment_id, hash_, digest, cell) -> str | None:
    """"skipped" when the cell has a FINISHED run of this data, "running elsewhere" when another
    process holds a live run of it, else None: the look before this process starts its run."""
    if _finished(client, experiment_id, hash_, digest, cell):
        return "skipped"
    rivals = _live_rivals(client, experiment_id, hash_, None)
    if rivals:
        log.info("%s: skipped, running in another process (run %s)", "/".join(cell), rivals[0].info.run_id)
        return "running elsewhere"
    return None


def _claim(client, experiment_id, hash_, digest, cell, own) -> str | None:
    """The look after this process started its run ``own``: None once the cell is claimed for it, else
    "skipped" or "running elsewhere" as ``_taken_by_another`` (``lease.decision``; two processes that
    started the cell together never both keep it). A wait longer than a lease leaves the cell to the
    other process."""
    deadline = time.monotonic() + lease.LEASE_SECONDS
    while True:
        if _finished(client, experiment_id, hash_, digest, cell):
            return "skipped"
        rivals = _live_rivals(client, experiment_id, hash_, own)
        decision = lease.decision(own, rivals)
        if decision == "claim":
            tracking.set_tags(client, own.info.run_id, {lease.CLAIM_TAG: "1"})
            return None
        if decision == "give way" or time.monotonic() > deadline:
            log.info("%s: skipped, running in another process (run %s)", "/".join(cell), rivals[0].info.run_id)
            return "running elsewhere"
        time.sleep(lease.DECISION_POLL_SECONDS)


def _finished(client, experiment_id, hash_, digest, cell) -> bool:
    done = tracking.finished_run(client, experiment_id, hash_, digest, cell)
    if done is not None:
        log.info("%s: skipped, finished as run %s", "/".join(cell), done.info.run_id)
    return done is not None


def _live_rivals(client, experiment_id, hash_, own) -> list:
    """The live RUNNING runs of the cell (``lease.is_live``) other than ``own``."""
    return [
        run
        for run in tracking.running_runs(client, experiment_id, hash_)
        if lease.is_live(run.data.tags) and (own is None or run.info.run_id != own.info.run_id)
    ]


def _log_disk_full(name: str, client, run_id: str | None) -> None:
    """One line for a cell stopped by a full disk, and the run marked FAILED if the store still takes
    that (a full disk under SQLite refuses it: the run then stays RUNNING and its cell runs again)."""
    log.error("%s: FAILED: %s", name, DISK_FULL)
    if run_id is not None:
        try:
            with tracking.quiet_store():
                tracking.set_tags(client, run_id, {"error": DISK_FULL})
                tracking.end_run(client, run_id, failed=True)
        except Exception:  # the same full disk; nothing more to say than the line above
            pass


def _evaluate_and_log(cfg: DictConfig, client, run_id: str) -> None:
    cv = cfg.cv
    seeds = repetition_seeds(cv.seed, cv.repetitions)
    params = tracking.flatten(semantic.semantic_config(cfg))
    params.update(
        {
            "cv.seeds": json.dumps(seeds),
            "data_dir": str(resolve_data_dir(cfg.data_dir)),
            "experiment.name": cfg.experiment.name,
        }
    )
    tracking.log_params(client, run_id, params)
    tracking.log_text(client, run_id, OmegaConf.to_yaml(cfg, resolve=True), "config.yaml")

    spec = OmegaConf.to_container(cfg.dataset, resolve=True)
    dataset = load_dataset(spec, cfg.data_dir)
    data = dataset_digest(spec, cfg.data_dir)  # after loading, which fetches a dataset not yet stored
    tracking.log_inputs(client, run_id, [provenance.dataset_input(data)])
    tracking.set_tags(client, run_id, {provenance.DATA_DIGEST_TAG: data.digest})
    result = cross_validate(dataset, OmegaConf.to_container(cfg.model, resolve=True), cv.repetitions, cv.folds, cv.seed)

    metrics = [
        (f"fold/{name}", value, fold)
        for name in result.metrics
        for fold, value in enumerate(result.metrics[name])
    ]
    metrics += [(name, result.metrics[name].mean(), 0) for name in result.metrics]
    tracking.log_metrics(client, run_id, metrics)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.parquet"
        result.predictions.to_parquet(path, index=False)
        tracking.log_artifacts(client, run_id, path)
    tracking.log_dict(client, run_id, {"folds": result.structures}, "structure.json")
    _log_diagnostics(client, run_id, result.diagnostics)


def _log_diagnostics(client, run_id: str, per_fold: list[dict]) -> None:
    """Numbers as ``fold/<name>`` metrics and their mean; tables as ``<name>.csv`` with a fold column,
    and a loss grid also as a heat-map of its mean over the folds, ``<name>.png``."""
    names = sorted({name for found in per_fold for name in found})
    metrics = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            values = [(fold, found[name]) for fold, found in enumerate(per_fold) if name in found]
            if isinstance(values[0][1], pd.DataFrame):
                tables = [table.stack().rename("value").reset_index().assign(fold=fold) for fold, table in values]
                pd.concat(tables).to_csv(Path(tmp) / f"{name}.csv", index=False)
                if values[0][1].attrs.get("grid"):
                    heat_map(sum(t for _, t in values) / len(values), name, Path(tmp) / f"{name}.png")
            else:
                metrics += [(f"fold/{name}", float(v), fold) for fold, v in values]
                metrics.append((name, float(np.mean([v for _, v in values])), 0))
        tracking.log_artifacts(client, run_id, tmp)
    tracking.log_metrics(client, run_id, metrics)


def run_job(cfg: DictConfig) -> str:
    """Hydra task function: one cell. Never raises; see ``run_cell``.

    Sets the numba threads of the cell (``cell_threads``) first, and leaves the marker of a done cell
    for the progress of the sweep (``bncbench.progress``) last.
    """
    status = "failed"
    try:
        dataset_name, model_name = cell_names(cfg)
        numba.set_num_threads(min(cell_threads(cfg), numba.config.NUMBA_NUM_THREADS))
        client = tracking.open_store(cfg.tracking_uri, check=False)  # checked before the sweep
        experiment_id = tracking.prepare_experiment(client, cfg.experiment.name, artifact_location(cfg))
        status = run_cell(cfg, client, experiment_id, dataset_name, model_name)
    except Exception as err:  # not even a run could be logged; the summary reports the cell as not run
        if tracking.disk_full(err):
            _log_disk_full("cell not run", None, None)
        else:
            log.error("cell not run: %s", err if isinstance(err, BncbenchError) else traceback.format_exc())
    if HydraConfig.initialized():
        hydra_cfg = HydraConfig.get()
        try:
            mark_cell_done(hydra_cfg.sweep.dir, hydra_cfg.job.num, status)
        except OSError as err:  # progress only: the cell's result is in MLflow
            log.warning("progress marker not written: %s", err)
    return status
