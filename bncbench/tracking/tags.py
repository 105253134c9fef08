"""The names a cell's MLflow run is logged under, defined once: every module that writes or reads a run
(the runner, reuse, bundles, the report) takes them from here.

A cell's run is named ``<dataset>/<model>`` and tagged with ``DATASET``, ``MODEL`` and ``CFG_HASH``
(``bncbench.protocol.cell``); once it read its data, ``DATA_DIGEST``. A failed run carries ``ERROR``,
a model that cannot run on the data ``NOT_APPLICABLE``; one whose dataset was learnt out of core
(``bncbench.protocol.out_of_core``) ``OUT_OF_CORE``, with ``OUT_OF_CORE_SAMPLE_ROWS``, the rows its MDL cut points
are fitted on beyond that many training rows, and ``OUT_OF_CORE_ARROW_POOL``, the allocator pyarrow read the file
with (``bncbench.core.allocation``: its peak memory depends on it); a run copied from another experiment
``COPIED_FROM`` (``bncbench.tracking.reuse``), one imported from a bundle ``ORIGIN_RUN`` and
``ORIGIN_BUNDLE`` (``bncbench.bundles``). Its params are the cell's semantic config flattened
(``model.estimator_params.iterations``), its metrics the mean over the folds as ``<metric>`` and each
fold's value as ``FOLD_PREFIX + <metric>`` with step = fold (``bncbench.tracking.record.fold_history``). Its
artifacts: the cell's config (``CONFIG_ARTIFACT``), the test rows' predictions (``PREDICTIONS_ARTIFACT``), the
structures learnt (``STRUCTURE_ARTIFACT``) and the estimator's diagnostics tables (``<name>.csv``, ``<name>.png``);
a run failed by an unexpected exception, its traceback (``TRACEBACK_ARTIFACT``).
"""

DATASET = "dataset"
MODEL = "model"
CFG_HASH = "cfg_hash"
DATA_DIGEST = "data_digest"
ERROR = "error"
NOT_APPLICABLE = "not_applicable"
OUT_OF_CORE = "out_of_core"
OUT_OF_CORE_SAMPLE_ROWS = "out_of_core.sample_rows"
OUT_OF_CORE_ARROW_POOL = "out_of_core.arrow_pool"
COPIED_FROM = "bncbench.copied_from"
ORIGIN_RUN = "bncbench.origin.run_id"
ORIGIN_BUNDLE = "bncbench.origin.bundle"
VERSION = "version.bncbench"
#: MLflow's own tags of the code a run was produced by.
GIT_COMMIT = "mlflow.source.git.commit"
GIT_DIRTY = "mlflow.source.git.dirty"
#: The tags without which a run is not a cell's.
CELL = (DATASET, MODEL, CFG_HASH)
FOLD_PREFIX = "fold/"
#: A cell's peak resident memory in bytes and its CPU seconds (``bncbench.core.resources``), each one value for the
#: whole cell, logged at step 0 with no ``fold/`` values; no peak is logged where it cannot be measured per cell.
PEAK_RSS = "peak_rss_bytes"
CPU_SECONDS = "cpu_seconds"
RESOURCES = (PEAK_RSS, CPU_SECONDS)
#: The metrics of the machine that ran a cell rather than of the cell: two runs of one cell differ in
#: them, and in nothing else (``bncbench.tracking.record.CellRecord.numbers``).
TIMINGS = ("fit_seconds", "predict_seconds", *RESOURCES)
CONFIG_ARTIFACT = "config.yaml"
PREDICTIONS_ARTIFACT = "predictions.parquet"
STRUCTURE_ARTIFACT = "structure.json"
TRACEBACK_ARTIFACT = "error.txt"
