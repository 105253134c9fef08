import itertools

import numpy as np
import pytest

from bncbench.bnc.information import conditional_mutual_information, mutual_information_with_class
from bncbench.bnc.structures import make_structure
from bncbench.core.errors import ConfigError
from bncbench.bnc.training_data import InMemoryCodes


@pytest.fixture(scope="module")
def chain_data():
    """Class y; a copies y noisily, b depends on a, c on b, d is noise: a clear kDB/TAN structure."""
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.8, y, 1 - y)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 2, n))
    c = np.where(rng.random(n) < 0.9, b, rng.integers(0, 2, n))
    d = rng.integers(0, 3, n)
    codes = np.column_stack([d, c, b, a]).astype(np.int64)
    return codes, y.astype(np.int64), np.array([3, 2, 2, 2])


def _parents(structure, codes, y, cards, k, params=None):
    network, _ = make_structure(structure, k, params).learn(InMemoryCodes(np.column_stack([codes, y])), cards, 2)
    return network.parents


def _spanning_tree_weight(parents, weights):
    return sum(weights[i, p] for i, ps in enumerate(parents) for p in ps)


def _all_spanning_trees(d):
    """Every labelled tree on d nodes, from its Pruefer sequence, as edge lists."""
    for sequence in itertools.product(range(d), repeat=d - 2):
        degree = [1] * d
        for v in sequence:
            degree[v] += 1
        edges = []
        for v in sequence:
            leaf = min(i for i in range(d) if degree[i] == 1)
            edges.append((leaf, v))
            degree[leaf] -= 1
            degree[v] -= 1
        u, w = [i for i in range(d) if degree[i] == 1]
        edges.append((u, w))
        yield edges


def test_naive_bayes_has_no_attribute_parents(chain_data):
    codes, y, cards = chain_data
    assert _parents("nb", codes, y, cards, 1) == [[], [], [], []]


def test_tan_is_a_maximum_weight_spanning_tree_rooted_at_the_most_informative_attribute(chain_data):
    codes, y, cards = chain_data
    parents = _parents("tan", codes, y, cards, 1)
    cmi = conditional_mutual_information(codes, y, cards, 2)
    mi = mutual_information_with_class(codes, y, cards, 2)
    assert parents[int(np.argmax(mi))] == []
    assert sum(len(p) for p in parents) == 3
    best = max(sum(cmi[u, v] for u, v in edges) for edges in _all_spanning_trees(4))
    assert np.isclose(_spanning_tree_weight(parents, cmi), best)


def test_kdb_follows_algorithm_2(chain_data):
    codes, y, cards = chain_data
    mi = mutual_information_with_class(codes, y, cards, 2)
    cmi = conditional_mutual_information(codes, y, cards, 2)
    order = list(np.argsort(-mi, kind="stable"))
    assert order[0] == 3  # a is the most informative attribute
    for k in range(4):
        parents = _parents("kdb", codes, y, cards, k)
        for position, attribute in enumerate(order):
            earlier = order[:position]
            expected = sorted(earlier, key=lambda j: (-cmi[attribute, j], earlier.index(j)))[:k]
            assert parents[attribute] == expected
    assert _parents("kdb", codes, y, cards, 1)[2] == [3]  # b's parent is a
    assert _parents("kdb", codes, y, cards, 1)[1] == [2]  # c's parent is b


def test_structures_reject_unknown_parameters(chain_data):
    codes, y, cards = chain_data
    with pytest.raises(ConfigError, match="does not take structure_params"):
        _parents("kdb", codes, y, cards, 1, {"scroe": "aic"})
    with pytest.raises(ConfigError, match="k must be an integer >= 0, got -1"):
        _parents("kdb", codes, y, cards, -1)


def test_kdb_parent_order_lists_the_same_parents_in_the_attributes_order(chain_data):
    codes, y, cards = chain_data
    mi = mutual_information_with_class(codes, y, cards, 2)
    position = {a: i for i, a in enumerate(np.argsort(-mi, kind="stable"))}
    for k in (2, 3):
        by_cmi = _parents("kdb", codes, y, cards, k)
        by_attributes = _parents("kdb", codes, y, cards, k, {"parent_order": "attributes"})
        assert [sorted(p) for p in by_cmi] == [sorted(p) for p in by_attributes]
        assert all(p == sorted(p, key=position.get) for p in by_attributes)
    assert by_cmi != by_attributes  # d (the last attribute) has c then b by CMI, b then c in the order
    with pytest.raises(ConfigError, match="parent_order must be one of"):
        make_structure("kdb", 2, {"parent_order": "random"})
