"""What a bundle's runs must be before one of them is imported: of the types the format says, each
run's ``cfg_hash`` that of its own params, and its numbers consistent.

The manifest's checksums (``bncbench.bundles.format``) say that the files are those exported; they do
not say that what the files hold is a run bncbench logged: anyone can edit a table and compute its
checksums again. :func:`problems` checks what can be checked from the bundle alone:

- every field has the type of the format (``RUN_COLUMNS``, ``METRIC_COLUMNS``);
- the ``cfg_hash`` tag is the hash of the run's params (``bncbench.protocol.cell.logged_hashes``), so
  that a run cannot be read as a cell of other settings than those it logged;
- every metric is logged once per step; each ``fold/<metric>`` has its mean ``<metric>``, logged
  once, equal to the mean of the folds (within ``REL_TOLERANCE``), and each mean its folds but a cell's
  peak memory and CPU time (``tag.RESOURCES``, one value a cell); each loss has one value per fold
  of the run's cross-validation (``cv.repetitions`` x ``cv.folds``), and no fold lies outside it;
- the dataset inputs read the data of the ``data_digest`` tag;
- every name and value is one MLflow's store takes whole (not refused, not cut to its length);
- every number lies in its domain (``bncbench.core.metrics.DOMAINS``: losses in their ranges, counts and
  times non-negative, all finite), counts of rows are whole, each fold's counts agree with its rates
  (``zero_one_loss`` is ``errors / test_rows``, ``clipped_log_loss`` is 34.5 nats a zero-probability row,
  no more errors than test rows) and a run ends after it starts.

A run forged consistently (folds and mean changed together, the hash of its params) passes: these
checks find corruption and careless edits, not a forger (docs/bundles.md).
"""

import json
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from bncbench.core.metrics import DOMAINS, LOG_LOSS_MAX, LOGGED_LOSSES, LOSSES, WHOLE_COUNTS
from bncbench.protocol.cell import logged_hashes
from bncbench.tracking import tags as tag
from bncbench.tracking.limits import MAX_LENGTH, refused_name

#: How far a logged mean may lie from the mean of its folds (relative; absolute near 0): the runner
#: logs ``numpy.mean`` of the folds, which any reader computes again to the last bits.
REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-12
_JSON_COLUMNS = {"tags": dict, "params": dict, "inputs": list}
_DATASET_TEXT = ("name", "digest", "source_type", "source")
_DATASET_OPTIONAL_TEXT = ("schema", "profile")


def parse_runs(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``runs`` with ``tags``, ``params`` and ``inputs`` parsed from their JSON text, and the problems
    that stop it (a field of another type than the format's, text that is not JSON)."""
    found = list(_column_problems(runs, {"run_id": "text", "run_name": "text", "start_time": "time",
                                         "end_time": "time", "tags": "text", "params": "text", "inputs": "text"},
                                  "runs"))
    if found:
        return runs, found
    parsed = runs.copy()
    for column, kind in _JSON_COLUMNS.items():
        values = []
        for run_id, text in zip(runs["run_id"], runs[column]):
            try:
                value = json.loads(text)
            except ValueError as err:
                found.append(f"run {run_id}: {column} is not JSON ({err})")
                value = kind()
            values.append(value)
        parsed[column] = values
    return parsed, found


def problems(runs: pd.DataFrame, metrics: pd.DataFrame) -> list[str]:
    """Every problem of the runs (with their fields parsed, :func:`parse_runs`) and their metrics, as
    ``run <id> (<name>): <field> <reason>``; empty when the bundle may be imported."""
    found = list(_column_problems(metrics, {"run_id": "text", "key": "text", "value": "number",
                                            "step": "integer", "timestamp": "integer"}, "metrics"))
    if found:
        return found
    by_run, folds = {}, {}
    for run in runs.itertuples(index=False):
        by_run[run.run_id] = list(_field_problems(run))
        if not by_run[run.run_id]:  # its params are a cell's: its number of folds is known
            folds[run.run_id] = int(run.params["cv.repetitions"]) * int(run.params["cv.folds"])
    for run_id, problem in _number_problems(metrics[metrics["run_id"].isin(list(folds))], folds):
        by_run[run_id].append(problem)
    names = dict(zip(runs["run_id"], runs["run_name"]))
    return [f"run {run_id} ({names[run_id]}): {problem}" for run_id, found in by_run.items() for problem in found]


def _column_problems(table: pd.DataFrame, kinds: dict[str, str], name: str) -> Iterator[str]:
    """The columns of ``table`` that do not hold their kind of value: ``text`` (strings, none
    missing), ``integer``, ``time`` (integers, or missing), ``number`` (real numbers)."""
    for column, kind in kinds.items():
        bad = _not_of_kind(table[column], kind)
        if bad.any():
            row = table[bad].iloc[0]
            owner = f"run {row['run_id']}: " if column != "run_id" and isinstance(row["run_id"], str) else ""
            value = row[column].item() if isinstance(row[column], np.generic) else row[column]
            yield (f"{owner}{name} column {column} holds {value!r} ({type(value).__name__}), "
                   f"not {_KINDS[kind]} ({int(bad.sum())} such rows)")


_KINDS = {"text": "text", "number": "a number", "integer": "an integer", "time": "an integer (milliseconds) or missing"}


def _not_of_kind(values: pd.Series, kind: str) -> pd.Series:
    """Which values are not of ``kind`` (``_column_problems``): by the column's type where it says, else
    value by value."""
    kind_of_type = values.dtype.kind
    if kind == "text":
        if pd.api.types.is_string_dtype(values.dtype) and kind_of_type != "O":
            return values.isna()
        return ~values.map(lambda value: isinstance(value, str)).astype(bool)
    if kind_of_type in "iu" or (kind_of_type == "f" and kind == "number"):
        return pd.Series(False, index=values.index)
    if kind_of_type == "f":
        whole = np.isfinite(values) & (values == np.floor(values))
        return ~(whole | values.isna()) if kind == "time" else ~whole
    return ~values.map(lambda value: _of_kind(value, kind)).astype(bool)


def _of_kind(value, kind: str) -> bool:
    if isinstance(value, bool):
        return False
    if kind == "number":
        return isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, (float, np.floating)):
        return float(value).is_integer() or (kind == "time" and math.isnan(value))
    return kind == "time" and value is None


def _field_problems(run) -> Iterator[str]:
    """The parsed fields of a run that are not of the format's types, or whose ``cfg_hash`` is not
    its params'."""
    for column, kind in _JSON_COLUMNS.items():
        value = getattr(run, column)
        if not isinstance(value, kind):
            yield f"{column} is {type(value).__name__}, not {kind.__name__}"
            return
    for column in ("tags", "params"):
        bad = [key for key, value in getattr(run, column).items() if not isinstance(value, str)]
        if bad:
            yield f"{column} {bad[0]!r} is {getattr(run, column)[bad[0]]!r}, not text"
            return
    if pd.notna(run.start_time) and pd.notna(run.end_time) and run.end_time < run.start_time:
        yield f"end_time {run.end_time} is before its start_time {run.start_time}"
    stored = next(_store_problems(run), None)
    if stored:
        yield stored
        return
    missing = [name for name in tag.CELL if name not in run.tags]
    if missing:
        yield f"tags lack {', '.join(missing)}"
        return
    yield from _input_problems(run.inputs, run.tags.get(tag.DATA_DIGEST))
    try:
        hashes = logged_hashes(run.params)
    except ValueError as err:
        yield f"params are not a cell's config: {err}"
        return
    if run.tags[tag.CFG_HASH] not in hashes:
        yield (
            f"tag cfg_hash {run.tags[tag.CFG_HASH]!r} is not the hash of its params ({', '.join(sorted(hashes))}): "
            "its params or its cfg_hash were changed"
        )


def _store_problems(run) -> Iterator[str]:
    """The params and tags MLflow's store would refuse or cut (``bncbench.tracking.limits``: a name it does not
    take, a value over its length, a NUL): found before the first run is written, so that an import is whole
    or nothing, and a param cut to its limit cannot leave a run whose ``cfg_hash`` is not its params'."""
    for column, longest in MAX_LENGTH.items():
        for key, value in getattr(run, column).items():
            problem = refused_name(column, key) or (
                f"{column} {key!r} is {len(value)} characters long, over the {longest} MLflow keeps" if len(value) > longest
                else f"{column} {key!r} holds a NUL character" if "\x00" in value else "")
            if problem:
                yield problem
                return


def _input_problems(inputs: list, digest: str | None) -> Iterator[str]:
    """The dataset inputs that are not ``DatasetInput.to_dictionary()``'s of the data ``digest``."""
    for found in inputs:
        dataset = found.get("dataset") if isinstance(found, dict) else None
        tags = found.get("tags") if isinstance(found, dict) else None
        if (
            not isinstance(dataset, dict)
            or not isinstance(tags, dict)
            or not all(isinstance(dataset.get(key), str) for key in _DATASET_TEXT)
            or not all(isinstance(dataset.get(key), (str, type(None))) for key in _DATASET_OPTIONAL_TEXT)
            or not all(isinstance(key, str) and isinstance(value, str) for key, value in tags.items())
        ):
            yield f"inputs hold {str(found)[:80]!r}, not a dataset input (dataset: name, digest, source_type, source; tags)"
            return
        if digest is not None and dataset["digest"] != digest:
            yield f"inputs read the data {dataset['digest']!r}, its tag data_digest says {digest!r}"
            return


def _number_problems(metrics: pd.DataFrame, folds: dict[str, int]) -> Iterator[tuple[str, str]]:
    """``(run id, problem)`` of the metrics logged twice at a step, or that disagree with each other or
    with their run's number of ``folds`` (over the whole table at once: a bundle has millions of values)."""
    for run_id in folds.keys() - set(metrics["run_id"]):
        yield run_id, "has no metrics"
    for key, run_id in metrics.drop_duplicates("key")[["key", "run_id"]].itertuples(index=False):
        problem = refused_name("metrics", key)
        if problem:
            yield run_id, f"metric {problem}"
    twice = metrics[metrics.duplicated(["run_id", "key", "step"], keep=False)]
    for (run_id, key, step), values in twice.groupby(["run_id", "key", "step"], sort=False)["value"]:
        yield run_id, f"metric {key} has {len(values)} values at step {step} ({values.tolist()})"
    metrics = metrics[~metrics["run_id"].isin(set(twice["run_id"]))]
    yield from _domain_problems(metrics)
    yield from _count_problems(metrics)
    of_folds = metrics["key"].str.startswith(tag.FOLD_PREFIX)
    means = metrics[~of_folds].groupby(["run_id", "key"], sort=False)["value"].agg(logged="first", size="size")
    series = (
        metrics[of_folds]
        .assign(key=lambda table: table["key"].str.removeprefix(tag.FOLD_PREFIX))
        .groupby(["run_id", "key"], sort=False)
        .agg(mean=("value", "mean"), first=("step", "min"), last=("step", "max"), n=("step", "size"))
    )
    for (run_id, key), logged in means[means["size"] > 1].iterrows():
        yield run_id, f"metric {key} (a mean) is logged {int(logged['size'])} times"
    for run_id, key in means.index.difference(series.index):
        if key not in tag.RESOURCES:  # one value a cell, no folds (bncbench.core.resources)
            yield run_id, f"metric {key} is a mean without its folds ({tag.FOLD_PREFIX}{key})"
    for run_id, key in series.index.difference(means.index):
        yield run_id, f"metric {tag.FOLD_PREFIX}{key} has no mean ({key})"
    expected = series.index.get_level_values("run_id").map(folds).to_numpy()
    loss = series.index.get_level_values("key").isin(list(LOGGED_LOSSES))
    outside = (series["first"] < 0) | (series["last"] >= expected)
    incomplete = loss & ((series["n"] != expected) | (series["first"] != 0))
    for (run_id, key), row in series[outside | incomplete].iterrows():
        yield run_id, (f"metric {tag.FOLD_PREFIX}{key} has {int(row['n'])} values at steps {int(row['first'])}..{int(row['last'])}, "
                       f"not one at each fold 0..{folds[run_id] - 1} of its cross-validation")
    paired = series.join(means, how="inner")
    logged, computed = paired["logged"].to_numpy(float), paired["mean"].to_numpy(float)
    agree = np.isclose(logged, computed, rtol=REL_TOLERANCE, atol=ABS_TOLERANCE) | (np.isnan(logged) & np.isnan(computed))
    for (run_id, key), row in paired[~agree].iterrows():
        yield run_id, (f"metric {key} is {float(row['logged'])!r}, the mean of its folds {tag.FOLD_PREFIX}{key} "
                       f"is {float(row['mean'])!r}")
    present = set(series.index)
    for run_id in folds.keys() & set(metrics["run_id"]):
        missing = [loss for loss in LOSSES if (run_id, loss) not in present]
        if missing:
            yield run_id, f"has no folds of {', '.join(missing)}"


def _domain_problems(metrics: pd.DataFrame) -> Iterator[tuple[str, str]]:
    """``(run id, problem)`` of the first value of each metric outside its domain (``DOMAINS``) or not finite,
    and of each count of rows whose fold is not a whole number."""
    name = metrics["key"].str.removeprefix(tag.FOLD_PREFIX)
    low, high = (name.map({key: bounds[i] for key, bounds in DOMAINS.items()}) for i in (0, 1))
    value = metrics["value"].to_numpy(float)
    inside = (value >= low - ABS_TOLERANCE) & (value <= high * (1 + REL_TOLERANCE) + ABS_TOLERANCE)
    outside = low.notna() & ~(np.isfinite(value) & inside)
    fractional = ~outside & metrics["key"].isin([tag.FOLD_PREFIX + key for key in WHOLE_COUNTS]) & (value != np.round(value))
    for bad, rule in ((outside, "outside its domain [{:g}, {:g}]"), (fractional, "not a whole number of rows")):
        for row in metrics[bad].drop_duplicates(["run_id", "key"]).itertuples(index=False):
            where = f" at fold {row.step}" if row.key.startswith(tag.FOLD_PREFIX) else ""
            domain = DOMAINS[row.key.removeprefix(tag.FOLD_PREFIX)]
            yield row.run_id, f"metric {row.key} is {row.value!r}{where}, {rule.format(*domain)}"


def _count_problems(metrics: pd.DataFrame) -> Iterator[tuple[str, str]]:
    """``(run id, problem)`` of the first fold of a run whose counts disagree with its rates: ``zero_one_loss``
    not ``errors / test_rows``, more errors or zero-probability rows than test rows, ``clipped_log_loss`` not
    ``LOG_LOSS_MAX`` a zero-probability row, or more than the ``log_loss`` (a rule holds where a run logged
    its metrics: those logged before a count existed lack it)."""
    counted = ["zero_one_loss", "errors", "test_rows", "zero_probability_rows", "clipped_log_loss", "log_loss"]
    folds = metrics[metrics["key"].isin([tag.FOLD_PREFIX + key for key in counted])]
    table = folds.assign(key=folds["key"].str.removeprefix(tag.FOLD_PREFIX)).pivot(
        index=["run_id", "step"], columns="key", values="value").reindex(columns=counted)
    table["clipped"] = LOG_LOSS_MAX * table["zero_probability_rows"] / table["test_rows"]

    def close(a, b):
        return np.isclose(table[a], b, rtol=REL_TOLERANCE, atol=ABS_TOLERANCE)

    rules = [  # (the problem, the metrics it reads, where it is broken)
        ("fold/errors {errors:g} exceeds fold/test_rows {test_rows:g}", ["errors", "test_rows"],
         table["errors"] > table["test_rows"]),
        ("fold/zero_one_loss is {zero_one_loss!r}, but fold/errors / fold/test_rows is {errors:g} / {test_rows:g}",
         ["zero_one_loss", "errors", "test_rows"], ~close("zero_one_loss", table["errors"] / table["test_rows"])),
        ("fold/zero_probability_rows {zero_probability_rows:g} exceeds fold/test_rows {test_rows:g}",
         ["zero_probability_rows", "test_rows"], table["zero_probability_rows"] > table["test_rows"]),
        ("fold/clipped_log_loss is {clipped_log_loss!r}, but {zero_probability_rows:g} zero-probability rows of "
         "{test_rows:g} clip {clipped!r}", ["clipped_log_loss", "zero_probability_rows", "test_rows"],
         ~close("clipped_log_loss", table["clipped"])),
        ("fold/clipped_log_loss {clipped_log_loss!r} exceeds fold/log_loss {log_loss!r}", ["clipped_log_loss", "log_loss"],
         table["clipped_log_loss"] > table["log_loss"] * (1 + REL_TOLERANCE) + ABS_TOLERANCE),
    ]
    for rule, reads, broken in rules:
        found = table[broken & table[reads].notna().all(axis=1)]
        for (run_id, step), row in found.groupby(level="run_id", sort=False).head(1).iterrows():
            yield run_id, rule.format(**{key: float(value) for key, value in row.items()}) + f" at fold {step}"
