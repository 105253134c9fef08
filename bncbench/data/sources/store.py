"""The store (the default source): a dataset's file in the data directory (``bncbench.data.store``), fetched from
OpenML when absent and its config has an ``openml_id`` (``bncbench.data.openml_source``)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data.sources.base import DatasetSource, written_format


class StoreSource(DatasetSource):
    name = "store"
    keys = ("openml_id", "openml_target")

    def check(self, spec: Mapping, where: str) -> None:
        openml_id, openml_target = spec.get("openml_id"), spec.get("openml_target")
        if openml_id is not None and (isinstance(openml_id, bool) or not isinstance(openml_id, int)):
            raise ConfigError(f"{where} has openml_id {openml_id!r}; it must be an integer or null.")
        if openml_target is not None and not isinstance(openml_target, str):
            raise ConfigError(f"{where} has openml_target {openml_target!r}; it must be a string or null.")

    def provide(self, spec: Mapping, store: Path) -> str:
        from bncbench.data.store import data_file

        name = spec["name"]
        if not data_file(store, name).is_file():
            if spec.get("openml_id") is None:
                raise DatasetError(_not_found_message(name, store))
            from bncbench.data.openml_source import fetch_openml_into_store  # openml is slow to import

            fetch_openml_into_store(name, spec["openml_id"], spec.get("openml_target"), store, written_format(spec))
        return name


def _not_found_message(name: str, store: Path) -> str:
    """Say that a dataset is absent from the store, what is there, and how to fix it."""
    from bncbench.data.store import DATA_DIR_HINT

    if not store.is_dir():
        present = "that directory does not exist"
    else:
        from bncbench.data.store import STORE_FORMATS

        known = [path.name.removesuffix(suffix)
                 for suffix in STORE_FORMATS.values() for path in store.glob(f"*{suffix}")]
        close = difflib.get_close_matches(name, known, n=3)
        present = f"it holds {len(known)} datasets" + (f"; did you mean {close}?" if close else "")
    return (
        f"Dataset '{name}' not found: no {name}.csv.gz nor {name}.parquet in the data directory {store} ({present}) "
        f"and its config has no openml_id to fetch it from OpenML. Point bncbench at the store "
        f"that holds it ({DATA_DIR_HINT}), convert its original files into it (bncbench data add; "
        f"conf/dataset/{name}.yaml says how where known), or set openml_id in conf/dataset/{name}.yaml."
    )
