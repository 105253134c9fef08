"""Bundles read as the runs a store would hold after importing them, without a store: the report of
committed bundles needs no MLflow import (``bncbench report --bundles``).

Each cell comes in as :func:`bncbench.bundles.import_bundles` would bring it into an empty store: a
FINISHED record tagged with its origin (``tag.ORIGIN_RUN``, ``tag.ORIGIN_BUNDLE``), its metrics the
latest value of each key as MLflow keeps it (the greatest step, then time, then value), each model of
a ``cfg_hash`` and data digest once (the first bundle's, in the order given; the others counted, so that the
report says so), and bundles that disagree on a cell refused (``ConflictError``).
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bncbench.bundles.format import MANIFEST, Bundle, BundleError, read_bundle, read_manifest
from bncbench.bundles.load import bundle_numbers, conflicts_between, imported_record, refuse_conflicts
from bncbench.tracking import tags as tag
from bncbench.tracking.folds import VALUE_COLUMNS
from bncbench.tracking.record import CellRecord


@dataclass(frozen=True)
class BundleRuns:
    """The runs of one experiment in some bundles (:func:`bundle_runs`).

    Attributes
    ----------
    experiment : str
    folders : tuple of str
        The folders named, as given.
    bundles : tuple of Bundle
        The bundles of the experiment found there, in the order read.
    records : tuple of CellRecord
        Each cell's run, as an import into an empty store would hold it.
    repeats : dict
        ``{bundle id: runs}``: the runs of a bundle passed over because a bundle read before holds their cell
        with the same numbers (their timings and memory may differ), as an import passes over them.
    """

    experiment: str
    folders: tuple[str, ...]
    bundles: tuple[Bundle, ...]
    records: tuple[CellRecord, ...]
    _values: pd.DataFrame = field(repr=False)
    repeats: dict[str, int] = field(default_factory=dict)

    def values(self, run_ids: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
        """Every logged value of the metric ``keys`` of the runs ``run_ids`` (columns ``VALUE_COLUMNS``)."""
        values = self._values
        return values[values["run_id"].isin(list(run_ids)) & values["key"].isin(list(keys))].reset_index(drop=True)


def bundle_folders(folders: Iterable[str | Path]) -> list[Path]:
    """The bundles named by ``folders``: each a bundle's folder, or a folder of bundles (its subfolders
    holding a manifest, in name order).

    Raises
    ------
    BundleError
        A folder is missing, or neither a bundle nor a folder of bundles.
    """
    found = []
    for folder in map(Path, folders):
        if (folder / MANIFEST).exists():
            found.append(folder)
            continue
        inside = sorted(path.parent for path in folder.glob(f"*/{MANIFEST}")) if folder.is_dir() else []
        if not inside:
            raise BundleError(
                f"{folder}: {'no such folder' if not folder.is_dir() else 'neither a bundle nor a folder of bundles'}; "
                "name the folders bncbench export wrote, or the folder that holds them (reports/<experiment>/bundles)."
            )
        found += inside
    return found


def bundle_runs(folders: Sequence[str | Path], experiment: str) -> BundleRuns:
    """The runs of ``experiment`` in the bundles ``folders`` name (:func:`bundle_folders`; bundles of
    other experiments are passed by), each read and verified whole (``read_bundle``).

    Raises
    ------
    BundleError
        A folder names no bundle, or a bundle of the experiment is not whole.
    ConflictError
        Two bundles hold a cell with other numbers.
    """
    bundles = [read_bundle(path) for path in bundle_folders(folders) if read_manifest(path)["experiment"] == experiment]
    numbers = {bundle.id: bundle_numbers(bundle) for bundle in bundles}
    refuse_conflicts(conflicts_between(bundles, numbers), None)
    records, values, held, repeats = [], [], set(), Counter()
    for bundle in bundles:
        for run in bundle.runs.itertuples(index=False):
            cell = (run.tags[tag.CFG_HASH], run.tags.get(tag.DATA_DIGEST), run.tags[tag.MODEL])
            if cell in held:  # an import adds it once
                repeats[bundle.id] += 1
                continue
            held.add(cell)
            rows = bundle.logged[run.run_id]
            latest = rows.sort_values(["step", "timestamp", "value"], kind="stable").drop_duplicates("key", keep="last")
            metrics = dict(zip(latest["key"], latest["value"].astype(float)))
            records.append(imported_record(bundle, run, metrics=metrics))
            values.append(rows[VALUE_COLUMNS])
    frame = pd.concat(values, ignore_index=True) if values else pd.DataFrame(columns=VALUE_COLUMNS)
    return BundleRuns(experiment, tuple(map(str, folders)), tuple(bundles), tuple(records), frame, dict(repeats))

