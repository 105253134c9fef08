"""What a cell's cost depends on, known before it runs (:mod:`bncbench.protocol.cost` predicts it):
the cell's model (structure, k, estimator, HDP's tying and iterations) and its dataset's size, read from
the dataset store's ``manifest.csv`` and ``schema.json`` without reading a data row.
"""

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench.core.errors import DatasetError

#: The features of a cell, in the order of :class:`CellFeatures`: the columns ``CostModel.fit``
#: reads beside ``seconds`` (and ``condition``, when fitting with a reference condition).
FEATURE_COLUMNS = (
    *("structure", "k", "estimator", "tying", "iterations"),
    *("rows", "attributes", "values", "classes", "folds"),
)
#: The estimator of a baseline's cell (a baseline is its own structure).
BASELINE = "baseline"
#: A dataset's mean MDL bins of a numeric attribute, ``scale * rows ** exponent``: the least squares of
#: the log of the bins measured on a stratified training half of each of the 51 shared datasets with
#: numeric attributes, and within a factor 1.42 of the measured mean for half of them (|log error|:
#: median 0.35, 90th percentile 0.59, on the datasets it was fitted to). With the measured bins in
#: place of the proxy, the cost model's errors left out one dataset at a time would be 0.02 (median)
#: and 0.08 (90th percentile) smaller. ``benchmarks/cost_model.py --bins`` measures the proxy.
NUMERIC_BINS_SCALE, NUMERIC_BINS_EXPONENT = 0.34, 0.30
#: scikit-learn's datasets (``bncbench.data.sources.scikit_learn``): rows, numeric attributes, classes;
#: written out so that their features need no import of scikit-learn.
SKLEARN_SHAPES = {
    "sklearn-iris": (150, 4, 3),
    "sklearn-wine": (178, 13, 3),
    "sklearn-breast-cancer": (569, 30, 2),
}


@dataclass(frozen=True)
class DatasetFeatures:
    """The size of a dataset, as far as it is known before running."""

    rows: int  # with a class
    attributes: int  # without the class and the columns dropped
    #: The mean number of values of an attribute after discretisation: a nominal attribute's declared values, a
    #: numeric attribute's MDL bins by ``numeric_bins``. The mean rather than the geometric mean, since a
    #: structure's tables grow with the sum of the attributes' values (``classes * attributes * values`` cells for
    #: naive Bayes); it also predicted the logged cells better.
    values: float
    classes: int  # occurring in the data


@dataclass(frozen=True)
class CellFeatures:
    """What a cell's cost depends on, known before it runs."""

    structure: str  # nb, tan, kdb, skdb, aode, direct, ... or, for a baseline, its name (random_forest, ...)
    k: int | None  # the structure's k (kDB's parents, SkDB's k_max); None where it has none
    estimator: str  # m_estimate, hdp, ...; "baseline" for a baseline
    tying: str | None  # HDP's tying of concentrations (level, single, same_parent); None for others
    iterations: int | None  # an iterative estimator's iterations (HDP's Gibbs iterations); None for others
    rows: int  # then the dataset's DatasetFeatures
    attributes: int
    values: float
    classes: int
    #: The fits of the cell: repetitions x folds (10 for 5x2 cross-validation). The timings so far are all of
    #: 2-fold splits: a fit of another split is predicted as one on half the rows.
    folds: int = 10


def numeric_bins(rows: int) -> float:
    """The expected MDL bins of a numeric attribute of a dataset of ``rows`` rows (at least 1)."""
    return max(1.0, NUMERIC_BINS_SCALE * rows**NUMERIC_BINS_EXPONENT)


def dataset_features(data_dir: str | Path, name: str, drop: Iterable[str] = ()) -> DatasetFeatures:
    """The features of dataset ``name`` (or of one of scikit-learn's, ``SKLEARN_SHAPES``, which needs no store)
    without the columns ``drop``, from the ``manifest.csv`` (``rows``, ``n_classes`` and ``class_missing``) and
    ``schema.json`` of the store ``data_dir``, both read once per process.

    Raises
    ------
    DatasetError
        The store's manifest or schema has no entry for ``name``.
    """
    if name in SKLEARN_SHAPES:
        rows, numeric, classes = SKLEARN_SHAPES[name]
        return DatasetFeatures(rows, numeric, numeric_bins(rows), classes)
    manifest, schema = _store_entries(str(Path(data_dir).resolve()))
    if name not in manifest or name not in schema:
        raise DatasetError(f"the dataset store {data_dir} lists no {name!r} in its manifest.csv and schema.json, so "
                           "the cost of its cells cannot be known before reading it; add its row to manifest.csv "
                           "(rows, n_classes, class_missing) and its entry to schema.json.")
    entry = manifest[name]
    rows = entry["rows"] - entry["class_missing"]
    dropped = set(drop)
    attributes = [a for a in schema[name]["attributes"] if a["name"] not in dropped]
    values = [len(a["values"]) if a["type"] == "nominal" and a.get("values") else numeric_bins(rows)
              for a in attributes]
    return DatasetFeatures(rows, len(attributes), float(np.mean(values)) if values else 1.0, entry["n_classes"])


def config_features(data_dir: str | Path, spec: Mapping) -> DatasetFeatures:
    """The features of the dataset a ``conf/dataset/<name>.yaml`` describes: a synthetic one's from its
    declaration (``bncbench.data.synthetic``), which needs no file; others by :func:`dataset_features`.

    Raises
    ------
    DatasetError
        As :func:`dataset_features`.
    ConfigError
        A synthetic dataset's declaration is malformed.
    """
    from bncbench.data.sources import dataset_source  # here: the data package loads scikit-learn

    declared = dataset_source(spec).declared_size(spec)
    if declared is not None:
        return DatasetFeatures(*declared)
    return dataset_features(data_dir, str(spec["name"]), spec.get("drop") or ())


@functools.cache
def _store_entries(data_dir: str) -> tuple[dict, dict]:
    """The manifest rows (by slug) and the schema of a store, read once; an absent file reads as empty."""
    from bncbench.data.store import read_manifest, read_schema  # here: the data package loads scikit-learn

    return read_manifest(Path(data_dir)), read_schema(Path(data_dir))


def cell_features(model: Mapping, dataset: DatasetFeatures, folds: int = 10) -> CellFeatures:
    """The features of a cell running ``model`` on ``dataset``, fitting ``folds`` times (``cv.repetitions *
    cv.folds``). ``model`` is best in its canonical form (``bncbench.protocol.cell.canonical_model``), where an
    estimator's defaults are written out: an HDP model without its ``tying`` is in another group than one
    with ``tying: level``."""
    sizes = dataclasses.asdict(dataset)
    if "baseline" in model:
        return CellFeatures(str(model["baseline"]), None, BASELINE, None, None, **sizes, folds=folds)
    params = model.get("estimator_params") or {}
    k, tying, iterations = model.get("k"), params.get("tying"), params.get("iterations")
    return CellFeatures(str(model["structure"]), None if k is None else int(k), str(model["estimator"]), tying,
                        None if iterations is None else int(iterations), **sizes, folds=folds)


def features_frame(features) -> pd.DataFrame:
    """Cells as a frame of ``FEATURE_COLUMNS``, from a CellFeatures, a sequence of them or a frame."""
    if isinstance(features, pd.DataFrame):
        missing = sorted(set(FEATURE_COLUMNS) - set(features.columns))
        if missing:
            raise ValueError(f"the cells lack the feature columns {missing}.")
        return features
    if isinstance(features, CellFeatures):
        features = [features]
    return pd.DataFrame([dataclasses.asdict(cell) for cell in features], columns=list(FEATURE_COLUMNS))
