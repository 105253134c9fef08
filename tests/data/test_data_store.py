"""The dataset store reader and writer, and every bad-input error of load_dataset."""

from __future__ import annotations

import gzip
import json
import logging
import os
import stat

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bncbench.data import Dataset, load_dataset, resolve_data_dir
from bncbench.data import store as store_module
from bncbench.data.store import convert_store_file, read_store_table, write_store_table
from bncbench.core.errors import ConfigError, DatasetError

GOOD_CSV = "x,colour,class\n1.5,red,a\n,blue,b\n3,red,b\n"


def spec(name, **kw):
    return {
        "name": name,
        "source": "store",
        "openml_id": None,
        "openml_target": None,
        "drop": [],
        **kw,
    }


def good_store(make_store):
    return make_store("toy", GOOD_CSV, numeric=["x"], nominal={"colour": ["red", "blue"]})


# --- resolve_data_dir --------------------------------------------------------------------


def test_resolve_data_dir_prefers_value_then_env_then_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BNCBENCH_DATA_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_data_dir(tmp_path / "given") == tmp_path / "given"
    assert resolve_data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("BNCBENCH_DATA_DIR")
    assert resolve_data_dir(None) == tmp_path / "xdg" / "bncbench" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir(None) == tmp_path / "home" / ".cache" / "bncbench" / "datasets"


def test_resolve_data_dir_makes_relative_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir("store") == tmp_path / "store"


# --- reading a good store ----------------------------------------------------------------


def test_load_types_columns_and_keeps_tokens(make_store):
    ds = load_dataset(spec("toy"), good_store(make_store))
    assert isinstance(ds, Dataset) and ds.name == "toy"
    assert ds.numeric == ["x"]
    assert ds.X["x"].dtype == np.float64
    assert ds.X["x"].isna().tolist() == [False, True, False]
    assert ds.X["colour"].tolist() == ["red", "blue", "red"]
    assert ds.y.tolist() == ["a", "b", "b"] and ds.y.name == "class"


def test_numeric_looking_nominal_codes_stay_as_written(make_store):
    store = make_store("codes", "code,class\n01,a\n1,b\n", nominal={"code": ["01", "1"]})
    assert load_dataset(spec("codes"), store).X["code"].tolist() == ["01", "1"]


def test_a_numeric_class_is_numbers_so_1_and_1_0_are_one_class(make_store):
    csv = "x,class\na,1\nb,1.0\na,2\nb,02\nb,2e0\na,\n"
    ds = load_dataset(spec("num"), make_store("num", csv, nominal={"x": ["a", "b"]}, classes=None))
    assert ds.y.dtype == np.int64 and ds.y.tolist() == [1, 1, 2, 2, 2]  # the row without a class is dropped
    nominal = make_store("nom", csv, nominal={"x": ["a", "b"]}, classes=["1", "1.0", "2", "02", "2e0"])
    assert load_dataset(spec("nom"), nominal).y.tolist() == ["1", "1.0", "2", "02", "2e0"]  # labels as written


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["1", "1.5"], "numeric with non-integer values \\(e.g. 1.5\\).*Declare the class nominal"),
        (["1", "one"], "Column 'class' of .* is declared numeric in schema.json but holds 1 non-numeric"),
    ],
)
def test_a_numeric_class_that_is_not_integral_numbers_is_refused(make_store, labels, message):
    csv = f"x,class\na,{labels[0]}\nb,{labels[1]}\na,{labels[0]}\n"
    store = make_store("num", csv, nominal={"x": ["a", "b"]}, classes=None)
    with pytest.raises(DatasetError, match=message):
        load_dataset(spec("num"), store)


def test_drop_removes_columns(make_store):
    ds = load_dataset(spec("toy", drop=["colour"]), good_store(make_store))
    assert list(ds.X.columns) == ["x"] and ds.numeric == ["x"]
    ds = load_dataset(spec("toy", drop=["x"]), good_store(make_store))
    assert list(ds.X.columns) == ["colour"] and ds.numeric == []


def test_write_then_read_round_trip_keeps_other_entries(make_store, tmp_path):
    store = good_store(make_store)
    frame = pd.DataFrame(
        {"v": [0.1, np.nan, 2.0], "w": ["p, q", np.nan, '"r"'], "class": ["a", "b", "a"]}
    )
    entry = {
        "attributes": [
            {"name": "v", "type": "numeric", "values": None},
            {"name": "w", "type": "nominal", "values": ["p, q", '"r"']},
        ],
        "class": {"name": "class", "type": "nominal", "values": ["a", "b"]},
    }
    write_store_table(store, "new", frame, entry)
    read, numeric, class_name = read_store_table(store, "new")
    pd.testing.assert_frame_equal(read, frame, check_dtype=False)
    assert numeric == ["v"] and class_name == "class"
    assert set(json.loads((store / "schema.json").read_text())) == {"toy", "new"}
    assert sorted(p.name for p in store.iterdir()) == [
        ".schema.json.lock",
        "new.csv.gz",
        "schema.json",
        "toy.csv.gz",
    ]
    assert gzip.open(store / "new.csv.gz").read().startswith(b"v,w,class\n")


def test_the_same_data_are_the_same_bytes(tmp_path):
    """No mtime and no (temporary, random) file name in the gzip header: equal data have one digest."""
    frame = pd.DataFrame({"v": [1.5, 2.0], "class": ["a", "b"]})
    entry = {"attributes": [{"name": "v", "type": "numeric", "values": None}],
             "class": {"name": "class", "type": "nominal", "values": ["a", "b"]}}
    for store in ("one", "two"):
        write_store_table(tmp_path / store, "d", frame, entry)
    written = (tmp_path / "one" / "d.csv.gz").read_bytes()
    assert written == (tmp_path / "two" / "d.csv.gz").read_bytes()
    assert written[3] == 0  # no optional header field


def test_interrupted_write_leaves_no_partial_file(make_store):
    store = good_store(make_store)
    schema_before = (store / "schema.json").read_text()
    frame = pd.DataFrame({"v": [1.0, 2.0], "class": ["a", "b"]})
    entry_that_fails_to_serialise = {"attributes": {"not", "json"}}
    with pytest.raises(TypeError):
        write_store_table(store, "half", frame, entry_that_fails_to_serialise)
    assert not (store / "half.csv.gz").exists()
    assert [p.name for p in store.iterdir() if p.suffix == ".tmp"] == []
    assert (store / "schema.json").read_text() == schema_before


ENTRY = {"attributes": [{"name": "v", "type": "numeric", "values": None}],
         "class": {"name": "class", "type": "nominal", "values": ["a", "b"]}}
FRAME = pd.DataFrame({"v": [1.0, 2.0], "class": ["a", "b"]})


def test_a_ctrl_c_as_the_temporary_file_is_created_leaves_no_file(make_store, monkeypatch):
    """``bncbench data add`` stopped by Ctrl-C left an empty ``.big.csv.gz.<random>.tmp`` (seen in CI): the signal
    came between the file's creation and the ``try`` that removes it. Now it is raised once the file is known."""
    import signal
    import tempfile

    store = good_store(make_store)
    schema_before, create = (store / "schema.json").read_text(), tempfile.mkstemp

    def created_then_stopped(*args, **kwargs):
        found = create(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)  # Ctrl-C once the file exists, before its name is returned
        return found

    monkeypatch.setattr(tempfile, "mkstemp", created_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        write_store_table(store, "half", FRAME, ENTRY)
    monkeypatch.undo()
    assert [p.name for p in store.iterdir() if p.suffix == ".tmp"] == []
    assert not (store / "half.csv.gz").exists() and (store / "schema.json").read_text() == schema_before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler put back


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077])
def test_a_new_dataset_and_the_schema_take_the_umask_and_a_replaced_file_keeps_its_mode(tmp_path, umask):
    """Not mkstemp's 0600: a store a group shares stays readable by those who could read it (issue 42)."""
    before = os.umask(umask)
    try:
        write_store_table(tmp_path, "d", FRAME, ENTRY)
        for name in ("d.csv.gz", "schema.json"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask
        (tmp_path / "schema.json").chmod(0o640)
        write_store_table(tmp_path, "e", FRAME, ENTRY)
        assert stat.S_IMODE((tmp_path / "schema.json").stat().st_mode) == 0o640
    finally:
        os.umask(before)


def test_a_failed_final_rename_leaves_the_schema_as_it_was_and_a_retry_succeeds(make_store, monkeypatch):
    store = good_store(make_store)
    schema_before = (store / "schema.json").read_text()
    real_replace = os.replace

    def failing(source, target):
        if str(target).endswith(".csv.gz"):
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="No space left"):
        write_store_table(store, "half", FRAME, ENTRY)
    assert (store / "schema.json").read_text() == schema_before
    assert not (store / "half.csv.gz").exists() and [p for p in store.iterdir() if p.suffix == ".tmp"] == []
    monkeypatch.setattr(os, "replace", real_replace)
    write_store_table(store, "half", FRAME, ENTRY)  # not refused as "already in the store"
    assert read_store_table(store, "half")[0].shape == (2, 2)


# --- unknown dataset ---------------------------------------------------------------------


def test_unknown_dataset_names_the_data_dir_and_how_to_set_it(make_store):
    store = good_store(make_store)
    with pytest.raises(DatasetError) as err:
        load_dataset(spec("tyo"), store)
    message = str(err.value)
    assert "'tyo' not found" in message and str(store) in message
    assert "data_dir=" in message and "BNCBENCH_DATA_DIR" in message
    assert "openml_id" in message and "did you mean ['toy']" in message


def test_unknown_dataset_in_absent_data_dir(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(spec("toy"), tmp_path / "nowhere")


# --- files that do not parse -------------------------------------------------------------


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda raw: b"\x1f\x8b\x08\x00" + b"garbage" * 20, id="bad-gzip-stream"),
        pytest.param(lambda raw: raw[: len(raw) // 2], id="truncated-gzip"),
        pytest.param(lambda raw: gzip.decompress(raw), id="not-gzip"),
        pytest.param(lambda raw: b"", id="empty-file"),
    ],
)
def test_corrupted_file_is_reported(make_store, corrupt):
    store = make_store("toy", GOOD_CSV * 200, numeric=["x"], nominal={"colour": ["red", "blue"]})
    path = store / "toy.csv.gz"
    path.write_bytes(corrupt(path.read_bytes()))
    with pytest.raises(DatasetError, match="does not parse as a gzip'd CSV file") as err:
        load_dataset(spec("toy"), store)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "row", ["1,red", "1,red,a,extra"], ids=["too-few-fields", "too-many-fields"]
)
def test_ragged_rows_are_reported(make_store, row):
    store = make_store("toy", GOOD_CSV + row + "\n", numeric=["x"], nominal={"colour": ["red"]})
    with pytest.raises(DatasetError, match="does not parse") as err:
        load_dataset(spec("toy"), store)
    assert "Expected 3 columns" in str(err.value)


def test_non_utf8_file_is_reported(make_store):
    store = make_store("toy", "x,class\n1,caf\xe9\n".encode("latin-1"), numeric=["x"])
    with pytest.raises(DatasetError, match="does not parse"):
        load_dataset(spec("toy"), store)


# --- schema that does not match its file -------------------------------------------------


def test_schema_without_entry(make_store):
    store = good_store(make_store)
    (store / "schema.json").write_text("{}")
    with pytest.raises(DatasetError, match="has no entry for dataset 'toy'"):
        load_dataset(spec("toy"), store)


def test_schema_that_is_not_json(make_store):
    store = good_store(make_store)
    (store / "schema.json").write_text("{not json")
    with pytest.raises(DatasetError, match="schema.json is not valid JSON"):
        load_dataset(spec("toy"), store)


def test_schema_entry_malformed(make_store):
    store = make_store("toy", GOOD_CSV, numeric=["x"], nominal={"colour": ["red", "blue"]})
    schema = json.loads((store / "schema.json").read_text())
    schema["toy"]["attributes"][0]["type"] = "real"
    (store / "schema.json").write_text(json.dumps(schema))
    with pytest.raises(DatasetError, match="entry of dataset 'toy' is malformed"):
        load_dataset(spec("toy"), store)


def test_schema_columns_missing_and_extra(make_store):
    store = make_store("toy", GOOD_CSV, numeric=["x", "y"])
    with pytest.raises(DatasetError) as err:
        load_dataset(spec("toy"), store)
    message = str(err.value)
    assert "does not match its schema.json entry" in message
    assert "not in the file: ['y']" in message and "not in the schema: ['colour']" in message


def test_numeric_column_with_non_numeric_values(make_store):
    store = make_store("toy", "x,class\n1,a\n2,b\nn/a,a\n", numeric=["x"])
    with pytest.raises(DatasetError) as err:
        load_dataset(spec("toy"), store)
    message = str(err.value)
    assert "'x'" in message and "declared numeric" in message and "line 4: 'n/a'" in message


def test_nominal_value_not_declared(make_store):
    store = make_store("toy", GOOD_CSV, numeric=["x"], nominal={"colour": ["red"]})
    with pytest.raises(DatasetError, match=r"'colour'.*not declared.*\['blue'\]"):
        load_dataset(spec("toy"), store)


# --- class column ------------------------------------------------------------------------


def test_class_column_absent(make_store):
    store = make_store("toy", "x,label\n1,a\n2,b\n", numeric=["x"])
    with pytest.raises(DatasetError, match="class column 'class' is absent") as err:
        load_dataset(spec("toy"), store)
    assert "['x', 'label']" in str(err.value)


def test_class_column_with_single_value(make_store):
    store = make_store("toy", "x,class\n1,a\n2,a\n,a\n", numeric=["x"], classes=["a", "b"])
    with pytest.raises(DatasetError, match="single value 'a'"):
        load_dataset(spec("toy"), store)


def test_rows_with_missing_class_are_dropped_with_a_warning(make_store, caplog):
    store = make_store("toy", "x,class\n1,a\n2,\n3,b\n4,\n", numeric=["x"])
    with caplog.at_level(logging.WARNING, logger="bncbench.data"):
        ds = load_dataset(spec("toy"), store)
    assert ds.X["x"].tolist() == [1.0, 3.0] and ds.y.tolist() == ["a", "b"]
    assert list(ds.X.index) == [0, 1]
    assert "dropped 2 of 4 rows whose class is missing" in caplog.text


def test_all_classes_missing_is_an_error(make_store):
    store = make_store("toy", "x,class\n1,\n2,\n", numeric=["x"])
    with pytest.raises(DatasetError, match="Every row of dataset 'toy' has a missing class"):
        load_dataset(spec("toy"), store)


# --- malformed specs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"openml-id": 3}, r"unknown keys \['openml-id'\]"),
        ({"source": "uci"}, r"source 'uci'; use one of \['sklearn', 'store', 'synthetic'\]"),
        ({"openml_id": "61"}, "openml_id '61'; it must be an integer"),
        ({"name": ""}, "needs a 'name'"),
        ({"openml_target": 3}, "openml_target 3; it must be a string"),
        ({"drop": "colour"}, "drop 'colour'; it must be a list of column names"),
        ({"drop": ["nope"]}, r"drop in conf/dataset/toy.yaml names \['nope'\]"),
        ({"drop": ["class"]}, r"names \['class'\].*attributes are \['x', 'colour'\]"),
    ],
)
def test_malformed_spec_is_a_config_error(make_store, bad, message):
    with pytest.raises(ConfigError, match=message):
        load_dataset({**spec("toy"), **bad}, good_store(make_store))


def test_spec_may_be_an_omegaconf_node(make_store):
    from omegaconf import OmegaConf

    node = OmegaConf.create(spec("toy", drop=["colour"]))
    assert list(load_dataset(node, good_store(make_store)).X.columns) == ["x"]


def test_data_dir_none_reads_the_env_var(make_store, monkeypatch):
    monkeypatch.setenv("BNCBENCH_DATA_DIR", str(good_store(make_store)))
    assert load_dataset(spec("toy"), None).X.shape == (3, 2)


# --- parquet store files ------------------------------------------------------------------


def copied_store(source, names, target):
    """A store ``target`` holding ``names`` of the store ``source`` as they are there."""
    target.mkdir()
    schema = json.loads((source / "schema.json").read_text())
    (target / "schema.json").write_text(json.dumps({name: schema[name] for name in names}))
    for name in names:
        (target / f"{name}.csv.gz").write_bytes((source / f"{name}.csv.gz").read_bytes())
    return target


@pytest.mark.parametrize("name", ["adult", "anneal", "hepatitis", "vote"])  # numeric, missing, codes like 1 and 01
def test_a_dataset_converted_to_parquet_and_back_reads_as_the_same_frame(shared_data_dir, tmp_path, name):
    store = copied_store(shared_data_dir, [name], tmp_path / "store")
    before, after = convert_store_file(store, name, "parquet")
    assert (before.name, after.name) == (f"{name}.csv.gz", f"{name}.parquet") and not before.exists()
    expected = read_store_table(shared_data_dir, name)
    read = read_store_table(store, name)
    pd.testing.assert_frame_equal(read[0], expected[0])
    assert read[1:] == expected[1:]
    convert_store_file(store, name, "csv")
    pd.testing.assert_frame_equal(read_store_table(store, name)[0], expected[0])
    assert {path.name for path in store.iterdir()} == {".schema.json.lock", f"{name}.csv.gz", "schema.json"}


def test_a_parquet_file_has_row_groups_of_the_set_rows_and_the_same_text_gives_the_same_bytes(
    make_store, monkeypatch
):
    monkeypatch.setattr(store_module, "ROW_GROUP_ROWS", 16)
    rows = "".join(f"{i % 7},{'red' if i % 3 else 'blue'},{'ab'[i % 2]}\n" for i in range(150))
    store = make_store("toy", "x,colour,class\n" + rows, numeric=["x"], nominal={"colour": ["red", "blue"]})
    path = convert_store_file(store, "toy", "parquet")[1]
    groups = pq.ParquetFile(path).metadata
    assert [groups.row_group(i).num_rows for i in range(groups.num_row_groups)] == [16] * 9 + [6]
    first = path.read_bytes()
    convert_store_file(store, "toy", "csv")
    convert_store_file(store, "toy", "parquet")
    assert path.read_bytes() == first


def test_a_bad_number_is_refused_before_a_parquet_file_is_written(make_store):
    store = make_store("toy", "x,class\n1,a\n2,b\nn/a,a\n", numeric=["x"])
    before = sorted(path.name for path in store.iterdir())
    with pytest.raises(DatasetError, match=r"'x' of the CSV text of dataset 'toy'.*line 4: 'n/a'"):
        convert_store_file(store, "toy", "parquet")
    assert sorted(path.name for path in store.iterdir() if path.name != ".schema.json.lock") == before


def test_a_dataset_in_two_files_is_refused_naming_both(make_store):
    store = good_store(make_store)
    pq.write_table(pa.table({"x": [1.5], "colour": ["red"], "class": ["a"]}), store / "toy.parquet")
    with pytest.raises(DatasetError, match=r"'toy' in two files, toy.csv.gz and toy.parquet.*remove the one"):
        load_dataset(spec("toy"), store)


@pytest.mark.parametrize("column, values, problem", [
    ("colour", pa.array([1, 2, 1]), "'colour' of .* is stored as int64, but schema.json declares it nominal"),
    ("x", pa.array([True, False, True]), "'x' of .* is stored as bool, but schema.json declares it numeric"),
])
def test_a_parquet_column_of_the_wrong_type_is_refused(make_store, column, values, problem):
    store = good_store(make_store)
    table = {"x": pa.array([1.5, None, 3.0]), "colour": pa.array(["red", "blue", "red"]), "class": ["a", "b", "b"]}
    (store / "toy.csv.gz").unlink()
    pq.write_table(pa.table({**table, column: values}), store / "toy.parquet")
    with pytest.raises(DatasetError, match=problem):
        load_dataset(spec("toy"), store)


def test_a_parquet_file_written_by_other_tools_is_read_as_the_store_reads_its_csv(make_store):
    """Categories (pandas' category dtype, a dictionary column) and numbers held as text read as the CSV does."""
    store = good_store(make_store)
    expected = load_dataset(spec("toy"), store)
    (store / "toy.csv.gz").unlink()
    frame = pd.DataFrame({"x": ["1.5", None, "3"], "colour": pd.Categorical(["red", "blue", "red"]),
                          "class": ["a", "b", "b"]})
    frame.to_parquet(store / "toy.parquet")
    read = load_dataset(spec("toy"), store)
    pd.testing.assert_frame_equal(read.X, expected.X)
    pd.testing.assert_series_equal(read.y, expected.y)


def test_a_file_that_is_not_parquet_is_reported(make_store):
    store = good_store(make_store)
    (store / "toy.csv.gz").rename(store / "toy.parquet")
    with pytest.raises(DatasetError, match=r"toy.parquet does not read as a parquet file.*Replace it"):
        load_dataset(spec("toy"), store)


def test_a_parquet_file_whose_pages_are_damaged_is_reported(make_store):
    """Its footer reads (the types are checked from it), its column chunks do not."""
    rows = "".join(f"{i % 7},{'red' if i % 2 else 'blue'},{'ab'[i % 3 % 2]}\n" for i in range(3000))
    store = make_store("toy", "x,colour,class\n" + rows, numeric=["x"], nominal={"colour": ["red", "blue"]})
    path = convert_store_file(store, "toy", "parquet")[1]
    whole = path.read_bytes()
    path.write_bytes(whole[:4] + b"\xff" * (len(whole) // 4) + whole[4 + len(whole) // 4:])
    assert pq.read_schema(path).names == ["x", "colour", "class"]
    with pytest.raises(DatasetError, match=r"toy.parquet does not read as a parquet file.*Replace it"):
        load_dataset(spec("toy"), store)
