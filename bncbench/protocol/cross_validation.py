"""The cross-validation of one cell: ``repetitions`` x stratified ``folds``-fold CV of a model on a
dataset, with MDL (or equal-frequency) discretisation fitted per training fold, the losses of every
fold and the timings of fit and prediction (without numba's compilation). Pure: no MLflow, no Hydra;
``bncbench.app.runner`` logs what it returns.
"""

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bncbench.bnc.classifier import BNClassifier
from bncbench.bnc.estimators import estimator_class
from bncbench.bnc.progress import task
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.metrics import CLIPPING, COUNTS, LOGGED_LOSSES, TRUTH
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
    predictions: pd.DataFrame  # one row per (fold, test row)
    structures: list[dict] = field(default_factory=list)  # per fold: repetition, parents_
    diagnostics: list[dict] = field(default_factory=list)  # per fold: BNClassifier.diagnostics()


def predictions_bytes(rows: int, classes: int, repetitions: int) -> int:
    """About the memory ``cross_validate`` needs at its peak for its predictions: each repetition
    predicts every row once (fold, repetition and row numbers, true and predicted class, one probability
    per class: about 250 bytes a row with 26 classes, measured), held twice while the folds' frames
    are joined and once more while the runner writes them."""
    return 3 * int(repetitions) * int(rows) * (8 * (int(classes) + 3) + 120)


def repetition_seeds(seed: int, repetitions: int) -> list[int]:
    """Seeds of the repetitions' fold splits, derived from ``seed`` by NumPy's SeedSequence.

    Unlike ``seed + r``, the seeds of two base seeds share no repetition.
    """
    return [int(s) for s in np.random.SeedSequence(int(seed)).generate_state(int(repetitions))]


def cross_validate(
    dataset, model: dict, repetitions: int = 5, folds: int = 2, seed: int = 1, discretisation: str = "mdl",
    **discretiser_params,
) -> CrossValidation:
    """``repetitions`` x stratified ``folds``-fold CV (``repetition_seeds(seed, repetitions)``) of a model config
    (``bncbench.protocol.models``: BNClassifier arguments or a baseline) on the ``bncbench.data.Dataset`` ``dataset``.

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

    def fit_predict(train, test, rep_seed, warm_up):
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
        fold_proba, predict_seconds = timed(lambda: classifier.predict_proba(X_test), "predict_proba")
        proba = np.zeros((len(test), len(classes)))
        proba[:, np.searchsorted(classes, np.asarray(classifier.classes_, dtype=object))] = fold_proba
        truth = None if dataset.true_posterior is None else dataset.true_posterior(dataset.X.iloc[test])
        return proba, {"fit_seconds": fit_seconds, "predict_seconds": predict_seconds}, classifier, truth

    return repeated_folds(dataset.name, model, classes, y_codes, repetitions, folds, seed, fit_predict)


def repeated_folds(name: str, model: dict, classes, y_codes, repetitions: int, folds: int, seed: int,
                   fit_predict) -> CrossValidation:
    """The folds of ``cross_validate`` on rows of class codes ``y_codes`` (among ``classes``): per fold,
    ``fit_predict(train, test, rep_seed, warm_up)`` returns the test rows' class probabilities (a column
    per class), the timings, the fitted classifier and the true ``P(y | x)`` of the test rows (a frame
    with a column per class label, ``Dataset.true_posterior``) or None; the losses, counts, distances to
    the truth and predictions follow."""
    seeds = repetition_seeds(seed, repetitions)
    _check_folds(name, np.bincount(y_codes), int(folds))
    fold_metrics, predictions, structures, diagnostics = [], [], [], []
    for repetition, rep_seed in enumerate(seeds):
        for train, test in _splits(y_codes, folds, rep_seed):
            index = len(fold_metrics)
            with task(f"{name}/{model.get('name', 'model')} fold {index + 1}/{repetitions * folds}"):
                proba, seconds, classifier, truth = fit_predict(train, test, rep_seed, index == 0)
            losses = {name: loss(proba, y_codes[test]) for name, loss in LOGGED_LOSSES.items()}
            counts = {name: count(proba, y_codes[test]) for name, count in {**CLIPPING, **COUNTS}.items()}
            fold_metrics.append({**losses, **counts, **seconds, **truth_distances(proba, classes, truth)})
            predictions.append(_prediction_frame(index, repetition, test, classes, y_codes[test], proba))
            if isinstance(classifier, BNClassifier):
                parents = {str(a): [str(p) for p in ps] for a, ps in classifier.parents_.items()}
                structures.append({"fold": index, "repetition": repetition, "parents": parents})
                diagnostics.append(classifier.diagnostics())
    return CrossValidation(seeds, pd.DataFrame(fold_metrics), pd.concat(predictions, ignore_index=True), structures,
                           diagnostics)


def truth_distances(proba: np.ndarray, classes: np.ndarray, truth: pd.DataFrame | None) -> dict:
    """The ``TRUTH`` distances (``bncbench.core.metrics``) of the test rows' ``proba`` (a column per class of
    ``classes``) to ``truth``, whose columns are every class the network declares: a class that no row of
    the dataset has takes probability 0 from the model. Empty when the truth is unknown (None).

    Why ``P(y | x)`` on the test rows rather than the CPTs: it is what a classifier estimates, whatever its
    structure, so it compares naive Bayes, kDB-5, SkDB and a random forest alike, on the distribution of
    the data; CPTs of different structures condition on different parents and have no common truth.
    """
    if truth is None:
        return {}
    labels = np.asarray(truth.columns, dtype=object)
    model = np.zeros((len(proba), len(labels)))
    model[:, [list(labels).index(label) for label in classes]] = proba
    return {name: distance(model, truth.to_numpy()) for name, distance in TRUTH.items()}


def fold_test_rows(y, repetitions: int = 5, folds: int = 2, seed: int = 1) -> np.ndarray:
    """The number of test rows of each fold of ``cross_validate`` on labels ``y``, fold ``i`` at
    entry ``i``: what a run that predates the ``test_rows`` count had (``bncbench.report.error_counts``)."""
    y_codes = class_codes(y)[1]
    return np.array(
        [len(test) for rep_seed in repetition_seeds(seed, repetitions) for _, test in _splits(y_codes, folds, rep_seed)]
    )


def class_codes(y) -> tuple[np.ndarray, np.ndarray]:
    """The classes of labels ``y`` in sorted order, and each label's index among them."""
    classes = np.array(sorted(pd.unique(np.asarray(y, dtype=object))), dtype=object)
    return classes, np.searchsorted(classes, np.asarray(y, dtype=object))


def _splits(y_codes: np.ndarray, folds, rep_seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) rows of one repetition's stratified ``folds``-fold split."""
    from sklearn.model_selection import StratifiedKFold  # here: a rerun of finished cells does without it

    splitter = StratifiedKFold(n_splits=int(folds), shuffle=True, random_state=rep_seed)
    with warnings.catch_warnings():  # a class rarer than `folds` is part of the protocol, not news
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        return list(splitter.split(np.zeros(len(y_codes)), y_codes))


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


def _prediction_frame(fold, repetition, test, classes, y_codes, proba) -> pd.DataFrame:
    """A fold's predictions: a row per test row, its true and predicted class and a probability per class."""
    true, predicted = classes[y_codes].astype(str), classes[np.argmax(proba, axis=1)].astype(str)
    frame = pd.DataFrame({"fold": fold, "repetition": repetition, "row": test, "y_true": true, "y_pred": predicted})
    return frame.join(pd.DataFrame(proba, columns=[f"proba_{c}" for c in classes]))
