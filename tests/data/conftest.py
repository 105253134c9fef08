"""Fixtures of the data tests: the shared dataset store and small stores made on the spot."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from bncbench.data.store import DATA_DIR_ENV, resolve_data_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = REPO_ROOT / "conf"


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The shared store: ``$BNCBENCH_DATA_DIR``, else ``../shared/datasets`` beside the repo."""
    if os.environ.get(DATA_DIR_ENV):
        return resolve_data_dir(None)
    return (REPO_ROOT.parent / "shared" / "datasets").resolve()


@pytest.fixture(scope="session")
def manifest(shared_data_dir: Path) -> pd.DataFrame:
    """The shared store's manifest, indexed by dataset slug."""
    return pd.read_csv(shared_data_dir / "manifest.csv").set_index("slug")


@pytest.fixture
def make_store(tmp_path: Path):
    """A function writing one dataset into the store ``tmp_path / "store"``.

    ``make_store(name, csv_text, numeric=[...], nominal={column: values}, classes=[...])``
    gzips ``csv_text`` (str or bytes) as ``<name>.csv.gz``, adds the schema entry (numeric
    attributes, nominal ones, class ``class``: nominal with the values ``classes``, or numeric
    when ``classes`` is None) and returns the store directory.
    """
    data_dir = tmp_path / "store"

    def make(name, csv_text, numeric=(), nominal=None, classes=("a", "b")):
        data_dir.mkdir(exist_ok=True)
        raw = csv_text.encode("utf-8") if isinstance(csv_text, str) else csv_text
        (data_dir / f"{name}.csv.gz").write_bytes(gzip.compress(raw, mtime=0))
        attributes = [{"name": n, "type": "numeric", "values": None} for n in numeric]
        attributes += [
            {"name": n, "type": "nominal", "values": v} for n, v in (nominal or {}).items()
        ]
        schema_path = data_dir / "schema.json"
        schema = json.loads(schema_path.read_text()) if schema_path.exists() else {}
        schema[name] = {
            "attributes": attributes,
            "class": {"name": "class", "type": "numeric", "values": None}
            if classes is None
            else {"name": "class", "type": "nominal", "values": list(classes)},
        }
        schema_path.write_text(json.dumps(schema))
        return data_dir

    return make
