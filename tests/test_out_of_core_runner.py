"""A cell whose dataset is larger than out_of_core.memory_gb is learnt from its file a chunk at a time, with
the numbers of the in-memory cross-validation."""

import json
import logging
import os
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from bncbench.app.runner import run_cell
from bncbench.core.errors import NotApplicableError
from bncbench.data import Dataset, load_dataset
from bncbench.data.dataset import dataset_config, dataset_file
from bncbench.data.digest import dataset_digest
from bncbench.data.store import convert_store_file, read_schema
from bncbench.protocol.cell import Cell, CrossValidationSettings
from bncbench.protocol.cross_validation import cross_validate
from bncbench.protocol.models import model_spec
from bncbench.protocol.out_of_core import cross_validate_file
from bncbench.tracking import tags as tag

SYNTHETIC = {"name": "toy", "source": "synthetic", "openml_id": None, "openml_target": None, "drop": [],
             "synthetic": {"rows": 1500, "attributes": 6, "values": [2, 3, 4, 3, 2, 3], "classes": 3, "k": 2,
                           "alpha": 1.0, "seed": 3, "sample_seed": 4}}
NUMBERS = ["zero_one_loss", "rmse", "log_loss", "errors", "test_rows", "zero_probability_rows"]
TRUTH = ["kl_to_truth", "tv_to_truth"]


def both_ways(spec, data_dir, model, chunk_rows):
    model = model_spec(model)
    in_memory = cross_validate(load_dataset(spec, data_dir), model, repetitions=2, folds=2, seed=5)
    chunked = cross_validate_file(dataset_file(spec, data_dir), model, repetitions=2, folds=2, seed=5,
                                  chunk_rows=chunk_rows)
    return in_memory, chunked


def test_a_dataset_drawn_as_parquet_is_the_same_cell_with_the_digest_of_its_file(tmp_path):
    """store_format says how the dataset is written, not what a cell computes: the cfg_hash leaves it out; the data
    digest is that of the file read, so the two formats' runs are told apart."""
    as_csv, as_parquet = SYNTHETIC, {**SYNTHETIC, "store_format": "parquet"}
    digests = [dataset_digest(spec, tmp_path / name) for spec, name in ((as_csv, "csv"), (as_parquet, "parquet"))]
    assert digests == [None, None]  # not drawn yet
    for spec, name in ((as_csv, "csv"), (as_parquet, "parquet")):
        dataset_file(spec, tmp_path / name)
    digests = [dataset_digest(spec, tmp_path / name) for spec, name in ((as_csv, "csv"), (as_parquet, "parquet"))]
    assert digests[0].digest != digests[1].digest and digests[1].details["path"].endswith(".parquet")
    cells = [Cell.of("toy", "nb", spec, model_spec("nb_laplace"), CrossValidationSettings(), None)
             for spec in (as_csv, as_parquet)]
    assert cells[0].cfg_hash == cells[1].cfg_hash


def test_rows_of_a_file_whose_class_is_missing_are_in_no_fold(tmp_path):
    """In memory the rows whose class is missing are dropped; out of core they stay in the file, in no fold (neither
    trained on nor predicted), and the folds, numbers and predictions' row numbers are those of the rows left."""
    drawn = dataset_file(SYNTHETIC, tmp_path)
    frame = pd.read_csv(drawn.path, dtype=str, keep_default_na=False)
    frame.loc[[0, 7, 400, 1499], "class"] = ""
    path = tmp_path / "holes.csv.gz"
    frame.to_csv(path, index=False)
    kept = frame[frame["class"] != ""].reset_index(drop=True)
    dataset = Dataset("holes", kept.drop(columns="class"), kept["class"], [])
    model = model_spec("kdb2_m_estimate")
    in_memory = cross_validate(dataset, model, repetitions=2, folds=2, seed=5)
    chunked = cross_validate_file(replace(drawn, name="holes", path=path, true_posterior=None), model, repetitions=2,
                                  folds=2, seed=5, chunk_rows=97)
    pd.testing.assert_frame_equal(chunked.metrics[NUMBERS], in_memory.metrics[NUMBERS], rtol=1e-9)
    pd.testing.assert_frame_equal(chunked.predictions, in_memory.predictions, rtol=1e-9)


@pytest.mark.parametrize("store_format", ["csv", "parquet"])
@pytest.mark.parametrize("model", ["nb_laplace", "kdb2_m_estimate", "skdb_m_estimate", "tan_hdp"])
def test_out_of_core_equals_in_memory_on_a_synthetic_dataset(tmp_path, model, store_format):
    """From the store's file in either format (a parquet one drawn with row groups unlike the chunks)."""
    spec = {**SYNTHETIC, "store_format": store_format}
    in_memory, chunked = both_ways(spec, tmp_path, model, chunk_rows=97)
    assert dataset_file(spec, tmp_path).path.name.endswith(".parquet" if store_format == "parquet" else ".csv.gz")
    assert chunked.seeds == in_memory.seeds
    pd.testing.assert_frame_equal(chunked.metrics[NUMBERS + TRUTH], in_memory.metrics[NUMBERS + TRUTH], rtol=1e-9)
    probabilities = [c for c in in_memory.predictions.columns if c.startswith("proba_")]
    pd.testing.assert_frame_equal(chunked.predictions.drop(columns=probabilities),
                                  in_memory.predictions.drop(columns=probabilities))
    np.testing.assert_allclose(chunked.predictions[probabilities], in_memory.predictions[probabilities], rtol=1e-9)
    assert chunked.structures == in_memory.structures


@pytest.mark.parametrize("store_format", ["csv", "parquet"])
def test_out_of_core_equals_in_memory_with_numeric_attributes_and_missing_values(shared_data_dir, tmp_path,
                                                                                  store_format):
    """hepatitis: MDL discretisation per training fold (its sample is the whole fold), missing values; from the
    shared store's CSV file and from a parquet one of it."""
    spec, store = dataset_config("hepatitis"), shared_data_dir
    if store_format == "parquet":
        store = tmp_path / "store"
        store.mkdir()
        (store / "schema.json").write_text(json.dumps({"hepatitis": read_schema(shared_data_dir)["hepatitis"]}))
        shutil.copy(shared_data_dir / "hepatitis.csv.gz", store)
        convert_store_file(store, "hepatitis", "parquet")
    in_memory, chunked = both_ways(spec, store, "kdb1_m_estimate", chunk_rows=33)
    pd.testing.assert_frame_equal(chunked.metrics[NUMBERS], in_memory.metrics[NUMBERS], rtol=1e-9)
    probabilities = [c for c in in_memory.predictions.columns if c.startswith("proba_")]
    np.testing.assert_allclose(chunked.predictions[probabilities], in_memory.predictions[probabilities], rtol=1e-9)


@pytest.mark.parametrize(
    "model, reason",
    [("nb_awnb", "the estimator awnb needs its training rows in memory"),
     ("random_forest", "the baseline random_forest needs its training rows in memory")],
)
def test_what_cannot_be_learnt_out_of_core_is_refused_with_the_reason(tmp_path, model, reason):
    with pytest.raises(NotApplicableError) as refused:
        cross_validate_file(dataset_file(SYNTHETIC, tmp_path), model_spec(model))
    assert reason in str(refused.value) and "out_of_core.memory_gb" in str(refused.value)
    assert "\n" not in str(refused.value)


def run_and_read(plan_cell, new_store, directory, memory_gb, *overrides):
    uri = new_store(directory)
    cell, destination = plan_cell("synthetic-kdb4-1e4", "kdb2_m_estimate", f"tracking_uri={uri}",
                                  f"data_dir={directory.parent / 'data'}", f"out_of_core.memory_gb={memory_gb}",
                                  "out_of_core.chunk_rows=3000", "cv.repetitions=1", *overrides)
    assert run_cell(cell, destination).status == "finished"
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return client.search_runs([client.get_experiment_by_name(destination.experiment).experiment_id])[0]


def test_the_runner_learns_a_dataset_above_the_threshold_out_of_core_with_the_same_numbers(
    plan_cell, new_store, tmp_path, caplog
):
    """In process, and on a dask LocalCluster started for the cell (out_of_core.scheduler=local), whose worker
    process reads its chunks of the store's gzipped file: the same cell (cfg_hash) and every number to the bit."""
    with caplog.at_level(logging.INFO, logger="bncbench"):
        chunked = run_and_read(plan_cell, new_store, tmp_path / "chunked", 0)
        in_memory = run_and_read(plan_cell, new_store, tmp_path / "in_memory", 1000)
        on_cluster = run_and_read(plan_cell, new_store, tmp_path / "cluster", 0, "out_of_core.scheduler=local",
                                  "out_of_core.local_workers=1")
    assert on_cluster.data.tags[tag.CFG_HASH] == chunked.data.tags[tag.CFG_HASH]
    assert {name: on_cluster.data.metrics[name] for name in NUMBERS + TRUTH} == {
        name: chunked.data.metrics[name] for name in NUMBERS + TRUTH}
    assert chunked.data.tags.get(tag.OUT_OF_CORE) == "true" and tag.OUT_OF_CORE not in in_memory.data.tags
    assert chunked.data.tags[tag.OUT_OF_CORE_SAMPLE_ROWS] == "100000"  # the default, above the 5000 training rows
    assert chunked.data.tags[tag.OUT_OF_CORE_ARROW_POOL] == pa.default_memory_pool().backend_name  # this process's
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        assert chunked.data.tags[tag.OUT_OF_CORE_ARROW_POOL] in ("jemalloc", "system")  # not mimalloc, which keeps
    assert tag.OUT_OF_CORE_ARROW_POOL not in in_memory.data.tags
    assert chunked.data.tags[tag.DATA_DIGEST] == in_memory.data.tags[tag.DATA_DIGEST]
    for name in NUMBERS + TRUTH:
        assert chunked.data.metrics[name] == pytest.approx(in_memory.data.metrics[name], rel=1e-9), name
    lines = [record.getMessage() for record in caplog.records]
    assert any("learnt out of core (10000 rows x 13 columns)" in line for line in lines)
    assert sum("fitted out of core on 5000 rows" in line for line in lines) == 4  # one per fold and run
    assert sum("counting on the dask scheduler at tcp://" in line and "(workers: 1)" in line for line in lines) == 1



def test_the_predictions_go_to_their_file_a_chunk_at_a_time(tmp_path):
    """Out of core, a fold's predictions are written as each chunk is predicted, never held for the fold: a row
    group a chunk, and the rows, classes and probabilities of the in-memory cross-validation."""
    import pyarrow.parquet as pq

    model = model_spec("nb_laplace")
    in_memory = cross_validate(load_dataset(SYNTHETIC, tmp_path), model, repetitions=2, folds=2, seed=5)
    written = tmp_path / "predictions.parquet"
    chunked = cross_validate_file(dataset_file(SYNTHETIC, tmp_path), model, repetitions=2, folds=2, seed=5,
                                  chunk_rows=100, predictions_to=written)
    assert chunked.predictions_parquet == written
    assert pq.ParquetFile(written).num_row_groups == 4 * 15  # a fold's test rows come in the 15 chunks of the file
    pd.testing.assert_frame_equal(chunked.predictions, in_memory.predictions, rtol=1e-9)


WARM_UP_CHECK = """
import json, sys
from bncbench.bnc import out_of_core
from bncbench.data.dataset import dataset_file
from bncbench.protocol.models import model_spec
from bncbench.protocol.out_of_core import cross_validate_file

from bncbench.protocol import out_of_core as protocol

fits, timing, init, timed = [], [], out_of_core.ChunkedCodes.__init__, protocol.timed
out_of_core.ChunkedCodes.__init__ = lambda self, *a, **k: fits.append(bool(timing)) or init(self, *a, **k)


def flagged(function, what):  # a fit made while timed
    timing.append(what)
    try:
        return timed(function, what)
    finally:
        timing.pop()


protocol.timed = flagged
spec, data_dir = json.loads(sys.argv[1]), sys.argv[2]
cross_validate_file(dataset_file(spec, data_dir), model_spec("kdb2_m_estimate"), repetitions=1, folds=2, chunk_rows=100)
print(sum(fits), len(fits))
"""


def test_the_warm_up_loads_every_kernel_so_that_no_fold_is_fitted_twice(tmp_path):
    """In a fresh process, the timed fit of the first fold must not load a kernel (``timed`` would make it again): the
    warm-up fits and predicts out of core, reading its file as a fold does. One warm-up fit and one fit a fold."""
    import json
    import subprocess
    import sys

    dataset_file(SYNTHETIC, tmp_path)  # drawn here, so that the process below only reads it
    found = subprocess.run([sys.executable, "-c", WARM_UP_CHECK, json.dumps(SYNTHETIC), str(tmp_path)],
                           capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["2", "3"]  # fits made timed (one a fold), and all of them (the warm-up's too)
