"""Original files (ARFF, libsvm, delimited text) converted into the store and read back by the real loader:
exact values and types, declared nominal values, missing values, the class last; chunks that change
nothing; one-line errors naming the file, the line and the fix; a store left as it was by a failure."""

from __future__ import annotations

import bz2
import glob
import gzip
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bncbench.app.cli import main
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data import load_dataset
from bncbench.data.original_files import add_original_files
from bncbench.data.store import read_schema, read_store_table

ARFF = """\
% the UCI weather data, changed to hold every kind of value
@RELATION 'weather changed'

@attribute outlook {sunny, overcast, 'light rain', "it's snowing"}
@attribute 'temp (F)' numeric
@ATTRIBUTE humidity real
@attribute windy {TRUE, FALSE}
@attribute code integer
@attribute note string
@attribute play {yes, no, maybe}

@data
sunny,85,85,FALSE,01,'a, b',no
% a comment between rows
overcast,  83.50 ,?,TRUE,2,hello,yes

'light rain',7e1,96,?,?,'it\\'s',yes
"it's snowing",-1,.5,FALSE,3,?,no
{0 overcast, 1 64, 6 yes}
"""

SVM = """\
# a comment line
+1 1:0.5 3:2 # a comment
-1 2:1e-3 4:07

+1
"""

COVTYPE = "2596,51,3,0,1,5\n2590,56,?,1,0,5\n2804,139,9,0,0,2\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def store_text(store: Path, name: str) -> str:
    return gzip.decompress((store / f"{name}.csv.gz").read_bytes()).decode("utf-8")


def load(store: Path, name: str):
    return load_dataset({"name": name, "source": "store"}, store)


def store_state(store: Path) -> dict[str, bytes]:
    """Every file of a store, hidden ones too, by name."""
    return {path.name: path.read_bytes() for path in sorted(store.iterdir())} if store.exists() else {}


def one_line_error(error: type, *args, **kwargs) -> str:
    with pytest.raises(error) as raised:
        add_original_files(*args, **kwargs)
    message = str(raised.value)
    assert "\n" not in message
    return message


# --- ARFF -------------------------------------------------------------------------------------------


def test_arff_values_types_declared_values_and_missing_values(tmp_path):
    store = tmp_path / "store"
    entry = add_original_files(store, "weather", [write(tmp_path / "weather.arff", ARFF)])
    assert store_text(store, "weather") == (
        "outlook,temp (F),humidity,windy,code,note,class\n"
        "sunny,85,85,FALSE,01,\"a, b\",no\n"
        "overcast,83.50,,TRUE,2,hello,yes\n"
        "light rain,7e1,96,,,it's,yes\n"
        "it's snowing,-1,.5,FALSE,3,,no\n"
        "overcast,64,0,TRUE,0,,yes\n"  # sparse: omitted numeric 0, omitted nominal its first value, string missing
    )
    attributes = {a["name"]: (a["type"], a["values"]) for a in entry["attributes"]}
    assert attributes == {
        "outlook": ("nominal", ["sunny", "overcast", "light rain", "it's snowing"]),
        "temp (F)": ("numeric", None),
        "humidity": ("numeric", None),
        "windy": ("nominal", ["TRUE", "FALSE"]),
        "code": ("numeric", None),
        "note": ("nominal", ["a, b", "hello", "it's"]),
    }
    assert entry["class"] == {"name": "class", "type": "nominal", "values": ["yes", "no", "maybe"]}
    assert (entry["source_relation"], entry["source_class"], entry["rows"]) == ("weather changed", "play", 5)
    assert read_schema(store)["weather"] == entry
    data = load(store, "weather")
    assert data.numeric == ["temp (F)", "humidity", "code"]
    assert data.X["temp (F)"].tolist() == [85.0, 83.5, 70.0, -1.0, 64.0]
    assert data.X["humidity"].isna().tolist() == [False, True, False, False, False]
    assert data.X["windy"].isna().tolist() == [False, False, True, False, False]
    assert data.X["windy"].dropna().tolist() == ["FALSE", "TRUE", "FALSE", "TRUE"]
    assert data.X["code"].tolist()[:2] == [1.0, 2.0] and data.X["note"].tolist()[:3] == ["a, b", "hello", "it's"]
    assert data.X["outlook"].tolist() == ["sunny", "overcast", "light rain", "it's snowing", "overcast"]
    assert data.y.tolist() == ["no", "yes", "yes", "no", "yes"]


def test_arff_class_by_option_and_numeric_attributes_made_nominal(tmp_path):
    store = tmp_path / "store"
    arff = write(tmp_path / "weather.arff", ARFF)
    entry = add_original_files(store, "w", [arff], class_column="outlook", nominal=["code"], drop=["note", "2-3"])
    assert store_text(store, "w").splitlines()[:2] == ["windy,code,play,class", "FALSE,01,no,sunny"]
    assert [a["name"] for a in entry["attributes"]] == ["windy", "code", "play"]
    assert entry["attributes"][1] == {"name": "code", "type": "nominal", "values": ["0", "01", "2", "3"]}
    assert entry["class"]["values"] == ["sunny", "overcast", "light rain", "it's snowing"]
    assert load(store, "w").X["code"].tolist()[:2] == ["01", "2"]


# --- libsvm -----------------------------------------------------------------------------------------


def test_libsvm_labels_as_written_and_omitted_features_zero(tmp_path):
    store = tmp_path / "store"
    entry = add_original_files(store, "svm", [write(tmp_path / "toy.svm", SVM)])
    assert store_text(store, "svm") == "f1,f2,f3,f4,class\n0.5,0,2,0,+1\n0,1e-3,0,07,-1\n0,0,0,0,+1\n"
    assert entry["class"]["values"] == ["-1", "+1"]
    assert (entry["source_format"], entry["source_class"], entry["rows"]) == ("libsvm", "label", 3)
    data = load(store, "svm")
    assert data.numeric == ["f1", "f2", "f3", "f4"]
    assert data.X.to_numpy().tolist() == [[0.5, 0, 2, 0], [0, 0.001, 0, 7], [0, 0, 0, 0]]
    assert data.y.tolist() == ["+1", "-1", "+1"]


def test_libsvm_from_index_0_and_compressed(tmp_path):
    store = tmp_path / "store"
    path = tmp_path / "zero.libsvm.bz2"
    path.write_bytes(bz2.compress(b"3 0:1 2:5\n1 1:2\n"))
    entry = add_original_files(store, "zero", [path], nominal=["0"])
    assert store_text(store, "zero") == "f0,f1,f2,class\n1,0,5,3\n0,2,0,1\n"
    assert entry["attributes"][0] == {"name": "f0", "type": "nominal", "values": ["0", "1"]}
    assert entry["class"]["values"] == ["1", "3"]


# --- delimited text ---------------------------------------------------------------------------------


def test_headerless_csv_like_covtype_class_last_ranges_and_missing_token(tmp_path):
    store = tmp_path / "store"
    entry = add_original_files(
        store, "cov", [write(tmp_path / "covtype.data", COVTYPE)], file_format="csv", nominal=["4-5"], missing=["?"]
    )
    assert store_text(store, "cov") == "att1,att2,att3,att4,att5,class\n" + COVTYPE.replace("?", "")
    assert [(a["name"], a["type"], a["values"]) for a in entry["attributes"]][2:] == [
        ("att3", "numeric", None), ("att4", "nominal", ["0", "1"]), ("att5", "nominal", ["0", "1"])]
    assert entry["class"]["values"] == ["2", "5"]
    data = load(store, "cov")
    assert data.numeric == ["att1", "att2", "att3"]
    assert data.X["att3"].isna().tolist() == [False, True, False]
    assert data.X["att4"].tolist() == ["0", "1", "0"]
    assert data.y.tolist() == ["5", "5", "2"]


def test_csv_with_a_header_quotes_a_named_class_dropped_ids_and_several_files(tmp_path):
    header = '"id_1","id_2","cmp_fname","cmp_sex","is_match"\n'
    blocks = [
        write(tmp_path / "block_1.csv", header + '1,2,0.833,1,TRUE\n3,4,?,0,FALSE\n'),
        write(tmp_path / "block_2.csv", header + '5,6,"1",1,FALSE\n'),
    ]
    store = tmp_path / "store"
    entry = add_original_files(
        store, "linkage", blocks, header=True, class_column="is_match", drop=["id_1", "2"],
        nominal=["cmp_sex"], missing=["?"],
    )
    assert store_text(store, "linkage") == "cmp_fname,cmp_sex,class\n0.833,1,TRUE\n,0,FALSE\n1,1,FALSE\n"
    assert entry["source_files"] == ["block_1.csv", "block_2.csv"] and entry["source_class"] == "is_match"
    assert entry["class"]["values"] == ["FALSE", "TRUE"]
    assert load(store, "linkage").X["cmp_fname"].tolist()[::2] == [0.833, 1.0]


def test_whitespace_separated_like_pamap2_class_second_and_gzip(tmp_path):
    path = tmp_path / "subject101.dat.gz"
    path.write_bytes(gzip.compress(b"8.38 0 104 30.0\n8.39 1  NaN\t30.5\n\n8.40 1 NaN 31\n"))
    store = tmp_path / "store"
    entry = add_original_files(
        store, "pamap", [path], file_format="csv", separator="whitespace", class_column="2", missing=["NaN"],
        names=["timestamp", "activityID", "heart_rate", "temp"],
    )
    assert store_text(store, "pamap") == "timestamp,heart_rate,temp,class\n8.38,104,30.0,0\n8.39,,30.5,1\n8.40,,31,1\n"
    assert entry["class"]["values"] == ["0", "1"] and entry["source_class"] == "activityID"


def test_windows_files_byte_order_mark_and_crlf(tmp_path):
    store = tmp_path / "store"
    path = tmp_path / "windows.csv"
    path.write_bytes("\ufeffx,colour,class\r\n1.5,red,a\r\n2,blue,b\r\n".encode("utf-8"))
    add_original_files(store, "win", [path], header=True, nominal=["colour"])
    assert store_text(store, "win") == "x,colour,class\n1.5,red,a\n2,blue,b\n"
    crlf = tmp_path / "windows.arff"
    crlf.write_bytes(ARFF.replace("\n", "\r\n").encode("utf-8"))
    add_original_files(store, "crlf", [crlf])
    add_original_files(store, "lf", [write(tmp_path / "unix.arff", ARFF)])
    assert store_text(store, "crlf") == store_text(store, "lf")


@pytest.mark.parametrize("fmt, text, options", [
    ("arff", ARFF, {}),
    ("svm", SVM, {}),
    ("csv", COVTYPE * 3, {"nominal": ["4-5"], "missing": ["?"]}),
])
def test_chunks_of_one_or_two_rows_give_the_same_bytes(tmp_path, fmt, text, options):
    path = write(tmp_path / f"data.{fmt}", text)
    whole = tmp_path / "whole"
    add_original_files(whole, "d", [path], **options)
    for rows in (1, 2):
        chunked = tmp_path / f"by{rows}"
        assert add_original_files(chunked, "d", [path], chunk_rows=rows, **options) == read_schema(whole)["d"]
        assert (chunked / "d.csv.gz").read_bytes() == (whole / "d.csv.gz").read_bytes()


# --- bad input: one line naming the file, the line and the fix --------------------------------------


@pytest.mark.parametrize("row, expected", [
    ("sunny,85,85,FALSE,1,'open quote,no", "cannot read \"sunny,85,85,FALSE,1,'open quote,no\" as ARFF values"),
    ("sunny,85,85,FALSE,1,x", "6 values where the header declares 7 attributes"),
    ("sunny,85,85,FALSE,1,x,no,{2}", "cannot read"),
    ("{0 sunny, 9 1}", "sparse index 9 where the header declares 7 attributes"),
    ("{0 sunny, 1 2, 1 3}", "sparse index 1 is given twice"),  # issue 42: one of them was kept silently
    ("{0 sunny, 1 2 ,}", "cannot read '{0 sunny, 1 2 ,}' as ARFF values"),
    ("{0 sunny 1 2}", "attribute 'outlook' has value 'sunny 1 2', which its @attribute line does not declare"),
    ("cloudy,85,85,FALSE,1,x,no", "attribute 'outlook' has value 'cloudy', which its @attribute line does not"),
    ("sunny,hot,85,FALSE,1,x,no", "column 'temp (F)' is numeric but holds 'hot'; declare it nominal"),
])
def test_a_bad_arff_row_is_named_by_its_line(tmp_path, row, expected):
    path = write(tmp_path / "bad.arff", ARFF + row + "\n")
    message = one_line_error(DatasetError, tmp_path / "store", "bad", [path], chunk_rows=2)
    assert message.startswith(f"{path}, line {len(ARFF.splitlines()) + 1}: {expected}"), message


@pytest.mark.parametrize("header_line, expected", [
    ("@attribute x relational", "line 1: attribute 'x' has type 'relational'"),
    ("@attribute x {a, b", "line 1: attribute 'x' has type '{a, b'"),
    ("@atribute x numeric", "line 1: '@atribute x numeric' is not an ARFF header line"),
])
def test_a_bad_arff_header_is_named_by_its_line(tmp_path, header_line, expected):
    path = write(tmp_path / "bad.arff", f"{header_line}\n@attribute c {{a,b}}\n@data\na,b\n")
    assert one_line_error(DatasetError, tmp_path / "store", "bad", [path]).startswith(f"{path}, {expected}")


@pytest.mark.parametrize("header, expected", [
    ("@attribute a numeric\n@attribute a {x,y}\n", "line 2: a second attribute named 'a'"),
    ("@attribute a {}\n@attribute c {x,y}\n", "line 1: the values '{}' of attribute 'a' are not a list of values"),
    ("@attribute a {x,,y}\n@attribute c {x,y}\n", "line 1: the values '{x,,y}' of attribute 'a' are not a list"),
])
def test_bad_arff_declarations(tmp_path, header, expected):
    path = write(tmp_path / "bad.arff", header + "@data\n")
    assert one_line_error(DatasetError, tmp_path / "store", "bad", [path]).startswith(f"{path}, {expected}")


def test_a_value_with_a_line_break_is_refused(tmp_path):
    """The store is read one row a line (pyarrow), so a quoted line break would make it unreadable."""
    path = write(tmp_path / "broken.csv", 'name,class\n"two\nlines",a\nx,b\n')
    assert one_line_error(DatasetError, tmp_path / "store", "broken", [path], header=True, nominal=["name"]) == (
        f"{path}, line 3: column 'name' holds 'two\\nlines', a value with a line break, which the store cannot "
        "hold; remove it.")


def test_a_libsvm_index_far_too_large_is_refused_before_any_memory_is_taken(tmp_path):
    path = write(tmp_path / "typo.svm", "1 1:2\n2 3:1 9999999999:5\n")
    assert one_line_error(DatasetError, tmp_path / "store", "typo", [path]).startswith(
        f"{path}: feature index 9999999999 makes 9999999999 columns, more than the 100000")


def test_a_data_directory_that_cannot_be_written_is_named(tmp_path):
    not_a_folder = write(tmp_path / "store", "a file")
    message = one_line_error(DatasetError, not_a_folder, "cov", [write(tmp_path / "c.csv", COVTYPE)], missing=["?"])
    assert message.startswith(f"cannot write dataset 'cov' into the data directory {not_a_folder} (FileExistsError")


def test_an_arff_date_must_be_dropped_or_nominal(tmp_path):
    path = write(tmp_path / "dated.arff", "@attribute d date 'yyyy-MM-dd'\n@attribute c {a,b}\n@data\n2020-01-01,a\n"
                                          "2020-01-02,b\n")
    assert "drop them (--drop d)" in one_line_error(ConfigError, tmp_path / "store", "dated", [path])
    add_original_files(tmp_path / "store", "dated", [path], nominal=["d"])
    assert store_text(tmp_path / "store", "dated") == "d,class\n2020-01-01,a\n2020-01-02,b\n"


@pytest.mark.parametrize("text, expected", [
    ("1 1:2 3\n", "line 1: '3' is not a feature index:value"),
    ("1 1:2\n2 2:1 1:5\n", "line 2: feature index 1 after 2; the indices of a libsvm line must ascend"),
    ("1 1:2\n2 qid:3 1:5\n", "line 2: 'qid:3' is not a feature index:value"),
    ("1 1:2\n2 1:\n", "line 2: '1:' is not a feature index:value"),
    ("1 1:2\n2 1:0x10\n", "line 2: column 'f1' is numeric but holds '0x10'"),
    ("1 1:2\n2 1:inf\n", "line 2: column 'f1' is numeric but holds 'inf'"),
    ("1 1:2\n2:1 3:5\n", "line 2: begins with '2:1', a feature index:value, not a label"),  # issue 42
])
def test_a_bad_libsvm_line_is_named_by_its_line(tmp_path, text, expected):
    path = write(tmp_path / "bad.svm", text)
    assert one_line_error(DatasetError, tmp_path / "store", "bad", [path]).startswith(f"{path}, {expected}")


@pytest.mark.parametrize("text, options, expected", [
    ("1,2,a\n1,2\n", {}, "line 2: 2 fields where there are 3 columns; every row needs one value per column"),
    ("1,2,a\n1,2,b,4\n", {}, "line 2: 4 fields where there are 3 columns"),
    ("x,y,class\n1,2,a\n", {}, "line 1: column 'att1' is numeric but holds 'x' (is line 1 a header? then give --header)"),
    ("1,2,a\n1,n/a,b\n", {}, "line 2: column 'att2' is numeric but holds 'n/a'; declare it nominal (--nominal att2)"),
    ("1,2,a\n1,NaN,b\n", {}, "line 2: column 'att2' is numeric but holds 'NaN'"),
    ('1,"2,a\n', {}, "line 1: unexpected end of data; fix the quotes of the line"),
])
def test_a_bad_csv_row_is_named_by_its_line(tmp_path, text, options, expected):
    path = write(tmp_path / "bad.csv", text)
    assert one_line_error(DatasetError, tmp_path / "store", "bad", [path], **options).startswith(f"{path}, {expected}")


@pytest.mark.parametrize("options, expected", [
    ({"class_column": "9"}, "--class '9' names no column of {path}: its columns are att1, att2, att3 (numbers 1..3)"),
    ({"class_column": "label"}, "--class 'label' names no column"),
    ({"class_column": "1-2"}, "--class '1-2' names 2 columns; name one."),
    ({"nominal": ["2-7"]}, "--nominal '2-7' names no column"),
    ({"drop": ["3"]}, "--drop names the class column 'att3'"),
    ({"names": ["a", "b"]}, "--names gives 2 names but line 1 of {path} has 3 fields"),
    ({"names": ["a", "a", "c"]}, "the column names of {path} must be unique and not empty, but ['a'] are not"),
    ({"names": ["class", "b", "c"]}, "{path} has a column named 'class' that is not the class 'c'"),
    ({"separator": "::"}, "separator '::' is not one character"),
    ({"file_format": "json"}, "unknown format 'json'"),
])
def test_options_that_do_not_fit_the_file_are_refused(tmp_path, options, expected):
    path = write(tmp_path / "ok.csv", "1,2,a\n3,4,b\n")
    message = one_line_error(ConfigError, tmp_path / "store", "ok", [path], **options)
    assert message.startswith(expected.format(path=path)), message
    assert not (tmp_path / "store").exists()


def test_options_of_another_format_are_refused(tmp_path):
    arff = write(tmp_path / "w.arff", ARFF)
    svm = write(tmp_path / "w.svm", SVM)
    assert "--header, --sep do not apply to the arff format" in one_line_error(
        ConfigError, tmp_path / "s", "w", [arff], header=True, separator="tab")
    assert "--class does not apply to the libsvm format" in one_line_error(
        ConfigError, tmp_path / "s", "w", [svm], class_column="1")
    assert "cannot be told from its name; give it (--format arff|libsvm|csv)" in one_line_error(
        ConfigError, tmp_path / "s", "w", [write(tmp_path / "covtype.data", COVTYPE)])


def test_unreadable_files_are_named(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("1,caf\xe9\n".encode("latin-1"))
    truncated = tmp_path / "cut.csv.gz"
    truncated.write_bytes(gzip.compress(b"1,2,a\n" * 1000)[:50])
    empty = write(tmp_path / "empty.csv", "\n\n")
    header_only = write(tmp_path / "header.csv", "x,class\n")
    store = tmp_path / "store"
    assert one_line_error(DatasetError, store, "x", [tmp_path / "absent.csv"]).startswith(
        f"{tmp_path / 'absent.csv'}: no such file")
    assert "is not UTF-8 text" in one_line_error(DatasetError, store, "x", [latin])
    assert one_line_error(DatasetError, store, "x", [truncated]).startswith(f"{truncated} cannot be read")
    assert one_line_error(DatasetError, store, "x", [empty]) == f"{empty} is empty; nothing to convert."
    assert one_line_error(DatasetError, store, "x", [header_only], header=True).endswith("holds no data rows; nothing "
                                                                                          "to convert.")
    no_data = write(tmp_path / "x.arff", "@relation r\n@attribute a numeric\n")
    assert one_line_error(DatasetError, store, "x", [no_data]).startswith(f"{no_data} has no @data line")
    not_arff = write(tmp_path / "y.arff", "1,2\n")
    assert one_line_error(DatasetError, store, "x", [not_arff]).startswith(
        f"{not_arff}, line 1: '1,2' is not an ARFF header line")
    assert store_state(store) == {}


def test_files_with_other_headers_are_not_read_as_one(tmp_path):
    first = write(tmp_path / "a.csv", "x,class\n1,a\n")
    second = write(tmp_path / "b.csv", "y,class\n1,a\n")
    assert one_line_error(DatasetError, tmp_path / "s", "ab", [first, second], header=True).startswith(
        f"{second}, line 1: its header differs from that of {first}")
    other = write(tmp_path / "other.arff", ARFF.replace("{yes, no, maybe}", "{yes, no}"))
    assert "the @attribute lines of" in one_line_error(
        DatasetError, tmp_path / "s", "w", [write(tmp_path / "w.arff", ARFF), other])


# --- the store: never half-written, never overwritten unasked ---------------------------------------


def test_a_failed_conversion_leaves_the_store_as_it_was(tmp_path):
    store = tmp_path / "store"
    good = write(tmp_path / "good.csv", COVTYPE)
    add_original_files(store, "cov", [good], nominal=["4-5"], missing=["?"])
    before = store_state(store)
    bad = write(tmp_path / "bad.csv", COVTYPE * 50 + "1,2,3,0,1,x,5\n")
    for name, replace in (("new", False), ("cov", True)):
        with pytest.raises(DatasetError, match="line 151: 7 fields"):
            add_original_files(store, name, [bad], nominal=["4-5"], missing=["?"], replace=replace, chunk_rows=7)
        assert store_state(store) == before
    assert load(store, "cov").y.tolist() == ["5", "5", "2"]


def test_a_name_in_the_store_is_refused_unless_replaced(tmp_path):
    store = tmp_path / "store"
    path = write(tmp_path / "c.csv", COVTYPE)
    add_original_files(store, "cov", [path], missing=["?"])
    before = store_state(store)
    message = one_line_error(DatasetError, store, "cov", [path], missing=["?"])
    assert message == (f"Dataset 'cov' is already in the store {store} (cov.csv.gz and an entry in schema.json); add "
                       "it with replace (bncbench data add --replace) to overwrite it, or give it another name.")
    assert store_state(store) == before
    entry = add_original_files(store, "cov", [path], missing=["?"], nominal=["1"], replace=True)
    assert read_schema(store)["cov"] == entry and entry["attributes"][0]["values"] == ["2590", "2596", "2804"]


def test_a_dataset_name_that_is_a_path_is_refused(tmp_path):
    path = write(tmp_path / "c.csv", COVTYPE)
    with pytest.raises(ConfigError, match="it becomes a file or folder name"):
        add_original_files(tmp_path / "store", "../outside", [path])
    assert not (tmp_path / "outside.csv.gz").exists()


def _as_from_a_terminal() -> None:
    """Ctrl-C as a shell started the command: pytest-xdist's workers ignore SIGINT, which a process inherits."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_conversion_leaves_the_store_as_it_was(tmp_path, cli_env):
    """``bncbench data add`` stopped by Ctrl-C halfway: no data file, no entry, no temporary file."""
    store = tmp_path / "store"
    add_original_files(store, "cov", [write(tmp_path / "c.csv", COVTYPE)], missing=["?"])
    before = store_state(store)
    big = write(tmp_path / "big.csv", "".join(f"{i},{i % 7},x{i % 3}\n" for i in range(1_000_000)))
    process = subprocess.Popen(
        [sys.executable, "-m", "bncbench", "data", "add", "big", str(big), "--nominal", "3", f"data_dir={store}"],
        env=cli_env, cwd=tmp_path, preexec_fn=_as_from_a_terminal, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while not any(name.startswith(".big.csv.gz.") for name in os.listdir(store)):
        assert process.poll() is None and time.monotonic() < deadline, "the conversion never started writing"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) != 0
    assert store_state(store) == before


# --- the command ------------------------------------------------------------------------------------


def test_bncbench_data_add(tmp_path, capsys):
    store = tmp_path / "store"
    path = write(tmp_path / "covtype.data", COVTYPE)
    argv = ["data", "add", "covtype", str(path), "--format", "csv", "--nominal", "4,5", "--missing", "?",
            f"data_dir={store}"]
    assert main(argv) == 0
    assert capsys.readouterr().out == (
        f"bncbench: added covtype to {store}: 3 rows, 5 attributes (3 numeric), 2 classes.\n")
    data = load_dataset("covtype", store)  # its config, conf/dataset/covtype.yaml
    assert data.numeric == ["att1", "att2", "att3"] and data.y.tolist() == ["5", "5", "2"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("bncbench: error: Dataset 'covtype' is already in the store") and error.count("\n") == 1
    assert main([*argv[:2], "mine", *argv[3:], "--replace"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "bncbench: no conf/dataset/mine.yaml names it yet: add one (name: mine, source: store).")
    assert main(["data", "add", "bad", str(path), "--format", "csv", f"data_dir={store}"]) == 2
    assert capsys.readouterr().err == (
        f"bncbench: error: {path}, line 2: column 'att3' is numeric but holds '?'; declare it nominal (--nominal "
        "att3), or if '?' stands for a missing value, say so (--missing TOKEN).\n")


def test_bncbench_data_add_as_parquet_and_data_convert(tmp_path, capsys):
    """A dataset added as parquet reads as the one added as CSV; convert rewrites it in the other format, removing
    the old file, and says what it did; an absent dataset is one line naming the fix."""
    store, path = tmp_path / "store", write(tmp_path / "covtype.data", COVTYPE)
    options = ["--format", "csv", "--nominal", "4,5", "--missing", "?", f"data_dir={store}"]
    assert main(["data", "add", "covtype", str(path), *options, "--store-format", "parquet"]) == 0
    assert main(["data", "add", "mine", str(path), *options]) == 0
    assert sorted(p.name for p in store.glob("[cm]*")) == ["covtype.parquet", "mine.csv.gz"]
    schema = read_schema(store)
    assert (schema["covtype"]["file"], schema["mine"]["file"]) == ("covtype.parquet", "mine.csv.gz")
    pd.testing.assert_frame_equal(read_store_table(store, "covtype")[0], read_store_table(store, "mine")[0])
    capsys.readouterr()
    assert main(["data", "convert", "covtype", "mine", "--to", "csv", f"data_dir={store}"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith(f"bncbench: covtype in {store}: covtype.csv.gz (") and said[0].endswith(
        "bytes) written, covtype.parquet removed")
    assert said[1].startswith(f"bncbench: mine in {store}: mine.csv.gz (") and said[1].endswith("is already csv")
    assert not (store / "covtype.parquet").exists() and read_schema(store)["covtype"]["file"] == "covtype.csv.gz"
    assert main(["data", "convert", "nope", "--to", "parquet", f"data_dir={store}"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"bncbench: error: The data directory {store} holds no dataset 'nope'") and (
        error.count("\n") == 1)


# --- the commands the dataset configs give, on miniatures of the files they name ----------------------

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
COMMAND = re.compile(r"^#\s+(bncbench data add .*)$", re.MULTILINE)
KDD_ROWS = (
    "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,9,9,1.00,0.00,0.11,"
    "0.00,0.00,0.00,0.00,0.00,normal.\n"
    "0,icmp,ecr_i,SF,1032,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,511,511,0.00,0.00,0.00,0.00,1.00,0.00,0.00,255,255,1.00,0.00,"
    "1.00,0.00,0.00,0.00,0.00,0.00,smurf.\n"
)
LINKAGE_HEADER = ('"id_1","id_2","cmp_fname_c1","cmp_fname_c2","cmp_lname_c1","cmp_lname_c2","cmp_sex","cmp_bd",'
                  '"cmp_bm","cmp_by","cmp_plz","is_match"\n')
CVM = "1 1:0.2 3:0.5\n-1 2:0.1 361:1\n"
#: Per dataset: its original files in miniature (a few rows in their format), what stands for the command's
#: placeholders, and the attributes, numeric attributes and classes the store then holds.
MINIATURES = {
    "covtype": ({"covtype.data.gz": "2596,51,3,258,0,510,221,232,148,6279," + "1,0,0,0," + "0," * 28 + "1," + "0," * 11
                 + "5\n" + "2590,56,2,212,-6,390,220,235,151,6225," + "0,0,1,0," + "1," + "0," * 39 + "2\n"},
                {}, (54, 10, 2)),
    "kddcup": ({"kddcup.data.gz": KDD_ROWS}, {}, (41, 34, 2)),
    "linkage": ({"block_1.csv": LINKAGE_HEADER + "37291,53113,0.833333333333333,?,1,?,1,1,1,1,0,TRUE\n",
                 "block_2.csv": LINKAGE_HEADER + "39086,47614,1,?,1,?,1,1,1,1,1,FALSE\n"}, {}, (9, 9, 2)),
    "localization": ({"ConfLongDemo_JSI.txt": (
        "A01,010-000-024-033,633790226051280329,27.05.2009 14:03:25:127,4.062931060791016,1.8924342393875122,"
        "0.5074254274368286,walking\n"
        "A01,020-000-032-221,633790226051820913,27.05.2009 14:03:25:183,4.291954517364502,1.7810730934143066,"
        "1.3444169759750366,lying down\n")}, {}, (6, 4, 2)),
    "pamap2": ({"Protocol/subject101.dat": "8.38 0 104 " + " ".join(["30.0"] * 51) + "\n",
                "Protocol/subject102.dat": "5.64 1 NaN " + " ".join(["-0.5"] * 50) + " NaN\n"}, {}, (53, 53, 2)),
    "msd-year-prediction": ({"YearPredictionMSD.txt": "2001," + ",".join(["49.94357"] * 90) + "\n"
                             + "1987," + ",".join(["-3.2"] * 90) + "\n"}, {}, (90, 90, 2)),
    "mnist8m": ({"mnist8m.bz2": "5 153:3 154:18\n0 1:1 784:255\n"}, {}, (784, 784, 2)),
    "uscensus1990": ({"USCensus1990.data.txt": "caseid,dAge,dAncstry1,iClass,dYrsserv\n10000,5,0,5,0\n10001,6,1,6,0\n"},
                     {"COLUMN": "dAge"}, (3, 0, 2)),
    **{name: ({"cvm.svm": CVM}, {"FILE": "cvm.svm"}, (361, 361, 2))
       for name in ("mitface-a", "mitface-b", "mitface-c", "usps-extended")},
}


def test_each_skdb_paper_dataset_without_an_openml_id_says_how_to_convert_it_or_that_its_format_is_unknown():
    for name in yaml.safe_load((CONF.parent / "suite" / "skdb_paper_datasets.yaml").read_text())["datasets"]:
        text = (CONF / f"{name}.yaml").read_text()
        if yaml.safe_load(text)["openml_id"] is None:
            commands = COMMAND.findall(text)
            assert (name in MINIATURES and len(commands) == 1) or (
                not commands and "format not verified" in text.lower()), name


@pytest.mark.parametrize("name", sorted(MINIATURES))
def test_the_command_of_a_dataset_config_converts_its_original_file(name, tmp_path, monkeypatch, capsys):
    files, placeholders, (attributes, numeric, classes) = MINIATURES[name]
    for file, text in files.items():
        path = tmp_path / file
        path.parent.mkdir(parents=True, exist_ok=True)
        opener = {".gz": gzip.compress, ".bz2": bz2.compress}.get(path.suffix, lambda data: data)
        path.write_bytes(opener(text.encode("utf-8")))
    (command,) = COMMAND.findall((CONF / f"{name}.yaml").read_text())
    argv = []
    for word in shlex.split(command)[1:]:
        word = placeholders.get(word, word)
        argv += sorted(glob.glob(word, root_dir=tmp_path)) if "*" in word else [word]
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    assert main([*argv, f"data_dir={store}"]) == 0, capsys.readouterr().err
    data = load_dataset(name, store)
    assert (data.X.shape[1], len(data.numeric), data.y.nunique()) == (attributes, numeric, classes)
    assert len(data.y) == sum(text.count("\n") for text in files.values()) - ("--header" in argv) * len(files)


def test_a_dry_run_says_which_absent_datasets_must_be_converted(tmp_path, capsys):
    argv = ["run", "--dry-run", "experiment=skdb_paper", "suite=skdb_paper_datasets", "experiment.models=[nb_laplace]",
            "experiment.comparisons=[]", f"data_dir={tmp_path / 'store'}", f"tracking_uri=sqlite:///{tmp_path}/mlflow.db"]
    assert main(argv) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert "census-income" in said and "poker-hand" in said and "localization" in said
    assert " have no openml_id, so the run would stop before its first cell. Point bncbench at a folder" in said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("reachable", [True, False])
def test_a_dry_run_promises_a_fetch_only_where_the_run_could_make_it(tmp_path, capsys, monkeypatch, reachable):
    """It said "the sweep fetches ... from OpenML" where OpenML could not be reached, and the run then stopped
    (issue 42): the dry run asks what the run asks (``fetch_obstacle``)."""
    monkeypatch.setattr("bncbench.app.datasets._reachable", lambda host: reachable)
    argv = ["run", "--dry-run", "experiment=skdb_paper", "experiment.datasets=[census-income,poker-hand]",
            "experiment.models=[nb_laplace]", "experiment.comparisons=[]", f"data_dir={tmp_path / 'store'}",
            f"tracking_uri=sqlite:///{tmp_path}/mlflow.db"]
    assert main(argv) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith(f"bncbench: 2 datasets are not in the data directory {tmp_path / 'store'} (")
    assert said.endswith("; the sweep fetches them from OpenML before its first cell." if reachable else
                         "cannot be reached from here, so the run would stop before its first cell. Point bncbench "
                         "at a folder that holds them (set the data directory with the config option data_dir=... or "
                         "the environment variable BNCBENCH_DATA_DIR), convert their original files into it "
                         "(bncbench data add; their conf/dataset/<name>.yaml says how), or run the others "
                         "(experiment.datasets=[...]).")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_file_that_is_not_a_regular_file_is_refused_before_reading(tmp_path, kind):
    """A FIFO or /dev/zero would be read without end (issue 42); a folder is not a file either."""
    path = {"fifo": tmp_path / "rows.csv", "device": Path("/dev/zero"), "folder": tmp_path / "folder.csv"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    started = time.monotonic()
    with pytest.raises(DatasetError, match="is not a regular file .*name the dataset's original files themselves"):
        add_original_files(tmp_path / "store", "d", [path], file_format="csv", header=True)
    assert time.monotonic() - started < 10 and not (tmp_path / "store" / "d.csv.gz").exists()


@pytest.mark.parametrize("text, expected", [
    (ARFF.split("@data")[0] + "@data\nsunny,85,85,FALSE,1,x,?\novercast,80,90,TRUE,2,y,?\n",
     "the class 'play' has 0 values in the data, every row missing it; a classifier needs two"),
    (ARFF.split("@data")[0] + "@data\nsunny,85,85,FALSE,1,x,no\novercast,80,90,TRUE,2,y,no\n",
     "the class 'play' has 1 value in the data ('no'); a classifier needs two"),
])
def test_a_class_with_fewer_than_two_values_in_the_data_is_refused(tmp_path, text, expected):
    """Accepted silently before (issue 42): the store then held a dataset no classifier can learn."""
    path = write(tmp_path / "one.arff", text)
    assert expected in one_line_error(DatasetError, tmp_path / "store", "one", [path])
    assert not (tmp_path / "store" / "one.csv.gz").exists()


@pytest.mark.parametrize("fmt", ["csv", "arff", "libsvm"])
@pytest.mark.parametrize("kind", ["nul", "no line end", "not utf-8"])
def test_a_binary_file_or_one_without_line_ends_is_refused_in_every_format(tmp_path, monkeypatch, fmt, kind):
    """A binary file was read as "0 attributes, 25 classes", and a file without line ends was read whole into memory
    (issue 42): each format reads its lines bounded, and a NUL or undecodable byte names the file as binary."""
    monkeypatch.setattr("bncbench.data.original_files.MAX_LINE_CHARACTERS", 1000)
    path = tmp_path / f"rows.{fmt}"
    path.write_bytes({"nul": b"1,2\x00,a\n3,4,b\n", "no line end": b"1," * 5000,
                      "not utf-8": b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe"}[kind])
    message = one_line_error(DatasetError, tmp_path / "store", "d", [path], file_format=fmt)
    assert {"nul": "line 1: a NUL character, so the file is no text of rows (it is binary",
            "no line end": "line 1: longer than 1,000 characters, so the file is no text of rows",
            "not utf-8": "is not UTF-8 text (invalid start byte at byte 10 of a block): if it is a binary file, give "
                         "the dataset's text files"}[kind] in message
    assert store_state(tmp_path / "store") == {}


@pytest.mark.parametrize("text, options", [
    ("/bin/sh\n/bin/bash\n/usr/bin/zsh\n", {}),  # /etc/shells: one column, read as the class
    ("id,class\n1,a\n2,b\n", {"header": True, "drop": ["id"]}),  # the only attribute dropped
    ("@relation r\n@attribute class {a,b}\n@data\na\nb\n", {"file_format": "arff"}),
])
def test_a_file_with_no_attribute_besides_the_class_is_refused(tmp_path, text, options):
    """A system file of one column was added as "0 attributes, 10 classes" (issue 42)."""
    path = write(tmp_path / ("f.arff" if options.get("file_format") == "arff" else "f.csv"), text)
    assert "has no attribute besides the class" in one_line_error(DatasetError, tmp_path / "store", "d", [path],
                                                                   **options)
    assert store_state(tmp_path / "store") == {}


@pytest.mark.parametrize("fmt", ["csv", "arff"])
def test_more_columns_than_the_dense_store_holds_are_refused_at_once(tmp_path, monkeypatch, fmt):
    """A line of 2,000,001 fields ran for minutes (names were checked pairwise); libsvm's bound holds for all."""
    monkeypatch.setattr("bncbench.data.original_files.MAX_FEATURES", 50)
    text = ("a," * 60 + "c\n" if fmt == "csv"
            else "@relation r\n" + "".join(f"@attribute a{i} numeric\n" for i in range(61)) + "@data\n")
    path = write(tmp_path / f"wide.{fmt}", text)
    assert "has 61 columns, more than the 50 a dense store file can hold" in one_line_error(
        DatasetError, tmp_path / "store", "d", [path])
