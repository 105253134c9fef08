"""The counting passes of an out-of-core fit made on a dask cluster give the single-process fit to the last bit."""

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.context_tree import ContextTree
from bncbench.bnc.distributed import dask_client
from bncbench.bnc.out_of_core import fit_file, predict_proba_file
from bncbench.core.errors import ConfigError

distributed = pytest.importorskip("distributed")

MODELS = {"nb": dict(structure="nb", estimator="laplace"), "kdb2": dict(structure="kdb", k=2, estimator="m_estimate"),
          "skdb": dict(structure="skdb", k=3, estimator="m_estimate", estimator_params={"m": 1.0})}


@pytest.fixture(scope="module")
def client():
    """Two workers of one thread each, in this process (their tasks share the objects they are given, which the
    tasks must not change)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def files(tmp_path_factory, dependent_codes):
    """The same rows (nominal attributes that depend on the class and on each other, one with missing values) as a
    CSV file, a gzipped CSV file with a numeric column, and a parquet file of row groups unlike the chunks."""
    folder = tmp_path_factory.mktemp("distributed")
    codes, _ = dependent_codes(1500, 1, noise_columns=1)
    frame = pd.DataFrame(codes[:, :-1], columns=list("abcde")).astype(str)
    frame.loc[np.random.default_rng(1).random(len(frame)) < 0.05, "c"] = None
    frame["class"] = np.array(["x", "y", "z"])[codes[:, -1]]
    frame.to_csv(folder / "rows.csv", index=False)
    numeric = frame.assign(e=np.random.default_rng(2).normal(size=len(frame)) + frame["a"].astype(float))
    numeric.to_csv(folder / "rows.csv.gz", index=False)
    frame.to_parquet(folder / "rows.parquet", row_group_size=200)
    return folder


def assert_same_trees(trees, twins):
    """The same contexts, numbered alike, with the same counts, to the bit."""
    for tree, twin in zip(trees, twins, strict=True):
        for arrays, copies in ((tree.parent, twin.parent), (tree.children, twin.children), (tree.counts, twin.counts)):
            assert len(arrays) == len(copies)
            assert all(np.array_equal(a, b) for a, b in zip(arrays, copies))


@pytest.mark.parametrize("model, file, cache_bytes", [
    *((model, "rows.csv", 0) for model in MODELS),
    ("skdb", "rows.csv", 2**20), ("skdb", "rows.csv.gz", 0), ("skdb", "rows.parquet", 0),
])
def test_a_fit_counted_on_a_cluster_equals_the_fit_in_process(client, files, model, file, cache_bytes):
    """A training fold (a row mask), chunks of 131 rows: the same counts and context numbering, the same SkDB
    selection and leave-one-out losses, the same probabilities, whether the process reads its kept ids or the
    file."""
    rows = np.random.default_rng(3).random(1500) < 0.5
    numeric = ["e"] if file.endswith(".gz") else []

    def fit(client):
        return fit_file(BNClassifier(**MODELS[model], random_state=0), files / file, chunk_rows=131, numeric=numeric,
                        rows=rows, cache_bytes=cache_bytes, client=client)

    (here, data), (there, cluster_data) = fit(None), fit(client)
    assert cluster_data.passes == data.passes and there.parents_ == here.parents_
    assert_same_trees(there.network_.trees, here.network_.trees)
    if model == "skdb":
        selection, twin = there.structure_info_["selection"], here.structure_info_["selection"]
        assert (selection.k, selection.attributes) == (twin.k, twin.attributes)
        pd.testing.assert_frame_equal(selection.losses, twin.losses, check_exact=True)
    for (proba, _), (twin, _) in zip(predict_proba_file(there, cluster_data, rows=~rows),
                                     predict_proba_file(here, data, rows=~rows), strict=True):
        assert np.array_equal(proba, twin)


def test_context_trees_counted_apart_and_merged_in_order_are_one_count(dependent_codes):
    """Contexts met first in every chunk (191 at the deepest level, 4 to 78 new in each chunk), and missing values
    (negative codes): a row stops at its first missing parent."""
    codes, cards = dependent_codes(1000, 4, noise_columns=2)
    codes[np.random.default_rng(5).random(codes.shape) < 0.05] = -1
    columns, variables = np.ascontiguousarray(codes.T), (6, 2, 1, 4, 5)
    one = ContextTree(0, int(cards[0]), variables, [3, *cards[list(variables[1:])]]).add(columns)
    merged = one.empty_copy()
    for chunk in np.array_split(np.arange(len(codes)), 7):
        merged.merge(one.empty_copy().add(columns[:, chunk]))
    assert_same_trees([one], [merged])


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "no scheduler here"])
def test_a_scheduler_that_does_not_answer_is_refused_naming_the_setting(address):
    with pytest.raises(ConfigError, match=r"out_of_core\.scheduler=.*(local|null)") as refused:
        with dask_client(address, connect_seconds=1):
            pass
    assert address in str(refused.value)
