"""The CSV tokenizer reads what pyarrow reads: the same strings, missing values and errors, however the file
is cut into blocks and chunks."""

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest

from bncbench.bnc import csv_ids
from bncbench.bnc.csv_ids import CsvIds
from bncbench.core.errors import DatasetError


def pyarrow_rows(path):
    """The file's rows as pyarrow reads them (every column a string, an empty field missing), or the error."""
    names = pa_csv.open_csv(path).schema.names
    convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=True,
                                    null_values=[""])
    return pa_csv.read_csv(path, convert_options=convert).to_pylist()


def our_rows(path, chunk_rows, reader=None):
    reader = reader or CsvIds.of_file(path)
    chunks = list(reader.chunks(path, chunk_rows))
    assert all(len(chunk) == chunk_rows for chunk in chunks[:-1])
    return row_values(reader, chunks)


def row_values(reader, chunks):
    """The rows of chunks of ids as dictionaries of their values (None: missing)."""
    values = [np.array([None, *reader.values(j)], dtype=object) for j in range(len(reader.columns))]
    return [{name: values[j][row[j]] for j, name in enumerate(reader.columns)} for chunk in chunks for row in chunk]


TRICKY = [
    'a,b\n"x"y,1\n', 'a,b\nx"y",1\n', 'a,b\n"x\ny",1\n', 'a,b\n"",1\n', 'a,b\n" ",1\n', 'a,b\r\nx,1\r\n\r\ny,2',
    'a,b\rx,1\ry,2\r', 'a,b\nx,1\n\n\ny,2\n', 'a,b\n"x""y",1\n', '\ufeffa,b\nx,1\n', 'a,b\n,\n', 'a\n\n\nx\n',
    'a,b\n"a"",b",1\n', 'a,b\n x ,1\n', 'a,b\nx,1\n,', 'a,b\né,ü\n', 'a,b\nx,1', 'a,b\n', 'a,b\n"x,1\n',
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_files_read_as_pyarrow_reads_them(tmp_path, text):
    path = tmp_path / "tricky.csv"
    path.write_text(text, encoding="utf-8")
    try:
        expected = pyarrow_rows(path)
    except pa.ArrowInvalid:
        with pytest.raises(DatasetError, match="fields where the header has|CSV parse error"):
            our_rows(path, 3)
        return
    assert our_rows(path, 3) == expected


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 7, 64])
def test_random_files_read_as_pyarrow_reads_them_across_blocks(tmp_path, monkeypatch, block_bytes):
    """Files of random bytes from the characters that matter, read a few bytes at a time: every row, value and
    error as pyarrow's, whatever the block boundaries cut (a doubled quote, a \\r\\n, a comma at the end)."""
    monkeypatch.setattr(csv_ids, "_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(block_bytes)
    alphabet, endings = np.array(list('ab,"\n\r é')), np.array(["\n", "\r\n", "\r", "\n\n", ""])
    agreed = failed = 0
    for trial in range(150):
        fields = ["".join(rng.choice(alphabet, rng.integers(0, 4), p=[.3, .2, .1, .2, .05, .05, .05, .05]))
                  for _ in range(3 * rng.integers(0, 5))]  # three a row, of a few bytes, some of them commas or quotes
        body = "".join(",".join(fields[i : i + 3]) + rng.choice(endings) for i in range(0, len(fields), 3))
        path = tmp_path / f"random{trial}.csv"
        path.write_text("x,y,class\n" + body, encoding="utf-8")
        try:
            expected = pyarrow_rows(path)
        except pa.ArrowInvalid:
            with pytest.raises(DatasetError):
                our_rows(path, 2)
            failed += 1
            continue
        assert our_rows(path, 2) == expected, repr(body)
        agreed += 1
    assert agreed > 20 and failed > 20  # both kinds of file were met


def test_values_are_numbered_as_first_met_and_go_on_across_files(tmp_path):
    (tmp_path / "train.csv").write_text("a,class\nx,p\ny,q\n,p\nx,q\n")
    (tmp_path / "test.csv").write_text("a,class\nz,p\nx,r\n")
    reader = CsvIds.of_file(tmp_path / "train.csv")
    np.testing.assert_array_equal(next(reader.chunks(tmp_path / "train.csv", 10)), [[1, 1], [2, 2], [0, 1], [1, 2]])
    np.testing.assert_array_equal(next(reader.chunks(tmp_path / "test.csv", 10)), [[3, 1], [1, 3]])
    assert list(reader.values(0)) == ["x", "y", "z"] and list(reader.values(1)) == ["p", "q", "r"]
    table = reader.table(np.array([[3, 1], [0, 2]], dtype=np.int32))
    assert table.to_pydict() == {"a": ["z", None], "class": ["p", "q"]}


def test_many_long_values_grow_the_tables(tmp_path):
    """Ten thousand distinct values, some longer than the first arena, each found again."""
    values = [f"{'long' * (i % 700)}value{i}" for i in range(10_000)]
    path = tmp_path / "many.csv"
    path.write_text("a,class\n" + "".join(f"{v},c{i % 3}\n" for i, v in enumerate(values + values[::-1])))
    assert our_rows(path, 4_096) == pyarrow_rows(path)
    reader = CsvIds.of_file(path)
    ids = np.concatenate(list(reader.chunks(path, 4_096)))
    np.testing.assert_array_equal(ids[:10_000, 0], np.arange(1, 10_001))
    np.testing.assert_array_equal(ids[10_000:, 0], np.arange(10_000, 0, -1))


def test_a_gzip_file_reads_as_the_plain_one(tmp_path):
    import gzip

    text = "a,class\n" + "".join(f"v{i % 5},c{i % 2}\n" for i in range(1_000))
    (tmp_path / "plain.csv").write_text(text)
    with gzip.open(tmp_path / "packed.csv.gz", "wt") as f:
        f.write(text)
    assert our_rows(tmp_path / "packed.csv.gz", 300) == our_rows(tmp_path / "plain.csv", 300)


def test_a_file_with_other_columns_or_bytes_that_are_not_utf8_is_refused(tmp_path):
    (tmp_path / "train.csv").write_text("a,class\nx,p\n")
    (tmp_path / "other.csv").write_text("b,class\nx,p\n")
    (tmp_path / "latin1.csv").write_bytes("a,class\nx\xe9,p\n".encode("latin-1"))
    reader = CsvIds.of_file(tmp_path / "train.csv")
    with pytest.raises(DatasetError, match="are not those of the training file"):
        next(reader.chunks(tmp_path / "other.csv", 10))
    list(reader.chunks(tmp_path / "latin1.csv", 10))
    with pytest.raises(DatasetError, match="not UTF-8"):
        reader.values(0)


def test_rows_of_a_large_file_match_pyarrow(tmp_path):
    rng = np.random.default_rng(3)
    n = 30_000
    columns = {f"x{j}": rng.choice(["v0", "v1", "", "a b", '"q,"', "long value here"], n) for j in range(4)}
    columns["class"] = rng.choice(["p", "q"], n)
    lines = ["x0,x1,x2,x3,class"] + [",".join(row) for row in zip(*columns.values())]
    path = tmp_path / "large.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    assert our_rows(path, 7_000) == pyarrow_rows(path)


def test_the_class_moved_last_moves_its_ids_and_its_table_column(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("class,a,b\np,x,\nq,y,u\n")
    reader = CsvIds.of_file(path, last="class")
    assert reader.columns == ["a", "b", "class"]
    ids = next(reader.chunks(path, 10))
    np.testing.assert_array_equal(ids, [[1, 0, 1], [2, 1, 2]])
    assert [list(reader.values(j)) for j in range(3)] == [["x", "y"], ["u"], ["p", "q"]]
    assert reader.table(ids).to_pydict() == {"a": ["x", "y"], "b": [None, "u"], "class": ["p", "q"]}
    with pytest.raises(DatasetError, match="no class column 'label'"):
        CsvIds.of_file(path, last="label")



@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_each_chunk_read_from_its_start_is_the_chunk_read_in_turn(tmp_path, monkeypatch, suffix):
    """``chunk_starts`` splits rows as ``chunks`` does (empty lines, \\r\\n, quotes, a last row without its line's
    end), across blocks of a few bytes, in a plain file and in a decompressed one."""
    monkeypatch.setattr(csv_ids, "_BLOCK_BYTES", 3)
    for i, text in enumerate(TRICKY):
        path = tmp_path / f"tricky{i}{suffix}"
        with pa.output_stream(str(path)) as stream:  # compressed by the suffix
            stream.write((text + "\nx,\n\ny,z\r\nw,v\n" if text.startswith("a,b\n") else text).encode())
        try:
            reader = CsvIds.of_file(path)
            expected = list(reader.chunks(path, 2))
        except DatasetError:
            continue
        starts = csv_ids.chunk_starts(path, 2)
        assert len(starts) == len(expected), text
        for start, chunk in zip(starts, expected):
            alone = CsvIds(reader.header)
            assert row_values(alone, [next(alone.chunks(path, 2, start))]) == row_values(reader, [chunk]), text
