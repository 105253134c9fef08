"""The dataset store: a folder of data files, ``<name>.csv.gz`` or ``<name>.parquet``, typed by one ``schema.json``.

Format of a ``.csv.gz`` file (the one of ``../shared/datasets``): gzip'd UTF-8 CSV with a header row, class column
last, a missing value is an empty field, every other token is kept exactly as written. A ``.parquet`` file (for
datasets of millions of rows: read a column at a time, its values dictionary-coded) holds the same columns in the
same order, the nominal ones as strings (the CSV's tokens), the numeric ones as float64 (the CSV's tokens parsed as
``read_store_table`` parses them), a missing value as null, in row groups of ``ROW_GROUP_ROWS`` rows; the writers
make it from the CSV text (``write_store_stream``), so the two formats of a dataset read as one frame. A store holds
a dataset in one of the two formats (``data_file``).
``schema.json`` maps each dataset name to ``{"attributes": [{"name", "type", "values"}, ...],
"class": {"name", "type", "values"}}`` with type ``numeric`` or ``nominal`` and, for nominal
columns, the declared values. An optional ``manifest.csv`` gives each dataset's size, one row per
dataset (``read_manifest``).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import itertools
import json
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.files import locked, stops_held
from bncbench.core.names import check_path_name

if TYPE_CHECKING:  # pandas is imported where a table is read, so that `bncbench list datasets` does without it
    import pandas as pd

SCHEMA_FILE = "schema.json"
#: The name of the class column of every store file (its last).
CLASS_COLUMN = "class"
MANIFEST_FILE = "manifest.csv"
#: The formats of a store's data files and their suffixes; a dataset's file is in one of them (``data_file``).
STORE_FORMATS = {"csv": ".csv.gz", "parquet": ".parquet"}
#: Rows of a parquet store file's row groups: an out-of-core reader holds a row group decoded (with pyarrow's
#: default, 2^20 rows, 126-147 MiB above its baseline at 2M rows of 21 columns; 73-77 with 2^16,
#: ``reports/out_of_core_memory``).
ROW_GROUP_ROWS = 2**16
#: The counts of ``manifest.csv`` that bncbench reads (whole numbers), those every row must give first.
MANIFEST_COUNTS = ("rows", "n_classes", "n_attributes", "class_missing")
MANIFEST_REQUIRED = ("slug", "rows", "n_classes")
TYPES = ("numeric", "nominal")
DATA_DIR_ENV = "BNCBENCH_DATA_DIR"
DATA_DIR_HINT = (
    f"set the data directory with the config option data_dir=... or the environment variable "
    f"{DATA_DIR_ENV}"
)


def resolve_data_dir(value: str | Path | None) -> Path:
    """The dataset store directory, absolute (it need not exist yet): ``value`` (the ``data_dir`` config
    option), else ``$BNCBENCH_DATA_DIR``, else ``$XDG_CACHE_HOME/bncbench/datasets`` (default
    ``~/.cache/bncbench/datasets``)."""
    if value is None or str(value) == "":
        value = os.environ.get(DATA_DIR_ENV) or None
    if value is None:
        cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        value = Path(cache_home) / "bncbench" / "datasets"
    return Path(value).expanduser().resolve()


def data_file(data_dir: Path, name: str) -> Path:
    """Path of the data file of dataset ``name`` in the store ``data_dir``: its ``.csv.gz`` or its ``.parquet``
    file, whichever the store holds (the ``.csv.gz`` path when neither); a name that is not one plain file name
    (``../outside/secret``, an absolute path) is refused (``check_path_name``), and so is a store holding both."""
    held = [path for path in store_files(data_dir, name) if path.is_file()]
    if len(held) > 1:
        raise DatasetError(
            f"The data directory {data_dir} holds dataset '{name}' in two files, {' and '.join(p.name for p in held)}, "
            "so which one a run reads is not known: remove the one that is not current (a file copied in by hand, "
            "or left by a conversion that was stopped)."
        )
    return held[0] if held else store_files(data_dir, name)[0]


def store_files(data_dir: Path, name: str) -> list[Path]:
    """The paths dataset ``name`` may have in the store ``data_dir``, one per format of ``STORE_FORMATS``."""
    return [data_dir / store_file_name(name, file_format) for file_format in STORE_FORMATS]


def store_file_name(name: str, file_format: str) -> str:
    """The name of dataset ``name``'s data file in ``file_format`` (a key of ``STORE_FORMATS``); a name that is not
    one plain file name is refused (``check_path_name``)."""
    if file_format not in STORE_FORMATS:
        raise ConfigError(f"unknown store format {file_format!r}; the formats are {', '.join(STORE_FORMATS)}.")
    return check_path_name("dataset", name) + STORE_FORMATS[file_format]


def format_of(path: Path) -> str:
    """The format (a key of ``STORE_FORMATS``) of a store's data file."""
    return "parquet" if Path(path).suffix == ".parquet" else "csv"


def read_schema(data_dir: Path) -> dict:
    """Read ``schema.json`` of a store; an absent file reads as an empty schema."""
    path = data_dir / SCHEMA_FILE
    if not path.is_file():
        return {}
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as ex:
        raise DatasetError(
            f"{path} is not valid JSON ({ex}); repair it or restore it from the dataset store it was copied from."
        ) from ex
    if not isinstance(schema, dict):
        raise DatasetError(f"{path} must hold a JSON object mapping dataset names to entries.")
    return schema


def read_manifest(data_dir: Path) -> dict[str, dict]:
    """The rows of a store's ``manifest.csv`` by their ``slug``, with the counts of ``MANIFEST_COUNTS``
    it has as integers (``class_missing`` 0 when empty or absent); an absent file reads as empty. A
    DatasetError when the file cannot be read as UTF-8 CSV, lacks a column, or a count is not a whole number.
    """
    path = data_dir / MANIFEST_FILE
    if not path.is_file():
        return {}
    fix = "repair it (one row per dataset, see the data directory's README) or remove it"
    try:
        with open(path, encoding="utf-8", newline="") as file:
            rows = list(csv.DictReader(file, strict=True))
            header = rows[0].keys() if rows else []
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DatasetError(f"{path} cannot be read as a CSV file ({err}); {fix}.") from None
    lacking = [column for column in MANIFEST_REQUIRED if column not in header]
    if rows and lacking:
        raise DatasetError(f"{path} has no column {', '.join(lacking)}; {fix}.")
    manifest = {}
    for line, row in enumerate(rows, start=2):
        for column in [column for column in MANIFEST_COUNTS if column in header or column == "class_missing"]:
            value = row.get(column) or ("0" if column == "class_missing" else "")
            if not (isinstance(value, str) and value.strip().isdigit()):
                raise DatasetError(
                    f"{path}, line {line} ({row.get('slug')!r}): {column} is {value!r}, not a whole number; {fix}."
                )
            row[column] = int(value)
        manifest[row["slug"]] = row
    return manifest


def read_store_table(data_dir: Path, name: str) -> tuple[pd.DataFrame, list[str], str]:
    """Read and type-check dataset ``name`` of the store ``data_dir`` (its file, ``data_file``).

    Returns the frame of every column of the file in schema order (numeric columns float64, the class too when
    declared numeric: ``1`` and ``1.0`` are one value; nominal columns strings; NaN = missing), the names of the
    numeric attributes and that of the class column. A DatasetError when the file does not parse or does not
    match its schema entry.
    """
    path = data_file(data_dir, name)
    entry = read_schema(data_dir).get(name)
    if entry is None:
        raise DatasetError(
            f"{data_dir / SCHEMA_FILE} has no entry for dataset '{name}', so the columns of "
            f"{path.name} cannot be typed. Add the entry (attributes with type numeric|nominal "
            "and the class), or delete the file to fetch the dataset again from OpenML."
        )
    attributes, class_attr = _schema_columns(entry, name)
    frame = _read_parquet(path, entry) if format_of(path) == "parquet" else _read_csv(path)
    columns = [a["name"] for a in attributes] + [class_attr["name"]]
    _check_columns(frame, columns, class_attr["name"], path)
    frame = frame[columns]
    numeric = []
    for attr in [*attributes, class_attr]:
        column = attr["name"]
        if attr.get("type") == "numeric":
            frame[column] = _to_float(frame[column], column, path)
            if attr is not class_attr:
                numeric.append(column)
        elif attr.get("values") is not None:
            _check_declared_values(frame[column], attr["values"], column, path)
    return frame, numeric, class_attr["name"]


def write_store_table(data_dir: Path, name: str, frame: pd.DataFrame, entry: dict, file_format: str = "csv") -> None:
    """Write dataset ``name`` held in memory, ``frame`` (every column in store order, class last; NaN = missing)
    with its schema ``entry``, into the store in ``file_format`` (:func:`write_store_stream`)."""

    def write(stream: BinaryIO) -> dict:
        stream.write(frame.to_csv(index=False, na_rep="", lineterminator="\n").encode("utf-8"))
        return entry

    write_store_stream(data_dir, name, write, file_format=file_format)


def write_store_stream(
    data_dir: Path, name: str, write: Callable[[BinaryIO], dict], replace: bool = True, compresslevel: int = 9,
    file_format: str = "csv",
) -> dict:
    """Write dataset ``name`` into the store ``data_dir`` (created if absent): its data file in ``file_format`` (a
    key of ``STORE_FORMATS``; a file of the other format that it replaces is removed) and its ``schema.json``
    entry, which it returns.

    The data go to a temporary file that is renamed into place only after ``schema.json`` is
    updated, so an interrupted write never leaves a partial data file, and a data file never
    exists without its schema entry; if that rename fails, ``schema.json`` is put back as it was, so a
    retry is not refused. ``schema.json`` is rewritten under a lock, so processes adding different
    datasets to one store do not lose each other's entries. New files take the umask's mode, a replaced
    one keeps its own (:func:`_temporary_file`).

    ``write(stream)`` writes the CSV text (UTF-8 bytes, header row first, class column last) into the binary
    stream, in as many pieces as it likes, and returns the schema entry. Without ``replace``, a dataset of that
    name already in the store is refused (:func:`refuse_present`), checked again under the lock. ``compresslevel``
    is gzip's level: 9 (the default, that of the files fetched so far), or lower for speed. A parquet file is
    made from that text once whole (``_parquet_from_csv``), so that both formats hold the same values.
    """
    target = data_dir / store_file_name(name, file_format)
    data_dir.mkdir(parents=True, exist_ok=True)
    with _temporary_file(data_dir, target.name) as temp:
        if file_format == "csv":
            entry = _write_gzip(temp, write, compresslevel)
        else:
            with _temporary_file(data_dir, f"{name}.csv.gz") as text:
                entry = _write_gzip(text, write, compresslevel=1)
                _parquet_from_csv(text, temp, entry, name)
        with locked(data_dir / f".{SCHEMA_FILE}.lock"):  # released when the process dies
            schema = read_schema(data_dir)
            if not replace:
                refuse_present(data_dir, name, schema)
            schema_path = data_dir / SCHEMA_FILE
            before = schema_path.read_bytes() if schema_path.is_file() else None
            schema[name] = entry
            _write_schema(data_dir, (json.dumps(schema, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
            try:
                os.replace(temp, target)
            except BaseException:  # the entry goes with its file: the schema as it was (a retry is then not refused)
                if before is None:
                    schema_path.unlink(missing_ok=True)
                else:
                    _write_schema(data_dir, before)
                raise
            for other in store_files(data_dir, name):
                if other != target:
                    other.unlink(missing_ok=True)
    return entry


def convert_store_file(data_dir: Path, name: str, file_format: str) -> tuple[Path, Path]:
    """Rewrite dataset ``name`` of the store ``data_dir`` in ``file_format`` (a key of ``STORE_FORMATS``) with the
    same values (module docstring: a parquet file's numbers written back as CSV are Python's shortest tokens of
    them, ``39`` becomes ``39.0``), its schema entry's ``file`` renamed; return its file before and after (the
    same path when it is already in that format). A DatasetError when the store lacks the dataset."""
    before, entry = data_file(data_dir, name), read_schema(data_dir).get(name)
    if not before.is_file() or entry is None:
        raise DatasetError(f"The data directory {data_dir} holds no dataset '{name}' (its data file and its "
                           f"{SCHEMA_FILE} entry) to convert; name one of the datasets it holds, or add it "
                           "(bncbench data add).")
    if format_of(before) == file_format:
        return before, before
    if "file" in entry:
        entry = {**entry, "file": store_file_name(name, file_format)}

    def write(stream: BinaryIO) -> dict:
        if format_of(before) == "csv":
            with gzip.open(before, "rb") as text:
                shutil.copyfileobj(text, stream)
        else:
            import pyarrow.parquet as pq

            for number, batch in enumerate(pq.ParquetFile(before).iter_batches()):
                text = batch.to_pandas().to_csv(index=False, header=number == 0, na_rep="", lineterminator="\n")
                stream.write(text.encode("utf-8"))
        return entry

    write_store_stream(data_dir, name, write, file_format=file_format)
    return before, data_file(data_dir, name)


def _write_gzip(path: Path, write: Callable[[BinaryIO], dict], compresslevel: int) -> dict:
    """``write`` the CSV text into the gzip file ``path``; return the entry it returns."""
    # no file name in the gzip header (it would be the random temporary one) and mtime 0: the same data give the
    # same bytes, hence the same digest
    with open(path, "wb") as raw, gzip.GzipFile(
        filename="", fileobj=raw, mode="wb", compresslevel=compresslevel, mtime=0
    ) as gz:
        return write(gz)


def _parquet_from_csv(text: Path, path: Path, entry: dict, name: str) -> None:
    """Write the parquet store file ``path`` of the gzip'd CSV store text ``text`` typed by its schema ``entry``
    (module docstring): read a block at a time, the numeric columns parsed as ``read_store_table`` parses them
    (their bad tokens refused, with the line), in row groups of ``ROW_GROUP_ROWS`` rows. The same text and pyarrow
    give the same bytes."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    attributes, class_attr = _schema_columns(entry, name)
    columns = [attr["name"] for attr in [*attributes, class_attr]]
    numeric = {attr["name"] for attr in [*attributes, class_attr] if attr["type"] == "numeric"}
    schema = pa.schema([(column, pa.float64() if column in numeric else pa.string()) for column in columns])
    convert = pa_csv.ConvertOptions(column_types={column: pa.string() for column in columns},
                                    strings_can_be_null=True, null_values=[""])
    reader = pa_csv.open_csv(pa.input_stream(text, compression="gzip"), convert_options=convert)
    if reader.schema.names != columns:
        raise DatasetError(f"The CSV text of dataset '{name}' has the columns {reader.schema.names}, not those of its "
                           f"schema entry, {columns}; write its header as the entry lists them, class last.")
    start, held, where = 0, [], f"the CSV text of dataset '{name}'"
    with pq.ParquetWriter(path, schema) as writer:
        for batch in itertools.chain(reader, [None]):
            if batch is not None:
                held.append(_typed_batch(batch, schema, numeric, start, where))
                start += batch.num_rows
            table = pa.Table.from_batches(held, schema)
            whole = table.num_rows if batch is None else table.num_rows - table.num_rows % ROW_GROUP_ROWS
            if whole:
                writer.write_table(table.slice(0, whole), row_group_size=ROW_GROUP_ROWS)
                held = table.slice(whole).to_batches()


def _typed_batch(batch, schema, numeric: set, start: int, where: str):
    """A batch of a CSV store text's string columns with its ``numeric`` ones parsed (``_to_float``, whose errors
    name the lines from ``start``)."""
    import pandas as pd
    import pyarrow as pa

    arrays = []
    for column in schema.names:
        values = batch.column(column)
        if column in numeric:
            strings = values.to_pandas().set_axis(pd.RangeIndex(start, start + len(values)))
            values = pa.array(_to_float(strings, column, where).to_numpy(), pa.float64(), from_pandas=True)
        arrays.append(values)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _write_schema(data_dir: Path, text: bytes) -> None:
    """Replace the store's ``schema.json`` with ``text`` at once (a reader sees the old file or the new)."""
    with _temporary_file(data_dir, SCHEMA_FILE) as schema_temp:
        schema_temp.write_bytes(text)
        os.replace(schema_temp, data_dir / SCHEMA_FILE)


def refuse_present(data_dir: Path, name: str, schema: dict | None = None) -> None:
    """Raise when the store ``data_dir`` holds dataset ``name`` (its file or its schema entry).

    ``schema`` is the store's ``schema.json`` when already read.
    """
    schema = read_schema(data_dir) if schema is None else schema
    held = [data_file(data_dir, name).name] if data_file(data_dir, name).is_file() else []
    held += [f"an entry in {SCHEMA_FILE}"] if name in schema else []
    if held:
        raise DatasetError(
            f"Dataset '{name}' is already in the store {data_dir} ({' and '.join(held)}); add it with "
            "replace (bncbench data add --replace) to overwrite it, or give it another name."
        )


@contextlib.contextmanager
def _temporary_file(directory: Path, final_name: str) -> Iterator[Path]:
    """A hidden temporary file beside its final path, removed unless renamed away, with the mode of the file it
    replaces or else of a new file (``0o666`` less the umask), not ``mkstemp``'s 0600: a store a group shares
    stays readable by the group."""
    temp = None
    try:
        with stops_held():  # a Ctrl-C between the file's creation and its name known here would leave the file
            handle, name = tempfile.mkstemp(dir=directory, prefix=f".{final_name}.", suffix=".tmp")
            temp = Path(name)
            final = directory / final_name
            os.fchmod(handle, stat.S_IMODE(final.stat().st_mode) if final.is_file() else 0o666 & ~_umask())
            os.close(handle)
        yield temp
    finally:
        if temp is not None:
            temp.unlink(missing_ok=True)


def _umask() -> int:
    """The process's umask (read by setting it, then set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _schema_columns(entry: object, name: str) -> tuple[list[dict], dict]:
    """Validate a schema entry; return its attribute entries and its class entry."""
    problem = None
    if not isinstance(entry, dict) or not isinstance(entry.get("attributes"), list):
        problem = "it needs an 'attributes' list"
    elif not isinstance(entry.get("class"), dict) or "name" not in entry["class"]:
        problem = "it needs a 'class' object with a 'name'"
    else:
        for attr in entry["attributes"]:
            if not isinstance(attr, dict) or "name" not in attr or attr.get("type") not in TYPES:
                problem = f"attribute {attr!r} needs a 'name' and a type numeric|nominal"
                break
    if problem:
        raise DatasetError(f"The schema.json entry of dataset '{name}' is malformed: {problem}.")
    return entry["attributes"], entry["class"]


def _read_csv(path: Path) -> pd.DataFrame:
    """Read a store file with every value as a string (missing = empty field)."""
    import pandas as pd

    try:
        # The pyarrow engine rejects rows with too few fields; the C engine pads them with NaN.
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], engine="pyarrow")
    except (OSError, EOFError, zlib.error, ValueError) as ex:
        raise DatasetError(
            f"{path} does not parse as a gzip'd CSV file ({type(ex).__name__}: {ex}). "
            "Replace it with a good copy, or delete it to fetch the dataset again from OpenML "
            "(when its config has an openml_id)."
        ) from ex


def _read_parquet(path: Path, entry: dict) -> pd.DataFrame:
    """Read a parquet store file as ``_read_csv`` reads a CSV one: nominal columns as strings, numeric ones as
    stored (NaN = missing), its column types checked first (``check_parquet_types``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_parquet_types(path, entry)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as ex:
        raise DatasetError(_not_parquet(path, ex)) from ex
    return pa.table([column.cast(pa.string()) if pa.types.is_dictionary(column.type) else column
                     for column in table.columns], names=table.column_names).to_pandas()


def check_parquet_types(path: Path, entry: dict) -> None:
    """Raise when a parquet store file holds a nominal column as anything but strings (its tokens as written:
    ``01`` and ``1`` are two values) or a numeric one as anything but numbers or strings; its footer alone is
    read. The columns themselves are checked where the file is read (``_check_columns``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as ex:
        raise DatasetError(_not_parquet(path, ex)) from ex
    for attr in [*entry.get("attributes", []), entry.get("class") or {}]:
        if attr.get("name") not in schema.names:
            continue
        kind = schema.field(attr["name"]).type
        values = kind.value_type if pa.types.is_dictionary(kind) else kind
        text = pa.types.is_string(values) or pa.types.is_large_string(values)
        number = pa.types.is_floating(kind) or pa.types.is_integer(kind)
        if not (text or (number and attr.get("type") == "numeric")):
            expected = "strings (its tokens)" if attr.get("type") != "numeric" else "numbers or strings"
            raise DatasetError(
                f"Column '{attr['name']}' of {path} is stored as {kind}, but schema.json declares it "
                f"{attr.get('type')}, which a parquet store file holds as {expected}. Write the file again from "
                "its CSV (bncbench data convert), or fix the column's type in schema.json."
            )


def _not_parquet(path: Path, ex: Exception) -> str:
    """What to say of a file that pyarrow does not read as parquet (its reason on one line)."""
    return (f"{path} does not read as a parquet file ({type(ex).__name__}: {' '.join(str(ex).split())}). Replace it "
            "with a good copy, or delete it (and its schema.json entry) and add the dataset again.")


def _check_columns(frame: pd.DataFrame, columns: list[str], class_name: str, path: Path) -> None:
    """Raise when the file's header differs from the schema's columns."""
    if class_name not in frame.columns:
        raise DatasetError(
            f"The class column '{class_name}' is absent from {path}; its columns are "
            f"{list(frame.columns)}. Put the class in a column named '{class_name}' or fix "
            "the class name in schema.json."
        )
    missing = [c for c in columns if c not in frame.columns]
    extra = [c for c in frame.columns if c not in columns]
    if missing or extra or len(frame.columns) != len(columns):
        raise DatasetError(
            f"{path} does not match its schema.json entry: columns in the schema but not in the "
            f"file: {missing}; in the file but not in the schema: {extra}. Make the file's header "
            "and the schema list the same columns."
        )


def _to_float(values: pd.Series, column: str, path: Path | str) -> pd.Series:
    """Convert a numeric column, raising on tokens that are not numbers."""
    import pandas as pd

    numbers = pd.to_numeric(values, errors="coerce")
    for bad, problem in (
        (numbers.isna() & values.notna(), "is declared numeric in schema.json but holds {} non-numeric values ({}). "
         "Declare it nominal, or fix the values (a missing value is an empty field)."),
        (numbers.isin([float("inf"), float("-inf")]), "holds {} infinite values ({}), which cannot be discretised. "
         "Write an unknown value as missing (an empty field), or declare the column nominal in schema.json if "
         "these are labels."),
    ):
        if bad.any():
            examples = ", ".join(f"line {row + 2}: {values[row]!r}" for row in bad[bad].index[:3])
            raise DatasetError(f"Column '{column}' of {path} " + problem.format(int(bad.sum()), examples))
    return numbers.astype("float64")


def _check_declared_values(values: pd.Series, declared: list, column: str, path: Path) -> None:
    """Raise when a nominal column holds values its schema entry does not declare."""
    unknown = values[values.notna() & ~values.isin([str(v) for v in declared])].unique()
    if len(unknown):
        raise DatasetError(
            f"Column '{column}' of {path} holds values not declared in schema.json: "
            f"{sorted(unknown)[:5]} (declared: {declared[:10]}). Add them to the declared values "
            "or fix the file."
        )
