"""Fitting a count-based BNC from a CSV or parquet file read in chunks (out-of-core learning).

Memory is bounded by the model (its counts), by ``chunk_rows``, ``sample_rows`` and ``cache_bytes``, not by
the file:

1. a first pass collects the values of every column, the number of rows and a uniform random sample of
   ``sample_rows`` rows, on which the MDL discretiser is fitted (numeric columns only); in a file without
   numeric columns it also numbers each column's values as it meets them and keeps each row's numbers
   (one byte a value while a column has fewer than 256 values, else two) while they take at most
   ``cache_bytes`` (a CSV file's fields are read straight to those numbers, ``csv_ids``);
2. then the structure learner makes its own passes, each over those numbers (mapped to the encoder's codes)
   or, without them, reading the file again: kDB and TAN one for the mutual-information counts and one for
   the tables' counts (SkDB paper Sect. 2.1: two passes), SkDB a third for its leave-one-out selection;
   naive Bayes and AODE only the counting pass. Given a dask client, these passes are made by its workers, each
   reading its chunks of the file (``bncbench.bnc.distributed``), with the same numbers.

The estimator fills the tables from the counts; the m-estimate gathers its holdout's rows (those of the
in-memory fit) in one more pass (``ChunkedCodes.rows_at``).
Estimators that need every row (AWNB, WANBIA, HPB, MANB) are refused.

How much of what a chunk freed the process gives back is the allocators' choice: a process that fits from large
files calls ``bncbench.core.allocation.give_back_freed_memory`` first, as a cell does (pyarrow's jemalloc pool, not
its wheels' mimalloc; glibc's mmap threshold fixed).
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from numba import njit

from bncbench.bnc.classifier import BNClassifier
from bncbench.bnc.csv_ids import CsvIds, chunk_starts, read_header, stream_at, unique_columns
from bncbench.bnc.distributed import accumulate_on
from bncbench.bnc.encoding import CategoryEncoder, looked_up
from bncbench.bnc.estimators import ESTIMATORS, estimator_class, make_estimator
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data import MDLDiscretizer

#: The default bound of the value ids a fit keeps from its first pass (``fit_file``'s ``cache_bytes``): one byte a
#: value (columns of fewer than 256 values), so 256 MiB holds 12 million rows of 20 attributes, or two bytes a value.
CACHE_BYTES = 256 * 2**20
#: Values read at a time when the rows of a chunk are not given (``chunk_rows_for``): a chunk takes up to about 110
#: bytes a value while it is read, coded and counted or predicted (the text's field keys, the value ids, the codes,
#: the probabilities), so up to about 55 MiB. Measured on 2M rows of 21 columns, without the id cache (issue 44,
#: ``benchmarks/out_of_core_memory.py``): the peak above a process with its kernels loaded fell from 152 to 89 MiB
#: between chunks of 100,000 and 20,000 rows, with the same CPU time.
CHUNK_VALUES = 2**19
#: The most values of a parquet file's row group that ``chunk_rows_for`` makes a chunk: its columns then decode
#: once, none split between two chunks (those of the data directory, 65,536 rows of 21 columns: NB's out-of-core fit
#: of 1M rows 0.40 CPU-s against 0.51 in chunks of 24,966 rows, kDB-1's 0.69 against 0.73). A parquet chunk holds
#: no text: about 10 bytes a value.
ROW_GROUP_CHUNK_VALUES = 2**21


def chunk_rows_for(path: Path, chunk_rows: int | None = None) -> int:
    """``chunk_rows`` when given; else, for a parquet file whose first row group holds at most
    ``ROW_GROUP_CHUNK_VALUES`` values, its rows; else the rows of ``CHUNK_VALUES`` values of the file at ``path``
    (its columns)."""
    if chunk_rows is not None:
        return int(chunk_rows)
    path = Path(path)
    if path.suffix != ".parquet":
        return max(1, CHUNK_VALUES // len(read_header(path)))
    file = pq.ParquetFile(path)  # its footer read once, for the columns and the first row group
    columns = len(file.schema_arrow.names)
    group = file.metadata.row_group(0).num_rows if file.metadata.num_row_groups else 0
    return group if 0 < group * columns <= ROW_GROUP_CHUNK_VALUES else max(1, CHUNK_VALUES // columns)


def _column_names(path: Path) -> list:
    return pq.ParquetFile(path).schema_arrow.names if path.suffix == ".parquet" else read_header(path)


def read_chunks(path: Path, chunk_rows: int, numeric: list | None = None) -> Iterator[pd.DataFrame]:
    """The rows of a CSV (missing = empty field) or parquet file, ``chunk_rows`` at a time.

    CSV columns named in ``numeric`` are parsed as numbers, the others kept as strings.
    """
    return selected_chunks(path, chunk_rows, numeric, None)


def _csv_tables(path: Path, chunk_rows: int, start: int = 0) -> Iterator[pa.Table]:
    """The rows of a CSV file as strings (missing = empty field), ``chunk_rows`` at a time, read by pyarrow's
    streaming reader (about four times as fast as pandas' chunked ``read_csv``, with the same strings); ``start``
    > 0: the rows from that byte on (``csv_ids.chunk_starts``)."""
    columns = read_header(path)
    convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(columns, pa.string()), strings_can_be_null=True,
                                    null_values=[""])
    source, header = (stream_at(path, start), pa_csv.ReadOptions(column_names=columns)) if start else (path, None)
    return _rechunked(pa_csv.open_csv(source, read_options=header, convert_options=convert), chunk_rows)


def _rechunked(batches: Iterator[pa.RecordBatch], chunk_rows: int) -> Iterator[pa.Table]:
    """The rows of ``batches`` as tables of ``chunk_rows`` rows (the last fewer), whatever the batches' sizes."""
    pending = []
    for batch in batches:
        pending.append(batch)
        table = pa.Table.from_batches(pending)
        while table.num_rows >= chunk_rows:
            yield table.slice(0, chunk_rows)
            table = table.slice(chunk_rows)
        pending = table.to_batches()
    if pending and sum(batch.num_rows for batch in pending):
        yield pa.Table.from_batches(pending)


def selected_chunks(path: Path, chunk_rows: int, numeric: list | None, rows: np.ndarray | None) -> Iterator[pd.DataFrame]:
    """``read_chunks``, keeping the rows of the file whose entry of the boolean mask ``rows`` is true (all
    when None); a chunk with none left is skipped."""
    return (_frame(table, numeric, path) for table in _tables(Path(path), chunk_rows, rows))


def _frame(table: pa.Table, numeric: list | None, path: Path) -> pd.DataFrame:
    frame = table.to_pandas()
    for column in numeric or []:
        frame[column] = _numbers(frame[column], column, path)
    return frame


def _numbers(values: pd.Series, column: str, path: Path) -> pd.Series:
    """A numeric column's values as numbers; one that is not a number is refused, with the way out."""
    numbers = pd.to_numeric(values, errors="coerce")
    if (bad := numbers.isna() & values.notna()).any():
        raise DatasetError(
            f"{path}: column {column!r} is read as numbers (its values in the first chunk all are), but it holds "
            f"{values[bad].iloc[0]!r}; name the numeric columns (numeric=[...]) or fix the file."
        )
    return numbers


def _selected(tables: Iterator, rows: np.ndarray | None) -> Iterator:
    """The rows of each table (or array of rows) whose entry of ``rows`` is true (all when None); empty ones
    skipped."""
    start = 0
    for table in tables:
        if rows is not None:
            keep = rows[start : start + len(table)]
            start += len(table)
            table = _rows_where(table, keep)
            if not len(table):
                continue
        yield table


def selected_count(rows, block: int = 1 << 20) -> int:
    """How many rows the mask ``rows`` selects, read a slice at a time (a fold's, never held whole)."""
    return sum(int(np.count_nonzero(rows[start : start + block])) for start in range(0, len(rows), block))


def _rows_where(rows: pa.Table | np.ndarray, keep: np.ndarray) -> pa.Table | np.ndarray:
    """The rows of a table or an array whose entry of the boolean ``keep`` is true."""
    return rows.filter(pa.array(keep)) if isinstance(rows, pa.Table) else rows[keep]


class FileChunk(NamedTuple):
    """A chunk of training rows as a cluster's task reads it: the ``chunk_rows`` rows of the file from ``start`` (a
    CSV file's byte, ``csv_ids.chunk_starts``; a parquet file's row), those of them ``keep`` selects (None: all)."""

    start: int
    keep: np.ndarray | None


class ChunkedCodes:
    """Training data read from a file: every call of ``chunks`` is one pass over it, yielding codes.

    ``sample`` holds the codes of the first pass's uniform sample; ``passes`` counts the passes made over the
    data, ``reads`` those over the file: the later passes read the first pass's value ids when it kept them
    (``ids.cached``), else the file again (a CSV file without numeric columns by ``CsvIds``, ``ids.reader``).
    With a dask ``client``, a counting pass (``accumulate``) is made by its workers, each reading its chunks of the
    file (``bncbench.bnc.distributed``).
    """

    def __init__(self, path, target, chunk_rows, numeric, discretizer, encoder, class_encoder, sample, rows=None,
                 ids=None, client=None):
        self.path, self.target, self.chunk_rows, self.numeric, self.rows = path, target, chunk_rows, numeric, rows
        self.discretizer, self.encoder, self.class_encoder = discretizer, encoder, class_encoder
        self.passes = self.reads = 1  # the first pass, which found the values and the sample
        self._ids, self._id_sizes, self.client = ids, None, client
        self._csv_columns = (ids.reader.header, ids.reader.columns) if ids is not None and ids.reader else None
        self.sample = self.codes(sample) if isinstance(sample, pd.DataFrame) else self._codes_of_ids(sample)

    def __getstate__(self) -> dict:
        """What a cluster's task needs to read and code a chunk (``chunk_codes``): not the rows held in memory
        (the sample, the first pass's value ids; a chunk carries its part of ``rows``), nor the client."""
        return {**vars(self), "sample": None, "rows": None, "_ids": None, "client": None}

    def _encoders(self) -> list:
        """(encoder, its column) for each column of the codes, the class last."""
        return [(self.encoder, k) for k in range(len(self.encoder.columns_))] + [(self.class_encoder, 0)]

    def _codes_of_ids(self, ids: np.ndarray) -> np.ndarray:
        """The codes of rows of value ids (a column's id 0: missing), columns in the codes' order; the lookup
        is made anew when the columns have new values (a test file's)."""
        values = self._ids.values()
        if (sizes := [len(column) for column in values]) != self._id_sizes:
            self._lookup, self._id_sizes = self._id_lookup(values), sizes
        return _column_major_codes(ids, *self._lookup)

    def _id_lookup(self, values: list) -> tuple[np.ndarray, np.ndarray]:
        """For ``encoding.looked_up``: the codes of every column's ids, given its values in the order of their ids
        (``CategoryEncoder.lookup``: id 0 missing), side by side, and where each column's start."""
        lookups = [encoder.lookup(k, column) for (encoder, k), column in zip(self._encoders(), values)]
        lookup = np.concatenate(lookups)  # in the narrowest type of its codes, as in memory: int8 up to 127 values
        narrow = lookup.astype(np.min_scalar_type(-int(lookup.max(initial=0)) - 1))
        return narrow, np.cumsum([0] + [len(lookup) for lookup in lookups[:-1]])

    def codes(self, frame: pd.DataFrame) -> np.ndarray:
        X = frame.drop(columns=[self.target])
        if self.discretizer is not None:
            X = self.discretizer.transform(X)
        return np.column_stack([self.encoder.transform(X), self.class_encoder.transform(frame[[self.target]])])

    def chunks(self) -> Iterator[np.ndarray]:
        self.passes += 1
        if self._ids is not None and self._ids.cached is not None:
            for chunk in self._ids.cached:
                yield self._codes_of_ids(chunk)
            return
        self.reads += 1
        for codes, _ in self.file_codes(self.path, self.rows, tables=False):
            yield codes

    def _parquet_codes(self, path: Path, rows, tables: bool) -> Iterator[tuple[np.ndarray, pa.Table | None]]:
        """``file_codes`` of a parquet file without numeric columns: each chunk's columns read as dictionaries (a
        value met once a chunk, not once a row; no pandas frame) and coded by a lookup of their values
        (``_id_lookup``), with the codes of a frame's encoding: NB's prediction of 200,000 rows of 21 columns takes
        1.16 times the in-memory one, 1.75 from CSV (``reports/counting_speed``)."""
        for table in _tables(path, self.chunk_rows, rows, dictionaries=True, columns=self._columns()):
            yield self._dictionary_codes(table), table if tables else None

    def _columns(self) -> list:
        """The columns of the codes, the class last."""
        return [*self.encoder.columns_, self.target]

    def _dictionary_codes(self, table: pa.Table) -> np.ndarray:
        """The codes of a table of nominal columns (in ``_columns``'s order) from their dictionaries."""
        ids, values = np.empty((table.num_columns, table.num_rows), dtype=np.int32), []
        for j, column in enumerate(table.columns):
            column_values, indices = _dictionary(column)
            ids[j] = np.where(indices < len(column_values), indices + 1, 0)  # id 0: missing
            values.append(column_values)
        return _column_major_codes(ids.T, *self._id_lookup(values))

    def accumulate(self, total, add):
        """``total`` after ``add(total, chunk)`` for every chunk of codes, in order (``training_data``): in this
        process, or with a ``client`` on its workers (``distributed.accumulate_on``), with the same result."""
        if self.client is None:
            for chunk in self.chunks():
                add(total, chunk)
            return total
        self.passes += 1
        self.reads += 1
        return accumulate_on(self.client, self, total, add)

    def file_chunks(self) -> list[FileChunk]:
        """The chunks of the training rows as a cluster's tasks read them (``chunk_codes``): those ``chunks`` yields,
        in its order."""
        if self.path.suffix == ".parquet":
            starts = range(0, pq.ParquetFile(self.path).metadata.num_rows, self.chunk_rows)
        else:
            starts = chunk_starts(self.path, self.chunk_rows)
        found = []
        for j, start in enumerate(starts):
            keep = None if self.rows is None else self.rows[j * self.chunk_rows : (j + 1) * self.chunk_rows]
            if keep is None or keep.any():
                found.append(FileChunk(start, keep))
        return found

    def chunk_codes(self, chunk: FileChunk) -> np.ndarray:
        """The codes of a chunk of the training rows, read from the file by itself (a cluster's task); nothing of
        this object changes, so that tasks may share it."""
        if self._csv_columns is not None:  # a CSV file without numeric columns: read as value ids
            reader = CsvIds(*self._csv_columns)
            ids = next(reader.chunks(self.path, self.chunk_rows, chunk.start))
            ids = ids if chunk.keep is None else _rows_where(ids, chunk.keep)
            return _column_major_codes(ids, *self._id_lookup(reader.all_values()))
        nominal_parquet = self.path.suffix == ".parquet" and not self.numeric
        table = _table_at(self.path, self.chunk_rows, chunk.start, self._columns() if nominal_parquet else None)
        table = table if chunk.keep is None else _rows_where(table, chunk.keep)
        return self._dictionary_codes(table) if nominal_parquet else self.codes(_frame(table, self.numeric, self.path))

    def rows_at(self, positions: np.ndarray) -> np.ndarray:
        """The codes of the training rows at ``positions`` (increasing, among the rows ``rows`` selects, in the
        file's order), gathered in one pass over the data."""
        found, start = [], 0
        for chunk in self.chunks():
            first, last = np.searchsorted(positions, [start, start + len(chunk)])
            found.append(chunk[positions[first:last] - start])
            start += len(chunk)
        return np.concatenate(found)

    def file_codes(self, path: Path, rows: np.ndarray | None = None,
                   tables: bool = True) -> Iterator[tuple[np.ndarray, pa.Table | None]]:
        """The codes of the rows of the file at ``path`` that ``rows`` selects (values unseen here: ``UNSEEN``),
        coded as the training rows are, a chunk at a time, each with its chunk (a CSV file without numeric
        columns: dictionary-encoded strings; with ``tables=False`` None, where making it is work of its own)."""
        if self._ids is not None and self._ids.reader is not None:
            for ids in _selected(self._ids.reader.chunks(Path(path), self.chunk_rows), rows):
                yield self._codes_of_ids(ids), self._ids.reader.table(ids) if tables else None
            return
        if Path(path).suffix == ".parquet" and not self.numeric:
            yield from self._parquet_codes(Path(path), rows, tables)
            return
        for table in _tables(Path(path), self.chunk_rows, rows):
            yield self.codes(_frame(table, self.numeric, path)), table


def _column_major_codes(ids: np.ndarray, lookup: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The codes of rows of value ids (``encoding.looked_up``), Fortran-ordered: a column's codes side by side, as
    counting reads them."""
    return looked_up(ids, lookup, offsets, np.empty((ids.shape[1], ids.shape[0]), dtype=lookup.dtype).T)


class _Ids(NamedTuple):
    """The value ids of a file without numeric columns (the class last): the first pass's chunks of them when
    kept (else None), each column's values in the order of their ids, and the reader of a CSV file's ids."""

    cached: list | None
    values: Callable[[], list]
    reader: CsvIds | None = None


def _dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A column's distinct values, and each row's index among them (a missing value's: one past the last)."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_numpy(zero_copy_only=False)
    return values, encoded.indices.fill_null(len(values)).to_numpy()


def _tables(path: Path, chunk_rows: int, rows: np.ndarray | None, dictionaries: bool = False,
            columns: list | None = None) -> Iterator[pa.Table]:
    """The rows of the file that ``rows`` selects as pyarrow tables of ``chunk_rows`` rows (the last fewer), before
    the selection (a CSV file's columns as strings; a parquet file's as stored, its text columns as dictionaries with
    ``dictionaries``, its ``columns`` alone when given: its batches, which stop at a row group's end where a column
    is dictionary-encoded, rechunked)."""
    if path.suffix == ".parquet":
        footer = pq.ParquetFile(path)
        schema = footer.schema_arrow
        unique_columns(path, schema.names)
        text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        file = pq.ParquetFile(path, metadata=footer.metadata, read_dictionary=text if dictionaries else None,
                              pre_buffer=False)  # the footer read once
        return _selected(_rechunked(_parquet_batches(file, chunk_rows, columns), chunk_rows), rows)
    return _selected(_csv_tables(path, chunk_rows), rows)


def _parquet_batches(file: pq.ParquetFile, chunk_rows: int, columns: list | None) -> Iterator[pa.RecordBatch]:
    """The rows of a parquet file in batches: a row group at a time when none holds more than ``chunk_rows`` rows
    (the data directory's), else in batches of ``chunk_rows`` rows."""
    groups = range(file.num_row_groups)
    if all(file.metadata.row_group(g).num_rows <= chunk_rows for g in groups):
        return (batch for g in groups for batch in file.read_row_group(g, columns=columns).to_batches())
    return file.iter_batches(batch_size=chunk_rows, columns=columns)


def _table_at(path: Path, chunk_rows: int, start: int, dictionary_columns: list | None = None) -> pa.Table:
    """The chunk of the file's rows that ``_tables`` yields from ``start`` (``FileChunk``); of a parquet file, its
    ``dictionary_columns`` alone, read as dictionaries, when given."""
    if path.suffix != ".parquet":
        return next(_csv_tables(path, chunk_rows, start))
    file = pq.ParquetFile(path, read_dictionary=dictionary_columns)
    ends = np.cumsum([file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)])
    first, last = np.searchsorted(ends, [start, start + chunk_rows - 1], side="right")
    groups = range(first, min(last, len(ends) - 1) + 1)
    table = file.read_row_groups(groups, columns=dictionary_columns)
    return table.slice(start - (ends[first - 1] if first else 0), chunk_rows)


class _IdCache:
    """The first pass's chunks of value ids (``chunks``), one byte a value while every id is below 256, else two,
    as long as they take at most ``limit`` bytes and every id is below 65,536; else ``chunks`` is None."""

    def __init__(self, limit: int):
        self.chunks, self.bytes, self.limit = [] if limit > 0 else None, 0, limit

    @classmethod
    def of(cls, limit: int, path: Path, rows: np.ndarray | None) -> "_IdCache":
        """The cache of a first pass over the file's rows that ``rows`` selects, off from the start when their
        values would not fit at a byte each: a cache pays only whole, and one given up once full would have held
        ``limit`` bytes for nothing (the selected rows are counted when ``rows`` is given, a fold's)."""
        if limit > 0 and rows is not None and selected_count(rows) * len(_column_names(path)) > limit:
            limit = 0
        return cls(limit)

    def add(self, ids: np.ndarray, largest: int) -> None:
        """Keep a chunk of ids (rows; itself when already of the kept type), the largest id so far being
        ``largest``."""
        if self.chunks is None:
            return
        kind = np.uint8 if largest < 2**8 else np.uint16 if largest < 2**16 else None
        self.bytes += ids.size * (1 if kind is np.uint8 else 2)
        if kind is None or self.bytes > self.limit:
            self.chunks = None
        else:
            self.chunks.append(ids.astype(kind, copy=False))


class _ColumnIds:
    """A nominal column's values numbered as the first pass meets them (0: missing), so that a chunk's
    codes can be kept before the encoder exists."""

    def __init__(self):
        self.ids = {}  # value -> id from 1
        self.missing = False

    def chunk_ids(self, column: pa.ChunkedArray) -> np.ndarray:
        """The ids of a chunk's values; new values are numbered on the way."""
        dictionary, indices = _dictionary(column)
        used = np.bincount(indices, minlength=len(dictionary) + 1) > 0  # a filtered dictionary may hold more
        self.missing = self.missing or bool(used[-1])
        ids_of = [self.ids.setdefault(value, len(self.ids) + 1) if seen else 0 for value, seen in zip(dictionary, used)]
        return np.array([*ids_of, 0], dtype=np.min_scalar_type(len(self.ids)))[indices]

    def values(self) -> np.ndarray:
        """The values in the order of their ids."""
        values = np.empty(len(self.ids), dtype=object)
        values[:] = list(self.ids)
        return values


class _Sample:
    """A uniform sample of ``size`` rows of the chunks ``add`` is given (pyarrow tables, or arrays of value ids):
    the rows of the ``size`` smallest random keys (the first of equal keys), in the order of the file. Rows are
    kept until they are twice the size, then pruned, so that a chunk costs about one copy of its candidates."""

    def __init__(self, size: int):
        self.size, self.tables, self.keys = size, [], []

    def add(self, table: pa.Table, keys: np.ndarray) -> None:
        if sum(map(len, self.keys)) >= self.size:  # a row enters only below the sample's largest key
            candidates = keys < self._threshold()[0]
            table, keys = _rows_where(table, candidates), keys[candidates]
        self.tables.append(table)
        self.keys.append(keys)
        if sum(map(len, self.keys)) > 2 * self.size:
            self._prune()

    def table(self) -> pa.Table | np.ndarray:
        self._prune()
        return pa.concat_tables(self.tables) if isinstance(self.tables[0], pa.Table) else np.concatenate(self.tables)

    def _threshold(self) -> tuple[float, int]:
        """The ``size``-th smallest key, and how many keys below it are kept."""
        keys = np.concatenate(self.keys)
        if len(keys) <= self.size:
            return np.inf, len(keys)
        threshold = np.partition(keys, self.size - 1)[self.size - 1]
        return threshold, int((keys < threshold).sum())

    def _prune(self) -> None:
        threshold, below = self._threshold()
        ties = self.size - below  # keys equal to the threshold kept, first in file order
        for i, keys in enumerate(self.keys):
            keep = keys < threshold
            tied = np.flatnonzero(keys == threshold)[:ties]
            keep[tied], ties = True, ties - len(tied)
            self.tables[i], self.keys[i] = _rows_where(self.tables[i], keep), keys[keep]


class _FirstPass(NamedTuple):
    columns: list  # the attributes, in the file's order
    numeric: list
    values: dict  # column -> its values (nominal columns and the class)
    missing: dict  # column -> whether a value is missing
    sample: pd.DataFrame | np.ndarray  # the sample's rows, or their value ids (``ids`` not None)
    ids: _Ids | None


def _first_pass(path, target, chunk_rows, sample_rows, rng, numeric=None, rows=None, cache_bytes=0) -> _FirstPass:
    """Column types (``numeric`` given, or columns that parse as numbers in the first chunk), the values of every
    column (missing included), a uniform sample of rows (of those ``rows`` selects; of a file without numeric
    columns, their value ids), and, for a file without numeric columns whose ids take at most ``cache_bytes``, each
    chunk's value ids. A CSV file without numeric columns is read by ``CsvIds``, others by pyarrow."""
    if numeric is None:
        numeric = _numeric_columns(path, target, chunk_rows, rows)
    if path.suffix != ".parquet" and not numeric:
        return _first_pass_of_ids(path, target, chunk_rows, sample_rows, rng, rows, cache_bytes)
    columns, sample, n_rows, cache = None, _Sample(sample_rows), 0, _IdCache.of(0 if numeric else cache_bytes, path, rows)
    for table in _tables(path, chunk_rows, rows, dictionaries=not numeric):  # each chunk's values met once
        if columns is None:
            _check_target(path, target, table.column_names)
            columns = {c: None if c in numeric else _ColumnIds() for c in table.column_names}
            order = [c for c in columns if c != target] + [target]
            numeric_missing = dict.fromkeys(numeric, False)
        n_rows += table.num_rows
        ids = {c: found.chunk_ids(table.column(c)) for c, found in columns.items() if found is not None}
        for c in numeric:
            numeric_missing[c] = numeric_missing[c] or bool(_numbers(table.column(c).to_pandas(), c, path).isna().any())
        if numeric:
            sample.add(table, rng.random(table.num_rows))
        else:  # the rows as value ids: kept while the cache holds them, and the sample's (a table's rows cost more)
            largest = max(len(found.ids) for found in columns.values())
            rows_of_ids = np.empty((table.num_rows, len(order)), dtype=np.min_scalar_type(largest))
            for j, c in enumerate(order):
                rows_of_ids[:, j] = ids[c]
            cache.add(rows_of_ids, largest)
            sample.add(rows_of_ids, rng.random(table.num_rows))
    if not n_rows:
        raise DatasetError(f"{path} has no rows.")
    if columns[target].missing:
        raise DatasetError(f"{path}: the class column {target!r} has missing values; drop those rows first.")
    missing = {c: numeric_missing[c] if found is None else found.missing for c, found in columns.items()}
    values = {c: set(found.ids) for c, found in columns.items() if found is not None}
    if numeric:
        return _FirstPass(order[:-1], numeric, values, missing, sample.table().to_pandas().astype(
            dict.fromkeys(numeric, float)), None)
    return _FirstPass(order[:-1], numeric, values, missing, sample.table(),
                      _Ids(cache.chunks, lambda: [columns[c].values() for c in order]))


def _first_pass_of_ids(path, target, chunk_rows, sample_rows, rng, rows, cache_bytes) -> _FirstPass:
    """``_first_pass`` of a CSV file without numeric columns, read as value ids (``CsvIds``); the sample is kept as
    ids, and so is each chunk while they take at most ``cache_bytes``."""
    reader = CsvIds.of_file(path, last=target)
    sample, n_rows, cache = _Sample(sample_rows), 0, _IdCache.of(cache_bytes, path, rows)
    seen = np.zeros((len(reader.columns), 1), dtype=bool)  # [column, id]: in the rows selected
    for ids in _selected(reader.chunks(path, chunk_rows), rows):
        n_rows += len(ids)
        if (largest := reader.counts.max(initial=0)) >= seen.shape[1]:
            seen = np.pad(seen, ((0, 0), (0, largest + 1 - seen.shape[1])))
        _mark_seen(ids, seen)
        cache.add(ids, largest)
        sample.add(ids, rng.random(len(ids)))
    if not n_rows:
        raise DatasetError(f"{path} has no rows.")
    if seen[-1, 0]:
        raise DatasetError(f"{path}: the class column {target!r} has missing values; drop those rows first.")
    values = {}
    for column, column_seen, by_id in zip(reader.columns, seen, reader.all_values()):
        values[column] = set(by_id[column_seen[1 : len(by_id) + 1]])
    missing = {column: bool(column_seen[0]) for column, column_seen in zip(reader.columns, seen)}
    return _FirstPass(reader.columns[:-1], [], values, missing, sample.table(), _Ids(cache.chunks, reader.all_values, reader))


@njit(cache=True)
def _mark_seen(ids, seen):
    """``seen[j, id]`` set for the id of every row in column ``j`` (one loop where a ``bincount`` a column took
    four times as long: 0.033 against 0.008 s for 1,000,000 rows of 21 columns)."""
    n_rows, n_columns = ids.shape
    for j in range(n_columns):
        for r in range(n_rows):
            seen[j, ids[r, j]] = True


def _numeric_columns(path: Path, target: str, chunk_rows: int, rows: np.ndarray | None) -> list:
    """The attributes whose values in the first chunk all parse as numbers (a CSV file's distinct values, read as
    ids by ``CsvIds``: parsing each field took 1.4 s for 100,000 rows of 20 nominal columns)."""
    if path.suffix == ".parquet":
        first = next(_tables(path, chunk_rows, rows), None)
        if first is None:
            raise DatasetError(f"{path} has no rows.")
        _check_target(path, target, first.column_names)
        frame = first.to_pandas()
        return [c for c in frame.columns if c != target and _looks_numeric(frame[c])]
    reader = CsvIds.of_file(path, last=target)
    first = next(_selected(reader.chunks(path, chunk_rows), rows), None)
    if first is None:
        raise DatasetError(f"{path} has no rows.")
    numeric = []
    for j, column in enumerate(reader.columns[:-1]):
        ids = np.unique(first[:, j])
        if _looks_numeric(pd.Series(reader.values(j)[ids[ids > 0] - 1])):
            numeric.append(column)
    return sorted(numeric, key=reader.header.index)


def _check_target(path: Path, target: str, columns: list) -> None:
    if target not in columns:
        raise DatasetError(f"{path}: no class column {target!r}; the columns are {columns}.")


def _looks_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.to_numeric(column.dropna(), errors="coerce").notna().all()


def fit_file(classifier: BNClassifier, path, target: str = "class", chunk_rows: int | None = None,
             sample_rows: int = 100_000, discretise: bool = True, numeric: list | None = None,
             rows: np.ndarray | None = None, cache_bytes: int = CACHE_BYTES,
             client=None) -> tuple[BNClassifier, ChunkedCodes]:
    """Fit ``classifier`` from the file at ``path`` without holding it in memory.

    Parameters
    ----------
    classifier : BNClassifier
        Unfitted; its estimator must be count-based (``Estimator.count_based``).
    path : str or Path
        A CSV file with a header (missing values are empty fields) or a parquet file.
    target : str
        The class column.
    chunk_rows : int, optional
        Rows read at a time (default: ``CHUNK_VALUES`` values' worth, ``chunk_rows_for``).
    sample_rows : int
        Size of the uniform sample on which the discretiser is fitted; without numeric columns, or with
        ``sample_rows`` >= the number of rows, the fit equals an in-memory fit.
    discretise : bool
        MDL-discretise the numeric columns (fitted on the sample).
    numeric : list of str, optional
        The numeric columns of a CSV file (default: those whose values in the first chunk all parse as
        numbers; give them when nominal values look like numbers).
    rows : boolean array, optional
        One entry per row of the file: fit on the rows whose entry is true (a training fold), as if the
        file held those alone; it is read a slice at a time, so any sequence whose slices are boolean arrays does
        (``bncbench.protocol.cross_validation.FoldRows``). Default: every row.
    cache_bytes : int
        The passes after the first read its value ids from memory (one byte a value while a column has fewer than
        256 values, else two), when they take at most
        this many bytes and no column is numeric (0: every pass reads the file); the numbers are the same.
    client : distributed.Client, optional
        Make the counting passes (the structure's, SkDB's leave-one-out) on the workers of this dask client, each
        reading its chunks of the file (at the same path): the same counts, structure and losses to the last bit
        (``bncbench.bnc.distributed``). Default: in this process.

    Returns
    -------
    classifier, data
        The fitted classifier, and the data source (``data.passes`` is the number of passes made).
    """
    if not estimator_class(classifier.estimator).count_based:
        count_based = sorted(name for name, cls in ESTIMATORS.items() if cls.count_based)
        raise ConfigError(
            f"estimator {classifier.estimator!r} needs every training row in memory; out-of-core fitting takes "
            f"the count-based estimators {', '.join(count_based)}."
        )
    estimator = make_estimator(classifier.estimator, dict(classifier.estimator_params or {}))
    rng = np.random.default_rng(classifier.random_state)
    chunk_rows = chunk_rows_for(path, chunk_rows)
    found = _first_pass(Path(path), target, chunk_rows, sample_rows, rng, numeric, rows, cache_bytes)
    columns, numeric, values, missing, sample = found.columns, found.numeric, found.values, found.missing, found.sample
    discretizer = MDLDiscretizer().fit(sample.drop(columns=[target]), sample[target]) if discretise and numeric else None
    encoder = CategoryEncoder.from_values(
        columns,
        [_values_after(c, values, missing, numeric, discretizer) for c in columns],
        [missing[c] and c not in numeric for c in columns],  # a discretised column's missing is its last bin
    )
    class_encoder = CategoryEncoder.from_values([target], [values[target]], [False])
    data = ChunkedCodes(Path(path), target, chunk_rows, numeric, discretizer, encoder, class_encoder, sample, rows,
                        found.ids, client)
    classifier.encoder_, classifier.class_encoder_ = encoder, class_encoder
    classifier.classes_ = np.asarray(list(class_encoder.categories_[0]))
    classifier.n_features_in_ = len(encoder.columns_)
    classifier.feature_names_in_ = np.asarray(encoder.columns_, dtype=object)
    return classifier._fit_data(data, estimator), data


def predict_proba_file(classifier: BNClassifier, data: ChunkedCodes, path=None,
                       rows: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """``predict_proba`` of the rows of the file at ``path`` (default: the training file) that ``rows`` selects,
    a chunk at a time, each with its chunk (strings as read, a CSV file's numbers not parsed; a CSV file without
    numeric columns dictionary-encoded). ``classifier`` and ``data`` are what ``fit_file`` returned; the file has
    the training file's columns, the class included."""
    for codes, table in data.file_codes(Path(path or data.path), rows):
        yield predict_codes(classifier, codes), table


def predict_codes(classifier: BNClassifier, codes: np.ndarray) -> np.ndarray:
    """``predict_proba`` of rows coded by ``ChunkedCodes.file_codes`` (their class, last, is not read), as int64
    codes in rows, the type and order of an in-memory prediction's."""
    return classifier._proba(np.ascontiguousarray(codes[:, :-1], dtype=np.int64))


def _values_after(column, values, missing, numeric, discretizer):
    """The values a column can take after discretisation: its bins, or what the first pass saw."""
    if column not in numeric:
        return values[column]
    if discretizer is None:
        raise ConfigError(
            f"column {column!r} is numeric: discretise it (discretise=True) or give it as strings; out-of-core "
            "fitting needs every column's values up front."
        )
    n_bins = len(discretizer.cut_points_[column]) + 1
    return set(range(n_bins + (1 if missing[column] else 0)))
