"""The one place bncbench talks to MLflow: the store (:mod:`~bncbench.tracking.store`), the runs of an
experiment's cells, logged and read back (:mod:`~bncbench.tracking.runs`), as records
(:mod:`~bncbench.tracking.record`) under the names of :mod:`~bncbench.tracking.tags`.

Every function takes an explicit ``MlflowClient``: no fluent-API state (active run, global tracking
URI) is used, because a worker process runs one cell after another.

The names below are imported on first use (PEP 562), so that what needs only the names of a logged
run (``tracking.tags``, e.g. the report's computations) does not load MLflow.
"""

import importlib

#: Each public name and the module of this package that defines it.
_HOME = {
    "CELL_METRICS": "runs",
    "MAX_TAG_LENGTH": "runs",
    "abandon": "runs",
    "all_runs": "runs",
    "cell_names": "runs",
    "cell_runs": "runs",
    "delete_run": "runs",
    "download_artifacts": "runs",
    "end_run": "runs",
    "fail_runs": "runs",
    "finished_cell_runs": "runs",
    "finished_run": "runs",
    "finished_run_in_other_experiments": "runs",
    "fold_metrics": "runs",
    "get_run": "runs",
    "log_artifacts": "runs",
    "log_inputs": "runs",
    "log_metric_history": "runs",
    "log_params": "runs",
    "metric_values": "runs",
    "missing_metrics": "runs",
    "replace_tags": "runs",
    "running_runs": "runs",
    "set_tags": "runs",
    "start_run": "runs",
    "CellRecord": "record",
    "finished_records": "record",
    "DEFAULT_ARTIFACT_DIR": "store",
    "DISK_FULL_MESSAGES": "store",
    "FIRST_REQUEST_TIMEOUT": "store",
    "SERVER_LIMITS": "store",
    "SERVER_SCHEMES": "store",
    "artifact_root": "store",
    "check_artifact_location": "store",
    "disk_full": "store",
    "experiment_id": "store",
    "experiment_name": "store",
    "mark_sweep": "store",
    "open_existing_store": "store",
    "open_store": "store",
    "prepare_experiment": "store",
    "quiet_store": "store",
    "read_errors": "store",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'bncbench.tracking' has no attribute {name!r}")
    return getattr(importlib.import_module(f"bncbench.tracking.{_HOME[name]}"), name)
