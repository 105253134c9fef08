"""Hand-computed tables and the properties every estimator must have."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.estimators.m_estimate import largest_tied
from bncbench.core.errors import ConfigError

# A, B, class: six rows whose tables are worked out by hand below.
TINY = pd.DataFrame(
    [["a0", "b0", "+"], ["a0", "b0", "+"], ["a0", "b1", "+"], ["a1", "b1", "+"], ["a1", "b1", "-"], ["a1", "b0", "-"]],
    columns=["A", "B", "y"],
)
TINY_STRUCTURE = {"A": [], "B": ["A"]}


def _fit(estimator, params=None, data=TINY, structure=TINY_STRUCTURE):
    return BNClassifier(structure=structure, estimator=estimator, estimator_params=params or {}, random_state=0).fit(
        data[["A", "B"]], data["y"]
    )


def test_maximum_likelihood_tables_by_hand():
    clf = _fit("mle")
    np.testing.assert_allclose(clf.cpt("A").loc["+"].to_numpy(), [3 / 4, 1 / 4])
    np.testing.assert_allclose(clf.cpt("A").loc["-"].to_numpy(), [0, 1])
    b = clf.cpt("B")
    np.testing.assert_allclose(b.loc[("+", "a0")].to_numpy(), [2 / 3, 1 / 3])
    np.testing.assert_allclose(b.loc[("+", "a1")].to_numpy(), [0, 1])
    np.testing.assert_allclose(b.loc[("-", "a1")].to_numpy(), [1 / 2, 1 / 2])
    assert ("-", "a0") not in b.index  # only contexts seen in training are stored


def test_laplace_tables_and_class_prior_by_hand():
    clf = _fit("laplace", {"alpha": 1.0})
    np.testing.assert_allclose(clf.cpt("A").loc["-"].to_numpy(), [1 / 4, 3 / 4])
    np.testing.assert_allclose(clf.cpt("B").loc[("+", "a1")].to_numpy(), [1 / 3, 2 / 3])
    # the class prior is smoothed the same way: (4 + 1) / (6 + 2)
    proba = clf.predict_proba(pd.DataFrame({"A": ["zz"], "B": ["zz"]}))  # unseen values carry no evidence
    np.testing.assert_allclose(proba, [[5 / 8, 3 / 8]])


def test_m_estimate_with_value_back_off_by_hand():
    clf = _fit("m_estimate", {"m": 1.0, "backoff": "value"})
    # level 1 (class): (n + m/r) / (n(ctx) + m)
    np.testing.assert_allclose(clf.cpt("A").loc["+"].to_numpy(), [3.5 / 5, 1.5 / 5])
    np.testing.assert_allclose(clf.cpt("A").loc["-"].to_numpy(), [0.5 / 3, 2.5 / 3])
    b = clf.cpt("B")
    np.testing.assert_allclose(b.loc[("+", "a0")].to_numpy(), [2.5 / 4, 1.5 / 4])
    # n(b0, +, a1) = 0: backs off to p(b0 | +) = (2 + 0.5) / (4 + 1)
    np.testing.assert_allclose(b.loc[("+", "a1")].to_numpy(), [0.5, 1.5 / 2])
    # posterior of (a1, b0): + gets 4.5/7 * 0.3 * 0.5, - gets 2.5/7 * 5/6 * 1.5/3
    plus, minus = 4.5 / 7 * 0.3 * 0.5, 2.5 / 7 * 5 / 6 * 0.5
    proba = clf.predict_proba(pd.DataFrame({"A": ["a1"], "B": ["b0"]}))
    np.testing.assert_allclose(proba, [[plus / (plus + minus), minus / (plus + minus)]])
    # (a0, b1) under "-": context (-, a0) never occurred, so B backs off to p(b1 | -) = 1.5 / 3
    plus, minus = 4.5 / 7 * 0.7 * 1.5 / 4, 2.5 / 7 * (0.5 / 3) * 0.5
    proba = clf.predict_proba(pd.DataFrame({"A": ["a0"], "B": ["b1"]}))
    np.testing.assert_allclose(proba, [[plus / (plus + minus), minus / (plus + minus)]])


def test_m_estimate_context_back_off_keeps_the_node_estimate():
    clf = _fit("m_estimate", {"m": 1.0, "backoff": "context"})
    np.testing.assert_allclose(clf.cpt("B").loc[("+", "a1")].to_numpy(), [0.5 / 2, 1.5 / 2])


def _reference_m_estimate_posterior(train, test, parents, m, classes):
    """Independent reading of HDP paper Eq. 16 with back-off, from dictionaries of counts."""
    attributes = [c for c in train.columns if c != "y"]
    counts = Counter()
    for _, row in train.iterrows():
        for a in attributes:
            context = (row["y"], *(row[p] for p in parents[a]))
            for depth in range(1, len(context) + 1):
                counts[(a, context[:depth])] += 1
                counts[(a, context[:depth], row[a])] += 1
    n_values = {a: train[a].nunique() for a in attributes}
    class_counts = train["y"].value_counts()
    out = []
    for _, row in test.iterrows():
        joint = []
        for y in classes:
            p = (class_counts.get(y, 0) + m / len(classes)) / (len(train) + m)
            for a in attributes:
                context = (y, *(row[p_] for p_ in parents[a]))
                while len(context) > 1 and counts[(a, context)] == 0:
                    context = context[:-1]
                while len(context) > 1 and counts[(a, context, row[a])] == 0:
                    context = context[:-1]
                p *= (counts[(a, context, row[a])] + m / n_values[a]) / (counts[(a, context)] + m)
            joint.append(p)
        out.append(np.array(joint) / sum(joint))
    return np.array(out)


@pytest.mark.parametrize("structure,k", [("nb", 1), ("tan", 1), ("kdb", 2), ("kdb", 3)])
def test_m_estimate_posteriors_match_an_independent_implementation(structure, k):
    rng = np.random.default_rng(3)
    n = 400
    y = rng.integers(0, 3, n)
    frame = pd.DataFrame({f"x{i}": (y * (i % 2) + rng.integers(0, 3 + i % 2, n)) % (3 + i % 2) for i in range(5)})
    frame = frame.astype(str)
    frame["y"] = np.array(["u", "v", "w"])[y]
    train, test = frame.iloc[:300], frame.iloc[300:]
    clf = BNClassifier(structure=structure, k=k, estimator="m_estimate", estimator_params={"m": 2.0}).fit(
        train.drop(columns="y"), train["y"]
    )
    expected = _reference_m_estimate_posterior(train, test, clf.parents_, 2.0, list(clf.classes_))
    np.testing.assert_allclose(clf.predict_proba(test.drop(columns="y")), expected, rtol=1e-10)


@pytest.mark.parametrize(
    "estimator,params", [("mle", {}), ("laplace", {"alpha": 0.5}), ("m_estimate", {"m": 3.0, "backoff": "context"})]
)
def test_every_table_row_sums_to_one(estimator, params):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.integers(0, 4, size=(300, 5)), columns=list("abcde"))
    clf = BNClassifier(structure="kdb", k=2, estimator=estimator, estimator_params=params).fit(frame, rng.integers(0, 3, 300))
    for tree_tables in clf.tables_:
        for table in tree_tables:
            np.testing.assert_allclose(table.sum(axis=1), 1.0)
    np.testing.assert_allclose(clf.predict_proba(frame).sum(axis=1), 1.0)


@pytest.mark.parametrize("estimator,params", [("laplace", {"alpha": 1.0}), ("m_estimate", {"m": 5.0})])
def test_more_data_moves_estimates_toward_the_empirical_frequency(estimator, params):
    """Where a value was counted in its context; a zero count backs off by design (m-estimate)."""
    small = _fit(estimator, params)
    large = _fit(estimator, params, data=pd.concat([TINY] * 20, ignore_index=True))
    empirical = _fit("mle")
    for attribute in ("A", "B"):
        gap_small = (small.cpt(attribute) - empirical.cpt(attribute)).abs().to_numpy()
        gap_large = (large.cpt(attribute) - empirical.cpt(attribute)).abs().to_numpy()
        moved = (gap_small > 1e-12) & (empirical.cpt(attribute).to_numpy() > 0)
        assert np.all(gap_large[moved] < gap_small[moved])


def test_m_is_chosen_on_a_holdout_deterministically_under_a_seed():
    frame = pd.read_csv(
        pd.io.common.StringIO("\n".join(["a,b,y"] + [f"{i % 3},{(i * 7) % 5},{int(i % 3 == 0 or i % 11 == 0)}" for i in range(500)]))
    ).astype(str)
    fits = [
        BNClassifier(structure="kdb", k=1, estimator="m_estimate", random_state=seed).fit(frame[["a", "b"]], frame["y"])
        for seed in (7, 7)
    ]
    assert fits[0].estimator_.selected_m_ == fits[1].estimator_.selected_m_
    assert fits[0].estimator_.selected_m_ in (0.0, 0.05, 0.2, 1.0, 5.0, 20.0)
    assert set(fits[0].estimator_.holdout_losses_) == {0.0, 0.05, 0.2, 1.0, 5.0, 20.0}
    np.testing.assert_array_equal(fits[0].predict_proba(frame[["a", "b"]]), fits[1].predict_proba(frame[["a", "b"]]))


@pytest.mark.parametrize("m_grid,expected", [((0.0, 0.05, 0.2, 1.0, 5.0, 20.0), 20.0), ((1.0, 0.0, 5.0), 5.0)])
def test_a_holdout_tie_goes_to_the_largest_m_not_to_m_zero(m_grid, expected):
    # A decides the class: every m classifies the holdout without error, so zero-one loss ties them all.
    X = pd.DataFrame({"A": ["a0", "a1"] * 20})
    y = X["A"].map({"a0": "+", "a1": "-"})
    clf = BNClassifier(
        structure="nb",
        estimator="m_estimate",
        estimator_params={"m_grid": list(m_grid), "selection_loss": "zero_one_loss"},
        random_state=0,
    ).fit(X, y)
    assert set(clf.estimator_.holdout_losses_.values()) == {0.0}  # m = 0 ties with every larger m
    assert clf.estimator_.selected_m_ == expected


def test_holdout_losses_that_differ_by_rounding_only_are_tied():
    assert 0.1 + 0.2 != 0.3
    assert largest_tied([0.0, 0.05, 1.0], [0.3, 0.1 + 0.2, 0.4]) == 0.05
    assert largest_tied([0.0, 0.05, 1.0], [0.3, 0.3 * (1 + 1e-6), 0.4]) == 0.0  # a real difference


def test_estimator_errors_name_the_valid_choices():
    with pytest.raises(ConfigError, match="valid estimators: " + ", ".join(sorted(ESTIMATORS))):
        _fit("hdpp")
    with pytest.raises(ConfigError, match="does not take"):
        _fit("laplace", {"m": 1})
    with pytest.raises(ConfigError, match="backoff"):
        _fit("m_estimate", {"backoff": "sideways"})
