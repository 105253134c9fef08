"""The estimator contract: an estimator defined here, registered by name, is used by BNClassifier,
out-of-core fitting and the settings checks like a built-in one; and every registered estimator keeps
the contract (static pairing check = what ``tables`` refuses, defaults = constructor)."""

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import check_estimator

from bncbench import BNClassifier
from bncbench.bnc.estimators import (
    ESTIMATORS,
    Estimator,
    check_pairing,
    estimator_class,
    estimator_defaults,
    make_estimator,
    registered,
)
from bncbench.bnc.estimators.dirichlet import smoothed
from bncbench.bnc.out_of_core import fit_file
from bncbench.bnc.structures import STRUCTURES, structure_uses_k
from bncbench.core.errors import ConfigError

RNG = np.random.default_rng(0)
X = pd.DataFrame(RNG.integers(0, 3, size=(120, 4)), columns=list("abcd")).astype(str)
X["copy"] = X["a"]  # an attribute that TAN / kDB make a parent of another
Y = np.where(X["a"].astype(int) + RNG.integers(0, 2, 120) > 1, "p", "q")


class AddHalf(Estimator, register=False):
    """Dirichlet tables with ``alpha = 0.5`` (Jeffreys), plus made-up diagnostics."""

    name = "add_half"
    count_based = True

    def tables(self, network, codes, rng):
        self.rows_ = int(network.n_rows)
        return [[smoothed(counts, 0.5) for counts in tree.counts] for tree in network.trees]

    def diagnostics(self, column_names) -> dict:
        return {"rows_counted": self.rows_}

    def attribute_values(self) -> dict:
        return {"feature_weights_": {0: 1.0}}


@pytest.fixture
def add_half():
    with registered(AddHalf):
        yield AddHalf


def test_a_registered_estimator_is_used_by_name(add_half):
    clf = BNClassifier(structure="tan", estimator="add_half").fit(X, Y)
    laplace = BNClassifier(structure="tan", estimator="laplace", estimator_params={"alpha": 0.5}).fit(X, Y)
    np.testing.assert_allclose(clf.predict_proba(X), laplace.predict_proba(X))
    assert clf.diagnostics() == {"rows_counted": 120}
    assert clf.feature_weights_ == {"a": 1.0}
    with pytest.raises(AttributeError, match="'add_half' has no arc_posteriors_"):
        _ = clf.arc_posteriors_


def test_a_registered_estimator_passes_the_scikit_learn_checks(add_half):
    check_estimator(BNClassifier(estimator="add_half"))


def test_out_of_core_fitting_asks_the_estimator_whether_it_is_count_based(add_half, tmp_path):
    path = tmp_path / "d.csv"
    X.assign(**{"class": Y}).to_csv(path, index=False)
    clf, _ = fit_file(BNClassifier(estimator="add_half"), path, numeric=[])
    assert clf.diagnostics() == {"rows_counted": 120}
    add_half.count_based = False
    try:
        with pytest.raises(ConfigError, match="'add_half' needs every training row.*count-based estimators hdp, "):
            fit_file(BNClassifier(estimator="add_half"), path, numeric=[])
    finally:
        add_half.count_based = True


def test_registration_is_undone_after_the_block_and_names_are_unique(add_half):
    assert ESTIMATORS["add_half"] is add_half
    with pytest.raises(ConfigError, match="'laplace' is taken by bncbench.bnc.estimators.dirichlet.DirichletEstimator"):
        type("Clash", (Estimator,), {"name": "laplace", "tables": AddHalf.tables})
    assert "Clash" not in {cls.__name__ for cls in ESTIMATORS.values()}
    with pytest.raises(ConfigError, match="'add_half' is registered already"):
        with registered(add_half):
            pass
    assert ESTIMATORS["add_half"] is add_half  # the refused block did not unregister it


def test_a_test_estimator_does_not_leak_into_the_registry():
    assert "add_half" not in ESTIMATORS
    with pytest.raises(ConfigError, match="unknown estimator 'add_half'; valid estimators: awnb, hdp, hpb, "):
        make_estimator("add_half", {})


def test_an_estimator_without_tables_cannot_be_made():
    class NoTables(Estimator, register=False):
        name = "no_tables"

    with pytest.raises(TypeError, match="abstract method.* tables"):
        NoTables()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_defaults_are_the_constructors_and_make_the_estimator(name):
    defaults = estimator_defaults(name)
    assert list(defaults) == list(inspect.signature(ESTIMATORS[name]).parameters)
    assert isinstance(make_estimator(name, defaults), ESTIMATORS[name])
    with pytest.raises(ConfigError, match=f"estimator {name!r} does not take \\['bogus'\\]"):
        make_estimator(name, {"bogus": 1})


def test_check_pairing_refuses_what_tables_refuses_with_the_reason():
    with pytest.raises(ConfigError, match="estimator 'manb' takes only naive Bayes: .*; structure 'tan' with k=None"):
        check_pairing("manb", "tan", None)
    with pytest.raises(ConfigError, match="estimator 'wanbia' takes only .*every structure but 'aode'"):
        check_pairing("wanbia", "aode", 2)
    check_pairing("manb", {"a": []}, None)
    with pytest.raises(ConfigError, match="unknown estimator 'nope'"):
        check_pairing("nope", "nb", None)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_static_pairing_check_is_the_condition_of_tables(name):
    """Every pairing ``check_pairing`` refuses fails in ``tables`` too, and every pairing it accepts fits."""
    params = {"iterations": 20} if name == "hdp" else {}
    for structure in sorted(set(STRUCTURES) - {"skdb"}):  # skdb may select k = 0, i.e. naive Bayes
        clf = BNClassifier(structure=structure, k=2, estimator=name, estimator_params=params, random_state=0)
        if estimator_class(name).valid_structure(structure, 2):
            check_pairing(name, structure, 2)
            clf.fit(X, Y)
        else:
            with pytest.raises(ConfigError):
                clf.fit(X, Y)


@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_structure_uses_k_says_whether_k_changes_the_model(structure):
    """A structure that ignores k learns the same model, and reports the same findings, for any k."""
    fits = [BNClassifier(structure=structure, k=k, estimator="laplace").fit(X, Y) for k in (0, 2)]
    same = (
        fits[0].parents_ == fits[1].parents_
        and repr(fits[0].structure_info_) == repr(fits[1].structure_info_)  # skdb: its loss grid over k <= k_max
        and np.allclose(fits[0].predict_proba(X), fits[1].predict_proba(X))
    )
    assert structure_uses_k(structure) == (not same)


def test_structure_uses_k_refuses_unknown_structures():
    with pytest.raises(ConfigError, match="unknown structure 'forest'; valid structures: aode, direct, "):
        structure_uses_k("forest")
