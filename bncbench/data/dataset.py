"""Load a dataset named by its config (``conf/dataset/<name>.yaml``) from its source."""

from __future__ import annotations

import difflib
import functools
import logging
from collections.abc import Mapping
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from bncbench.data.synthetic import Declaration, write_synthetic
from bncbench.data.synthetic import true_posterior as synthetic_posterior
from bncbench.data.store import (
    DATA_DIR_HINT,
    data_file,
    read_manifest,
    read_schema,
    read_store_table,
    resolve_data_dir,
)
from bncbench.core.config_files import config_dir
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.names import check_path_name

logger = logging.getLogger(__name__)

SPEC_KEYS = {"name", "source", "openml_id", "openml_target", "drop", "synthetic"}
SOURCES = ("store", "sklearn", "synthetic")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification dataset, undiscretised.

    Attributes
    ----------
    name : str
        The dataset's name (its config name).
    X : DataFrame
        Attributes: numeric ones float64, nominal ones strings; NaN = missing.
    y : Series
        Class labels, never missing: strings, or int64 numbers for a class declared numeric (its
        values written ``1`` and ``1.0`` are one class).
    numeric : list of str
        Names of the numeric columns of ``X``.
    true_posterior : callable or None
        Of a synthetic dataset: rows of ``X`` -> their true ``P(y | x)``, a frame with a column per class
        (``bncbench.data.synthetic.true_posterior``); None for data whose distribution is unknown.
    """

    name: str
    X: pd.DataFrame
    y: pd.Series
    numeric: list[str]
    true_posterior: Callable[[pd.DataFrame], pd.DataFrame] | None = None


@dataclass(frozen=True)
class DatasetFile:
    """A store dataset as its file, for reading it a chunk at a time (``bncbench.protocol.out_of_core``).

    Attributes
    ----------
    name : str
        The dataset's name (its config name).
    path : Path
        Its ``.csv.gz`` file in the store (class column ``class``, last).
    numeric : list of str
        Its numeric attributes.
    numeric_class : bool
        Whether its class is declared numeric.
    drop : list of str
        The columns its config leaves out.
    shape : (int, int) or None
        Its rows and columns (with the class), from the declaration of a synthetic dataset or the store's
        ``manifest.csv``; None when neither gives them.
    true_posterior : callable or None
        As ``Dataset.true_posterior``.
    """

    name: str
    path: Path
    numeric: list[str]
    numeric_class: bool
    drop: list[str]
    shape: tuple[int, int] | None
    true_posterior: Callable[[pd.DataFrame], pd.DataFrame] | None = None


def dataset_file(spec: Mapping, data_dir: str | Path | None = None) -> DatasetFile | None:
    """The file of the store or synthetic dataset ``spec`` describes, fetched or drawn into the store
    when absent, as ``load_dataset`` does; None for a dataset of scikit-learn's, which has no file."""
    name, source, *_, drop = _read_spec(spec)
    if source == "sklearn":
        return None
    store = resolve_data_dir(data_dir)
    stored = _stored(spec, store)
    entry = read_schema(store)[stored]
    numeric = [a["name"] for a in entry["attributes"] if a.get("type") == "numeric"]
    if source == "synthetic":
        declaration = Declaration.of(spec)
        shape = (declaration.rows, declaration.attributes + 1)
        true_posterior = functools.partial(synthetic_posterior, dict(spec))
    else:
        listed = read_manifest(store).get(stored)
        shape = (listed["rows"], len(entry["attributes"]) + 1) if listed else None
        true_posterior = None
    numeric_class = (entry.get("class") or {}).get("type") == "numeric"
    return DatasetFile(name, data_file(store, stored), numeric, numeric_class, drop, shape, true_posterior)


def _stored(spec: Mapping, store: Path) -> str:
    """The name in ``store`` of the store or synthetic dataset ``spec``, drawn or fetched if absent."""
    name, source, openml_id, openml_target, _ = _read_spec(spec)
    if source == "synthetic":
        return write_synthetic(store, spec)
    if not data_file(store, name).is_file():
        if openml_id is None:
            raise DatasetError(_not_found_message(name, store))
        from bncbench.data.openml_source import fetch_openml_into_store

        fetch_openml_into_store(name, openml_id, openml_target, store)
    return name


def load_dataset(spec: Mapping | str, data_dir: str | Path | None = None) -> Dataset:
    """Load the dataset a ``conf/dataset/<name>.yaml`` describes.

    Parameters
    ----------
    spec : Mapping or str
        Keys ``name``; ``source`` ("store", "sklearn" or "synthetic", with its ``synthetic`` declaration:
        ``bncbench.data.synthetic``); ``openml_id`` (int or None) and
        ``openml_target`` (str or None), used to fetch a store dataset absent from the store;
        ``drop`` (column names to leave out, e.g. ids). A name alone (``"vote"``) stands for its
        config, ``conf/dataset/<name>.yaml``.
    data_dir : str, Path or None
        The store directory; None = :func:`resolve_data_dir`'s default.

    Returns
    -------
    Dataset
        Rows whose class is missing are dropped (with a logged warning).

    Raises
    ------
    ConfigError
        When the spec is malformed.
    DatasetError
        When the dataset cannot be found or read, or its class column is unusable.
    """
    if isinstance(spec, str):
        spec = dataset_config(spec)
    name, source, *_, drop = _read_spec(spec)
    true_posterior = None
    if source == "sklearn":
        from bncbench.data.sklearn_source import read_sklearn_table  # scikit-learn's datasets: only these

        frame, numeric, class_name = read_sklearn_table(name)
    else:
        store = resolve_data_dir(data_dir)
        frame, numeric, class_name = read_store_table(store, _stored(spec, store))
    if source == "synthetic":
        true_posterior = functools.partial(synthetic_posterior, dict(spec))
    unknown = [column for column in drop if column not in frame.columns or column == class_name]
    if unknown:
        raise ConfigError(
            f"drop in conf/dataset/{name}.yaml names {unknown}, which are not attributes of "
            f"'{name}'; its attributes are {[c for c in frame.columns if c != class_name]}."
        )
    y = frame[class_name]
    X = frame.drop(columns=[class_name, *drop])
    keep = y.notna()
    if not keep.all():
        if not keep.any():
            raise DatasetError(
                f"Every row of dataset '{name}' has a missing class; check its class column."
            )
        logger.warning(
            "Dataset '%s': dropped %d of %d rows whose class is missing",
            name,
            int((~keep).sum()),
            len(keep),
        )
        X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    if y.empty:
        raise DatasetError(
            f"Dataset '{name}' has no rows (a file with a header only?); check its data file."
        )
    classes = pd.unique(y)
    if len(classes) < 2:
        raise DatasetError(
            f"The class column of dataset '{name}' has the single value {classes[0]!r}, so "
            "there is nothing to classify; check the class column (or openml_target)."
        )
    return Dataset(
        name=name,
        X=X,
        y=_class_labels(y, name).rename("class"),
        numeric=[column for column in numeric if column in X.columns],
        true_posterior=true_posterior,
    )


def _class_labels(y: pd.Series, name: str) -> pd.Series:
    """Class labels: a numeric class as int64 numbers, refused unless integral; others as strings."""
    if not pd.api.types.is_numeric_dtype(y):
        return y.astype("str")
    fractional = y[y % 1 != 0]
    if len(fractional):
        raise DatasetError(
            f"The class column of dataset '{name}' is numeric with non-integer values (e.g. "
            f"{float(fractional.iloc[0])!r}), which a classifier cannot take as classes. Declare the class "
            "nominal in schema.json if these numbers are labels, or bin them into classes."
        )
    return y.astype("int64")


def dataset_config(name: str) -> dict:
    """The config of the dataset ``name``: ``conf/dataset/<name>.yaml``.

    Raises
    ------
    ConfigError
        No such file; the message lists the names there are.
    """
    folder = config_dir() / "dataset"
    path = folder / f"{check_path_name('dataset', name)}.yaml"
    if not path.is_file():
        known = sorted(found.stem for found in folder.glob("*.yaml"))
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"unknown dataset {name!r}{hint}; the datasets are those of {folder}: {', '.join(known)}.")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _read_spec(spec: Mapping) -> tuple[str, str, int | None, str | None, list[str]]:
    """Validate a dataset spec and return its fields."""
    unknown = sorted(set(spec) - SPEC_KEYS)
    name = spec.get("name")
    where = f"conf/dataset/{name}.yaml" if name else "a dataset config"
    if unknown:
        raise ConfigError(f"{where} has unknown keys {unknown}; the keys are {sorted(SPEC_KEYS)}.")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where} needs a 'name' (the dataset's name in its source).")
    source = spec.get("source", "store")
    if source not in SOURCES:
        raise ConfigError(f"{where} has source {source!r}; use one of {list(SOURCES)}.")
    openml_id = spec.get("openml_id")
    if openml_id is not None and (isinstance(openml_id, bool) or not isinstance(openml_id, int)):
        raise ConfigError(f"{where} has openml_id {openml_id!r}; it must be an integer or null.")
    openml_target = spec.get("openml_target")
    if openml_target is not None and not isinstance(openml_target, str):
        raise ConfigError(
            f"{where} has openml_target {openml_target!r}; it must be a string or null."
        )
    drop = spec.get("drop") or []
    if isinstance(drop, str) or not all(isinstance(column, str) for column in drop):
        raise ConfigError(f"{where} has drop {drop!r}; it must be a list of column names.")
    return name, source, openml_id, openml_target, list(drop)


def _not_found_message(name: str, store: Path) -> str:
    """Say that a dataset is absent from the store, what is there, and how to fix it."""
    if not store.is_dir():
        present = "that directory does not exist"
    else:
        known = [path.name.removesuffix(".csv.gz") for path in store.glob("*.csv.gz")]
        close = difflib.get_close_matches(name, known, n=3)
        present = f"it holds {len(known)} datasets" + (f"; did you mean {close}?" if close else "")
    return (
        f"Dataset '{name}' not found: no {name}.csv.gz in the data directory {store} ({present}) "
        f"and its config has no openml_id to fetch it from OpenML. Point bncbench at the store "
        f"that holds it ({DATA_DIR_HINT}), convert its original files into it (bncbench data add; "
        f"conf/dataset/{name}.yaml says how where known), or set openml_id in conf/dataset/{name}.yaml."
    )
