"""The layout of a bundle on disk: its files, its manifest, and reading one back only when it is whole.

A bundle is a folder::

    manifest.json            format, format_version, id, experiment, bncbench_version, created,
                             counts {runs, metrics, predictions, artifacts}, files {relative path: sha256}
    runs.parquet             one row per finished cell run (RUN_COLUMNS); tags, params and MLflow
                             dataset inputs as JSON text
    metrics.parquet          every logged metric value with its step and time (METRIC_COLUMNS)
    predictions/<run>.parquet  optional: a run's ``predictions.parquet`` artifact, byte for byte
    artifacts.parquet        a run's other artifacts that say what produced its numbers, one row
                             each (ARTIFACT_COLUMNS, the content byte for byte): its ``config.yaml``,
                             ``structure.json`` and diagnostics tables (``*.csv``) of at most
                             ``MAX_CARRIED_BYTES`` (a long trace stays in the store)

Bundles written before artifacts travelled have no ``artifacts`` count and no ``artifacts.parquet``.

Runs are keyed by their original run id (the id in the store that first ran them). The bundle's ``id``
is the sha256 of its files' names and hashes: the same runs exported twice make the same id.
"""

import fnmatch
import hashlib
import json
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import pandas as pd

from bncbench.core.errors import BncbenchError, ConfigError
from bncbench.bundles.verify import parse_runs, problems
from bncbench.core.names import check_path_name
from bncbench.tracking import tags as tag

FORMAT = "bncbench-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
RUNS = "runs.parquet"
METRICS = "metrics.parquet"
PREDICTIONS_DIR = "predictions"
PREDICTIONS_ARTIFACT = tag.PREDICTIONS_ARTIFACT
ARTIFACTS = "artifacts.parquet"
ARTIFACT_COLUMNS = ["run_id", "name", "content"]
#: The artifacts of a run that travel in a bundle (``ARTIFACTS``): what says what produced its numbers;
#: the predictions travel apart, on request, and figures are drawn again from the tables.
CARRIED_ARTIFACTS = (tag.CONFIG_ARTIFACT, tag.STRUCTURE_ARTIFACT, "*.csv")
#: A carried artifact larger than this stays in the store (an HDP run's concentration trace: 8 MB).
MAX_CARRIED_BYTES = 256 * 1024
RUN_COLUMNS = ["run_id", "run_name", "start_time", "end_time", "tags", "params", "inputs"]
METRIC_COLUMNS = ["run_id", "key", "value", "step", "timestamp"]
#: Parquet compression of the tables (zstd: about a third of snappy's size on metric tables).
COMPRESSION = "zstd"
_MANIFEST_KEYS = {"format": str, "format_version": int, "id": str, "experiment": str, "bncbench_version": str,
                  "created": str, "counts": dict, "files": dict}
_SHA256 = re.compile(r"[0-9a-f]{64}")


class BundleError(BncbenchError, ValueError):
    """A bundle cannot be read: missing, truncated, changed since export, or of an unknown format."""


@dataclass(frozen=True)
class Bundle:
    """A bundle read back whole (:func:`read_bundle`).

    Attributes
    ----------
    path : Path
        Its folder.
    manifest : dict
        ``manifest.json``.
    runs, metrics : pandas.DataFrame
        The tables, with ``tags``, ``params`` and ``inputs`` parsed from JSON.
    predictions : dict of str to Path
        Original run id -> its predictions file, for the runs exported with predictions.
    artifacts : dict of str to dict of str to bytes
        Original run id -> its other artifacts' contents, by name.
    """

    path: Path
    manifest: dict
    runs: pd.DataFrame
    metrics: pd.DataFrame
    predictions: dict[str, Path]
    artifacts: dict[str, dict[str, bytes]]

    @property
    def id(self) -> str:
        return self.manifest["id"]

    @property
    def experiment(self) -> str:
        return self.manifest["experiment"]

    @cached_property
    def logged(self) -> dict[str, pd.DataFrame]:
        """Each run's rows of ``metrics`` by its original run id, grouped once (no rows: an empty table)."""
        return defaultdict(lambda: self.metrics.iloc[:0], tuple(self.metrics.groupby("run_id", sort=False)))


def file_sha256(path: Path) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def bundle_id(files: dict[str, str]) -> str:
    """The id of a bundle holding ``files`` (``{relative path: sha256}``): 16 hex digits."""
    text = json.dumps(files, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_bundle(folder: Path, experiment: str, runs: pd.DataFrame, metrics: pd.DataFrame, predictions: dict[str, Path],
                 artifacts: dict[str, dict[str, bytes]]) -> dict:
    """Write a bundle's files into the empty ``folder``, its manifest last, and return the manifest.

    Parameters
    ----------
    folder : Path
        An empty folder.
    experiment : str
        The MLflow experiment the runs belong to.
    runs, metrics : pandas.DataFrame
        With ``RUN_COLUMNS`` (``tags``, ``params`` dicts, ``inputs`` a list of dicts) and ``METRIC_COLUMNS``.
    predictions : dict of str to Path
        Original run id -> its ``predictions.parquet`` artifact, copied byte for byte.
    artifacts : dict of str to dict of str to bytes
        Original run id -> ``{name: content}`` of its other artifacts.
    """
    runs = runs[RUN_COLUMNS].copy()
    for column in ("tags", "params", "inputs"):
        runs[column] = [json.dumps(value, sort_keys=True) for value in runs[column]]
    runs.to_parquet(folder / RUNS, index=False, compression=COMPRESSION)
    metrics[METRIC_COLUMNS].to_parquet(folder / METRICS, index=False, compression=COMPRESSION)
    names = [RUNS, METRICS]
    if predictions:
        (folder / PREDICTIONS_DIR).mkdir()
    for run_id, source in sorted(predictions.items()):
        names.append(f"{PREDICTIONS_DIR}/{run_id}.parquet")
        shutil.copyfile(source, folder / names[-1])
    rows = [(run_id, *item) for run_id, found in sorted(artifacts.items()) for item in sorted(found.items())]
    pd.DataFrame(rows, columns=ARTIFACT_COLUMNS).to_parquet(folder / ARTIFACTS, index=False, compression=COMPRESSION)
    names.append(ARTIFACTS)
    files = {name: file_sha256(folder / name) for name in names}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "id": bundle_id(files),
        "experiment": experiment,
        "bncbench_version": metadata.version("bncbench"),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "counts": {"runs": len(runs), "metrics": len(metrics), "predictions": len(predictions), "artifacts": len(rows)},
        "files": files,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def read_bundle(path: str | Path) -> Bundle:
    """Read a bundle, checking that it is whole and unchanged since it was exported.

    Raises
    ------
    BundleError
        The folder or its manifest is missing or does not parse, the format or its version is not
        this one, a file is missing or its sha256 differs from the manifest's (truncated, changed),
        or the tables disagree with the manifest or with each other.
    """
    path = Path(path)
    manifest = read_manifest(path)
    for name, sha in manifest["files"].items():
        file = path / name
        if not (isinstance(sha, str) and _SHA256.fullmatch(sha)) or not _inside(path, name):
            _refuse(
                path, f"its manifest lists {name!r} with {sha!r}, not a file of the bundle and its sha256"
            )
        if not file.is_file():
            _refuse(path, f"{name} is missing (listed in its manifest)")
        if file_sha256(file) != sha:
            _refuse(path, f"{name} differs from the file exported (sha256 mismatch: truncated or changed)")
    for name in (RUNS, METRICS):
        if name not in manifest["files"]:
            _refuse(path, f"its manifest lists no {name}")
    if bundle_id(manifest["files"]) != manifest["id"]:
        _refuse(path, f"its manifest's id {manifest['id']!r} does not match its files")
    runs, found = parse_runs(_table(path, RUNS, RUN_COLUMNS))
    _refuse_runs(path, found)
    metrics = _table(path, METRICS, METRIC_COLUMNS)
    predictions = {
        Path(name).stem: path / name for name in manifest["files"] if name.startswith(f"{PREDICTIONS_DIR}/")
    }
    artifacts: dict[str, dict[str, bytes]] = {}
    if ARTIFACTS in manifest["files"]:
        for run_id, name, content in _table(path, ARTIFACTS, ARTIFACT_COLUMNS).itertuples(index=False):
            if not (isinstance(run_id, str) and isinstance(name, str) and isinstance(content, bytes)):
                _refuse(path, f"{ARTIFACTS} holds a row ({run_id!r}, {name!r}, {type(content).__name__}), not "
                        "(run id, name, bytes)")
            if name in artifacts.get(run_id, {}) or not carried(name):
                _refuse(path, f"{ARTIFACTS} holds {name!r} of run {run_id} twice, or a name that is not one of the "
                        f"artifacts a bundle carries ({', '.join(CARRIED_ARTIFACTS)}, a plain file name)")
            artifacts.setdefault(run_id, {})[name] = bytes(content)
    _check_tables(path, manifest, runs, metrics, predictions, artifacts)
    _refuse_runs(path, problems(runs, metrics))
    return Bundle(path, manifest, runs, metrics, predictions, artifacts)


def carried(name: str) -> bool:
    """Whether ``name`` is that of an artifact a bundle carries: a plain file name (no folder, no hidden file,
    no control character, which MLflow's artifact store would refuse half-way) of ``CARRIED_ARTIFACTS``."""
    plain = "/" not in name and "\\" not in name and not name.startswith(".") and name.isprintable()
    return plain and any(fnmatch.fnmatchcase(name, pattern) for pattern in CARRIED_ARTIFACTS)


def read_manifest(path: Path) -> dict:
    """A bundle's manifest, checked for its format and keys (not yet its files: :func:`read_bundle`)."""
    if not path.is_dir():
        _refuse(path, "no such folder")
    if (path / MANIFEST).exists() and not (path / MANIFEST).is_file():  # a FIFO would be waited on without end
        _refuse(path, f"its {MANIFEST} is not a regular file")
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        _refuse(path, f"it has no {MANIFEST}")
    except RecursionError:
        _refuse(path, f"its {MANIFEST} is nested deeper than a manifest is (it does not parse)")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        _refuse(path, f"its {MANIFEST} does not parse ({err})")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        _refuse(path, f"its {MANIFEST} is not the manifest of a bncbench bundle (format {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        _refuse(
            path,
            f"its format version {manifest.get('format_version')!r} is not the one this bncbench reads "
            f"({FORMAT_VERSION}); import it with the bncbench version that exported it "
            f"({manifest.get('bncbench_version')!r}) or a newer one",
        )
    wrong = [key for key, kind in _MANIFEST_KEYS.items() if not isinstance(manifest.get(key), kind)]
    if wrong:
        _refuse(path, f"its {MANIFEST} lacks or mistypes {', '.join(wrong)}")
    try:  # the name becomes the folder of the experiment's artifacts
        check_path_name("experiment", manifest["experiment"])
    except ConfigError as err:
        _refuse(path, str(err))
    return manifest


def _inside(folder: Path, name: str) -> bool:
    """Whether ``name`` is a relative path that stays inside ``folder``."""
    return not Path(name).is_absolute() and (folder / name).resolve().is_relative_to(folder.resolve())


def _table(path: Path, name: str, columns: list[str]) -> pd.DataFrame:
    try:
        table = pd.read_parquet(path / name)
    except Exception as err:  # pyarrow raises several types for a file that is not parquet
        _refuse(path, f"{name} does not read as parquet ({err})")
    if list(table.columns) != columns:
        _refuse(path, f"{name} has columns {list(table.columns)}, not {columns}")
    return table


def _check_tables(path: Path, manifest: dict, runs, metrics, predictions, artifacts) -> None:
    counts = {"runs": len(runs), "metrics": len(metrics), "predictions": len(predictions)}
    if "artifacts" in manifest["counts"]:  # a bundle written since artifacts travel
        counts["artifacts"] = sum(map(len, artifacts.values()))
    if manifest["counts"] != counts:
        _refuse(path, f"it holds {counts}, its manifest says {manifest['counts']}")
    ids = set(runs["run_id"])
    if len(ids) != len(runs):
        _refuse(path, f"{RUNS} lists a run twice")
    strays = (set(metrics["run_id"]) | set(predictions) | set(artifacts)) - ids
    if strays:
        _refuse(path, f"it holds metrics or predictions of runs not in {RUNS}: {sorted(strays)[:3]}")


def _refuse_runs(path: Path, found: list[str]) -> None:
    """Refuse a bundle whose runs have the problems ``found`` (``verify``), if any."""
    if found:
        more = f" (and {len(found) - 1} more problem{'s' * (len(found) > 2)})" if len(found) > 1 else ""
        _refuse(path, f"{found[0]}{more}")


def _refuse(path: Path, problem: str) -> NoReturn:
    raise BundleError(
        f"bundle {path} is refused: {problem}. Nothing was imported. Copy the whole bundle folder again, "
        "or export it again from its store (bncbench export)."
    )
