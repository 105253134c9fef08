"""The datasets of a sweep, made present before its first cell: synthetic ones absent from the data
directory are drawn into it (``bncbench.data.synthetic``), and other absent ones fetched from OpenML here,
in the launching process, one after another, so that workers never race on OpenML's cache; when they
cannot be (offline, no OpenML id), one line says which and how to point bncbench at a data directory that
holds them, and nothing runs.
"""

import socket
import sys
from dataclasses import replace
from pathlib import Path

from bncbench.core.errors import ConfigError, DatasetError
from bncbench.data.digest import dataset_digest
from bncbench.data.store import DATA_DIR_HINT
from bncbench.data.sources import dataset_source, written_format
from bncbench.protocol.cell import Plan

#: Where a dataset is fetched from, probed once (a few seconds at most) before fetching anything.
OPENML_HOST = ("www.openml.org", 443)
PROBE_SECONDS = 5.0


def missing_datasets(plan: Plan, drawn: bool = False) -> dict[str, dict]:
    """The datasets of ``plan`` with no file in the data directory, by name, with their config: those its
    sources draw on this machine (``drawn``), or those they fetch."""
    return {
        cell.dataset: cell.semantic()["dataset"]
        for cell in plan.cells
        if cell.data_digest is None and dataset_source(cell.semantic()["dataset"]).drawn == drawn
    }


def fetch_missing(plan: Plan, data_dir: Path) -> Plan:
    """``plan`` with its datasets absent from ``data_dir`` drawn (synthetic ones) or fetched from OpenML into it,
    and their digests; a ``ConfigError`` names those that cannot be fetched, why, and the settings that fix it."""
    drawn = missing_datasets(plan, drawn=True)
    for name, spec in drawn.items():
        print(f"bncbench: drawing the dataset {name} into {data_dir}", flush=True)
        dataset_source(spec).provide(spec, data_dir)
    missing = missing_datasets(plan)
    if not missing:
        return _with_digests(plan, drawn, data_dir)
    names = ", ".join(missing)
    reason = fetch_obstacle(missing)
    if reason is None:
        print(f"bncbench: fetching {len(missing)} datasets from OpenML into {data_dir}: {names}", flush=True)
        from bncbench.data.openml_source import fetch_openml_into_store  # here: openml is slow to import

        for name, spec in missing.items():
            try:
                fetch_openml_into_store(spec["name"], spec["openml_id"], spec.get("openml_target"), data_dir,
                                        written_format(spec))
            except DatasetError as err:
                reason = f"fetching {name} failed: {str(err).splitlines()[0]}"
                break
            print(f"bncbench: fetched {name}", file=sys.stderr, flush=True)
    if reason is not None:
        raise ConfigError(f"{len(missing)} datasets of the experiment are not in the data directory {data_dir} "
                          f"({names}) and {reason}. {FETCH_FIXES}")
    return _with_digests(plan, {**drawn, **missing}, data_dir)


#: What to do when datasets are missing and cannot be fetched.
FETCH_FIXES = (
    f"Point bncbench at a folder that holds them ({DATA_DIR_HINT}), convert their original files into it (bncbench "
    "data add; their conf/dataset/<name>.yaml says how), or run the others (experiment.datasets=[...])."
)


def fetch_obstacle(missing: dict[str, dict]) -> str | None:
    """Why the datasets ``missing`` (name -> spec) cannot be fetched from OpenML (some have no openml_id, or
    OpenML cannot be reached from here), or None: what the sweep checks before fetching, and its dry run."""
    without_id = [name for name, spec in missing.items() if spec.get("openml_id") is None]
    if without_id:
        return f"{', '.join(without_id)} {'has' if len(without_id) == 1 else 'have'} no openml_id"
    if not _reachable(OPENML_HOST):
        return f"OpenML ({OPENML_HOST[0]}) cannot be reached from here"
    return None


def _with_digests(plan: Plan, added: dict[str, dict], data_dir: Path) -> Plan:
    """``plan`` with the digests of the datasets ``added`` to ``data_dir`` (``plan`` itself if none)."""
    if not added:
        return plan
    digests = {name: dataset_digest(spec, data_dir) for name, spec in added.items()}
    cells = tuple(replace(cell, data_digest=digests[cell.dataset].digest) if cell.dataset in digests else cell
                  for cell in plan.cells)
    return replace(plan, cells=cells)


def _reachable(host: tuple[str, int]) -> bool:
    """Whether a TCP connection to ``host`` opens within ``PROBE_SECONDS``."""
    try:
        with socket.create_connection(host, timeout=PROBE_SECONDS):
            return True
    except OSError:
        return False
