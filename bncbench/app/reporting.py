"""What the report takes from outside itself, gathered here so that the report reads records alone: the runs
(from a store or from bundles), the folds' test rows of runs that predate their error counts (from the
datasets), and where the data came from (for the report's manifest)."""

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bncbench.core.errors import ConfigError
from bncbench.data import load_dataset, resolve_data_dir
from bncbench.protocol.cell import Plan
from bncbench.protocol.cross_validation import fold_test_rows
from bncbench.report import LoggedRuns, write_report


def bundled_runs(plan: Plan, folders: Sequence[str]) -> LoggedRuns:
    """The runs of ``plan``'s experiment in the bundles ``folders`` name (``bncbench.bundles.bundle_runs``)."""
    from bncbench.bundles import bundle_runs

    found = bundle_runs(folders, plan.experiment)
    return LoggedRuns.of_records(plan.experiment, f"bundles {', '.join(found.folders)}", found.records, found.values,
                                 plan.by_key() if plan.cells else None, found.folders, found.repeats)


def plan_test_rows(plan: Plan, data_dir: str | Path | None) -> Callable[[str], np.ndarray]:
    """``dataset -> test rows of each fold`` of the plan's cross-validation, from the dataset's file in
    ``data_dir`` (read once per dataset, never fetched)."""

    @functools.cache
    def test_rows(dataset: str) -> np.ndarray:
        cell = next((cell for cell in plan.cells if cell.dataset == dataset), None)
        if cell is None:
            raise ConfigError(f"{dataset!r} is not a dataset of experiment {plan.experiment!r}: its folds are not known.")
        if cell.data_digest is None:
            raise ConfigError(f"runs of {dataset!r} predate the folds' error counts, and {resolve_data_dir(data_dir)} "
                              "has no file of it to count its folds' test rows; give its data directory "
                              "(BNCBENCH_DATA_DIR or data_dir=) so that draws on 0-1 loss are equal numbers of errors.")
        y = load_dataset(cell.semantic()["dataset"], data_dir).y
        return fold_test_rows(y, plan.cv.repetitions, plan.cv.folds, plan.cv.seed)

    return test_rows


def write_plan_report(plan: Plan, runs: LoggedRuns, report_dir: str | Path, data_dir: str | Path | None,
                      **options) -> Path:
    """:func:`bncbench.report.write_report` of ``plan`` from ``runs``, with the test rows and data directory of
    ``data_dir``; ``options`` as it takes them (``replace``, ``scratch``, ``manifest``, ``allow_uncommitted``)."""
    return write_report(plan, runs, report_dir, test_rows=plan_test_rows(plan, data_dir),
                        data_dir=str(resolve_data_dir(data_dir)), **options)

