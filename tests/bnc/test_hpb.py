"""Hierarchical Pattern Bayes: hand-computed cases, an independent reading of Eqs. 4-7, exact
leave-one-out, the direct structure, the refusal, and recovering an interaction that NB cannot."""

from functools import cache

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.hpb.estimator import HierarchicalPatternBayes
from bncbench.bnc.inference import PackedNetwork
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.training_data import InMemoryCodes
from bncbench.bnc.estimators.hpb.pattern_bayes import PatternHierarchy
from bncbench.core.errors import ConfigError, NotApplicableError
from bncbench.core.metrics import log_loss

# A, B, class: (1, 1) never occurs. With S = 1 and b = 2 the estimates are worked out below.
TINY = pd.DataFrame(
    [[0, 0, "+"], [0, 0, "+"], [0, 1, "+"], [0, 1, "-"], [1, 0, "-"], [1, 0, "-"]], columns=["A", "B", "y"]
)
FIXED_S = {"s_grid": [1.0], "b": 2.0}


def _direct(data=TINY, **params):
    return BNClassifier(structure="direct", estimator="hpb", estimator_params={**FIXED_S, **params}).fit(
        data[["A", "B"]], data["y"]
    )


def test_direct_hpb_by_hand():
    # P(+) = (3 + 1/2) / (6 + 1) = 1/2 (the empty pattern: Eq. 4 with a uniform prior).
    # Level 1, prior P(c): P(+ | A=0) = (3 + 1/2) / 5 = 0.7, P(+ | A=1) = (0 + 1/2) / 3 = 1/6,
    # P(+ | B=0) = P(+ | B=1) = 1/2.
    # Level 2, B = b (2 - 1) = 2: P'(c | g) ∝ P(c)^-1 P(c | A=a) P(c | B=b') = 2 P(c | A=a) here, so
    # P(+ | G) = (P(+ | A=a) + 2 * 1/2) / 3: 17/30 for A=0, 7/18 for A=1; then Eq. 4 with N_w = 2.
    clf = _direct()
    rows = pd.DataFrame({"A": [0, 0, 1, 1], "B": [0, 1, 0, 1]})
    expected = [(2 + 17 / 30) / 3, (1 + 17 / 30) / 3, (0 + 7 / 18) / 3, 7 / 18]  # (1, 1) unseen: its prior
    np.testing.assert_allclose(clf.predict_proba(rows)[:, 0], expected)
    assert list(clf.classes_) == ["+", "-"]
    # a value unseen in training leaves its attribute out of the pattern: P(+ | B=0)
    np.testing.assert_allclose(clf.predict_proba(pd.DataFrame({"A": [7], "B": [0]}))[:, 0], [0.5])
    np.testing.assert_allclose(clf.predict_proba(pd.DataFrame({"A": [7], "B": [7]}))[:, 0], [0.5])


def test_tables_hold_the_estimates_of_the_prefix_contexts():
    clf = _direct()
    root, first, second = clf.tables_[0]
    np.testing.assert_allclose(root, [[0.5, 0.5]])
    first_attribute = clf.network_.class_parents[0]
    assert first_attribute == 0  # A is the more informative attribute
    np.testing.assert_allclose(np.sort(first[:, 0]), [1 / 6, 0.7])
    np.testing.assert_allclose(np.sort(second[:, 0]), np.sort([(2 + 17 / 30) / 3, (1 + 17 / 30) / 3, 7 / 54]))


def test_an_unseen_context_is_answered_from_all_its_sub_patterns_not_a_prefix():
    clf = _direct()
    unseen = pd.DataFrame({"A": [1], "B": [1]})
    prefix_back_off = PackedNetwork(clf.network_, clf.tables_).predict_proba(clf._codes(unseen))
    np.testing.assert_allclose(prefix_back_off[:, 0], [1 / 6])  # P(+ | A=1): B is dropped
    np.testing.assert_allclose(clf.predict_proba(unseen)[:, 0], [7 / 18])


def test_a_context_whose_rows_were_removed_gets_its_parents_estimate():
    codes = np.column_stack([TINY[["A", "B"]].to_numpy(), (TINY["y"] == "-").to_numpy()]).astype(np.int64)
    network = CountedNetwork([[], []], [2, 2], 2, attributes=[], class_parents=[0, 1]).add(codes)
    network.remove(codes[4:])  # the rows of A=1
    [(root, first, second)] = HierarchicalPatternBayes(s_grid=[1.0]).tables(network, InMemoryCodes(codes[:4]), None)
    a1 = network.trees[0].children[0][0, 1]
    np.testing.assert_allclose(first[a1], root[0])
    np.testing.assert_allclose(second[network.trees[0].children[1][a1, 0]], root[0])


def test_a_sample_of_the_rows_is_refused():
    codes = np.column_stack([TINY[["A", "B"]].to_numpy(), (TINY["y"] == "-").to_numpy()]).astype(np.int64)
    network = CountedNetwork([[], []], [2, 2], 2).add(codes)
    with pytest.raises(NotApplicableError, match="given 4 of the 6 rows"):
        HierarchicalPatternBayes().tables(network, InMemoryCodes(codes[:4]), None)


def test_calibration_b_zero_keeps_the_product_of_eq_5():
    # b = 0: P(+ | G) = P'(+ | g) = P(+ | A=1) = 1/6 for the unseen (1, 1)
    clf = _direct(b=0.0)
    np.testing.assert_allclose(clf.predict_proba(pd.DataFrame({"A": [1], "B": [1]}))[:, 0], [1 / 6])


def _reference_estimate(attributes, target, n_values, s, b):
    """Eqs. 4-7 read literally: a memoised recursion over patterns as sets of (attribute, value)."""
    rows = [frozenset(enumerate(r)) for r in attributes.tolist()]

    @cache
    def estimate(pattern):
        matching = [c for r, c in zip(rows, target) if pattern <= r]
        counts = np.bincount(np.asarray(matching, dtype=int), minlength=n_values)
        if not pattern:
            prior = np.full(n_values, 1.0 / n_values)
        else:
            root, level = estimate(frozenset()), len(pattern)
            naive = root ** (1 - level) * np.prod([estimate(pattern - {pair}) for pair in pattern], axis=0)
            naive /= naive.sum()
            calibration = b * (level - 1)
            prior = (naive + calibration * root) / (1 + calibration)
        return (counts + s * prior) / (len(matching) + s) if matching else prior

    return lambda row: estimate(frozenset((j, v) for j, v in enumerate(row) if v >= 0))


@pytest.mark.parametrize(("seed", "cards"), [(0, [3, 2, 4]), (1, [3, 2, 4]), (2, [40, 40, 3])])
def test_estimates_of_seen_unseen_and_partial_patterns_match_a_literal_reading(seed, cards):
    rng = np.random.default_rng(seed)  # patterns of few values are indexed by a table, of many by sorting
    attributes = np.column_stack([rng.integers(0, c, 25) for c in cards])
    target = rng.integers(0, 3, 25)
    hierarchy = PatternHierarchy.fit(attributes, target, cards, 3, b=1.5, s_grid=[0.7], loss="log_loss")
    reference = _reference_estimate(attributes, target, 3, s=0.7, b=1.5)
    queries = np.column_stack([rng.integers(-1, c, 40) for c in cards])  # -1: attribute left out
    expected = np.array([reference(q) for q in queries.tolist()])
    np.testing.assert_allclose(np.exp(hierarchy.log_distribution(queries)), expected, rtol=1e-12)


@pytest.mark.parametrize("loss", ["log_loss", "rmse"])
def test_leave_one_out_loss_of_each_family_equals_refitting_without_the_row(loss):
    rng = np.random.default_rng(3)
    cards = [2, 3, 2]
    attributes = np.column_stack([rng.integers(0, c, 18) for c in cards])
    target = rng.integers(0, 2, 18)
    fitted = PatternHierarchy.fit(attributes, target, cards, 2, b=2.0, s_grid=[0.5], loss=loss)
    held_out = {mask: [] for mask in fitted.families}
    for i in range(len(target)):
        keep = np.arange(len(target)) != i
        refit = PatternHierarchy.fit(attributes[keep], target[keep], cards, 2, b=2.0, s_grid=[0.5], loss=loss)
        for mask in fitted.families:
            row = np.where([(mask >> j) & 1 for j in range(3)], attributes[i], -1)[None, :]
            held_out[mask].append(np.exp(refit.log_distribution(row))[0, target[i]])
    for mask, family in fitted.families.items():
        p = np.array(held_out[mask])
        expected = -np.mean(np.log(p)) if loss == "log_loss" else np.sqrt(np.mean((1 - p) ** 2))
        assert family.loss == pytest.approx(expected, rel=1e-12), mask


def test_s_is_chosen_per_family_and_ties_go_to_the_larger_s():
    # A has two values, each seen 20 times and mostly one class: a small S wins. B is a row id:
    # every pattern with B occurs once, leave-one-out cannot tell, and the largest S is kept.
    a = np.repeat([0, 1], 20)
    target = np.where(np.arange(40) % 10 == 0, 1 - a, a)
    attributes = np.column_stack([a, np.arange(40)])
    grid = [0.01, 1.0, 100.0]
    fitted = PatternHierarchy.fit(attributes, target, [2, 40], 2, b=2.0, s_grid=grid, loss="log_loss")
    assert fitted.families[0b01].s < 100.0
    assert fitted.families[0b10].s == fitted.families[0b11].s == 100.0


def test_b_none_takes_the_b_whose_most_specific_family_has_the_lowest_leave_one_out_loss():
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.integers(0, 3, (150, 3)), columns=list("abc"))
    y = np.where((X["a"] == X["b"]) ^ (rng.random(150) < 0.2), "p", "q")

    def fit(b, **params):
        return BNClassifier(structure="direct", estimator="hpb", estimator_params={"b": b, **params}).fit(X, y)

    grid = [0.0, 0.5, 2.0]
    losses = {b: fit(b).estimator_.hierarchies_[0].most_specific.loss for b in grid}
    chosen = fit(None, b_grid=grid)
    best = min(losses, key=losses.get)
    assert chosen.estimator_.hierarchies_[0].b == best and len(set(losses.values())) == 3
    np.testing.assert_allclose(chosen.predict_proba(X), fit(best).predict_proba(X))


def test_every_node_of_a_kdb_gets_its_context_estimate_and_training_rows_read_the_same_tables():
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.integers(0, 2, (200, 4)), columns=list("abcd"))
    y = np.where((X["a"] ^ X["b"] ^ (rng.random(200) < 0.3)) == 1, "p", "q")
    clf = BNClassifier(structure="kdb", k=2, estimator="hpb", random_state=0).fit(X, y)
    for tree, tables in zip(clf.network_.trees, clf.tables_):
        assert [t.shape for t in tables] == [c.shape for c in tree.counts]
        for table in tables:
            np.testing.assert_allclose(table.sum(axis=1), 1.0)
    # every (class, parents) context occurs: HPB's whole-context estimate is the deepest table's
    by_tables = PackedNetwork(clf.network_, clf.tables_).predict_proba(clf._codes(X))
    np.testing.assert_allclose(clf.predict_proba(X), by_tables, rtol=1e-10)
    deepest = max(clf.parents_, key=lambda a: len(clf.parents_[a]))
    assert len(clf.parents_[deepest]) == 2 and clf.cpt(deepest).shape == (8, 2)


def test_hpb_recovers_a_critical_pattern_that_naive_bayes_misses():
    # P(+) = 0.05 except for one combination of all three attributes (a critical pattern), 0.9.
    rng = np.random.default_rng(1)

    def sample(n):
        X = pd.DataFrame(rng.integers(0, 4, (n, 3)), columns=list("abc"))
        critical = (X["a"] == 1) & (X["b"] == 2) & (X["c"] == 3)
        y = np.where(rng.random(n) < np.where(critical, 0.9, 0.05), "+", "-")
        return X, y, critical

    X, y, _ = sample(4000)
    X_test, y_test, critical = sample(4000)
    hpb = BNClassifier(structure="direct", estimator="hpb", random_state=0).fit(X, y)
    nb = BNClassifier(structure="nb", estimator="laplace", random_state=0).fit(X, y)
    pattern = pd.DataFrame({"a": [1], "b": [2], "c": [3]})
    p_hpb, p_nb = hpb.predict_proba(pattern)[0, 0], nb.predict_proba(pattern)[0, 0]
    assert p_nb < 0.3 and p_hpb > 0.6  # one S per family and the calibration (b = 2) shrink it from 0.93
    codes = (y_test == "-").astype(int)  # classes_ are ["+", "-"]
    assert log_loss(hpb.predict_proba(X_test), codes) < log_loss(nb.predict_proba(X_test), codes)
    assert (hpb.predict(X_test[critical]) == "+").all() and not (nb.predict(X_test[critical]) == "+").all()


def test_too_many_sub_patterns_are_refused_with_the_numbers():
    X = pd.DataFrame(np.zeros((60, 4), dtype=int), columns=list("abcd"))
    y = np.arange(60) % 2
    message = (
        r"table of the class given 4 variables has 60 training rows x 16 pattern families = 960 "
        r"sub-patterns, more than max_patterns=959"
    )
    with pytest.raises(NotApplicableError, match=message):
        BNClassifier(structure="direct", estimator="hpb", estimator_params={"max_patterns": 959}).fit(X, y)
    BNClassifier(structure="direct", estimator="hpb", estimator_params={"max_patterns": 960}).fit(X, y)
    with pytest.raises(NotApplicableError, match=r"column \d given 3 variables has 60 training rows x 8"):
        BNClassifier(structure="kdb", k=2, estimator="hpb", estimator_params={"max_patterns": 100}).fit(X, y)


def test_the_s_of_every_family_is_reported():
    clf = _direct(s_grid=[0.1, 1.0])
    found = clf.estimator_.diagnostics(["A", "B", "y"])["hpb_s"]
    assert list(found.index) == [("y | A, B", f) for f in ["{}", "{A}", "{B}", "{A, B}"]]
    assert list(found["level"]) == [0, 1, 1, 2] and (found["b"] == 2.0).all()
    assert set(found["s"]) <= {0.1, 1.0} and (found["loo_loss"] > 0).all()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"b": -1}, "b must be"),
        ({"b_grid": [-1.0]}, "b_grid must be"),
        ({"s_grid": []}, "s_grid must be"),
        ({"s_grid": [0.0, 1.0]}, "s_grid must be"),
        ({"selection_loss": "zero_one_loss"}, "selection_loss must be"),
        ({"max_patterns": 1.5}, "max_patterns must be"),
        ({"max_patterns": 0}, "max_patterns must be"),
    ],
)
def test_bad_parameters_are_refused(params, expected):
    with pytest.raises(ConfigError, match=expected):
        HierarchicalPatternBayes(**params)


def test_direct_structure_with_other_estimators_backs_off_to_prefixes():
    clf = BNClassifier(structure="direct", estimator="laplace").fit(TINY[["A", "B"]], TINY["y"])
    assert clf.parents_ == {} and clf.network_.class_parents == [0, 1]
    # (1, 1) unseen: the deepest seen context is A=1, Laplace (0 + 1) / (2 + 2)
    np.testing.assert_allclose(clf.predict_proba(pd.DataFrame({"A": [1], "B": [1]}))[:, 0], [1 / 4])
    with pytest.raises(ConfigError, match="does not take structure_params"):
        BNClassifier(structure="direct", structure_params={"k": 1}).fit(TINY[["A", "B"]], TINY["y"])
