"""Synthetic datasets drawn from a declared Bayesian network: the sampler, the store files, the refusals."""

import itertools
import os
import stat

import numpy as np
import pytest

from bncbench.core.errors import ConfigError
from bncbench.data import load_dataset
from bncbench.data.digest import dataset_digest
from bncbench.data.store import data_file, read_schema
from bncbench.data import synthetic
from bncbench.data.synthetic import Declaration, SyntheticNetwork, write_synthetic

NETWORK = {"rows": 3000, "attributes": 4, "values": [2, 3, 2, 4], "classes": 3, "k": 2, "alpha": 1.0,
           "seed": 7, "sample_seed": 11}


def spec(**changes):
    return {"name": "toy", "source": "synthetic", "synthetic": {**NETWORK, **changes}}


def test_the_network_is_a_kdb_k_whose_cpt_rows_are_distributions():
    network = SyntheticNetwork.of(Declaration.of(spec(attributes=6, values=3, classes=2, k=2)))
    assert network.n_parents.tolist() == [0, 1, 2, 3, 3, 3, 3]  # the class, then up to k earlier attributes
    for v in range(1, 7):
        parents = network.parents[v, : network.n_parents[v]]
        assert parents[0] == 0 and all(0 < p < v for p in parents[1:]) and len(set(parents)) == len(parents)
        assert network.tables[v].shape == (2 * 3 ** (len(parents) - 1), 3)  # 2 classes, 3 values each
    for table in network.tables:
        assert np.allclose(table.sum(axis=1), 1.0) and (table >= 0).all()


def test_frequencies_converge_to_the_cpts():
    declaration = Declaration.of(spec(k=1))
    network = SyntheticNetwork.of(declaration)
    codes = network.sample(declaration.sample_seed, 0, 200_000)
    n = len(codes)
    for v in range(codes.shape[1]):
        parents = network.parents[v, : network.n_parents[v]]
        contexts = np.zeros(n, dtype=np.int64)
        for p in parents:
            contexts = contexts * network.cardinality[p] + codes[:, p]
        for context, row in enumerate(network.tables[v]):
            at = codes[contexts == context, v]
            if len(at) < 2000:
                continue
            frequencies = np.bincount(at, minlength=len(row)) / len(at)
            # 5 standard errors of a proportion: the test fails by chance about once in 3 million
            assert np.all(np.abs(frequencies - row) <= 5 * np.sqrt(row * (1 - row) / len(at)) + 1e-12), (v, context)


def test_the_true_posterior_is_bayes_rule_over_the_joint():
    declaration = Declaration.of(spec())
    network = SyntheticNetwork.of(declaration)
    rows = np.array(list(itertools.product(*[range(r) for r in declaration.values])))
    joint = np.empty((len(rows), declaration.classes))
    for i, x in enumerate(rows):
        for y in range(declaration.classes):
            values = [y, *x]
            p = network.tables[0][0, y]
            for v in range(1, len(values)):
                context = 0
                for parent in network.parents[v, : network.n_parents[v]]:
                    context = context * network.cardinality[parent] + values[parent]
                p *= network.tables[v][context, values[v]]
            joint[i, y] = p
    assert np.allclose(network.posterior(rows), joint / joint.sum(axis=1, keepdims=True), rtol=1e-10, atol=0)


def test_same_declaration_same_bytes_and_the_chunk_size_changes_nothing(tmp_path):
    name = write_synthetic(tmp_path / "a", spec())
    assert write_synthetic(tmp_path / "b", spec(), chunk_rows=257) == name
    first = data_file(tmp_path / "a", name).read_bytes()
    assert data_file(tmp_path / "b", name).read_bytes() == first
    assert dataset_digest(spec(), tmp_path / "a").digest == dataset_digest(spec(), tmp_path / "b").digest
    other = write_synthetic(tmp_path / "a", spec(sample_seed=12))
    assert other != name and data_file(tmp_path / "a", other).read_bytes() != first


def test_a_drawn_dataset_takes_the_umask_like_any_store_file(tmp_path):
    """learning_curves drew its datasets as mode 0600 into a data directory a group may share (issue 42)."""
    before = os.umask(0o002)
    try:
        name = write_synthetic(tmp_path, spec())
    finally:
        os.umask(before)
    for path in (data_file(tmp_path, name), tmp_path / "schema.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o664


def test_a_smaller_sample_is_the_first_rows_of_a_larger_one(tmp_path):
    small = load_dataset(spec(rows=500), tmp_path)
    large = load_dataset(spec(rows=3000), tmp_path)
    assert small.X.equals(large.X.iloc[:500]) and small.y.equals(large.y.iloc[:500])
    assert small.numeric == [] and list(small.X.columns) == ["x1", "x2", "x3", "x4"]
    assert sorted(small.y.unique()) == ["c0", "c1", "c2"]


def test_another_declaration_is_another_file_never_the_stale_one(tmp_path):
    digest = dataset_digest(spec(), tmp_path)
    assert digest is None  # not drawn yet
    load_dataset(spec(), tmp_path)
    before = dataset_digest(spec(), tmp_path)
    assert before.source == "synthetic" and before.details["path"].endswith(".csv.gz")
    assert dataset_digest(spec(alpha=0.5), tmp_path) is None  # a changed declaration has no file yet
    changed = load_dataset(spec(alpha=0.5), tmp_path)
    after = dataset_digest(spec(alpha=0.5), tmp_path)
    assert after.digest != before.digest and after.details["path"] != before.details["path"]
    assert not changed.X.equals(load_dataset(spec(), tmp_path).X)
    schema = read_schema(tmp_path)
    assert {entry["synthetic"]["alpha"] for entry in schema.values()} == {1.0, 0.5}


def test_a_network_numpy_draws_otherwise_is_another_file_never_rows_of_the_old_one(tmp_path, monkeypatch):
    """NumPy may change ``Generator``'s draws between versions (NEP 19): the same declaration then draws
    another network, whose truth the old rows must not be scored against."""
    load_dataset(spec(), tmp_path)
    before = dataset_digest(spec(), tmp_path)
    synthetic._network.cache_clear()
    monkeypatch.setattr(synthetic.np.random, "default_rng", lambda seed: np.random.Generator(np.random.MT19937(seed)))
    try:
        assert dataset_digest(spec(), tmp_path) is None  # not the file drawn from the other network
        load_dataset(spec(), tmp_path)
        assert dataset_digest(spec(), tmp_path).details["path"] != before.details["path"]
    finally:
        synthetic._network.cache_clear()


def test_the_dataset_knows_its_true_posterior(tmp_path):
    dataset = load_dataset(spec(), tmp_path)
    truth = dataset.true_posterior(dataset.X.iloc[:50])
    assert list(truth.columns) == ["c0", "c1", "c2"] and np.allclose(truth.sum(axis=1), 1.0)
    codes = np.column_stack([dataset.X[c].str[1:].astype(int) for c in dataset.X.columns])[:50]
    network = SyntheticNetwork.of(Declaration.of(spec()))
    assert np.allclose(truth.to_numpy(), network.posterior(codes))


@pytest.mark.parametrize(
    "declaration, message",
    [
        (None, "no 'synthetic' mapping"),
        ({**NETWORK, "depth": 3}, "unknown keys ['depth']"),
        ({key: value for key, value in NETWORK.items() if key != "alpha"}, "synthetic has no alpha"),
        ({**NETWORK, "k": -1}, "synthetic.k is -1; it must be an integer >= 0"),
        ({**NETWORK, "alpha": 0}, "synthetic.alpha is 0; it must be a number > 0"),
        ({**NETWORK, "alpha": True}, "synthetic.alpha is True"),
        ({**NETWORK, "rows": 1.5e6}, "synthetic.rows is 1500000.0; it must be an integer >= 2"),
        ({**NETWORK, "values": 1}, "synthetic.values is 1"),
        ({**NETWORK, "values": [2, 3]}, "lists 2 cardinalities for 4 attributes"),
        ({**NETWORK, "classes": "2"}, "synthetic.classes is '2'"),
        ({**NETWORK, "attributes": 40, "values": 60, "k": 5}, "probabilities (more than 25,000,000)"),
    ],
)
def test_a_bad_declaration_is_refused_in_one_line(tmp_path, declaration, message):
    bad = {"name": "toy", "source": "synthetic", **({"synthetic": declaration} if declaration else {})}
    with pytest.raises(ConfigError) as refused:
        load_dataset(bad, tmp_path)
    assert message in str(refused.value) and "conf/dataset/toy.yaml" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not list(tmp_path.glob("*.csv.gz"))


def test_cross_validation_logs_the_distance_to_the_truth_which_shrinks_with_the_rows(tmp_path):
    from bncbench.protocol.cross_validation import cross_validate
    from bncbench.protocol.models import model_spec

    def distances(rows):
        dataset = load_dataset(spec(rows=rows, k=0), tmp_path)  # a naive Bayes network, learnt by naive Bayes
        return cross_validate(dataset, model_spec("nb_laplace"), repetitions=1, folds=2).metrics

    small, large = distances(200), distances(20_000)
    assert set(small.columns) >= {"kl_to_truth", "tv_to_truth"}
    assert large["kl_to_truth"].mean() < small["kl_to_truth"].mean() / 10
    assert large["tv_to_truth"].mean() < 0.02 and large["kl_to_truth"].mean() < 0.01


def test_a_dataset_of_unknown_distribution_has_no_distance_to_the_truth(shared_data_dir):
    from bncbench.protocol.cross_validation import cross_validate
    from bncbench.protocol.models import model_spec

    metrics = cross_validate(load_dataset("iris", shared_data_dir), model_spec("nb_laplace"), repetitions=1).metrics
    assert "kl_to_truth" not in metrics and "tv_to_truth" not in metrics
