"""The OpenML source, offline: openml-python reads a cache these tests populate.

openml 0.15 keeps a dataset under ``<root>/org/openml/www/datasets/<id>/`` as
``description.xml`` (the server's dataset description), ``features.xml`` (the feature
metadata) and the data as ``dataset.arff`` or, when the description has a ``parquet_url``,
``dataset_<id>.pq``; a file already there is never downloaded again.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape

import arff
import numpy as np
import openml
import pandas as pd
import pytest
import yaml

from bncbench.data import load_dataset
from bncbench.core.errors import DatasetError

CONF_DATASETS = Path(__file__).resolve().parents[2] / "conf" / "dataset"


@pytest.fixture
def openml_cache(tmp_path):
    """openml-python's cache directory of datasets, empty, in a temporary root."""
    with openml.config.overwrite_config_context(
        {"cachedir": str(tmp_path / "openml"), "connection_n_retries": 1}
    ):
        yield Path(openml.config.get_cache_directory()) / "datasets"


def shared_table(data_dir: Path, name: str) -> tuple[pd.DataFrame, dict]:
    """A shared store file as strings, and its schema entry."""
    frame = pd.read_csv(
        data_dir / f"{name}.csv.gz", dtype=str, keep_default_na=False, na_values=[""]
    )
    return frame, json.loads((data_dir / "schema.json").read_text())[name]


def cache_openml_dataset(
    cache: Path,
    did: int,
    name: str,
    frame: pd.DataFrame,
    nominal: dict[str, list[str]],
    default_target: str | None,
    data_format: str,
) -> None:
    """Write the files openml-python caches for dataset ``did``.

    ``frame`` holds every column as strings (NaN = missing); columns not in ``nominal`` are
    numeric. ``data_format`` is "arff" or "parquet".
    """
    directory = cache / str(did)
    directory.mkdir(parents=True)
    parquet_url = (
        f"<oml:parquet_url>https://data.openml.org/datasets/0000/{did:04d}/dataset_{did}.pq"
        "</oml:parquet_url>"
        if data_format == "parquet"
        else ""
    )
    target = (
        f"<oml:default_target_attribute>{escape(default_target)}</oml:default_target_attribute>"
        if default_target
        else ""
    )
    (directory / "description.xml").write_text(
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">'
        f"<oml:id>{did}</oml:id><oml:name>{escape(name)}</oml:name><oml:version>1</oml:version>"
        "<oml:description>test copy</oml:description><oml:format>ARFF</oml:format>"
        f"<oml:url>https://api.openml.org/data/v1/download/{did}/{name}.arff</oml:url>"
        f"{parquet_url}{target}<oml:status>active</oml:status></oml:data_set_description>",
        encoding="utf-8",
    )
    features = []
    for index, column in enumerate(frame.columns):
        values = "".join(
            f"<oml:nominal_value>{escape(v)}</oml:nominal_value>" for v in nominal.get(column, [])
        )
        features.append(
            f"<oml:feature><oml:index>{index}</oml:index><oml:name>{escape(column)}</oml:name>"
            f"<oml:data_type>{'nominal' if column in nominal else 'numeric'}</oml:data_type>"
            f"{values}<oml:is_target>{str(column == default_target).lower()}</oml:is_target>"
            "<oml:is_ignore>false</oml:is_ignore>"
            "<oml:is_row_identifier>false</oml:is_row_identifier>"
            f"<oml:number_of_missing_values>{int(frame[column].isna().sum())}"
            "</oml:number_of_missing_values></oml:feature>"
        )
    (directory / "features.xml").write_text(
        '<oml:data_features xmlns:oml="http://openml.org/openml">'
        + "".join(features)
        + "</oml:data_features>",
        encoding="utf-8",
    )
    typed = pd.DataFrame(
        {
            column: pd.Categorical(frame[column], categories=nominal[column])
            if column in nominal
            else pd.to_numeric(frame[column]).astype("float64")
            for column in frame.columns
        }
    )
    if data_format == "parquet":
        typed.to_parquet(directory / f"dataset_{did}.pq")
        return
    rows = [
        [None if pd.isna(v) else v for v in row]
        for row in typed.astype(object).itertuples(index=False)
    ]
    (directory / "dataset.arff").write_text(
        arff.dumps(
            {
                "relation": name,
                "attributes": [(c, nominal[c] if c in nominal else "REAL") for c in frame.columns],
                "data": rows,
            }
        ),
        encoding="utf-8",
    )


def config(name: str) -> dict:
    return yaml.safe_load((CONF_DATASETS / f"{name}.yaml").read_text())


def assert_same_dataset(fetched, shared):
    pd.testing.assert_frame_equal(fetched.X, shared.X, check_dtype=False)
    pd.testing.assert_series_equal(fetched.y, shared.y, check_dtype=False)
    assert fetched.numeric == shared.numeric
    assert (fetched.X.dtypes[fetched.numeric] == np.float64).all()


def test_bupa_from_cached_arff_with_a_non_default_target(shared_data_dir, openml_cache, tmp_path):
    # OpenML 8 (liver-disorders) has the class in the numeric column selector, and drinks as
    # its default target; conf/dataset/bupa.yaml says openml_target: selector.
    frame, entry = shared_table(shared_data_dir, "bupa")
    frame = frame.rename(columns={"class": "selector"})
    cache_openml_dataset(openml_cache, 8, "liver-disorders", frame, {}, "drinks", "arff")
    store = tmp_path / "store"

    fetched = load_dataset(config("bupa"), store)

    assert_same_dataset(fetched, load_dataset(config("bupa"), shared_data_dir))
    written = json.loads((store / "schema.json").read_text())["bupa"]
    assert written["attributes"] == entry["attributes"]
    assert written["class"] == {"name": "class", "type": "nominal", "values": ["1", "2"]}
    assert written["openml_id"] == 8 and written["openml_target"] == "selector"
    assert sorted(p.name for p in store.iterdir()) == [
        ".schema.json.lock",
        "bupa.csv.gz",
        "schema.json",
    ]


def test_labor_from_cached_parquet_with_nominal_and_missing_values(
    shared_data_dir, openml_cache, tmp_path
):
    frame, entry = shared_table(shared_data_dir, "labor")
    nominal = {
        a["name"]: a["values"]
        for a in [*entry["attributes"], entry["class"]]
        if a["type"] == "nominal"
    }
    cache_openml_dataset(openml_cache, 4, "labor", frame, nominal, "class", "parquet")
    store = tmp_path / "store"

    fetched = load_dataset(config("labor"), store)

    shared = load_dataset(config("labor"), shared_data_dir)
    assert_same_dataset(fetched, shared)
    assert fetched.X.isna().sum().sum() == shared.X.isna().sum().sum() > 0
    written = json.loads((store / "schema.json").read_text())["labor"]
    assert written["attributes"] == entry["attributes"]
    assert written["class"]["values"] == entry["class"]["values"]


def test_true_false_nominal_values_keep_their_spelling(shared_data_dir, openml_cache, tmp_path):
    # openml-python reads a nominal {TRUE, FALSE} attribute as booleans.
    frame, entry = shared_table(shared_data_dir, "vote")
    spelling = {"y": "TRUE", "n": "FALSE"}
    attributes = [a["name"] for a in entry["attributes"]]
    frame[attributes] = frame[attributes].apply(lambda column: column.map(spelling))
    nominal = {a: ["FALSE", "TRUE"] for a in attributes}
    nominal["class"] = entry["class"]["values"]
    cache_openml_dataset(openml_cache, 56, "vote", frame, nominal, "class", "arff")

    fetched = load_dataset(config("vote"), tmp_path / "store")

    shared = load_dataset(config("vote"), shared_data_dir)
    pd.testing.assert_frame_equal(
        fetched.X, shared.X.apply(lambda c: c.map(spelling)), check_dtype=False
    )
    pd.testing.assert_series_equal(fetched.y, shared.y, check_dtype=False)


def test_the_store_copy_is_used_once_fetched(shared_data_dir, openml_cache, tmp_path):
    frame, _ = shared_table(shared_data_dir, "bupa")
    cache_openml_dataset(
        openml_cache,
        8,
        "liver-disorders",
        frame.rename(columns={"class": "selector"}),
        {},
        "drinks",
        "arff",
    )
    store = tmp_path / "store"
    first = load_dataset(config("bupa"), store)
    (openml_cache / "8" / "dataset.arff").unlink()
    (openml_cache / "8" / "description.xml").unlink()
    assert_same_dataset(load_dataset(config("bupa"), store), first)


@pytest.fixture
def cached_labor(shared_data_dir, openml_cache):
    """Cache OpenML dataset 4 as labor, with a default target given by the test."""
    frame, entry = shared_table(shared_data_dir, "labor")
    nominal = {
        a["name"]: a["values"]
        for a in [*entry["attributes"], entry["class"]]
        if a["type"] == "nominal"
    }

    def cache(default_target):
        cache_openml_dataset(openml_cache, 4, "labor", frame, nominal, default_target, "parquet")

    return cache


def test_no_default_target_asks_for_openml_target(cached_labor, tmp_path):
    cached_labor(None)
    with pytest.raises(DatasetError) as err:
        load_dataset(config("labor"), tmp_path / "store")
    message = str(err.value)
    assert "OpenML dataset 4 (labor) has no default target" in message
    assert "set openml_target in conf/dataset/labor.yaml" in message and "'duration'" in message
    assert not (tmp_path / "store").exists()


def test_unknown_target_is_reported(cached_labor, tmp_path):
    cached_labor("class")
    with pytest.raises(DatasetError, match="has no attribute 'Class'; set openml_target"):
        load_dataset({**config("labor"), "openml_target": "Class"}, tmp_path / "store")


def test_attribute_named_class_that_is_not_the_target(cached_labor, tmp_path):
    cached_labor("duration")
    with pytest.raises(DatasetError, match="attribute named 'class' that is not the target"):
        load_dataset(config("labor"), tmp_path / "store")


def test_failed_download_names_the_dataset_and_the_fix(openml_cache, tmp_path):
    with openml.config.overwrite_config_context({"server": "http://127.0.0.1:9/api/v1/xml"}):
        with pytest.raises(DatasetError) as err:
            load_dataset(config("labor"), tmp_path / "store")
    message = str(err.value)
    assert "Could not fetch OpenML dataset 4 for 'labor'" in message
    assert "BNCBENCH_DATA_DIR" in message and "openml_id in conf/dataset/labor.yaml" in message
    assert not (tmp_path / "store" / "labor.csv.gz").exists()


def test_a_fetched_dataset_records_its_openml_id_and_version(cached_labor, tmp_path):
    from bncbench.data.digest import dataset_digest

    cached_labor("class")
    store = tmp_path / "store"
    load_dataset(config("labor"), store)
    assert json.loads((store / "schema.json").read_text())["labor"]["openml_version"] == 1
    fetched = dataset_digest(config("labor"), store)
    assert fetched.source == "openml"
    assert fetched.details == {"path": str(store / "labor.csv.gz"), "openml_id": "4", "openml_version": "1"}


def test_a_sweep_fetches_its_missing_datasets_before_its_first_cell(shared_data_dir, openml_cache, tmp_path, monkeypatch):
    """The launcher fetches, once, what the data directory lacks, and the plan's cells get its digest."""
    from bncbench.app.config import compose
    from bncbench.app.datasets import fetch_missing
    from bncbench.data.digest import dataset_digest

    frame, _ = shared_table(shared_data_dir, "bupa")
    cache_openml_dataset(
        openml_cache, 8, "liver-disorders", frame.rename(columns={"class": "selector"}), {}, "drinks", "arff"
    )
    monkeypatch.setattr("bncbench.app.datasets._reachable", lambda host: True)  # OpenML answers from its cache
    store = tmp_path / "store"
    plan = compose(["experiment.datasets=[bupa]", "experiment.models=[nb_laplace]", "experiment.comparisons=[]",
                    f"data_dir={store}"]).plan
    assert plan.cells[0].data_digest is None
    fetched = fetch_missing(plan, store)
    assert fetched.cells[0].data_digest == dataset_digest(config("bupa"), store).digest
    assert fetch_missing(fetched, store) is fetched  # nothing missing: nothing fetched


def test_offline_the_missing_datasets_are_named_in_one_line(tmp_path, monkeypatch):
    from bncbench.app.config import compose
    from bncbench.app.datasets import fetch_missing
    from bncbench.core.errors import ConfigError

    monkeypatch.setattr("bncbench.app.datasets._reachable", lambda host: False)
    store = tmp_path / "empty"
    plan = compose(["experiment.datasets=[iris,sklearn-wine,zoo]", "experiment.models=[nb_laplace]",
                    "experiment.comparisons=[]", f"data_dir={store}"]).plan
    with pytest.raises(ConfigError) as refused:
        fetch_missing(plan, store)
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"2 datasets of the experiment are not in the data directory {store} (iris, zoo) and "
                           "OpenML (www.openml.org) cannot be reached from here.")
    assert "BNCBENCH_DATA_DIR" in line and "data_dir=" in line


def test_a_dataset_loads_by_its_name(shared_data_dir):
    by_name, by_config = load_dataset("vote", shared_data_dir), load_dataset(config("vote"), shared_data_dir)
    pd.testing.assert_frame_equal(by_name.X, by_config.X)
    with pytest.raises(Exception, match="unknown dataset 'vot' \\(did you mean vote\\?\\)"):
        load_dataset("vot", shared_data_dir)
