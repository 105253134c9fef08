"""Fetch a dataset from OpenML into the dataset store.

openml-python keeps its own cache (``openml.config.set_root_cache_directory``); the data are
converted from what ``OpenMLDataset.get_data`` returns to the store format and typed by the
dataset's feature metadata (numeric or nominal, with the declared nominal values).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import arff
import numpy as np
import openml
import pandas as pd
import requests
from openml.datasets.data_feature import OpenMLDataFeature
from openml.exceptions import PyOpenMLError

from bncbench.data.store import CLASS_COLUMN, DATA_DIR_HINT, store_file_name, write_store_table
from bncbench.core.errors import DatasetError

logger = logging.getLogger(__name__)

# What openml-python raises on a failed download, an unknown or private id, or a bad cache file.
_FETCH_ERRORS = (PyOpenMLError, requests.RequestException, OSError, ValueError, arff.ArffException)


def fetch_openml_into_store(
    name: str, openml_id: int, target: str | None, data_dir: Path, file_format: str = "csv"
) -> None:
    """Download OpenML dataset ``openml_id`` and write it into the store ``data_dir`` as dataset ``name`` in
    ``file_format`` (``bncbench.data.store.STORE_FORMATS``), its class the attribute ``target`` (None: the
    dataset's default target).

    Raises
    ------
    DatasetError
        When the dataset cannot be fetched, has no usable target, or already has an
        attribute named ``class``.
    """
    logger.info("Fetching OpenML dataset %d as '%s' into %s", openml_id, name, data_dir)
    config_hint = f"conf/dataset/{name}.yaml"
    with _fetch_errors(name, openml_id, data_dir):
        dataset = openml.datasets.get_dataset(
            openml_id, download_data=True, download_qualities=False, download_features_meta_data=True
        )
        features = {feature.name: feature for feature in dataset.features.values()}
    target = target or dataset.default_target_attribute
    if not target or target not in features:
        problem = "has no default target" if not target else f"has no attribute '{target}'"
        raise DatasetError(
            f"OpenML dataset {openml_id} ({dataset.name}) {problem}; set openml_target in "
            f"{config_hint} to one of its attributes: {sorted(features)}."
        )
    with _fetch_errors(name, openml_id, data_dir):
        X, y, _, _ = dataset.get_data(target=target)
    if CLASS_COLUMN in X.columns:
        raise DatasetError(
            f"OpenML dataset {openml_id} has an attribute named '{CLASS_COLUMN}' that is not "
            f"the target '{target}'; the store reserves that name for the class. Set "
            f"openml_target: {CLASS_COLUMN} in {config_hint} if it is the class."
        )
    columns, attributes = {}, []
    for column in X.columns:
        columns[column], attribute = _store_column(X[column], features[column])
        attributes.append(attribute)
    labels, class_attribute = _store_column(y, features[target])
    if class_attribute["type"] == "numeric":
        labels = _number_tokens(labels)
        observed = sorted(pd.unique(labels.dropna()), key=lambda v: float(v))
        class_attribute = {"type": "nominal", "values": observed}
    columns[CLASS_COLUMN] = labels
    entry = {
        "file": store_file_name(name, file_format),
        "source_relation": dataset.name,
        "openml_id": openml_id,
        "openml_version": dataset.version,
        "openml_target": target,
        "attributes": attributes,
        "class": {**class_attribute, "name": CLASS_COLUMN},
    }
    try:
        write_store_table(data_dir, name, pd.DataFrame(columns), entry, file_format)
    except OSError as ex:
        raise DatasetError(
            f"OpenML dataset {openml_id} was fetched for '{name}' but cannot be stored in the data "
            f"directory {data_dir} ({type(ex).__name__}: {ex}). Make it writable, or use a writable "
            f"one ({DATA_DIR_HINT})."
        ) from ex


def _store_column(values: pd.Series, feature: OpenMLDataFeature) -> tuple[pd.Series, dict]:
    """One column in store form (numbers or string tokens) and its schema entry."""
    if feature.data_type == "numeric":
        return values, {"name": feature.name, "type": "numeric", "values": None}
    declared = [str(v) for v in feature.nominal_values or []]
    if pd.api.types.is_bool_dtype(values):
        # openml-python turns a nominal {true, false} (any case) into booleans.
        spelling = {value.lower() == "true": value for value in declared}
        tokens = values.map(spelling.get).astype("str")
    else:
        tokens = values.astype("str")
    tokens = tokens.where(values.notna())
    undeclared = sorted(set(tokens.dropna()) - set(declared))
    return tokens, {"name": feature.name, "type": "nominal", "values": declared + undeclared}


def _number_tokens(values: pd.Series) -> pd.Series:
    """Class labels of a numeric target: integral numbers without a fraction (2.0 -> '2')."""
    numbers = values.astype("float64")
    integral = np.isfinite(numbers) & (numbers == np.round(numbers))
    tokens = numbers.astype("str")
    tokens[integral] = numbers[integral].astype("int64").astype("str")
    return tokens.where(numbers.notna())


@contextlib.contextmanager
def _fetch_errors(name: str, openml_id: int, data_dir: Path) -> Iterator[None]:
    """Turn what openml-python raises into a DatasetError that says what to do."""
    try:
        yield
    except _FETCH_ERRORS as ex:
        raise DatasetError(
            f"Could not fetch OpenML dataset {openml_id} for '{name}' "
            f"({type(ex).__name__}: {ex}). Check the network and the openml_id in "
            f"conf/dataset/{name}.yaml, or put {name}.csv.gz and its schema.json entry into "
            f"{data_dir} ({DATA_DIR_HINT})."
        ) from ex
