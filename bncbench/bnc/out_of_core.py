"""Fitting a count-based BNC from a CSV or parquet file read in chunks (out-of-core learning).

Memory is bounded by the model (its counts), by ``chunk_rows``, ``sample_rows`` and ``cache_bytes``, not by
the file:

1. a first pass collects the values of every column, the number of rows and a uniform random sample of
   ``sample_rows`` rows, on which the MDL discretiser is fitted (numeric columns only); in a file without
   numeric columns it also numbers each column's values as it meets them and keeps each row's numbers
   (two bytes a value) while they take at most ``cache_bytes``;
2. then the structure learner makes its own passes, each over those numbers (mapped to the encoder's codes)
   or, without them, reading the file again: kDB and TAN one for the mutual-information counts and one for
   the tables' counts (SkDB paper Sect. 2.1: two passes), SkDB a third for its leave-one-out selection;
   naive Bayes and AODE only the counting pass.

The estimator fills the tables from the counts; the m-estimate takes its holdout from the sample.
Estimators that need every row (AWNB, WANBIA, HPB, MANB) are refused.
"""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from bncbench.bnc.classifier import BNClassifier
from bncbench.bnc.encoding import CategoryEncoder
from bncbench.bnc.estimators import ESTIMATORS, estimator_class, make_estimator
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data import MDLDiscretizer

#: The default bound of the value ids a fit keeps from its first pass (``fit_file``'s ``cache_bytes``): 2 bytes a
#: value, so 256 MiB holds 6 million rows of 20 attributes.
CACHE_BYTES = 256 * 2**20


def read_chunks(path: Path, chunk_rows: int, numeric: list | None = None) -> Iterator[pd.DataFrame]:
    """The rows of a CSV (missing = empty field) or parquet file, ``chunk_rows`` at a time.

    CSV columns named in ``numeric`` are parsed as numbers, the others kept as strings.
    """
    return selected_chunks(path, chunk_rows, numeric, None)


def _csv_tables(path: Path, chunk_rows: int) -> Iterator[pa.Table]:
    """The rows of a CSV file as strings (missing = empty field), ``chunk_rows`` at a time, read by pyarrow's
    streaming reader (about four times as fast as pandas' chunked ``read_csv``, with the same strings)."""
    columns = pa_csv.open_csv(path).schema.names
    convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(columns, pa.string()), strings_can_be_null=True,
                                    null_values=[""])
    pending = []
    for batch in pa_csv.open_csv(path, convert_options=convert):
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
    return (_frame(table, numeric) for table in _tables(Path(path), chunk_rows, rows))


def _frame(table: pa.Table, numeric: list | None) -> pd.DataFrame:
    frame = table.to_pandas()
    for column in numeric or []:
        frame[column] = pd.to_numeric(frame[column])
    return frame


def _selected(tables: Iterator[pa.Table], rows: np.ndarray | None) -> Iterator[pa.Table]:
    """The rows of each table whose entry of ``rows`` is true (all when None); empty tables skipped."""
    start = 0
    for table in tables:
        if rows is not None:
            keep = rows[start : start + len(table)]
            start += len(table)
            table = table.filter(pa.array(keep))
            if not len(table):
                continue
        yield table


class ChunkedCodes:
    """Training data read from a file: every call of ``chunks`` is one pass over it, yielding codes.

    ``sample`` holds the codes of the first pass's uniform sample; ``passes`` counts the passes made over the
    data, ``reads`` those over the file: the later passes read the first pass's value ids when it kept them
    (``cache``: each chunk's ids and each column's ``_ColumnIds``, class last), else the file again.
    """

    def __init__(self, path, target, chunk_rows, numeric, discretizer, encoder, class_encoder, sample, rows=None,
                 cache=None):
        self.path, self.target, self.chunk_rows, self.numeric, self.rows = path, target, chunk_rows, numeric, rows
        self.discretizer, self.encoder, self.class_encoder = discretizer, encoder, class_encoder
        self.passes = self.reads = 1  # the first pass, which found the values and the sample
        self.sample = self.codes(sample)
        self._cached = None if cache is None else (cache[0], *self._id_codes(cache[1]))

    def _encoders(self) -> list:
        """(encoder, its column) for each column of the codes, the class last."""
        return [(self.encoder, k) for k in range(len(self.encoder.columns_))] + [(self.class_encoder, 0)]

    def _id_codes(self, found: list) -> tuple[np.ndarray, np.ndarray]:
        """The code of each column's value ids in one flat array, and each column's offset in it."""
        lookups = []
        for (encoder, k), column in zip(self._encoders(), found):
            lookup = encoder.lookup(k, column.values())  # the missing value's code last; its id is 0
            lookups.append(np.concatenate([lookup[-1:], lookup[:-1]]))
        return np.concatenate(lookups), np.cumsum([0] + [len(lookup) for lookup in lookups[:-1]])

    def codes(self, frame: pd.DataFrame) -> np.ndarray:
        X = frame.drop(columns=[self.target])
        if self.discretizer is not None:
            X = self.discretizer.transform(X)
        return np.column_stack([self.encoder.transform(X), self.class_encoder.transform(frame[[self.target]])])

    def chunks(self) -> Iterator[np.ndarray]:
        self.passes += 1
        if self._cached is not None:
            ids, id_codes, offsets = self._cached
            for chunk in ids:
                yield id_codes[chunk + offsets]
            return
        self.reads += 1
        for codes, _ in self.file_codes(self.path, self.rows):
            yield codes

    def file_codes(self, path: Path, rows: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, pa.Table]]:
        """The codes of the rows of the file at ``path`` that ``rows`` selects (values unseen here: ``UNSEEN``),
        coded as the training rows are, a chunk at a time, each with its chunk."""
        for table in _tables(Path(path), self.chunk_rows, rows):
            if Path(path).suffix == ".parquet" or self.numeric:
                yield self.codes(_frame(table, self.numeric)), table
            else:
                yield self.table_codes(table), table

    def table_codes(self, table: pa.Table) -> np.ndarray:
        """``codes`` of a CSV chunk of strings read by pyarrow, without pandas: each column dictionary-encoded,
        its few distinct strings looked up."""
        codes = np.empty((table.num_rows, len(self.encoder.columns_) + 1), dtype=np.int64)
        for j, ((encoder, k), column) in enumerate(zip(self._encoders(), [*self.encoder.columns_, self.target])):
            values, indices = _dictionary(table.column(column))
            codes[:, j] = encoder.lookup(k, values)[indices]  # the lookup's last code is a missing value's
        return codes


def _dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A column's distinct values, and each row's index among them (a missing value's: one past the last)."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_numpy(zero_copy_only=False)
    return values, encoded.indices.fill_null(len(values)).to_numpy()


def _tables(path: Path, chunk_rows: int, rows: np.ndarray | None) -> Iterator[pa.Table]:
    """The rows of the file that ``rows`` selects as pyarrow tables of up to ``chunk_rows`` rows (a CSV
    file's columns as strings; a parquet file's as stored)."""
    if path.suffix == ".parquet":
        batches = pq.ParquetFile(path).iter_batches(batch_size=chunk_rows)
        return _selected((pa.Table.from_batches([batch]) for batch in batches), rows)
    return _selected(_csv_tables(path, chunk_rows), rows)


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
        return np.array([*ids_of, 0], dtype=np.int64)[indices]

    def values(self) -> np.ndarray:
        """The values in the order of their ids."""
        values = np.empty(len(self.ids), dtype=object)
        values[:] = list(self.ids)
        return values


class _Sample:
    """A uniform sample of ``size`` rows of the chunks ``add`` is given: the rows of the ``size`` smallest
    random keys (the first of equal keys), in the order of the file. Rows are kept until they are twice
    the size, then pruned, so that a chunk costs about one copy of its candidates."""

    def __init__(self, size: int):
        self.size, self.tables, self.keys = size, [], []

    def add(self, table: pa.Table, keys: np.ndarray) -> None:
        if sum(map(len, self.keys)) >= self.size:  # a row enters only below the sample's largest key
            candidates = keys < self._threshold()[0]
            table, keys = table.filter(pa.array(candidates)), keys[candidates]
        self.tables.append(table)
        self.keys.append(keys)
        if sum(map(len, self.keys)) > 2 * self.size:
            self._prune()

    def table(self) -> pa.Table:
        self._prune()
        return pa.concat_tables(self.tables)

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
            self.tables[i], self.keys[i] = self.tables[i].filter(pa.array(keep)), keys[keep]


def _first_pass(path, target, chunk_rows, sample_rows, rng, numeric=None, rows=None, cache_bytes=0):
    """Column types (``numeric`` given, or columns that parse as numbers), the values of every column
    (missing included), a uniform sample of rows (of those ``rows`` selects), and, for a file without numeric
    columns whose ids take at most ``cache_bytes``, each chunk's value ids (``_ColumnIds``; else None)."""
    columns, sample, n_rows, cache, cached_bytes = None, _Sample(sample_rows), 0, [], 0
    for table in _tables(path, chunk_rows, rows):
        if columns is None:
            if target not in table.column_names:
                raise DatasetError(f"{path}: no class column {target!r}; the columns are {table.column_names}.")
            if numeric is None:
                first = table.to_pandas()
                numeric = [c for c in first.columns if c != target and _looks_numeric(first[c])]
            columns = {c: None if c in numeric else _ColumnIds() for c in table.column_names}
            order = [c for c in columns if c != target] + [target]
            numeric_missing = dict.fromkeys(numeric, False)
        n_rows += table.num_rows
        ids = {c: found.chunk_ids(table.column(c)) for c, found in columns.items() if found is not None}
        for c in numeric:
            numeric_missing[c] = numeric_missing[c] or bool(table.column(c).to_pandas().astype(float).isna().any())
        cached_bytes += 2 * table.num_rows * len(order)
        if cache is not None and not numeric and cached_bytes <= cache_bytes and all(
            len(found.ids) < 2**16 for found in columns.values()  # ids fit in uint16
        ):
            cache.append(np.column_stack([ids[c] for c in order]).astype(np.uint16))
        else:
            cache = None
        sample.add(table, rng.random(table.num_rows))
    if not n_rows:
        raise DatasetError(f"{path} has no rows.")
    if columns[target].missing:
        raise DatasetError(f"{path}: the class column {target!r} has missing values; drop those rows first.")
    missing = {c: numeric_missing[c] if found is None else found.missing for c, found in columns.items()}
    values = {c: set(found.ids) for c, found in columns.items() if found is not None}
    sample = sample.table().to_pandas().astype({c: float for c in numeric})
    return numeric, values, missing, sample, (cache, [columns[c] for c in order]) if cache else None


def _looks_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.to_numeric(column.dropna(), errors="coerce").notna().all()


def fit_file(classifier: BNClassifier, path, target: str = "class", chunk_rows: int = 100_000,
             sample_rows: int = 100_000, discretise: bool = True, numeric: list | None = None,
             rows: np.ndarray | None = None, cache_bytes: int = CACHE_BYTES) -> tuple[BNClassifier, ChunkedCodes]:
    """Fit ``classifier`` from the file at ``path`` without holding it in memory.

    Parameters
    ----------
    classifier : BNClassifier
        Unfitted; its estimator must be count-based (``Estimator.count_based``).
    path : str or Path
        A CSV file with a header (missing values are empty fields) or a parquet file.
    target : str
        The class column.
    chunk_rows : int
        Rows read at a time.
    sample_rows : int
        Size of the uniform sample on which the discretiser is fitted (also the m-estimate's holdout
        pool); with ``sample_rows`` >= the number of rows the fit equals an in-memory fit.
    discretise : bool
        MDL-discretise the numeric columns (fitted on the sample).
    numeric : list of str, optional
        The numeric columns of a CSV file (default: those whose values in the first chunk all parse as
        numbers; give them when nominal values look like numbers).
    rows : boolean array, optional
        One entry per row of the file: fit on the rows whose entry is true (a training fold), as if the
        file held those alone. Default: every row.
    cache_bytes : int
        The passes after the first read its value ids from memory, two bytes a value, when they take at most
        this many bytes and no column is numeric (0: every pass reads the file); the numbers are the same.

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
    numeric, values, missing, sample, cache = _first_pass(Path(path), target, chunk_rows, sample_rows, rng, numeric, rows,
                                                          cache_bytes)
    discretizer = MDLDiscretizer().fit(sample.drop(columns=[target]), sample[target]) if discretise and numeric else None
    columns = [c for c in sample.columns if c != target]
    encoder = CategoryEncoder.from_values(
        columns,
        [_values_after(c, values, missing, numeric, discretizer) for c in columns],
        [missing[c] and c not in numeric for c in columns],  # a discretised column's missing is its last bin
    )
    class_encoder = CategoryEncoder.from_values([target], [values[target]], [False])
    data = ChunkedCodes(Path(path), target, chunk_rows, numeric, discretizer, encoder, class_encoder, sample, rows, cache)
    classifier.encoder_, classifier.class_encoder_ = encoder, class_encoder
    classifier.classes_ = np.asarray(list(class_encoder.categories_[0]))
    classifier.n_features_in_ = len(encoder.columns_)
    classifier.feature_names_in_ = np.asarray(encoder.columns_, dtype=object)
    return classifier._fit_data(data, estimator), data


def predict_proba_file(classifier: BNClassifier, data: ChunkedCodes, path=None,
                       rows: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """``predict_proba`` of the rows of the file at ``path`` (default: the training file) that ``rows`` selects,
    a chunk at a time, each with its chunk (as read: strings, a CSV's numbers not parsed). ``classifier`` and
    ``data`` are what ``fit_file`` returned; the file has the training file's columns, the class included."""
    for codes, table in data.file_codes(Path(path or data.path), rows):
        yield predict_codes(classifier, codes), table


def predict_codes(classifier: BNClassifier, codes: np.ndarray) -> np.ndarray:
    """``predict_proba`` of rows coded by ``ChunkedCodes.file_codes`` (their class, last, is not read)."""
    return classifier._proba(codes[:, :-1])


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
