"""The cross-validation of one cell: ``repetitions`` x stratified ``folds``-fold CV of a model on a
dataset, with MDL (or equal-frequency) discretisation fitted per training fold, the losses of every
fold and the timings of fit and prediction (without numba's compilation). Pure: no MLflow, no Hydra;
``bncbench.app.runner`` logs what it returns.
"""

import io
import logging
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bncbench.bnc.classifier import BNClassifier
from bncbench.bnc.estimators import estimator_class
from bncbench.bnc.progress import task
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.metrics import CLIPPING, COUNTS, LOGGED_LOSSES, TRUTH, RunningMetrics
from bncbench.core.timing import timed
from bncbench.data import MDLDiscretizer
from bncbench.data.equal_frequency import EqualFrequencyDiscretizer
from bncbench.protocol.models import discretises, make_model

log = logging.getLogger(__name__)

#: Rows of the untimed fit that compiles a cell's numba kernels before its first timed fit.
WARM_UP_ROWS = 100


@dataclass
class CrossValidation:
    """Results of the repeated cross-validation of one cell; fold ``i`` is row/entry ``i``."""

    seeds: list[int]
    metrics: pd.DataFrame  # one row per fold: the losses, the clipped rows and the timings
    #: One row per (fold, test row) (``PredictionsFile``): the parquet file's path, or its bytes.
    predictions_parquet: Path | bytes
    structures: list[dict] = field(default_factory=list)  # per fold: repetition, parents_
    diagnostics: list[dict] = field(default_factory=list)  # per fold: BNClassifier.diagnostics()

    @property
    def predictions(self) -> pd.DataFrame:
        """The test rows' predictions, read from ``predictions_parquet``."""
        parquet = self.predictions_parquet
        return pd.read_parquet(io.BytesIO(parquet) if isinstance(parquet, bytes) else parquet)


class FoldFit(NamedTuple):
    """A fold's fit, as ``repeated_folds``'s ``fit_predict`` returns it: the fitted classifier (None: none to
    describe), the classes of its probabilities' columns, the fit's seconds, and the test rows' predictions, in
    their order, as an iterable of ``(probabilities, true P(y | x) or None, seconds)``, a chunk of rows each."""

    classifier: object
    classes: np.ndarray
    fit_seconds: float
    predictions: Iterable[tuple[np.ndarray, pd.DataFrame | None, float]]


@dataclass(frozen=True)
class FoldRows:
    """The rows of one fold as a boolean mask never held whole (a byte a row, 20 MB at 20 million rows): entry
    ``i`` is whether row ``i``'s fold, ``folds[i]``, is ``fold`` (the test rows) or another (``training()``: the
    training rows). A slice is a numpy mask, as a mask's slice is; ``folds`` holds ``no_fold(folds)`` for a row in
    no fold (a row of an out-of-core file whose class is missing), which neither selects."""

    folds: np.ndarray
    fold: int
    test: bool = True

    def __len__(self) -> int:
        return len(self.folds)

    def __getitem__(self, where: slice) -> np.ndarray:
        part = self.folds[where]
        return part == self.fold if self.test else (part != self.fold) & (part != no_fold(self.folds))

    def training(self) -> "FoldRows":
        return FoldRows(self.folds, self.fold, test=False)

    def positions(self, block: int = 1 << 20) -> Iterator[np.ndarray]:
        """The numbers of the rows selected, in order, a block of rows at a time."""
        for start in range(0, len(self), block):
            yield start + np.flatnonzero(self[start : start + block])


def no_fold(folds: np.ndarray) -> int:
    """The entry of a row in no fold in an array of rows' folds (``FoldRows``): the largest of its type."""
    return np.iinfo(folds.dtype).max


class _Taken:
    """Numbers from blocks of them (``FoldRows.positions``), taken in order ``n`` at a time."""

    def __init__(self, blocks: Iterator[np.ndarray]):
        self.blocks, self.pending = blocks, np.empty(0, dtype=np.int64)

    def take(self, n: int) -> np.ndarray:
        parts, held = [self.pending], len(self.pending)
        while held < n:  # blocks joined once, however many a chunk spans (an in-memory fold is one chunk)
            block = next(self.blocks, None)
            if block is None:
                raise ValueError(f"{n} rows asked and only {held} left: more predictions than test rows")
            parts.append(block)
            held += len(block)
        joined = np.concatenate(parts) if len(parts) > 1 else self.pending
        taken, self.pending = joined[:n], joined[n:]
        return taken


class PredictionsFile:
    """The test rows' predictions as ``repeated_folds`` writes them, a chunk of a fold at a time, into a parquet
    file at ``path`` (None: a buffer in memory): a row per (fold, test row) with its fold, repetition and row
    numbers, its true and predicted (arg-max) class and a probability per class (``proba_<class>``)."""

    def __init__(self, path: Path | None, classes: np.ndarray):
        names = classes.astype(str)
        self.path, self.labels = path, pa.array(names)
        self.schema = pa.schema([("fold", pa.int64()), ("repetition", pa.int64()), ("row", pa.int64()),
                                 ("y_true", pa.string()), ("y_pred", pa.string()),
                                 *[(f"proba_{c}", pa.float64()) for c in names]])
        self.sink = pa.BufferOutputStream() if path is None else path
        self.writer = pq.ParquetWriter(self.sink, self.schema)

    def write(self, fold: int, repetition: int, rows: np.ndarray, y_codes: np.ndarray, proba: np.ndarray) -> None:
        n = len(rows)
        columns = [np.full(n, fold), np.full(n, repetition), rows, self.labels.take(y_codes),
                   self.labels.take(np.argmax(proba, axis=1)), *proba.T]
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.schema))

    def close(self) -> Path | bytes:
        """Finish the file: its path, or the buffer's bytes."""
        self.writer.close()
        return self.sink.getvalue().to_pybytes() if self.path is None else self.path


def repetition_seeds(seed: int, repetitions: int) -> list[int]:
    """Seeds of the repetitions' fold splits, derived from ``seed`` by NumPy's SeedSequence.

    Unlike ``seed + r``, the seeds of two base seeds share no repetition.
    """
    return [int(s) for s in np.random.SeedSequence(int(seed)).generate_state(int(repetitions))]


def cross_validate(
    dataset, model: dict, repetitions: int = 5, folds: int = 2, seed: int = 1, discretisation: str = "mdl",
    predictions_to: Path | None = None, **discretiser_params,
) -> CrossValidation:
    """``repetitions`` x stratified ``folds``-fold CV (``repetition_seeds(seed, repetitions)``) of a model config
    (``bncbench.protocol.models``: BNClassifier arguments or a baseline) on the ``bncbench.data.Dataset`` ``dataset``;
    the predictions written to the parquet file ``predictions_to`` (None: kept in memory).

    Per fold, the discretiser (``discretiser(discretisation, **discretiser_params)``) is fitted on the training
    part only and applied to both parts (unless a baseline asks for the raw data); the classifier gets
    ``random_state`` = the repetition's seed.
    ``fit_seconds`` times the classifier's ``fit``, ``predict_seconds`` its ``predict_proba`` (the
    predicted class is the arg-max), both by ``time.perf_counter``; discretisation is timed by neither,
    and neither holds numba's compilation (``bncbench.core.timing.timed``, after an untimed warm-up fit on
    a few rows of the first fold, ``warm_up_fit``).

    The losses (``bncbench.core.metrics``) are computed over all classes of the dataset: a class missing
    from a training fold gets probability 0 for every test row, which ``log_loss`` clips at
    ``bncbench.core.metrics.PROBABILITY_FLOOR`` (1e-15). Each fold also counts the rows so clipped and the
    part of its log loss they make (``bncbench.core.metrics.CLIPPING``).
    """
    discretiser(discretisation, 0, **discretiser_params)  # a bad setting fails before any fold
    classes, y_codes = class_codes(dataset.y)

    def fit_predict(test_rows, rep_seed, warm_up):
        in_test = test_rows[:]
        train, test = np.flatnonzero(~in_test), np.flatnonzero(in_test)
        X_train, X_test, y_train = dataset.X.iloc[train], dataset.X.iloc[test], dataset.y.iloc[train]
        if discretises(model):
            # a model that ignores missing values reads them as NaN (BNClassifier(missing="ignore"))
            missing = "keep" if model.get("missing") == "ignore" else "bin"
            discretizer = discretiser(discretisation, rep_seed, **discretiser_params).set_params(missing=missing)
            discretizer.fit(X_train, y_train)
            X_train, X_test = discretizer.transform(X_train), discretizer.transform(X_test)
        if warm_up:
            warm_up_fit(model, X_train, y_train, X_test, rep_seed)
        classifier = make_model(model, rep_seed)
        _, fit_seconds = timed(lambda: classifier.fit(X_train, y_train), "fit")
        proba, predict_seconds = timed(lambda: classifier.predict_proba(X_test), "predict_proba")
        truth = None if dataset.true_posterior is None else dataset.true_posterior(dataset.X.iloc[test])
        return FoldFit(classifier, classifier.classes_, fit_seconds, [(proba, truth, predict_seconds)])

    return repeated_folds(dataset.name, model, classes, y_codes, repetitions, folds, seed, fit_predict, predictions_to)


def repeated_folds(name: str, model: dict, classes, y_codes, repetitions: int, folds: int, seed: int,
                   fit_predict, predictions_to: Path | None = None) -> CrossValidation:
    """The folds of ``cross_validate`` on rows of class codes ``y_codes`` (among ``classes``): per fold,
    ``fit_predict(test_rows, rep_seed, warm_up)`` fits on the rows that ``test_rows`` (``FoldRows``) leaves out
    and returns a ``FoldFit``; the losses, counts and distances to the truth are summed over its chunks of test
    rows, which go to the parquet file ``predictions_to`` (None: memory) as they come, so that a fold's rows are
    never held together, nor a mask or the numbers of its rows: what this holds a row of is its class and its fold,
    a byte each."""
    seeds = repetition_seeds(seed, repetitions)
    _check_folds(name, np.bincount(y_codes), int(folds))
    fold_metrics, structures, diagnostics = [], [], []
    predictions = PredictionsFile(predictions_to, classes)
    try:
        for repetition, rep_seed in enumerate(seeds):
            test_folds = stratified_test_folds(y_codes, folds, rep_seed)
            for fold in range(folds):
                index, test_rows = len(fold_metrics), FoldRows(test_folds, fold)
                test = _Taken(test_rows.positions())
                with task(f"{name}/{model.get('name', 'model')} fold {index + 1}/{repetitions * folds}"):
                    fitted = fit_predict(test_rows, rep_seed, index == 0)
                    losses = RunningMetrics({**LOGGED_LOSSES, **CLIPPING, **COUNTS})
                    distances, predict_seconds = RunningMetrics(TRUTH), 0.0
                    columns = np.searchsorted(classes, np.asarray(fitted.classes, dtype=object))
                    for fold_proba, truth, seconds in fitted.predictions:
                        rows = test.take(len(fold_proba))
                        proba = np.zeros((len(rows), len(classes)))
                        proba[:, columns] = fold_proba
                        losses.add(proba, y_codes[rows])
                        if truth is not None:
                            distances.add(*truth_columns(proba, classes, truth))
                        predictions.write(index, repetition, rows, y_codes[rows], proba)
                        predict_seconds += seconds
                fold_metrics.append({**losses.values(), "fit_seconds": fitted.fit_seconds,
                                     "predict_seconds": predict_seconds,
                                     **(distances.values() if distances.rows else {})})
                if isinstance(fitted.classifier, BNClassifier):
                    parents = {str(a): [str(p) for p in ps] for a, ps in fitted.classifier.parents_.items()}
                    structures.append({"fold": index, "repetition": repetition, "parents": parents})
                    diagnostics.append(fitted.classifier.diagnostics())
    finally:
        written = predictions.close()
    return CrossValidation(seeds, pd.DataFrame(fold_metrics), written, structures, diagnostics)


def truth_columns(proba: np.ndarray, classes: np.ndarray, truth: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The model's ``proba`` (a column per class of ``classes``) and ``truth`` (a column per class the network
    declares) with the same columns, for the ``TRUTH`` distances (``bncbench.core.metrics``): a class that no row of
    the dataset has takes probability 0 from the model.

    Why ``P(y | x)`` on the test rows rather than the CPTs: it is what a classifier estimates, whatever its
    structure, so it compares naive Bayes, kDB-5, SkDB and a random forest alike, on the distribution of
    the data; CPTs of different structures condition on different parents and have no common truth.
    """
    labels = np.asarray(truth.columns, dtype=object)
    model = np.zeros((len(proba), len(labels)))
    model[:, [list(labels).index(label) for label in classes]] = proba
    return model, truth.to_numpy()


def fold_test_rows(y, repetitions: int = 5, folds: int = 2, seed: int = 1) -> np.ndarray:
    """The number of test rows of each fold of ``cross_validate`` on labels ``y``, fold ``i`` at
    entry ``i``: what a run that predates the ``test_rows`` count had (``bncbench.report.error_counts``)."""
    y_codes = class_codes(y)[1]
    return np.concatenate([np.bincount(stratified_test_folds(y_codes, folds, rep_seed), minlength=folds)
                           for rep_seed in repetition_seeds(seed, repetitions)])


def class_codes(y) -> tuple[np.ndarray, np.ndarray]:
    """The classes of labels ``y`` in sorted order, and each label's index among them."""
    classes = np.array(sorted(pd.unique(np.asarray(y, dtype=object))), dtype=object)
    return classes, np.searchsorted(classes, np.asarray(y, dtype=object))


def stratified_test_folds(y_codes: np.ndarray, folds: int, rep_seed: int) -> np.ndarray:
    """Each row's test fold in scikit-learn's ``StratifiedKFold(folds, shuffle=True, random_state=rep_seed)`` on
    the classes ``y_codes``, computed as it computes them (its ``_make_test_folds``: the classes numbered by first
    appearance, the rows sorted by class dealt to the folds round robin, each class's folds shuffled by one
    ``RandomState``), in a byte a row where the splitter's arrays take about 30: at 20 million rows, the most
    memory of an out-of-core cell. Tested equal to the splitter's folds."""
    counts = np.bincount(y_codes)
    present = np.flatnonzero(counts)
    order = present[np.argsort(_first_rows(y_codes, present), kind="stable")]
    ends = np.cumsum(counts[order])
    starts = ends - counts[order]
    fold = np.arange(folds)[:, None]
    allocation = (ends - 1 - fold) // folds - (starts - 1 - fold) // folds  # the rows p = fold (mod folds)
    rng = np.random.RandomState(rep_seed)
    test_folds, block = np.empty(len(y_codes), dtype=np.min_scalar_type(folds)), 1 << 20
    for k, code in enumerate(order):
        folds_for_class = np.arange(folds, dtype=test_folds.dtype).repeat(allocation[:, k])
        rng.shuffle(folds_for_class)
        dealt = 0
        for start in range(0, len(y_codes), block):  # a block's mask at a time: no third byte a row
            rows = np.flatnonzero(y_codes[start : start + block] == code)
            test_folds[start + rows] = folds_for_class[dealt : dealt + len(rows)]
            dealt += len(rows)
    return test_folds


def _first_rows(y_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The first row of each class of ``codes`` (every one present in ``y_codes``), read a block at a time."""
    first, block = np.full(len(codes), -1), 1 << 20
    for start in range(0, len(y_codes), block):
        rows = y_codes[start: start + block]
        for k in np.flatnonzero(np.isin(codes, rows) & (first < 0)):
            first[k] = start + np.argmax(rows == codes[k])
        if (first >= 0).all():
            break
    return first


def _check_folds(name: str, class_counts: np.ndarray, folds: int) -> None:
    """Refuse a dataset that stratified ``folds``-fold CV cannot split: scikit-learn needs a class with
    at least ``folds`` rows (classes rarer than that are part of the papers' protocol: they miss from
    some training folds)."""
    if class_counts.max() < folds:
        raise DatasetError(f"dataset {name!r} has {class_counts.sum()} rows and at most {class_counts.max()} per class "
                           f"({len(class_counts)} classes): stratified {folds}-fold cross-validation needs a class "
                           f"with at least {folds} rows. Use fewer folds (cv.folds=...) or a larger dataset.")


def discretiser(discretisation: str, random_state: int, **params):
    """The unfitted discretiser of a training fold: ``MDLDiscretizer`` for ``"mdl"``, or
    ``EqualFrequencyDiscretizer(**params)`` whose sample of rows is drawn with ``random_state`` (the
    repetition's seed, so the sample is fixed by ``cv.seed``)."""
    if discretisation == "mdl":
        return MDLDiscretizer()
    if discretisation == "equal_frequency":
        return EqualFrequencyDiscretizer(**params, random_state=random_state)
    raise ConfigError(f"cv.discretisation must be mdl or equal_frequency, got {discretisation!r}.")


def warm_up_model(model: Mapping) -> Mapping:
    """The model config as the warm-ups fit it: its estimator's ``warm_up_params`` (a sampler's few
    iterations) over its own ``estimator_params``; a baseline as it is."""
    lighter = estimator_class(model["estimator"]).warm_up_params if "estimator" in model else {}
    if not lighter:
        return model
    return {**model, "estimator_params": {**(model.get("estimator_params") or {}), **lighter}}


def warm_up_fit(model, X_train, y_train, X_test, random_state) -> None:
    """Fit and predict the model untimed on at most ``WARM_UP_ROWS`` training rows (every class among
    them), at its ``warm_up_model`` settings, so that numba compiles or loads the kernels of the timed
    calls before they are timed.

    The codes are int64 whatever the data, so a few rows call the kernels with the types of the whole
    fold. A model that cannot fit so few rows is left cold: ``bncbench.core.timing.timed`` then repeats
    the call that compiles, so the timings hold no compilation either way.
    """
    per_class = max(1, WARM_UP_ROWS // y_train.nunique())
    rows = np.flatnonzero(y_train.groupby(y_train, observed=True).cumcount().to_numpy() < per_class)
    try:
        classifier = make_model(warm_up_model(model), random_state)
        with warnings.catch_warnings():  # of so few rows (e.g. "more classes than half the rows"), not the fold's
            warnings.simplefilter("ignore")
            classifier.fit(X_train.iloc[rows], y_train.iloc[rows]).predict_proba(X_test.iloc[:WARM_UP_ROWS])
    except Exception as err:  # the real fit reports the model's errors; this one only saves time
        log.debug("warm-up of %s not done: %s", model.get("name", "model"), err)
