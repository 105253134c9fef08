"""The bound on a fit's count arrays (``bncbench.bnc.memory``): the reviewer's high-cardinality cases,
scaled down, are refused before their arrays exist; ordinary data fits exactly as without a bound."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.information import StructureStatistics
from bncbench.bnc.memory import GIB, MemoryLimit
from bncbench.bnc.network import CountedNetwork
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.core.errors import ConfigError, NotApplicableError


def _id_like_frame(n_rows):
    """Two ID-like columns (every value once) and an ordinary one; a random two-valued class."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {"id1": np.arange(n_rows).astype(str), "id2": rng.permutation(n_rows).astype(str),
         "colour": rng.integers(0, 3, n_rows).astype(str)}
    )
    return X, rng.integers(0, 2, n_rows)


def _many_valued_frame(n_rows, n_attributes, n_values):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.integers(0, n_values, (n_rows, n_attributes)).astype(str)).add_prefix("a")
    return X, rng.integers(0, 2, n_rows)


def test_two_id_columns_with_kdb1_are_refused_before_the_pairwise_counts_exist():
    X, y = _id_like_frame(3000)  # pairwise counts id1 x id2 x class: 3000 * 3000 * 2 * 8 bytes = 0.134 GiB
    tracemalloc.start()
    with pytest.raises(NotApplicableError) as refused:
        BNClassifier(structure="kdb", k=1, estimator="m_estimate", memory_limit_gib=0.05).fit(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    message = str(refused.value)
    assert "structure learning needs 0.134 GiB" in message
    assert "'id1' x 'id2' (3000 x 3000 values x 2 classes" in message
    assert "memory_limit_gib=0.05" in message and "Discretise or drop ID-like columns" in message
    assert peak < 0.02 * GIB  # nothing of the size of the refused counts was allocated


def test_a_tree_level_under_an_id_column_is_refused_naming_its_table():
    X, y = _id_like_frame(2000)  # no structure learning: the table P(id2 | class, id1) is given
    with pytest.raises(NotApplicableError) as refused:
        BNClassifier(structure={"id2": ["id1"]}, estimator="laplace", memory_limit_gib=0.01).fit(X, y)
    message = str(refused.value)
    assert "the table P(id2 | class, id1) needs 0.0298 GiB at level 2: 2000 contexts of (class, id1)" in message
    assert "'id2': 2000 values, 'id1': 2000 values" in message and "a lower k" in message


def test_kdb5_on_many_valued_attributes_is_refused_in_its_trees():
    # the reviewer's six 1000-valued attributes with kDB-5, scaled: pairwise counts 0.009 GiB, trees 0.029 GiB
    X, y = _many_valued_frame(1000, 6, 200)
    with pytest.raises(NotApplicableError, match=r"the table P\(a\d \| class, a\d.*memory_limit_gib=0.02\."):
        BNClassifier(structure="kdb", k=5, estimator="mle", memory_limit_gib=0.02).fit(X, y)
    fitted = BNClassifier(structure="kdb", k=5, estimator="mle", memory_limit_gib=0.03).fit(X, y)
    assert fitted.score(X, y) == 1.0  # every row's context is unique: the bound is met, the fit is whole


def test_direct_structure_of_hpb_is_refused_in_its_child_index():
    X, y = _many_valued_frame(1000, 8, 300)  # the reviewer's ten 1000-valued attributes, scaled
    with pytest.raises(NotApplicableError, match=r"the table P\(class \| a\d, .*child index over \d+ values"):
        BNClassifier(structure="direct", estimator="hpb", memory_limit_gib=0.005).fit(X, y)


def test_the_estimates_are_the_sizes_of_the_arrays():
    """The bound is exact: the arrays of a fit fit in a bound of their own size, not in one byte less."""
    rng = np.random.default_rng(2)
    cards = np.array([40, 7, 25, 3])
    codes = np.column_stack([rng.integers(0, r, 500) for r in cards] + [rng.integers(0, 3, 500)])
    names = ["w", "x", "y", "z", "class"]
    pair_bytes = StructureStatistics(cards, 3).pair_counts.nbytes
    StructureStatistics(cards, 3, memory_limit=MemoryLimit(pair_bytes / GIB, names))
    with pytest.raises(NotApplicableError, match="'w' x 'y' \\(40 x 25 values x 3 classes"):
        StructureStatistics(cards, 3, memory_limit=MemoryLimit((pair_bytes - 1) / GIB, names))

    parents = [[2, 1], [], [1], [0, 2, 1]]
    tree_bytes = CountedNetwork(parents, cards, 3).add(codes[:250]).add(codes[250:]).nbytes
    for chunks in ([codes], [codes[:250], codes[250:]]):  # charged as contexts appear, chunk by chunk
        bounded = CountedNetwork(parents, cards, 3, memory_limit=MemoryLimit(tree_bytes / GIB, names))
        for chunk in chunks:
            bounded.add(chunk)
        too_small = CountedNetwork(parents, cards, 3, memory_limit=MemoryLimit((tree_bytes - 1) / GIB, names))
        with pytest.raises(NotApplicableError, match=r"the table P\(z \| class, w, y, x\)"):
            for chunk in chunks:
                too_small.add(chunk)


@pytest.mark.parametrize("limit", [0, -1.0, "2GB", True])
def test_a_bad_limit_is_refused_with_its_name(limit):
    X, y = _id_like_frame(20)
    with pytest.raises(ConfigError, match="memory_limit_gib must be a number > 0"):
        BNClassifier(memory_limit_gib=limit).fit(X, y)


@pytest.mark.parametrize(
    "dataset,model",
    [("splice", dict(structure="kdb", k=2, estimator="laplace")),  # splice has an ID-like column
     ("hepatitis", dict(structure="skdb", k=3, estimator="m_estimate")),
     ("vote", dict(structure="aode", estimator="laplace")),
     ("car", dict(structure="direct", estimator="hpb"))],
)
def test_ordinary_data_fits_as_without_a_bound(shared_data_dir, dataset, model):
    spec = {"name": dataset, "source": "store", "openml_id": None, "openml_target": None, "drop": []}
    data = load_dataset(spec, shared_data_dir)
    X = MDLDiscretizer().fit_transform(data.X, data.y)
    bounded = BNClassifier(**model, random_state=0).fit(X, data.y)  # the default bound
    unbounded = BNClassifier(**model, random_state=0, memory_limit_gib=None).fit(X, data.y)
    assert len(bounded.tables_) == len(unbounded.tables_)
    for tables, expected in zip(bounded.tables_, unbounded.tables_):
        for table, expected_table in zip(tables, expected, strict=True):
            np.testing.assert_array_equal(table, expected_table)
    np.testing.assert_array_equal(bounded.predict_proba(X), unbounded.predict_proba(X))


def _many_classes_frame(n_rows, n_classes):
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.integers(0, 3, (n_rows, 4)).astype(str)).add_prefix("a")
    return X, rng.integers(0, n_classes, n_rows).astype(str)


@pytest.mark.parametrize("estimator, what", [("m_estimate", "the m-estimate's choice of m"),
                                             ("wanbia", "WANBIA's weights")])
def test_a_class_of_many_values_is_refused_before_the_row_class_arrays_exist(estimator, what):
    """100,000 classes made fit run until the kernel killed it (issue 42): the (rows, classes, tables) arrays of the
    estimators that score rows under every class are bounded like the counts, and refused before they exist."""
    X, y = _many_classes_frame(4000, 3000)  # wanbia: 4000 x ~2,200 classes x 5 tables x 48 bytes = 1.98 GiB
    tracemalloc.start()
    with pytest.raises(NotApplicableError) as refused:
        BNClassifier(structure="nb", estimator=estimator, memory_limit_gib=0.1).fit(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    message = str(refused.value)
    assert message.startswith(f"{what} needs about ") and "classes x 5 tables" in message
    assert "more than memory_limit_gib=0.1. A class of this many values" in message
    assert peak < 0.05 * GIB


def test_prediction_goes_by_blocks_of_rows_with_the_same_answer_and_refuses_an_answer_above_the_bound(monkeypatch):
    X, y = _many_classes_frame(3000, 40)
    model = BNClassifier(structure="kdb", k=2, estimator="m_estimate", random_state=0).fit(X, y)
    whole = model.predict_proba(X)
    monkeypatch.setattr("bncbench.bnc.classifier.PREDICT_BLOCK_BYTES", 8 * 40 * 5 * 7)  # 7 rows a block
    np.testing.assert_array_equal(model.predict_proba(X), whole)
    model.set_params(memory_limit_gib=3000 * 40 * 8 / GIB * 0.99)
    with pytest.raises(NotApplicableError, match=r"predict_proba's answer needs about .* for 3,000 rows x 40 "
                                                 r"classes x 1 tables.*predict fewer rows at a time"):
        model.predict_proba(X)
