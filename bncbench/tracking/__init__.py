"""The one place bncbench talks to MLflow: the store (:mod:`~bncbench.tracking.store`), the runs of an
experiment's cells, logged and read back (:mod:`~bncbench.tracking.runs`), as records
(:mod:`~bncbench.tracking.record`) under the names of :mod:`~bncbench.tracking.tags`.

Every function takes an explicit ``MlflowClient``: no fluent-API state (active run, global tracking
URI) is used, because a worker process runs one cell after another.

The names below are imported on first use (PEP 562), so that what needs only the names of a logged
run (``tracking.tags``, e.g. the report's computations) does not load MLflow.
"""

import importlib

#: The public names of each module of this package that it gives.
_NAMES = {
    "runs": (
        "CELL_METRICS", "MAX_TAG_LENGTH", "abandon", "cell_names", "cell_runs", "delete_run",
        "download_artifacts", "end_run", "fail_runs", "finished_cell_runs", "finished_run",
        "finished_run_in_other_experiments", "fold_metrics", "get_run", "log_artifacts", "log_inputs",
        "log_metric_history", "log_params", "metric_values", "missing_metrics", "replace_tags", "running_runs",
        "set_tags", "start_run",
    ),
    "record": ("CellRecord", "finished_records"),
    "store": (
        "DEFAULT_ARTIFACT_DIR", "DISK_FULL_MESSAGES", "FIRST_REQUEST_TIMEOUT", "SERVER_LIMITS", "SERVER_SCHEMES",
        "artifact_root", "check_artifact_location", "disk_full", "experiment_id", "experiment_name", "mark_sweep",
        "open_existing_store", "open_store", "prepare_experiment", "quiet_store", "read_errors",
    ),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'bncbench.tracking' has no attribute {name!r}")
    return getattr(importlib.import_module(f"bncbench.tracking.{_HOME[name]}"), name)
