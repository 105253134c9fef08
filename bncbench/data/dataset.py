"""Load a dataset named by its config (``conf/dataset/<name>.yaml``) from its source."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from bncbench.data.sources import dataset_source
from bncbench.data.store import (
    check_parquet_types, data_file, format_of, read_manifest, read_schema, resolve_data_dir,
)
from bncbench.core.config_files import config_dir
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.names import check_path_name

logger = logging.getLogger(__name__)


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
    """A store dataset as its file, for reading it a chunk at a time (``bncbench.protocol.out_of_core``): its
    config name, its file in the store (``.csv.gz`` or ``.parquet``, class column ``class``, last), its numeric
    attributes, whether its class is declared numeric, the columns its config drops, its ``shape`` (rows and columns
    with the class, from the declaration of a synthetic dataset or the store's ``manifest.csv``; None when neither
    gives it) and ``true_posterior`` as ``Dataset``'s."""

    name: str
    path: Path
    numeric: list[str]
    numeric_class: bool
    drop: list[str]
    shape: tuple[int, int] | None
    true_posterior: Callable[[pd.DataFrame], pd.DataFrame] | None = None


def dataset_file(spec: Mapping, data_dir: str | Path | None = None) -> DatasetFile | None:
    """The file of the dataset ``spec`` describes in the store, fetched or drawn into it when absent, as
    ``load_dataset`` does; None for a source without files (scikit-learn's datasets)."""
    source, store = dataset_source(spec), resolve_data_dir(data_dir)
    stored = source.provide(spec, store)
    if stored is None:
        return None
    entry = read_schema(store)[stored]
    numeric = [a["name"] for a in entry["attributes"] if a.get("type") == "numeric"]
    declared, listed = source.declared_size(spec), read_manifest(store).get(stored)
    shape = ((declared[0], declared[1] + 1) if declared else
             (listed["rows"], len(entry["attributes"]) + 1) if listed else None)
    numeric_class = (entry.get("class") or {}).get("type") == "numeric"
    path = data_file(store, stored)
    if format_of(path) == "parquet":
        check_parquet_types(path, entry)
    return DatasetFile(spec["name"], path, numeric, numeric_class, list(spec.get("drop") or []),
                       shape, source.true_posterior(spec))


def load_dataset(spec: Mapping | str, data_dir: str | Path | None = None) -> Dataset:
    """Load the dataset a ``conf/dataset/<name>.yaml`` describes.

    Parameters
    ----------
    spec : Mapping or str
        Keys ``name``; ``source`` (``store`` when absent, or another of ``bncbench.data.sources``) and the
        keys it reads (``openml_id`` and ``openml_target`` of the store, to fetch a dataset absent from it;
        ``synthetic``, the network a synthetic dataset is drawn from); ``drop`` (column names to leave out,
        e.g. ids). A name alone (``"vote"``) stands for its config, ``conf/dataset/<name>.yaml``.
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
    source = dataset_source(spec)
    name, drop = spec["name"], list(spec.get("drop") or [])
    frame, numeric, class_name = source.read(spec, resolve_data_dir(data_dir))
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
            raise DatasetError(f"Every row of dataset '{name}' has a missing class; check its class column.")
        logger.warning("Dataset '%s': dropped %d of %d rows whose class is missing", name, (~keep).sum(), len(keep))
        X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    if y.empty:
        raise DatasetError(f"Dataset '{name}' has no rows (a file with a header only?); check its data file.")
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
        true_posterior=source.true_posterior(spec),
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
    """The config of the dataset ``name``: ``conf/dataset/<name>.yaml``; without that file, a ConfigError
    listing the names there are."""
    folder = config_dir() / "dataset"
    path = folder / f"{check_path_name('dataset', name)}.yaml"
    if not path.is_file():
        known = sorted(found.stem for found in folder.glob("*.yaml"))
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"unknown dataset {name!r}{hint}; the datasets are those of {folder}: {', '.join(known)}.")
    return yaml.safe_load(path.read_text(encoding="utf-8"))
