"""The cross-validation of a cell whose dataset is learnt out of core: read from its file a chunk of rows at
a time, never held in memory, with the folds, losses and predictions of ``cross_validate``.

The protocol is the in-memory one (``bncbench.protocol.cross_validation``), with these differences:

- the class column is read in one pass first, and the stratified folds are drawn from it as in memory:
  the same folds (``stratified_test_folds``);
- each training fold is fitted by ``bncbench.bnc.out_of_core.fit_file`` on the fold's rows of the file
  (a row mask): one pass for the values and a uniform sample of ``sample_rows`` rows, then the
  structure's counting passes (and one to gather the m-estimate's holdout, the rows the in-memory fit holds
  out). The MDL discretiser is fitted on that sample, so with at most ``sample_rows`` training rows (or no
  numeric attribute) every number equals the in-memory one; beyond, the cut points are those of the sample
  (the run is tagged ``out_of_core.sample_rows``). Only count-based estimators (``Estimator.count_based``)
  and BNCs can learn so; a baseline, another estimator, equal-frequency discretisation, ``missing:
  ignore``, a config that drops columns or a numeric class is refused with the reason (``NotApplicableError``);
- the test fold is predicted a chunk at a time, coded as the training rows were; ``fit_seconds`` includes
  reading the file, which an out-of-core fit cannot separate from counting; ``predict_seconds`` is the
  probabilities' alone, reading and coding the test rows aside;
- the untimed warm-up is an out-of-core fit and prediction of the training rows of the file's first chunk (``_warm_up``).

Memory holds the class column and each row's fold (a byte each; a fold's mask and row numbers are read from them a
block at a time, ``FoldRows``), the model, one chunk, the sample and, for a nominal file, the training rows' value
ids (``cache_bytes`` at most: a quarter of the cell's memory, ``id_cache_bytes``, and none when they would not fit);
each chunk's predictions go to their file as they are made and its losses to running sums (``repeated_folds``). The
chunks' arrays are given back to the system when freed (``bncbench.core.allocation``), so that the heap does not grow
with the folds.
"""

import functools
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from bncbench.bnc.distributed import dask_client
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.out_of_core import (
    CACHE_BYTES, chunk_rows_for, fit_file, predict_codes, read_chunks, selected_count,
)
from bncbench.core.allocation import give_back_freed_memory
from bncbench.core.errors import NotApplicableError
from bncbench.core.timing import timed
from bncbench.data.dataset import DatasetFile
from bncbench.data.store import CLASS_COLUMN
from bncbench.protocol.cross_validation import (
    WARM_UP_ROWS, CrossValidation, FoldFit, FoldRows, no_fold, repeated_folds, warm_up_model,
)
from bncbench.protocol.models import make_model

log = logging.getLogger(__name__)

#: Bytes a value of a dataset takes in an in-memory cross-validation, about: the frame (14 to 17 bytes a
#: value with pandas' Arrow strings), the copies of a fold's training and test parts, their discretised
#: copies and the int64 codes. Measured: 50 for NB and for kDB-5 on 1M rows of 21 columns
#: (``benchmarks/cell_memory.py``; 104 for kDB-5 before issue 44's changes to the fit), plus a margin.
BYTES_PER_VALUE = 56


def in_memory_bytes(rows: int, columns: int) -> int:
    """About the memory an in-memory cross-validation of a dataset of ``rows`` x ``columns`` values needs
    for its data (its predictions aside: ``bncbench.protocol.cross_validation.predictions_bytes``)."""
    return int(rows) * int(columns) * BYTES_PER_VALUE


def id_cache_bytes(memory: int | None) -> int:
    """The bound of each fit's id cache (``fit_file``'s ``cache_bytes``) in a cell given ``memory`` bytes (its share
    of the machine's, or of a cluster task's; None: not known): a quarter of it, at most ``CACHE_BYTES``, so that
    what the cache keeps is counted in the memory the cell was given."""
    return CACHE_BYTES if memory is None else min(CACHE_BYTES, memory // 4)


def cross_validate_file(
    data: DatasetFile, model: dict, repetitions: int = 5, folds: int = 2, seed: int = 1,
    discretisation: str = "mdl", chunk_rows: int | None = None, sample_rows: int = 100_000,
    scheduler: str | None = None, local_workers: int = 2, predictions_to: Path | None = None,
    cache_bytes: int = CACHE_BYTES,
) -> CrossValidation:
    """``cross_validate`` of ``model`` on the dataset of the file ``data``, out of core (module docstring); the
    counting passes of each fit on the dask cluster ``scheduler`` names (``bncbench.bnc.distributed.dask_client``:
    None in this process, "local" a LocalCluster of ``local_workers`` processes started for the call), with the same
    numbers; the predictions written to the parquet file ``predictions_to`` (None: kept in memory); each fit's value
    ids kept in at most ``cache_bytes`` (``fit_file``; ``id_cache_bytes`` of the cell's memory).

    Raises
    ------
    NotApplicableError
        The model, the discretisation or the dataset's config cannot be learnt out of core.
    """
    _check_out_of_core(data, model, discretisation)
    give_back_freed_memory()  # a chunk's arrays freed whole: the heap no longer grows with the folds
    chunk_rows = chunk_rows_for(data.path, chunk_rows)
    classes, file_codes = _class_column(data.path)
    present = file_codes >= 0  # the in-memory dataset drops the rows whose class is missing
    present, y_codes = (None, file_codes) if present.all() else (present, file_codes[present])
    del file_codes
    name = f"{data.name}/{model.get('name', 'model')}"

    def file_rows(selected: FoldRows) -> FoldRows:
        """The rows of the file that ``selected`` (rows whose class is present) selects."""
        if present is None:
            return selected
        folds = np.full(len(present), no_fold(selected.folds), dtype=selected.folds.dtype)
        folds[present] = selected.folds
        return FoldRows(folds, selected.fold, selected.test)

    def fit_predict(test_rows, rep_seed, warm_up, client):
        started, test = time.perf_counter(), file_rows(test_rows)
        train = test.training()
        if warm_up:
            _warm_up(data, model, train, chunk_rows, rep_seed)

        def fit():
            return fit_file(make_model(model, rep_seed), data.path, CLASS_COLUMN, chunk_rows, sample_rows,
                            discretise=bool(data.numeric), numeric=data.numeric, rows=train, cache_bytes=cache_bytes,
                            client=client)

        (classifier, source), fit_seconds = timed(fit, "fit")
        log.info("%s: fitted out of core on %d rows in %d passes, %.0f s", name, selected_count(train),
                 source.passes, time.perf_counter() - started)

        def predictions():
            known = data.true_posterior is not None
            for codes, table in source.file_codes(data.path, test, tables=known):
                proba, seconds = timed(lambda codes=codes: predict_codes(classifier, codes), "predict_proba")
                truth = data.true_posterior(table.drop_columns([CLASS_COLUMN]).to_pandas()) if known else None
                yield proba, truth, seconds
            log.info("%s: predicted %d rows out of core, %.0f s for the fold", name, selected_count(test_rows),
                     time.perf_counter() - started)

        return FoldFit(classifier, classifier.classes_, fit_seconds, predictions())

    with dask_client(scheduler, local_workers) as client:
        if client is not None:
            log.info("%s: counting on the dask scheduler at %s (workers: %d)", name, client.scheduler.address,
                     len(client.nthreads()))
        return repeated_folds(data.name, model, classes, y_codes, repetitions, folds, seed,
                              functools.partial(fit_predict, client=client), predictions_to)


def _class_column(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The classes of the CSV or parquet file's class column in sorted order (as ``class_codes``), and each row's
    index among them (-1: missing), read a block at a time by pyarrow as a dictionary and held in a byte or two a
    row."""
    if path.suffix == ".parquet":
        batches = pq.ParquetFile(path, read_dictionary=[CLASS_COLUMN]).iter_batches(columns=[CLASS_COLUMN])
    else:
        convert = pa_csv.ConvertOptions(include_columns=[CLASS_COLUMN], strings_can_be_null=True, null_values=[""],
                                        column_types={CLASS_COLUMN: pa.dictionary(pa.int32(), pa.string())})
        batches = pa_csv.open_csv(path, convert_options=convert)
    seen, parts = {}, []
    for batch in batches:
        column = batch.column(0)
        seen_of_batch = np.array([seen.setdefault(c, len(seen)) for c in column.dictionary.to_pylist()] + [-1])
        parts.append(seen_of_batch.astype(np.min_scalar_type(-len(seen)))[column.indices.fill_null(-1).to_numpy()])
    classes = np.array(sorted(seen), dtype=object)
    sorted_of_seen = np.append(np.searchsorted(classes, np.array(list(seen), dtype=object)), -1)
    codes = np.empty(sum(len(part) for part in parts), dtype=np.min_scalar_type(-len(classes)))
    start = 0
    for part in parts:  # each batch's rows as a byte or two until now (pyarrow's indices take four)
        codes[start: start + len(part)] = sorted_of_seen[part]
        start += len(part)
    return classes, codes


def _warm_up(data: DatasetFile, model: dict, train: FoldRows, chunk_rows: int, random_state) -> None:
    """An untimed out-of-core fit and prediction of the training rows of the file's first chunk (``WARM_UP_ROWS``
    of them at most), written to a file of the data file's kind, at the model's ``warm_up_model`` settings: numba
    then loads every kernel the timed fit and prediction call, the reading's among them, so that ``timed`` does not
    make the first fold's fit twice (an in-memory warm-up left the reading's kernels to it)."""
    frame = next(read_chunks(data.path, chunk_rows, data.numeric))
    frame = frame[train[: len(frame)]].head(WARM_UP_ROWS)
    if frame.empty:
        return
    with tempfile.TemporaryDirectory(prefix="bncbench-warm-up-") as folder:
        path = Path(folder, "warm_up.parquet" if data.path.suffix == ".parquet" else "warm_up.csv")
        frame.to_parquet(path) if path.suffix == ".parquet" else frame.to_csv(path, index=False)
        every = np.ones(len(frame), dtype=bool)  # a mask of rows, as a fold's: its chunks are copies, as a fold's
        try:
            classifier, source = fit_file(make_model(warm_up_model(model), random_state), path, CLASS_COLUMN,
                                          discretise=bool(data.numeric), numeric=data.numeric, rows=every)
            for codes, _ in source.file_codes(path, every, tables=False):
                predict_codes(classifier, codes)
        except Exception as err:  # the real fit reports the model's errors; this one only saves time
            log.debug("warm-up of %s not done: %s", model.get("name", "model"), err)


def _check_out_of_core(data: DatasetFile, model: dict, discretisation: str) -> None:
    """Refuse, with the reason, what ``fit_file`` cannot learn or this protocol cannot read."""
    count_based = sorted(name for name, cls in ESTIMATORS.items() if cls.count_based)
    problem = None
    if "baseline" in model:
        problem = f"the baseline {model['baseline']} needs its training rows in memory"
    elif model.get("estimator") not in count_based:
        problem = (f"the estimator {model.get('estimator')} needs its training rows in memory (out of core: "
                   f"{', '.join(count_based)})")
    elif model.get("missing", "value") != "value":
        problem = f"missing: {model['missing']} is not learnt out of core (missing: value is)"
    elif discretisation != "mdl":
        problem = f"cv.discretisation={discretisation} is not learnt out of core (mdl is)"
    elif data.drop:
        problem = f"its config drops columns {data.drop}, which out-of-core reading does not"
    elif data.numeric_class:
        problem = "its class is declared numeric; out-of-core reading takes a nominal class"
    if problem:
        raise NotApplicableError(
            f"dataset {data.name!r} is learnt out of core (larger than out_of_core.memory_gb) and {problem}; "
            "raise out_of_core.memory_gb to learn it in memory, or run another model on it."
        )
