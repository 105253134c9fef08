"""The digest of a dataset: what a run read, so that a changed dataset file is noticed.

A store dataset's digest is the sha256 of its file ``<data_dir>/<name>.csv.gz`` followed by its
``schema.json`` entry (as canonical JSON, so a change of a declared type or value counts too); a
dataset fetched from OpenML is a store dataset whose entry also records the OpenML id and version.
A synthetic dataset is a store dataset under its store name (``bncbench.data.synthetic``), whose entry
records its declaration. A dataset bundled with scikit-learn is named by the scikit-learn version and its name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bncbench.data.store import data_file, read_schema, resolve_data_dir

#: Hex digits kept of the sha256: MLflow stores at most 36 characters of a dataset's digest.
DIGEST_LENGTH = 32


@dataclass(frozen=True)
class DataDigest:
    """What identifies the data of a dataset: its name; ``digest``, the first ``DIGEST_LENGTH`` hex digits of the
    sha256 (see the module docstring); ``source``, ``"store"``, ``"openml"`` (a store file fetched from OpenML),
    ``"synthetic"`` (a store file drawn from a declared network) or ``"sklearn"``; ``details``, the store file's
    ``path`` (and ``openml_id`` and ``openml_version``), or ``sklearn_version``; ``columns``, the store's columns
    (attributes, then the class) and their types, numeric or nominal."""

    name: str
    digest: str
    source: str
    details: dict[str, str] = field(default_factory=dict)
    columns: list[tuple[str, str]] = field(default_factory=list)


def dataset_digest(spec: Mapping, data_dir: str | Path | None) -> DataDigest | None:
    """The digest of the dataset a ``conf/dataset/<name>.yaml`` describes, as its source gives it
    (``bncbench.data.sources``), in the store ``data_dir`` as :func:`bncbench.data.load_dataset` takes it;
    None when the store has no file for the dataset yet (it is fetched or drawn when loaded). ConfigError:
    an unknown source, or a synthetic dataset's declaration malformed.
    """
    from bncbench.data.sources import dataset_source

    return dataset_source(spec).digest(spec, resolve_data_dir(data_dir))


def store_digest(name: str, store: Path, stored: str, source: str) -> DataDigest | None:
    """The digest of the dataset ``name`` held in ``store`` as ``stored``, of the source named ``source``
    (``openml`` for a store file fetched from OpenML); None when the store has no such file."""
    path = data_file(store, stored)
    if not path.is_file():
        return None
    entry = read_schema(store).get(stored)
    with open(path, "rb") as file:
        sha = hashlib.file_digest(file, "sha256")
    sha.update(json.dumps(entry, sort_keys=True, separators=(",", ":")).encode())
    entry = entry if isinstance(entry, dict) else {}
    columns = [
        (str(column.get("name")), str(column.get("type")))
        for column in [*entry.get("attributes", []), entry.get("class") or {}]
        if isinstance(column, dict) and column
    ]
    details = {"path": str(path)}
    fetched = entry.get("openml_id") is not None
    if fetched:
        details.update(openml_id=str(entry["openml_id"]), openml_version=str(entry.get("openml_version")))
    return DataDigest(name, sha.hexdigest()[:DIGEST_LENGTH], "openml" if fetched and source == "store" else source,
                      details, columns)
