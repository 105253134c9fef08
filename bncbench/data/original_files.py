"""A dataset's original files (ARFF, libsvm/svmlight, delimited text) converted into the dataset store.

The files are read as a stream, a chunk of rows at a time, and written by
:func:`bncbench.data.store.write_store_stream` (a temporary file renamed into place once whole, the
``schema.json`` entry added under the store's lock), so a file of tens of millions of rows converts in
bounded memory and an interrupted or failed conversion leaves the store as it was. Every token is
kept as written (``1`` stays ``1``, ``01`` stays ``01``); an empty value, and any token given as
``missing``, becomes a missing value (the store's empty field).

Formats:

- ``arff``: Weka's ARFF, dense or sparse (``{index value, ...}``, indices from 0, an omitted value
  is 0, for a nominal attribute its first declared value, for a string one missing). ``numeric``,
  ``real`` and ``integer`` attributes are numeric, a ``{...}`` one nominal with its declared values; a
  ``string`` attribute is nominal with the values it takes, a ``date`` one must be dropped or declared
  nominal. ``?`` is missing; values may be quoted with ``'`` or ``"``; ``%`` lines are comments.
- ``libsvm``: ``label index:value ...`` per line (svmlight; ``#`` starts a comment). The label is the
  class, its values the labels as written; the features are numeric columns ``f<index>``, from the
  smallest index any line uses (0 or 1) to the largest. A feature a line omits is 0, not missing: the
  format has no missing values. The file is read twice, first for the largest index.
- ``csv``: delimited text, comma-separated (or another one-character separator, or runs of
  whitespace), quoted with ``"``; without ``header`` the columns are named ``att1``, ``att2``, ...
  (or ``names``). Columns are numeric unless declared ``nominal``.

The class is the last column unless ``class_column`` says otherwise, and becomes the store's last
column, ``class``, nominal, with the labels it takes (an ARFF nominal class: its declared values).
Columns are named, or numbered from 1 (a libsvm feature by its index), or ranges of numbers (``2-4``), or
``all`` (unless a column has that name).

Why not the readers of scipy and scikit-learn: ``scipy.io.arff`` reads a whole file into memory and
rejects sparse ARFF, and ``sklearn.datasets.load_svmlight_file`` reads a whole file and turns labels
and values into floats, where the store keeps each token as written.
"""

from __future__ import annotations

import bz2
import collections
import contextlib
import csv
import functools
import gzip
import io
import itertools
import lzma
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data.store import CLASS_COLUMN, refuse_present, store_file_name, write_store_stream

FORMATS = ("arff", "libsvm", "csv")
#: The format of a file by its suffix (after a compression suffix), when not given.
SUFFIX_FORMATS = {".arff": "arff", ".csv": "csv", ".libsvm": "libsvm", ".svm": "libsvm", ".svmlight": "libsvm"}
#: Files read through a decompressor, by suffix.
DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: Separators of delimited text that are words; any other is one character.
SEPARATOR_WORDS = {"tab": "\t", "whitespace": None}
#: Cells (rows x columns) per chunk: bounds the memory of a conversion whatever the file's size.
CHUNK_CELLS = 2_000_000
#: gzip's level of a converted file: zlib's default, ten times faster than 9 on such files, 5-15% larger.
COMPRESSION_LEVEL = 6
#: The most columns a dataset may have (a libsvm file's largest index too): the store is dense.
MAX_FEATURES = 100_000
#: The longest line read: a file with no line ends (or a binary one) is refused at this length, not read whole.
MAX_LINE_CHARACTERS = 1 << 24
#: How many characters of a bad line or value an error quotes.
QUOTED_CHARACTERS = 60

_QUOTED = r"""'(?P<single>(?:[^'\\]|\\.)*)'|"(?P<double>(?:[^"\\]|\\.)*)\""""
_BARE = r"""(?P<bare>[^,'"{}]*?)"""
#: One value of an ARFF line and the comma after it (none at the end of the line).
_ARFF_VALUE = re.compile(rf"""\s*(?:{_QUOTED}|{_BARE})\s*(?P<comma>,|$)""")
#: One ``index value`` pair of a sparse ARFF line and the comma after it.
_ARFF_SPARSE_VALUE = re.compile(rf"""\s*(?P<index>\d+)\s+(?:{_QUOTED}|{_BARE})\s*(?P<comma>,|$)""")
_ARFF_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_ARFF_NUMERIC = ("numeric", "real", "integer")
_LIBSVM_FEATURES = re.compile(r"(?:\d+:\S+\s*)*")
_LIBSVM_FEATURE = re.compile(r"(\d+):(\S+)")


@dataclass
class _Column:
    """A column of the original files: ``kind`` numeric, nominal (``declared`` values: ARFF's), string
    or date; ``omitted`` is the value a sparse ARFF row that leaves it out gives it."""

    name: str
    kind: str
    declared: list[str] | None = None
    omitted: str | None = None


@dataclass(frozen=True)
class _Chunk:
    """Rows of one file: the line of each, and their tokens (str, None = missing), an object array of
    rows x the source's columns."""

    path: Path
    lines: Sequence[int]
    values: np.ndarray


class _Source:
    """The rows of a dataset's files (``paths``), line number and values as ``_rows`` reads them; its
    ``columns``, and ``numbered``, the column of each number."""

    def chunks(self, rows: int) -> Iterator[_Chunk]:
        """The rows of the files, ``rows`` at a time (the last of a file fewer)."""
        for path in self.paths:
            numbered_rows = self._rows(path)
            while batch := list(itertools.islice(numbered_rows, rows)):
                yield self._chunk(path, batch)

    def _chunk(self, path: Path, batch: list[tuple]) -> _Chunk:
        lines, values = zip(*batch)
        return _Chunk(path, lines, np.array(values, dtype=object))


def add_original_files(
    data_dir: Path,
    name: str,
    files: Sequence[str | Path],
    *,
    file_format: str | None = None,
    class_column: str | None = None,
    nominal: Sequence[str] = (),
    drop: Sequence[str] = (),
    missing: Sequence[str] = (),
    header: bool = False,
    names: Sequence[str] | None = None,
    separator: str = ",",
    replace: bool = False,
    chunk_rows: int | None = None,
    store_format: str = "csv",
) -> dict:
    """Convert a dataset's original files into dataset ``name`` of the store ``data_dir`` (``<name>.csv.gz``, or
    ``<name>.parquet`` with ``store_format`` parquet), as the module docstring says; return its ``schema.json``
    entry (with its ``rows``).

    ``files`` are read one after another as one table (same columns; with a header or ARFF, the same header), a
    ``.gz``, ``.bz2`` or ``.xz`` one decompressed as read; ``file_format`` (arff, libsvm or csv), when None, is
    that of the first file's suffix (``SUFFIX_FORMATS``). ``class_column`` names the class (None: the last column,
    libsvm's label), ``nominal`` the columns that are nominal, ``drop`` those left out (e.g. ids); ``missing``
    lists the tokens of a missing value (``?``, ``NaN``) besides the empty one (and ARFF's ``?``). ``header``,
    ``names`` and ``separator`` (one character, ``tab`` or ``whitespace``) are those of csv alone. A dataset
    ``name`` already in the store is replaced with ``replace``, else refused. ``chunk_rows``: rows converted at a
    time; None: about ``CHUNK_CELLS`` cells.

    Raises
    ------
    ConfigError
        An option that does not fit the files (an unknown column, a separator for ARFF ...).
    DatasetError
        A file that cannot be read or converted: the message names the file, the line and the fix;
        or ``name`` already in the store without ``replace``.
    """
    paths = [Path(file) for file in files]
    if not paths:
        raise ConfigError("no file to convert: name the dataset's original files.")
    for path in paths:  # a FIFO, a device (/dev/zero) or a folder would be read without end, or not at all
        if path.exists() and not path.is_file():
            raise DatasetError(f"{path} is not a regular file (a folder, a device or a pipe): name the dataset's "
                               "original files themselves.")
    if not replace:
        refuse_present(data_dir, name)
    file_format = file_format or _format_of(paths[0])
    _check_options(file_format, class_column, header, names, separator)
    source = (_ArffSource(paths) if file_format == "arff" else _LibsvmSource(paths) if file_format == "libsvm"
              else _DelimitedSource(paths, header, names, _separator(separator)))
    plan = _Plan(source, class_column, nominal, drop)
    rows = chunk_rows or max(1, CHUNK_CELLS // len(source.columns))
    tokens = sorted({"", *missing})

    def write(stream: BinaryIO) -> dict:
        written = 0
        for chunk in source.chunks(rows):
            text = io.StringIO()
            writer = csv.writer(text, lineterminator="\n")  # as pandas' to_csv writes, faster
            if written == 0:
                writer.writerow([column.name for column in plan.sources[:-1]] + [CLASS_COLUMN])
            writer.writerows(plan.store_rows(chunk, tokens).tolist())  # None: an empty field
            stream.write(text.getvalue().encode("utf-8"))
            written += len(chunk.lines)
        if written == 0:
            raise DatasetError(f"{_listed(paths)} holds no data rows; nothing to convert.")
        classes = sorted(plan.observed[len(plan.sources) - 1])
        if len(classes) < 2:
            raise DatasetError(
                f"{_listed(paths)}: the class {plan.class_name!r} has {len(classes)} value{'' if classes else 's'} in "
                f"the data{' (' + _quote(classes[0]) + ')' if classes else ', every row missing it'}; a classifier "
                "needs two. Name the class column (--class), or check the missing-value token (--missing)."
            )
        return {
            "file": store_file_name(name, store_format),
            "source_files": [path.name for path in paths],
            "source_format": file_format,
            **({"source_relation": source.relation} if file_format == "arff" else {}),
            "source_class": plan.class_name,
            "rows": written,
            **plan.schema(),
        }

    try:
        return write_store_stream(data_dir, name, write, replace=replace, compresslevel=COMPRESSION_LEVEL,
                                  file_format=store_format)
    except OSError as ex:  # those of reading the files are DatasetErrors already
        raise DatasetError(
            f"cannot write dataset '{name}' into the data directory {data_dir} ({type(ex).__name__}: {ex}); make "
            "room or make it writable, or use another (data_dir=...)."
        ) from ex


def _format_of(path: Path) -> str:
    """The format a file's suffix names."""
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if suffixes and suffixes[-1] in DECOMPRESSORS:
        suffixes.pop()
    found = SUFFIX_FORMATS.get(suffixes[-1] if suffixes else "")
    if found is None:
        raise ConfigError(f"the format of {path} cannot be told from its name; give it (--format {'|'.join(FORMATS)}).")
    return found


def _check_options(file_format: str, class_column, header: bool, names, separator: str) -> None:
    """Refuse an unknown format, or an option that does not apply to it."""
    if file_format not in FORMATS:
        raise ConfigError(f"unknown format {file_format!r}; the formats are {', '.join(FORMATS)}.")
    csv_only = (("--header", header), ("--names", names is not None), ("--sep", separator != ","))
    inapplicable = [option for option, given in csv_only if given and file_format != "csv"]
    if class_column is not None and file_format == "libsvm":
        inapplicable.append("--class")
    if inapplicable:
        raise ConfigError(
            f"{', '.join(inapplicable)} {'does' if len(inapplicable) == 1 else 'do'} not apply to the "
            f"{file_format} format (the class of a libsvm file is its label; a header, names and a separator "
            "are those of delimited text, --format csv); leave them out."
        )


def _separator(separator: str) -> str | None:
    """A delimiter character, or None for runs of whitespace."""
    if separator in SEPARATOR_WORDS:
        return SEPARATOR_WORDS[separator]
    if len(separator) != 1 or separator in "\"\r\n":
        raise ConfigError(f"separator {separator!r} is not one character; give one (--sep ';'), or tab, or whitespace.")
    return separator


def _check_width(columns: int, path: Path) -> None:
    """Refuse a file of more columns than ``MAX_FEATURES``, which the dense store cannot hold."""
    if columns > MAX_FEATURES:
        raise DatasetError(
            f"{path} has {columns:,} columns, more than the {MAX_FEATURES:,} a dense store file can hold; check "
            "its separator (--sep), or drop the columns a classifier does not need before converting it."
        )


def _listed(paths: Sequence[Path]) -> str:
    return ", ".join(str(path) for path in paths)


def _quote(text: str) -> str:
    """``text`` for an error message, cut short."""
    return repr(text if len(text) <= QUOTED_CHARACTERS else text[:QUOTED_CHARACTERS] + "...")


# --- reading files -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _text_lines(path: Path) -> Iterator[Iterator[tuple[int, str]]]:
    """The lines of a file (decompressed by suffix, UTF-8) with their numbers from 1; a file that
    cannot be read is one DatasetError naming it."""
    opener = DECOMPRESSORS.get(path.suffix.lower(), open)
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as text:  # -sig: a byte order mark is no text
            yield _checked_lines(text, path)
    except FileNotFoundError as ex:
        raise DatasetError(f"{path}: no such file; give the path of the dataset's original file.") from ex
    except UnicodeDecodeError as ex:
        raise DatasetError(
            f"{path} is not UTF-8 text ({ex.reason} at byte {ex.start} of a block): if it is a binary file, give "
            "the dataset's text files (ARFF, CSV, libsvm); if it is text in another encoding, convert it to UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)."
        ) from ex
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as ex:
        raise DatasetError(
            f"{path} cannot be read ({type(ex).__name__}: {ex}); check that the file is whole and that its "
            "suffix (.gz, .bz2, .xz) is that of its compression."
        ) from ex


def _checked_lines(text: TextIO, path: Path) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` with their numbers from 1, each read to at most ``MAX_LINE_CHARACTERS``: a longer
    line, or one holding a NUL character, is no row of a dataset but a binary file or one without line ends."""
    for number, line in enumerate(iter(functools.partial(text.readline, MAX_LINE_CHARACTERS + 1), ""), start=1):
        if len(line) > MAX_LINE_CHARACTERS or "\0" in line:
            problem = (f"longer than {MAX_LINE_CHARACTERS:,} characters" if len(line) > MAX_LINE_CHARACTERS
                       else "a NUL character")
            raise DatasetError(
                f"{path}, line {number}: {problem}, so the file is no text of rows (it is binary, or has no line "
                "ends); give the dataset's text files (ARFF, CSV, libsvm)."
            )
        yield number, line


def _arff_values(text: str, pattern: re.Pattern = _ARFF_VALUE) -> list[re.Match]:
    """The matches of ``pattern`` (a value, then a comma or the end) that make up ``text``;
    ValueError when ``text`` is not such a list."""
    matches, position = [], 0
    while True:
        match = pattern.match(text, position)
        if match is None:
            raise ValueError(text[position:])
        matches.append(match)
        if not match.group("comma"):
            return matches
        position = match.end()


def _arff_token(match: re.Match) -> str | None:
    """The value a match of ``_ARFF_VALUE`` holds: unquoted, unescaped; None for an unquoted ``?``."""
    single, double, bare = match.group("single", "double", "bare")
    if single is None and double is None:
        return None if bare == "?" else bare
    quoted = single if single is not None else double  # its backslash escapes undone
    return re.sub(r"\\(.)", lambda escape: _ARFF_ESCAPES.get(escape.group(1), escape.group(1)), quoted)


class _ArffSource(_Source):
    """The rows of ARFF files (each with the same header)."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        headers = [self._header(path) for path in paths]
        self.relation, self.columns, _ = headers[0]
        _check_width(len(self.columns), paths[0])
        for path, (_, columns, _) in zip(paths[1:], headers[1:]):
            if columns != self.columns:
                raise DatasetError(f"the @attribute lines of {path} differ from those of {paths[0]}; files read as one "
                                   "dataset need the same attributes (convert them one by one otherwise).")
        self.data_lines = {path: data_line for path, (_, _, data_line) in zip(paths, headers)}
        self.numbered = {number: column.name for number, column in enumerate(self.columns, start=1)}

    @staticmethod
    def _header(path: Path) -> tuple[str, list[_Column], int]:
        """The relation, attributes and line of ``@data`` of an ARFF file."""
        relation, columns = "", []
        with _text_lines(path) as lines:
            for number, line in lines:
                text = line.strip()
                if not text or text.startswith("%"):
                    continue
                keyword, rest = (text.split(None, 1) + [""])[:2]
                keyword = keyword.lower()
                if keyword == "@relation":
                    relation = rest.strip("'\"")
                elif keyword == "@attribute":
                    columns.append(_arff_attribute(rest, path, number))
                    if columns[-1].name in [column.name for column in columns[:-1]]:
                        raise DatasetError(
                            f"{path}, line {number}: a second attribute named {columns[-1].name!r}; give each "
                            "attribute a name of its own."
                        )
                elif keyword == "@data":
                    if not columns:
                        raise DatasetError(f"{path}, line {number}: @data before any @attribute line.")
                    return relation, columns, number
                else:
                    raise DatasetError(
                        f"{path}, line {number}: {_quote(text)} is not an ARFF header line (@relation, "
                        "@attribute, @data or a % comment); fix it, or give the file's format (--format)."
                    )
        raise DatasetError(f"{path} has no @data line, so it is not an ARFF file; give its format (--format).")

    def _rows(self, path: Path) -> Iterator[tuple[int, list[str | None]]]:
        omitted = [column.omitted for column in self.columns]
        with _text_lines(path) as numbered:
            for number, line in numbered:
                text = line.strip()
                if number > self.data_lines[path] and text and not text.startswith("%"):
                    yield number, self._row(text, omitted, path, number)

    def _row(self, text: str, omitted: list[str | None], path: Path, number: int) -> list[str | None]:
        """The values of one data line, dense or sparse."""
        sparse = text.startswith("{") and text.endswith("}")
        try:
            if sparse:
                inner = text[1:-1]
                pairs = [(int(match.group("index")), _arff_token(match))
                         for match in (_arff_values(inner, _ARFF_SPARSE_VALUE) if inner.strip() else [])]
            elif not any(char in text for char in "'\"{}"):
                row = [None if value == "?" else value for value in map(str.strip, text.split(","))]
            else:
                row = [_arff_token(match) for match in _arff_values(text)]
        except ValueError as ex:
            raise DatasetError(
                f"{path}, line {number}: cannot read {_quote(text)} as ARFF values (at {_quote(str(ex))}; "
                "values are comma-separated, quoted with ' or \", sparse rows {index value, ...}, no instance "
                "weights); fix the line."
            ) from ex
        if sparse:
            row = list(omitted)
            for position, (index, token) in enumerate(pairs):
                if index >= len(row):
                    raise DatasetError(
                        f"{path}, line {number}: sparse index {index} where the header declares {len(row)} "
                        f"attributes (indices 0..{len(row) - 1}); fix the line."
                    )
                if any(index == earlier for earlier, _ in pairs[:position]):
                    raise DatasetError(f"{path}, line {number}: sparse index {index} is given twice; which value "
                                       "it has is not for a reader to guess: fix the line.")
                row[index] = token
            return row
        if len(row) != len(omitted):
            raise DatasetError(f"{path}, line {number}: {len(row)} values where the header declares {len(omitted)} "
                               "attributes; every row needs one value per attribute (? for a missing one).")
        return row


def _arff_attribute(text: str, path: Path, number: int) -> _Column:
    """The column an ``@attribute`` line (after the keyword) declares."""
    named = re.match(rf"{_QUOTED}|(?P<bare>[^\s{{]+)", text)
    if named is None:
        raise DatasetError(f"{path}, line {number}: an @attribute line without a name; fix the line.")
    name = _arff_token(named)
    kind = text[named.end():].strip()
    lowered = kind.lower()
    if lowered in _ARFF_NUMERIC:
        return _Column(name, "numeric", omitted="0")
    if lowered == "string" or lowered.startswith("date"):
        return _Column(name, lowered.split()[0])
    if kind.startswith("{") and kind.endswith("}"):
        try:
            declared = [_arff_token(match) for match in _arff_values(kind[1:-1])]
        except ValueError:
            declared = [None]
        if None in declared or "" in declared:
            raise DatasetError(
                f"{path}, line {number}: the values {_quote(kind)} of attribute {name!r} are not a list of "
                "values separated by commas (quoted with ' or \"); fix the line."
            )
        return _Column(name, "nominal", declared=declared, omitted=declared[0] if declared else None)
    raise DatasetError(
        f"{path}, line {number}: attribute {name!r} has type {_quote(kind)}; bncbench reads numeric, real, "
        "integer, string, date and {value, ...} attributes (not relational ones); fix the line."
    )


class _DelimitedSource(_Source):
    """The rows of delimited text files (each with the same header, when they have one)."""

    def __init__(self, paths: list[Path], header: bool, names: Sequence[str] | None, separator: str | None):
        self.paths, self.header, self.separator = paths, header, separator
        with contextlib.closing(self._fields(paths[0])) as rows:
            first = next(rows, None)
        if first is None:
            raise DatasetError(f"{paths[0]} is empty; nothing to convert.")
        number, fields = first
        self.header_fields = fields if header else None
        if names is not None:
            names = list(names)
            if len(names) != len(fields):
                raise ConfigError(f"--names gives {len(names)} names but line {number} of {paths[0]} has {len(fields)} "
                                  "fields; give one name per column.")
        elif header:
            names = fields
        else:
            names = [f"att{index}" for index in range(1, len(fields) + 1)]
        _check_width(len(names), paths[0])
        duplicated = sorted(name for name, count in collections.Counter(names).items() if count > 1)
        if duplicated or "" in names:
            raise ConfigError(f"the column names of {paths[0]} must be unique and not empty, but {duplicated or ['']} "
                              "are not; give names of your own (--names).")
        self.columns = [_Column(name, "numeric") for name in names]
        self.numbered = dict(enumerate(names, start=1))

    def _fields(self, path: Path) -> Iterator[tuple[int, list[str]]]:
        """The line number and fields of every row of a file, blank lines left out."""
        with _text_lines(path) as lines:
            if self.separator is None:
                for number, line in lines:
                    fields = line.split()
                    if fields:
                        yield number, fields
                return
            reader = csv.reader((line for _, line in lines), delimiter=self.separator, skipinitialspace=True,
                                strict=True)
            try:
                for fields in reader:
                    if fields and fields != [""]:
                        yield reader.line_num, fields
            except csv.Error as ex:
                raise DatasetError(
                    f"{path}, line {reader.line_num}: {ex}; fix the quotes of the line (a field that holds "
                    "the separator is quoted with \", a quote in it doubled)."
                ) from ex

    def _rows(self, path: Path) -> Iterator[tuple[int, list[str]]]:
        width = len(self.columns)
        for index, (number, fields) in enumerate(self._fields(path)):
            if index == 0 and self.header:
                if fields != self.header_fields:
                    raise DatasetError(f"{path}, line {number}: its header differs from that of {self.paths[0]}; files "
                                       "read as one dataset need the same columns (convert them one by one otherwise).")
                continue
            if len(fields) != width:
                hint = " (is line 1 a header? then give --header)" if number == 1 and not self.header else ""
                raise DatasetError(f"{path}, line {number}: {len(fields)} fields where there are {width} columns"
                                   f"{hint}; every row needs one value per column (an empty field for a missing one), "
                                   "or the separator is another (--sep).")
            yield number, fields


class _LibsvmSource(_Source):
    """The rows of libsvm/svmlight files, dense: a feature a line omits is ``0``."""

    label = "label"

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.first_index, largest = 1, -1  # the features start at 0 or 1, whichever a line uses
        for path in paths:
            for number, _, features in self._lines(path):
                if features:
                    self.first_index = min(self.first_index, self._index(features.split(None, 1)[0], path, number))
                    largest = max(largest, self._index(features.rsplit(None, 1)[-1], path, number))
        if largest < 0:
            raise DatasetError(f"{_listed(paths)} holds no line with a feature (index:value); nothing to convert.")
        if largest - self.first_index >= MAX_FEATURES:
            raise DatasetError(
                f"{_listed(paths)}: feature index {largest} makes {largest + 1 - self.first_index} columns, more than "
                f"the {MAX_FEATURES} a dense store file of this size can hold; check the indices of the files."
            )
        self.numbered = {index: f"f{index}" for index in range(self.first_index, largest + 1)}
        self.columns = [_Column(name, "numeric") for name in self.numbered.values()] + [_Column(self.label, "nominal")]

    @staticmethod
    def _lines(path: Path) -> Iterator[tuple[int, str, str]]:
        """The line number, label and ``index:value`` items (one text) of every line with a label."""
        with _text_lines(path) as lines:
            for number, line in lines:
                parts = line.partition("#")[0].split(None, 1)
                if parts and _LIBSVM_FEATURE.fullmatch(parts[0]):
                    raise DatasetError(
                        f"{path}, line {number}: begins with {_quote(parts[0])}, a feature index:value, not a label "
                        "(libsvm lines are 'label index:value ...'); give the line its label."
                    )
                if parts:
                    yield number, parts[0], parts[1].strip() if len(parts) > 1 else ""

    @staticmethod
    def _index(item: str, path: Path, number: int) -> int:
        """The index of an ``index:value`` item; DatasetError when it is not one."""
        index, colon, value = item.partition(":")
        if not (colon and index.isdigit() and value):
            raise DatasetError(f"{path}, line {number}: {_quote(item)} is not a feature index:value (libsvm lines are "
                               "'label index:value index:value ...', indices ascending); fix the line.")
        return int(index)

    def _rows(self, path: Path) -> Iterator[tuple[int, str, list[tuple[str, str]]]]:
        """The line number, label and ``(index, value)`` items of every line with a label."""
        for number, label, features in self._lines(path):
            if not _LIBSVM_FEATURES.fullmatch(features):
                bad = next(item for item in features.split() if not _LIBSVM_FEATURE.fullmatch(item))
                self._index(bad, path, number)  # raises: bad is not index:value
            yield number, label, _LIBSVM_FEATURE.findall(features)

    def _chunk(self, path: Path, batch: list[tuple]) -> _Chunk:
        """A chunk of dense rows from the items of lines (label last)."""
        lines, labels, items = zip(*batch)
        pairs = list(itertools.chain.from_iterable(items))
        width = len(self.columns) - 1
        rows = np.repeat(np.arange(len(labels)), [len(line_items) for line_items in items])
        columns = np.asarray([index for index, _ in pairs], dtype=np.int64) - self.first_index
        unordered = np.flatnonzero((np.diff(columns) <= 0) & (np.diff(rows) == 0))
        if len(unordered):
            number = lines[rows[unordered[0]]]
            raise DatasetError(
                f"{path}, line {number}: feature index {columns[unordered[0] + 1] + self.first_index} after "
                f"{columns[unordered[0]] + self.first_index}; the indices of a libsvm line must ascend, each "
                "once; fix the line."
            )
        values = np.full((len(labels), width + 1), "0", dtype=object)
        values[rows, columns] = np.asarray([token for _, token in pairs], dtype=object)
        values[:, width] = labels
        return _Chunk(path, lines, values)


# --- from the files' columns to the store's -------------------------------------------------------------


class _Plan:
    """Which columns of the files go to the store (``sources``, at ``positions`` among the files' columns), in
    which order, which are ``nominal``; and the values seen so far of those (``observed``; the class last)."""

    def __init__(self, source: _Source, class_column: str | None, nominal: Sequence[str], drop: Sequence[str]):
        """The plan of ``source``'s columns given the options (checked against its columns)."""
        class_name = (source.label if isinstance(source, _LibsvmSource)
                      else source.columns[-1].name if class_column is None
                      else _one_column(class_column, source, "--class"))
        dropped = {name for item in drop for name in _columns(item, source, "--drop")}
        if class_name in dropped:
            raise ConfigError(f"--drop names the class column {class_name!r}; choose another class (--class).")
        declared_nominal = {name for item in nominal for name in _columns(item, source, "--nominal")}
        kept = [column for column in source.columns if column.name not in dropped and column.name != class_name]
        if not kept:
            raise DatasetError(
                f"{_listed(source.paths)} has no attribute besides the class {class_name!r}, so there is nothing to "
                "classify from: is it a dataset's file? If so, check its separator (--sep) and --drop."
            )
        if CLASS_COLUMN in [column.name for column in kept]:
            raise ConfigError(
                f"{_listed(source.paths)} has a column named {CLASS_COLUMN!r} that is not the class "
                f"{class_name!r}, and the store names the class so; drop it (--drop {CLASS_COLUMN}), make it "
                "the class (--class), or rename the columns (--names)."
            )
        dates = [column.name for column in kept if column.kind == "date" and column.name not in declared_nominal]
        if dates:
            raise ConfigError(
                f"ARFF date attributes {dates} cannot be used as they are; drop them (--drop {dates[0]}) or read "
                f"them as nominal (--nominal {dates[0]})."
            )
        position_of = {column.name: position for position, column in enumerate(source.columns)}
        self.class_name, self.sources = class_name, [*kept, source.columns[position_of[class_name]]]
        self.nominal = np.array([
            column.kind != "numeric" or column.name in declared_nominal or column.name == class_name
            for column in self.sources
        ])
        self.observed = {position: set() for position, flag in enumerate(self.nominal) if flag}
        self.headerless = isinstance(source, _DelimitedSource) and not source.header
        self.positions = [position_of[column.name] for column in self.sources]

    def store_rows(self, chunk: _Chunk, missing: list[str]) -> np.ndarray:
        """The rows of ``chunk`` as the store writes them (None = missing), checking that numeric values
        are numbers and nominal values declared ones, and noting the values of the others.

        Each distinct token of the chunk is looked at once (``pandas.factorize``), not each cell.
        """
        block = chunk.values[:, self.positions]  # a copy
        codes, tokens = pd.factorize(block.reshape(-1))
        codes = codes.reshape(block.shape)
        is_missing = np.append(_objects(tokens).isin(missing).to_numpy(), True)  # code -1: None, missing
        block[is_missing[codes]] = None
        broken = np.flatnonzero(_objects(tokens).str.contains("[\r\n]", regex=True).to_numpy(dtype=bool))
        if len(broken):
            rows, columns = np.nonzero(codes == broken[0])
            raise DatasetError(
                f"{chunk.path}, line {chunk.lines[rows[0]]}: column {self.sources[columns[0]].name!r} holds "
                f"{_quote(tokens[broken[0]])}, a value with a line break, which the store cannot hold; remove it."
            )
        numeric = np.flatnonzero(~self.nominal)
        if len(numeric):
            used = _present(codes[:, numeric], is_missing)
            numbers = pd.to_numeric(_objects(tokens[used]), errors="coerce").to_numpy(dtype=np.float64)
            bad = used[~np.isfinite(numbers)]
            if len(bad):
                rows, columns = np.nonzero(np.isin(codes[:, numeric], bad))
                row, position = rows[0], numeric[columns[0]]
                line, name, token = chunk.lines[row], self.sources[position].name, block[row, position]
                hint = " (is line 1 a header? then give --header)" if line == 1 and self.headerless else ""
                raise DatasetError(
                    f"{chunk.path}, line {line}: column {name!r} is numeric but holds {_quote(token)}{hint}; "
                    f"declare it nominal (--nominal {name}), or if {_quote(token)} stands for a missing value, "
                    "say so (--missing TOKEN)."
                )
        for position in np.flatnonzero(self.nominal):
            column = self.sources[position]
            used = _present(codes[:, position], is_missing)
            self.observed[position].update(tokens[used])  # the values seen (a declared column's schema is its own)
            if column.declared is None:
                continue
            undeclared = used[~_objects(tokens[used]).isin(column.declared).to_numpy()]
            if len(undeclared):
                row = np.flatnonzero(np.isin(codes[:, position], undeclared))[0]
                raise DatasetError(f"{chunk.path}, line {chunk.lines[row]}: attribute {column.name!r} has value "
                                   f"{_quote(block[row, position])}, which its @attribute line does not declare "
                                   f"({_quote(str(column.declared))}); add it to the declared values or fix the line.")
        return block

    def schema(self) -> dict:
        """The ``attributes`` and ``class`` of the schema entry, with the nominal values seen."""
        *attributes, label = [
            {"name": column.name, "type": "numeric", "values": None} if not nominal
            else {"name": column.name, "type": "nominal",
                  "values": _ordered(self.observed[position]) if column.declared is None else column.declared}
            for position, (column, nominal) in enumerate(zip(self.sources, self.nominal))
        ]
        return {"attributes": attributes, "class": {**label, "name": CLASS_COLUMN}}


def _present(codes: np.ndarray, is_missing: np.ndarray) -> np.ndarray:
    """The distinct codes of tokens that are not missing among ``codes``."""
    used = np.unique(codes)
    return used[~is_missing[used]]


def _objects(values) -> pd.Series:
    """Tokens as a Series of objects: pandas would otherwise infer a string type, slow to build."""
    return pd.Series(values, dtype=object, copy=False)


def _ordered(values: set) -> list[str]:
    """Nominal values seen: in numeric order when all are numbers, else in string order."""
    numbers = pd.to_numeric(_objects(sorted(values)), errors="coerce")
    if numbers.notna().all():
        return [value for _, value in sorted(zip(numbers, sorted(values)))]
    return sorted(values)


def _columns(item: str, source, option: str) -> list[str]:
    """The column names an option's item gives: a name, a number, a range ``first-last``, or ``all``."""
    names = [column.name for column in source.columns]
    if item in names:
        return [item]
    if item == "all":
        return names
    numbers = re.fullmatch(r"(\d+)(?:-(\d+))?", item.strip())
    if numbers:
        first, last = int(numbers.group(1)), int(numbers.group(2) or numbers.group(1))
        if first <= last and first in source.numbered and last in source.numbered:
            return [source.numbered[number] for number in range(first, last + 1)]
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    numbered = f"{min(source.numbered)}..{max(source.numbered)}"
    raise ConfigError(f"{option} {item!r} names no column of {_listed(source.paths)}: its columns are {shown} (numbers "
                      f"{numbered}); give a name, a number or a range of numbers (2-4).")


def _one_column(item: str, source, option: str) -> str:
    """The one column an option names."""
    names = _columns(item, source, option)
    if len(names) != 1:
        raise ConfigError(f"{option} {item!r} names {len(names)} columns; name one.")
    return names[0]
