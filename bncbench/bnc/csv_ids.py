"""Reading a CSV file of nominal columns straight to value ids, without building a string per field.

A numba kernel walks the bytes once (``_split_rows``): it splits rows and fields as pyarrow's CSV reader does with its defaults
(``,`` between fields; a field opening with ``"`` is quoted, ``""`` inside it a quote, and what follows the closing
quote is read on; lines end at ``\\n``, ``\\r`` or ``\\r\\n``; empty lines are skipped; an empty field, quoted or
not, is missing), and keeps of each field a 64-bit key: its bytes (up to 7), or a hash of them. A second kernel
(``_number``) looks the keys of a chunk up in a hash table, numbering each column's values as it meets them (0:
missing); a hashed key's bytes are compared with the value's. Two loops, not one: a lookup inside the splitting
loop took three times as long (2.6-3.7x) on the benchmark's file. The values themselves are kept once, as bytes, and
decoded (UTF-8) when asked for. ``tests/bnc/test_csv_ids.py`` checks it against pyarrow on random files.
"""

import collections
import functools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
from numba import njit

from bncbench.core.errors import DatasetError

_COMMA, _QUOTE, _NEWLINE, _RETURN = ord(","), ord('"'), ord("\n"), ord("\r")
_ROWS_DONE, _NEEDS_BYTES, _NEEDS_ROOM, _BAD_ROW = 0, 1, 2, 3  # why _split_rows stopped
_BLOCK_BYTES = 1 << 22  # read at a time


@njit(cache=True, inline="always")
def _key(source, start, length):
    """The key of the value ``source[start : start + length]``: its bytes themselves when at most 7 (the length in
    the top byte), so that equal keys are equal values; else a 64-bit FNV-1a hash of them, top byte 0xFF (equal keys
    then need the bytes compared)."""
    if length <= 7:
        key = np.uint64(length) << np.uint64(56)
        for i in range(length):
            key |= np.uint64(source[start + i]) << np.uint64(8 * i)
        return key
    key = np.uint64(14695981039346656037)
    for i in range(length):
        key = (key ^ np.uint64(source[start + i])) * np.uint64(1099511628211)
    return key | (np.uint64(0xFF) << np.uint64(56))


@njit(cache=True, inline="always")
def _ends_field(byte):
    """A comma or a line's end (most bytes of a value are above the comma: one comparison for them)."""
    return byte <= _COMMA and (byte == _COMMA or byte == _NEWLINE or byte == _RETURN)


@njit(cache=True, inline="always")
def _slot(key, column, mask):
    """Where the column's value of that key is looked for first."""
    h = (key ^ (np.uint64(column) * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
    return (h ^ (h >> np.uint64(31))) & mask


@njit(cache=True)
def _split_rows(data, position, final, record, keys, max_rows, field, long_fields, long_bytes, long_sizes):
    """Split rows of ``data[position:]`` into fields, each field's ``_key`` into ``keys[:max_rows]`` (0: missing;
    with ``record`` false a row is only skipped); the bytes of a field longer than 7 are appended to ``long_bytes``
    and its (start, length) to ``long_fields`` (``long_sizes``: both used so far). Returns (rows split, position
    after them, why it stopped, a number).

    Stops at ``max_rows`` rows; at a row the bytes end inside (unless ``final``: the data end the file); at a long
    field finding no room (the number is its length: the caller grows the buffers and calls again); at a row
    whose number of fields (the number) is not ``keys``' width. A row stopped inside is split anew at the next call.
    """
    n_columns, end, rows = keys.shape[1], len(data), 0
    while rows < max_rows:
        while position < end and (data[position] == _NEWLINE or data[position] == _RETURN):
            position += 1  # an empty line, or the \n of a \r\n
        if position >= end:
            return rows, position, _NEEDS_BYTES, 0
        i, column, row_ended, long_used = position, 0, False, (long_sizes[0], long_sizes[1])
        while not row_ended:
            length, stop, quoted, start = 0, -1, data[i] == _QUOTE, i
            if quoted:  # its bytes unquoted into ``field``, then what follows the closing quote
                i += 1
                while i < end:
                    if data[i] == _QUOTE:
                        if i + 1 < end and data[i + 1] == _QUOTE:
                            i += 1
                        elif i + 1 < end or final:
                            i += 1
                            break
                        else:
                            stop = _NEEDS_BYTES  # a doubled quote may follow
                            break
                    field[length] = data[i]
                    length += 1
                    i += 1
                while stop < 0 and i < end and not _ends_field(data[i]):
                    field[length] = data[i]
                    length += 1
                    i += 1
            else:  # its bytes are read where they are
                while i < end and not _ends_field(data[i]):
                    i += 1
                length = i - start
            if stop < 0 and i >= end and not final:
                stop = _NEEDS_BYTES
            if stop < 0 and record and column < n_columns:
                key = _key(field, 0, length) if quoted else _key(data, start, length)
                keys[rows, column] = key if length else np.uint64(0)
                if length > 7:
                    n, used = long_sizes[0], long_sizes[1]
                    if n == len(long_fields) or used + length > len(long_bytes):
                        stop = _NEEDS_ROOM
                    else:
                        long_bytes[used : used + length] = field[:length] if quoted else data[start : start + length]
                        long_fields[n, 0], long_fields[n, 1] = used, length
                        long_sizes[0], long_sizes[1] = n + 1, used + length
            if stop >= 0:
                long_sizes[0], long_sizes[1] = long_used  # the row is split anew
                return rows, position, stop, length
            row_ended = i >= end or data[i] != _COMMA
            column += 1
            i += 1  # past the comma or the line's end; a \n after \r is skipped as an empty line
            if not row_ended and i >= end:
                if not final:
                    long_sizes[0], long_sizes[1] = long_used
                    return rows, position, _NEEDS_BYTES, 0
                if record and column < n_columns:  # a comma ends the file: one more empty field
                    keys[rows, column] = np.uint64(0)
                column += 1
                row_ended = True
        if record and column != n_columns:
            return rows, position, _BAD_ROW, column
        position = min(i, end)
        rows += 1
    return rows, position, _ROWS_DONE, 0


@njit(cache=True)
def _number(keys, n_rows, long_fields, long_bytes, start_row, start_column, cursor, slot_keys, slots, entries, arena,
            sizes, counts, positions, out):
    """The id of each key of ``keys[:n_rows]`` (from ``start_row``, ``start_column``; ``cursor``: the long fields
    before it) into ``out``, column-major (a file column's row ``positions[column]``), numbering new values as they come, in an
    open-addressing table: ``slot_keys`` and ``slots`` = (column, id, entry + 1; 0: a free slot); ``entries[e]`` =
    (column, id, start in ``arena``, length); ``sizes`` = (entries, arena bytes used). Returns (-1, ...), or where a
    new value found no room (row, column, cursor, its length: the caller grows the tables and calls again)."""
    n_columns = keys.shape[1]
    mask = np.uint64(len(slot_keys) - 1)
    for row in range(start_row, n_rows):
        for column in range(start_column if row == start_row else 0, n_columns):
            key = keys[row, column]
            if key == 0:
                out[positions[column], row] = 0
                continue
            long_start, length = 0, 0
            if key >> np.uint64(56) == np.uint64(0xFF):
                long_start, length = long_fields[cursor, 0], long_fields[cursor, 1]
                cursor += 1
            slot, found = _slot(key, column, mask), 0
            while slots[slot, 2]:
                if slot_keys[slot] == key and slots[slot, 0] == column:
                    e = slots[slot, 2] - 1
                    same = length == 0 or entries[e, 3] == length
                    for i in range(length if same else 0):
                        if arena[entries[e, 2] + i] != long_bytes[long_start + i]:
                            same = False
                            break
                    if same:
                        found = slots[slot, 1]
                        break
                slot = (slot + np.uint64(1)) & mask
            if not found:
                e, stored = sizes[0], max(length, 7)
                if 2 * (e + 1) > len(slot_keys) or e + 1 > len(entries) or sizes[1] + stored > len(arena):
                    return row, column, cursor - (1 if length else 0), stored
                counts[column] += 1
                found = counts[column]
                if length:
                    arena[sizes[1] : sizes[1] + length] = long_bytes[long_start : long_start + length]
                else:  # a short value's bytes are its key's
                    length = np.int64(key >> np.uint64(56))
                    for i in range(length):
                        arena[sizes[1] + i] = np.uint8((key >> np.uint64(8 * i)) & np.uint64(0xFF))
                entries[e, 0], entries[e, 1], entries[e, 2], entries[e, 3] = column, found, sizes[1], length
                sizes[0], sizes[1] = e + 1, sizes[1] + length
                slot_keys[slot] = key
                slots[slot, 0], slots[slot, 1], slots[slot, 2] = column, found, e + 1
            out[positions[column], row] = found
    return -1, 0, cursor, 0


class CsvIds:
    """The value ids of a CSV file's columns (every value a string, as ``pyarrow.csv`` reads them with
    ``column_types`` string and ``null_values=[""]``), numbered as they are first met: the numbering
    goes on across the files read (a test file's new values get new ids). ``columns`` are the file's columns in
    the order of the ids' columns (a permutation of the header's)."""

    def __init__(self, header: list, columns: list | None = None):
        self.header, self.columns = list(header), list(columns or header)
        if sorted(self.columns) != sorted(self.header):
            raise ValueError(f"columns {self.columns} are not a permutation of the header {self.header}")
        self._order = np.array([self.header.index(c) for c in self.columns])
        self._positions = np.argsort(self._order)  # a file column's place among the ids' columns
        self._slot_keys, self._slots = np.zeros(1024, dtype=np.uint64), np.zeros((1024, 3), dtype=np.int64)
        self._entries = np.zeros((512, 4), dtype=np.int64)
        self._arena = np.zeros(4096, dtype=np.uint8)
        self._sizes = np.zeros(2, dtype=np.int64)
        self.counts = np.zeros(len(self.columns), dtype=np.int64)  # each file column's values so far
        self._values = {}  # column -> its values when it had that many
        self._headers_read = set()  # the files whose header was checked

    @classmethod
    def of_file(cls, path: Path, last: str | None = None) -> "CsvIds":
        """For the columns of the file's header, the column ``last`` (the class) moved last."""
        header = read_header(path)
        if last is not None and last not in header:
            raise DatasetError(f"{path}: no class column {last!r}; the columns are {header}.")
        ids = cls(header, [c for c in header if c != last] + ([last] if last is not None else []))
        ids._headers_read.add(Path(path))
        return ids

    def chunks(self, path: Path, chunk_rows: int, start: int = 0) -> Iterator[np.ndarray]:
        """Each ``chunk_rows`` rows of the file (a ``.gz`` or ``.bz2`` one decompressed) as an (rows, columns)
        array of ids (Fortran-ordered: a column's ids side by side), 0 for a missing value; the file's header must
        be this reader's. ``start`` > 0: the rows from that byte on (``chunk_starts``), the header neither read nor
        checked."""
        if not start and Path(path) not in self._headers_read:
            if (names := read_header(path)) != self.header:
                raise DatasetError(f"{path}: its columns {names} are not those of the training file {self.header}.")
            self._headers_read.add(Path(path))
        keys = np.empty((chunk_rows, len(self.columns)), dtype=np.uint64)
        long_fields, long_bytes, long_sizes = np.empty((1024, 2), np.int64), np.empty(1 << 16, np.uint8), np.zeros(2, np.int64)
        field = np.empty(0, dtype=np.uint8)
        data, position, final, filled, header = np.empty(0, dtype=np.uint8), 0, False, 0, not start
        with stream_at(path, start) as stream:
            while True:
                if len(field) < len(data):
                    field = np.empty(2 * len(data), dtype=np.uint8)  # a field's bytes, unquoted
                target = keys[:1] if header else keys[filled:]
                rows, position, why, number = _split_rows(data, position, final, not header, target, len(target),
                                                          field, long_fields, long_bytes, long_sizes)
                if header and rows:
                    header = False
                    continue
                filled += 0 if header else rows
                if why == _NEEDS_ROOM:
                    long_fields = np.concatenate([long_fields, long_fields])
                    long_bytes = np.concatenate([long_bytes, np.empty(len(long_bytes) + 2 * number, np.uint8)])
                elif why == _BAD_ROW:
                    text = bytes(data[position : position + 200]).decode("utf-8", "replace").splitlines()[0]
                    raise DatasetError(f"{path}: a row has {number} fields where the header has {len(self.columns)}: "
                                       f"{text!r}. Quote values that hold commas, or fix the file.")
                elif filled == chunk_rows:
                    yield self._ids(keys, filled, long_fields, long_bytes, long_sizes)
                    filled = 0
                elif why == _NEEDS_BYTES:
                    if final:
                        break
                    block = stream.read(_BLOCK_BYTES)
                    data, position, final = np.concatenate([data[position:], np.frombuffer(block, np.uint8)]), 0, not block
        if filled:
            yield self._ids(keys, filled, long_fields, long_bytes, long_sizes)

    def _ids(self, keys, n_rows, long_fields, long_bytes, long_sizes) -> np.ndarray:
        """The ids of the first ``n_rows`` rows of keys (``_number``), the tables grown as they need; the long
        fields' buffers emptied for the next rows."""
        ids = np.empty((len(self.columns), n_rows), dtype=np.int32)  # column-major, as counting reads them
        row, column, cursor = 0, 0, 0
        while True:
            row, column, cursor, length = _number(keys, n_rows, long_fields, long_bytes, row, column, cursor,
                                                  self._slot_keys, self._slots, self._entries, self._arena, self._sizes,
                                                  self.counts, self._positions, ids)
            if row < 0:
                break
            self._grow(length)
        long_sizes[:] = 0
        return ids.T

    def values(self, column: int) -> np.ndarray:
        """The values (str) of the ids' column ``column`` in the order of their ids, from id 1."""
        if len(known := self._values.get(column, ())) == self.counts[self._order[column]]:
            return known
        entries = self._entries[: self._sizes[0]]
        entries = entries[entries[:, 0] == self._order[column]]
        entries = entries[np.argsort(entries[:, 1])]
        values = np.empty(len(entries), dtype=object)
        try:
            values[:] = [bytes(self._arena[start : start + length]).decode("utf-8") for _, _, start, length in entries]
        except UnicodeDecodeError as error:
            raise DatasetError(f"column {self.columns[column]!r} holds a value that is not UTF-8 text: {error}.") from None
        self._values[column] = values
        return values

    def all_values(self) -> list:
        """``values`` of every column."""
        return [self.values(j) for j in range(len(self.columns))]

    def table(self, ids: np.ndarray) -> pa.Table:
        """The rows of ``ids`` as a table of dictionary-encoded string columns (missing values null)."""
        return pa.table({
            name: pa.DictionaryArray.from_arrays(pa.array(ids[:, j] - 1, mask=ids[:, j] == 0),
                                                 pa.array(self.values(j), pa.string()))
            for j, name in enumerate(self.columns)
        })

    def _grow(self, length: int) -> None:
        """Make room for a new value of ``length`` bytes: double whatever is over half full, the arena of value bytes,
        the entries, the slots (rehashed)."""
        n = self._sizes[0]
        if self._sizes[1] + length > len(self._arena) // 2:
            self._arena = np.concatenate([self._arena, np.zeros(max(len(self._arena), 2 * length), dtype=np.uint8)])
        if n + 1 > len(self._entries) // 2:
            self._entries = np.concatenate([self._entries, np.zeros_like(self._entries)])
        if 2 * (n + 1) > len(self._slots) // 2:
            self._slot_keys, self._slots = _rehash(self._slot_keys, self._slots, 2 * len(self._slots))


def stream_at(path: Path, start: int) -> pa.NativeFile:
    """The file's bytes (a ``.gz`` or ``.bz2`` file's decompressed) from byte ``start`` on: sought to in a plain
    file, read through in a compressed one."""
    stream = pa.input_stream(str(path))
    if stream.seekable():
        stream.seek(start)
        return stream
    while start > 0 and (skipped := len(stream.read(min(start, _BLOCK_BYTES)))):
        start -= skipped
    return stream


@functools.lru_cache(maxsize=16)
def _chunk_starts(path: Path, chunk_rows: int, size: int, modified: int) -> tuple[int, ...]:
    starts, rows, header = [], 0, True
    keys, long_fields, long_bytes = np.empty((0, 0), np.uint64), np.empty((0, 2), np.int64), np.empty(0, np.uint8)
    data, field, position, offset, final = np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.uint8), 0, 0, False
    with pa.input_stream(str(path)) as stream:
        while True:
            if len(field) < len(data):
                field = np.empty(2 * len(data), dtype=np.uint8)
            split, position, why, _ = _split_rows(data, position, final, False, keys, 1 if header else chunk_rows - rows,
                                                  field, long_fields, long_bytes, np.zeros(2, np.int64))
            rows += 0 if header else split
            if split and (header or rows == chunk_rows):
                starts.append(offset + position)
                header, rows = False, 0
            elif why == _NEEDS_BYTES:
                if final:
                    break
                block = stream.read(_BLOCK_BYTES)
                data, offset = np.concatenate([data[position:], np.frombuffer(block, np.uint8)]), offset + position
                position, final = 0, not block
    return tuple(starts if rows else starts[:-1])


def chunk_starts(path: Path, chunk_rows: int) -> tuple[int, ...]:
    """Where each ``chunk_rows`` rows of a CSV file start (the first after its header), as bytes of the file
    (decompressed), for ``CsvIds.chunks`` or pyarrow to read a chunk from there (``stream_at``); rows split as
    ``CsvIds.chunks`` splits them. Kept for the file as it is (its size and time of change)."""
    stat = Path(path).stat()
    return _chunk_starts(Path(path), chunk_rows, stat.st_size, stat.st_mtime_ns)


def read_header(path: Path) -> list:
    """The column names of the file's header, as pyarrow reads them: from a first block of 64 KiB (pyarrow parses
    it: its default of 1 MiB took 10-30 ms, a tenth of predicting 200,000 rows of 21 columns), or of pyarrow's
    default size for a header longer than that."""
    for options in (pa_csv.ReadOptions(block_size=1 << 16), None):
        try:
            return unique_columns(path, pa_csv.open_csv(path, read_options=options).schema.names)
        except pa.ArrowInvalid as error:
            if options is None:
                raise DatasetError(f"{path}: {error}") from None


def unique_columns(path: Path, names: list) -> list:
    """``names``, the columns of the file at ``path``; refused when one is named twice (a table in memory is
    refused so too): which of them would be read is not for a reader to guess."""
    repeated = sorted(name for name, count in collections.Counter(names).items() if count > 1)
    if repeated:
        raise DatasetError(f"{path}: the header names column{'s' if len(repeated) > 1 else ''} "
                           f"{', '.join(map(repr, repeated))} more than once; give each column a name of its own.")
    return names


@njit(cache=True)
def _rehash(slot_keys, slots, size):
    """The table's entries in a table of ``size`` slots."""
    new_keys, new_slots = np.zeros(size, dtype=np.uint64), np.zeros((size, 3), dtype=np.int64)
    mask = np.uint64(size - 1)
    for old in range(len(slots)):
        if slots[old, 2]:
            slot = _slot(slot_keys[old], slots[old, 0], mask)
            while new_slots[slot, 2]:
                slot = (slot + np.uint64(1)) & mask
            new_keys[slot], new_slots[slot] = slot_keys[old], slots[old]
    return new_keys, new_slots
