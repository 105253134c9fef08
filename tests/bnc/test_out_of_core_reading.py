"""Reading CSV files out of core: the same strings, missing values and chunks as pandas' chunked read_csv,
and the same codes as the encoder gives."""

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pyarrow as pa
import pytest

from bncbench import BNClassifier
from bncbench.core.errors import DatasetError
from bncbench.bnc.out_of_core import (
    CHUNK_VALUES,
    ROW_GROUP_CHUNK_VALUES,
    _IdCache,
    _Sample,
    chunk_rows_for,
    fit_file,
    predict_proba_file,
    read_chunks,
    selected_chunks,
)


def pandas_chunks(path, chunk_rows):
    return list(pd.read_csv(path, chunksize=chunk_rows, dtype=str, keep_default_na=False, na_values=[""]))


def test_tricky_values_read_as_pandas_reads_them(tmp_path):
    path = tmp_path / "tricky.csv"
    path.write_text('a,b,class\n"x, y",NA,1\n,null,0\n" padded ",,1\n007,1.50,0\n"say ""hi""",-,1\n\n3,4,0\n')
    ours = list(read_chunks(path, chunk_rows=2))
    expected = pandas_chunks(path, 2)
    assert [len(chunk) for chunk in ours] == [2, 2, 2]
    for got, want in zip(ours, expected):
        pdt.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    assert pd.isna(ours[0]["a"].iloc[1])  # an empty field is missing
    assert ours[0]["b"].iloc[0] == "NA"  # "NA" is a value, not missing


def test_chunks_span_the_reader_blocks_exactly(tmp_path):
    """Over a megabyte, the streaming reader's blocks and the chunks differ; each chunk still has chunk_rows rows."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 5, 120_001).astype(str) for i in range(5)})
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    ours = list(read_chunks(path, chunk_rows=50_000, numeric=["x0"]))
    assert [len(chunk) for chunk in ours] == [50_000, 50_000, 20_001]
    read = pd.concat(ours, ignore_index=True)
    pdt.assert_frame_equal(read.drop(columns=["x0"]), frame.drop(columns=["x0"]).astype(read["x1"].dtype))
    assert (read["x0"].to_numpy() == frame["x0"].astype(int).to_numpy()).all()


@pytest.mark.parametrize("group_rows", [40, 100, 250, 1000])
def test_a_parquet_file_reads_in_chunks_of_its_rows_whatever_its_row_groups(tmp_path, group_rows):
    """Row groups no larger than a chunk are read whole, one at a time (pyarrow's batch reader held 20-35 MiB more
    for the data directory's files, ``reports/out_of_core_memory``), larger ones in batches: either way the chunks
    hold ``chunk_rows`` rows each (the last fewer), the file's rows in order, missing values missing."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "01", "1"], 1_234), "class": rng.choice(["p", "q"], 1_234)})
    frame.loc[rng.random(1_234) < 0.1, "a"] = None
    path = tmp_path / "groups.parquet"
    frame.to_parquet(path, row_group_size=group_rows)
    ours = list(read_chunks(path, chunk_rows=250))
    assert [len(chunk) for chunk in ours] == [250, 250, 250, 250, 234]
    pdt.assert_frame_equal(pd.concat(ours, ignore_index=True), frame)


def test_header_only_file_has_no_chunks(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("a,b,class\n")
    assert list(read_chunks(path, chunk_rows=10)) == []


@pytest.mark.parametrize("with_rows", [False, True])
def test_codes_read_without_pandas_equal_the_encoders(tmp_path, with_rows):
    """The counting passes over a nominal CSV code each chunk as the encoder codes its DataFrame: missing
    values (a value of their own), the class last, rows of a fold selected."""
    rng = np.random.default_rng(1)
    n = 2_500
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z", ""], n), "b": rng.choice(["1", "02", "NA"], n),
                          "class": rng.choice(["yes", "no"], n)})
    path = tmp_path / "nominal.csv"
    frame.to_csv(path, index=False)
    rows = rng.random(n) < 0.5 if with_rows else None
    _, data = fit_file(BNClassifier(structure="nb", estimator="m_estimate"), path, chunk_rows=700, numeric=[], rows=rows)
    got = list(data.chunks())
    expected = [data.codes(chunk) for chunk in selected_chunks(path, 700, [], rows)]
    assert len(got) == len(expected) == 4
    for ours, theirs in zip(got, expected):
        np.testing.assert_array_equal(ours, theirs)
    assert (np.concatenate(got)[:, 0] == 3).any()  # the missing value of "a" has its own code


@pytest.mark.parametrize("with_rows", [False, True])
def test_a_nominal_parquet_file_is_coded_from_its_dictionaries_as_the_encoder_codes_its_frame(tmp_path, with_rows):
    """A parquet file without numeric columns is read as dictionaries, one per row group and column, and coded by
    looking their values up: the codes of the encoder on the chunk's frame, in the same chunks (row groups of 300
    against chunks of 700), with missing values, a category column, a column of whole numbers, and values of the
    test file unseen in training; the probabilities are those of the classifier on the frame."""
    rng = np.random.default_rng(5)
    n = 2_500

    def rows_of(values_a):
        frame = pd.DataFrame({"a": rng.choice(values_a, n), "b": rng.choice(["1", "02", "NA"], n),
                              "n": rng.integers(0, 4, n), "class": rng.choice(["yes", "no"], n)})
        frame.loc[rng.random(n) < 0.1, "b"] = None
        return frame.astype({"b": "category"})

    train, test = rows_of(["x", "y", "z"]), rows_of(["x", "y", "w"])
    train.to_parquet(tmp_path / "train.parquet", row_group_size=300)
    test.to_parquet(tmp_path / "test.parquet", row_group_size=300)
    rows = rng.random(n) < 0.5 if with_rows else None
    model = BNClassifier(structure="kdb", k=1, estimator="m_estimate")
    classifier, data = fit_file(model, tmp_path / "train.parquet", chunk_rows=700, numeric=[], rows=rows, cache_bytes=0)
    got = list(data.chunks())
    expected = [data.codes(chunk) for chunk in selected_chunks(tmp_path / "train.parquet", 700, [], rows)]
    assert len(got) == len(expected) == 4  # the file's chunks of 700 rows, each of its rows selected
    for ours, theirs in zip(got, expected):
        np.testing.assert_array_equal(ours, theirs)
    proba = np.concatenate([p for p, _ in predict_proba_file(classifier, data, tmp_path / "test.parquet")])
    np.testing.assert_array_equal(proba, classifier.predict_proba(test.drop(columns="class")))


@pytest.mark.parametrize("cache_bytes", [0, 2**20])
def test_the_sample_of_a_nominal_parquet_file_is_the_csv_files_rows(tmp_path, cache_bytes):
    """Kept as value ids (not as the table's rows): the same rows of a fold, coded alike, as from the CSV file."""
    rng = np.random.default_rng(8)
    n = 3_000
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["1", "02"], n),
                          "class": rng.choice(["yes", "no"], n)})
    frame.loc[rng.random(n) < 0.1, "b"] = None
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=512)
    rows = rng.random(n) < 0.7
    samples = [fit_file(BNClassifier(structure="nb", estimator="m_estimate", random_state=2), tmp_path / name,
                        chunk_rows=400, sample_rows=500, numeric=[], rows=rows, cache_bytes=cache_bytes)[1].sample
               for name in ("d.csv", "d.parquet")]
    assert samples[0].shape == (500, 3)
    np.testing.assert_array_equal(samples[1], samples[0])


def test_gzip_compressed_csv_reads_as_the_plain_file(tmp_path):
    frame = pd.DataFrame({"a": ["x", "", "y"] * 100, "class": ["p", "q", "p"] * 100})
    frame.to_csv(tmp_path / "plain.csv", index=False)
    frame.to_csv(tmp_path / "packed.csv.gz", index=False)
    plain, packed = (pd.concat(read_chunks(tmp_path / name, 128)) for name in ("plain.csv", "packed.csv.gz"))
    pdt.assert_frame_equal(packed, plain)
    assert packed["a"].isna().sum() == 100


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_the_passes_after_the_first_read_its_value_ids_with_the_same_numbers(tmp_path, suffix):
    """A nominal file is read once: SkDB's four later passes (mutual information, counts, leave-one-out, the
    m-estimate's holdout rows) take the first pass's value ids; with no room for
    them (cache_bytes=0) or room for part of them, each pass reads the file, and every number is the same,
    also as in memory (missing values, a fold's rows, a dictionary-encoded parquet column)."""
    rng = np.random.default_rng(2)
    n = 3_000
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z", None], n), "b": rng.choice(["1", "02", "NA"], n),
                          "c": rng.choice(["u", "v"], n)})
    frame["class"] = np.where((frame["a"] == "x") ^ (rng.random(n) < 0.2), "yes", "no")
    path = tmp_path / f"nominal{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.astype({"c": "category"}).to_parquet(path)
    rows = rng.random(n) < 0.7
    model = dict(structure="skdb", k=2, estimator="m_estimate", random_state=0)
    fits = {cache: fit_file(BNClassifier(**model), path, chunk_rows=500, numeric=[], rows=rows, cache_bytes=cache)
            for cache in (0, 2 * 500 * 4, 10**6)}
    in_memory = BNClassifier(**model).fit(frame[["a", "b", "c"]][rows], frame["class"][rows])
    assert [(data.passes, data.reads) for _, data in fits.values()] == [(5, 5), (5, 5), (5, 1)]
    for classifier, _ in fits.values():
        assert classifier.parents_ == in_memory.parents_
        np.testing.assert_array_equal(classifier.predict_proba(frame[["a", "b", "c"]]),
                                      in_memory.predict_proba(frame[["a", "b", "c"]]))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_an_id_cache_that_the_folds_rows_would_overflow_is_never_started(tmp_path, suffix):
    """A cache given up once full held its bound for nothing (256 MiB by default, from about 25 million rows of 21
    columns): the rows a fold selects are counted first, at a byte a value, and the cache starts only if they fit."""
    frame = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["u"] * 100, "class": ["yes", "no"] * 50})
    path = tmp_path / f"file{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    rows = np.arange(100) < 40  # 40 rows of 3 columns: 120 values
    assert _IdCache.of(120, path, rows).chunks == []
    assert _IdCache.of(119, path, rows).chunks is None
    assert _IdCache.of(119, path, None).chunks == []  # the rows not counted: up to the bound, as before
    assert _IdCache.of(0, path, rows).chunks is None


@pytest.mark.parametrize("chunk_rows", [1, 7, 50, 1_000])
def test_the_sample_is_the_rows_of_the_smallest_keys_in_file_order_however_chunked(chunk_rows):
    keys = np.random.default_rng(4).integers(0, 40, 300).astype(float)  # many equal keys: the first of them is kept
    table = pa.table({"row": np.arange(300)})
    sample = _Sample(60)
    for start in range(0, 300, chunk_rows):
        sample.add(table.slice(start, chunk_rows), keys[start : start + chunk_rows])
    expected = np.sort(np.argsort(keys, kind="stable")[:60])
    np.testing.assert_array_equal(sample.table().column("row").to_numpy(), expected)


def test_a_csv_of_long_quoted_values_fits_as_in_memory(tmp_path):
    """Values longer than the tokenizer's 7 inline bytes, quoted commas and quotes, CRLF line ends, a test file
    with a value unseen in training: the same probabilities as the in-memory fit of the same strings."""
    rng = np.random.default_rng(5)
    n = 2_000
    frame = pd.DataFrame({"a": rng.choice(["a rather long value", 'has, a comma', 'says "hi"', "é"], n),
                          "b": rng.choice(["x", "y" * 30, ""], n)})
    frame["class"] = np.where((frame["a"] == "é") ^ (rng.random(n) < 0.2), "yes", "no")
    frame.to_csv(tmp_path / "train.csv", index=False, lineterminator="\r\n")
    test = frame.iloc[:50].assign(a="never seen in training")
    test.to_csv(tmp_path / "test.csv", index=False)
    model = dict(structure="kdb", k=1, estimator="m_estimate", random_state=0)
    clf, data = fit_file(BNClassifier(**model), tmp_path / "train.csv", chunk_rows=300, numeric=[])
    X = frame[["a", "b"]].replace("", np.nan)
    in_memory = BNClassifier(**model).fit(X, frame["class"])
    got = np.vstack([proba for proba, _ in predict_proba_file(clf, data)])
    np.testing.assert_array_equal(got, in_memory.predict_proba(X))
    unseen = np.vstack([proba for proba, _ in predict_proba_file(clf, data, tmp_path / "test.csv")])
    with pytest.warns(UserWarning):
        expected = in_memory.predict_proba(test[["a", "b"]].replace("", np.nan))
    np.testing.assert_array_equal(unseen, expected)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_header_that_repeats_a_column_name_is_refused_as_in_memory(tmp_path, suffix):
    """In memory the same table is refused; from a file one of the two was fitted silently (issue 42)."""
    path = tmp_path / f"repeated{suffix}"
    if suffix == ".csv":
        path.write_text("a,b,a,class\n1,x,2,p\n2,y,1,q\n")
    else:
        import pyarrow.parquet as pq

        pq.write_table(pa.table([["1", "2"], ["x", "y"], ["2", "1"], ["p", "q"]], names=["a", "b", "a", "class"]), path)
    for numeric in (None, []):
        with pytest.raises(DatasetError, match=r"the header names column 'a' more than once; give each column"):
            fit_file(BNClassifier(structure="nb", estimator="laplace"), path, numeric=numeric)


def test_a_chunk_is_sized_by_its_values_unless_its_rows_are_given(tmp_path):
    """Chunks of CHUNK_VALUES values, whatever the columns, bound a chunk's memory; a parquet file's row group is a
    chunk when it holds at most ROW_GROUP_CHUNK_VALUES values; given rows are kept."""
    largest_group = ROW_GROUP_CHUNK_VALUES // 8
    frame = pd.DataFrame({f"a{j}": np.tile(["x", "y"], largest_group) for j in range(7)})
    frame["class"] = np.tile(["0", "1"], largest_group)
    frame.head(10).to_csv(tmp_path / "eight.csv", index=False)
    frame.to_parquet(tmp_path / "groups.parquet", row_group_size=largest_group)
    frame.to_parquet(tmp_path / "large_groups.parquet", row_group_size=largest_group + 1)
    for path, rows in (("eight.csv", CHUNK_VALUES // 8), ("groups.parquet", largest_group),
                       ("large_groups.parquet", CHUNK_VALUES // 8)):
        assert chunk_rows_for(tmp_path / path) == rows, path
        assert chunk_rows_for(tmp_path / path, 3) == 3
