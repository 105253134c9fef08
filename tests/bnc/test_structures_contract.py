"""The structure contract: a structure defined here, registered by name, is used by BNClassifier and the
pairing checks like a built-in one; and every registered structure keeps the contract (defaults =
constructor, unknown parameters refused by name, shape flags = the networks it learns)."""

import inspect
import re

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators import check_pairing
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.structures import (
    STRUCTURES,
    Structure,
    make_structure,
    registered,
    structure_class,
    structure_defaults,
    structure_presets,
    structure_uses_k,
)
from bncbench.bnc.structures.base import counted
from bncbench.bnc.training_data import InMemoryCodes
from bncbench.core.errors import ConfigError

#: Codes of 5 attributes with 3 values, the last a copy of the first (so that TAN and kDB give it a parent),
#: and a class that the first attribute predicts, in the last column.
CODES = np.random.default_rng(1).integers(0, 3, size=(150, 6))
CODES[:, 4] = CODES[:, 0]
CODES[:, 5] = CODES[:, 0] + CODES[:, 5] % 2 > 1
X, Y = pd.DataFrame(CODES[:, :5], columns=["a", "b", "c", "d", "copy"]), CODES[:, 5]


class Chain(Structure, register=False):
    """Each attribute's parents are the ``k`` columns before it."""

    name = "chain"
    presets = {"chain2": {"k": 2}}

    def __init__(self, k: int = 1):
        self.k = k

    def learn(self, data, cards, n_classes, memory_limit=None):
        parents = [list(range(max(0, i - self.k), i)) for i in range(len(cards))]
        return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}

    def naive_bayes_shaped(self) -> bool:
        return self.k == 0


@pytest.fixture
def chain():
    with registered(Chain):
        yield Chain


def test_a_registered_structure_is_used_by_name(chain):
    clf = BNClassifier(structure="chain", k=2, estimator="laplace").fit(X, Y)
    assert clf.parents_ == {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["b", "c"], "copy": ["c", "d"]}
    assert structure_uses_k("chain") and structure_defaults("chain") == {}
    assert structure_presets()["chain2"] == {"structure": "chain", "k": 2, "structure_params": {}}
    with pytest.raises(ConfigError, match="estimator 'manb' takes only naive Bayes"):
        check_pairing("manb", "chain", 1)
    check_pairing("manb", "chain", 0)
    assert BNClassifier(structure="chain", k=0, estimator="manb").fit(X, Y).parents_["copy"] == []


def test_registration_is_undone_after_the_block_and_names_are_unique(chain):
    assert STRUCTURES["chain"] is chain
    with pytest.raises(ConfigError, match="'kdb' is taken by bncbench.bnc.structures.kdb.KDependenceStructure"):
        type("Clash", (Structure,), {"name": "kdb", "learn": Chain.learn})
    with pytest.raises(ConfigError, match="structure 'chain' is registered already"):
        with registered(chain):
            pass
    assert STRUCTURES["chain"] is chain


def test_a_preset_name_is_declared_once(chain):
    class Repeat(Structure, register=False):
        name = "repeat"
        presets = {"chain2": {}}
        learn = Chain.learn

    with registered(Repeat):
        with pytest.raises(ConfigError, match="preset 'chain2' is declared by structures 'chain' and 'repeat'"):
            structure_presets()


def test_a_test_structure_does_not_leak_into_the_registry():
    assert "chain" not in STRUCTURES and "chain2" not in structure_presets()
    with pytest.raises(ConfigError, match=r"unknown structure 'chain'; valid structures: aode, direct, .*, or a dict"):
        structure_class("chain")


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_defaults_are_the_constructors_and_unknown_parameters_are_refused_by_name(name):
    cls = STRUCTURES[name]
    assert list(cls.defaults()) == list(inspect.signature(cls).parameters)
    assert structure_defaults(name) == {p: v for p, v in cls.defaults().items() if p != "k"}
    assert isinstance(make_structure(name, None, structure_defaults(name)), cls)
    accepted = sorted(structure_defaults(name)) or "none"
    for bogus in ("bogus", "k"):  # k is BNClassifier's own argument, never a structure_param
        message = f"structure {name!r} does not take structure_params [{bogus!r}]; accepted: {accepted}."
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_structure(name, None, {bogus: 1})


@pytest.mark.parametrize("name", sorted(STRUCTURES))
@pytest.mark.parametrize("k", [0, 2])
def test_the_shape_flags_hold_for_the_networks_learned(name, k):
    """A structure that says it is naive-Bayes shaped learns such a network, and one that says it is a
    product of per-attribute tables learns one (an estimator relies on both before fitting)."""
    structure = make_structure(name, k)
    network, _ = structure.learn(InMemoryCodes(CODES), np.full(5, 3), 2)
    single_product = not np.any(network.tree_groups) and len(network.trees) == 1 + len(network.attributes)
    assert structure.product_of_attribute_tables == single_product
    if structure.naive_bayes_shaped():
        assert network.class_parents == [] and not any(network.parents[a] for a in network.attributes)


def test_selective_naive_bayes_is_naive_bayes_shaped():
    clf = BNClassifier(structure="skdb", k=0, estimator="manb").fit(X, Y)
    assert set(clf.arc_posteriors_) == set(clf.parents_) == set(clf.structure_info_["selection"].attributes)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_the_presets_make_their_structure(name):
    presets = STRUCTURES[name].presets
    assert presets, f"structure {name!r} declares no preset: no model could name it"
    for preset, settings in presets.items():
        assert set(settings) <= {"k", "structure_params"}, preset
        assert "k" not in settings or structure_uses_k(name), f"{preset}: {name!r} does not read k"
        made = structure_presets()[preset]
        assert made["structure"] == name
        assert isinstance(make_structure(name, made["k"], made["structure_params"]), STRUCTURES[name])
