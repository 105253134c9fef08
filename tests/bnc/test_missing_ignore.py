"""``missing="ignore"`` (bnclassify's methods vignette): available-case counts, available-case
informations for structure learning, and exact summing out of missing attributes at prediction, checked
by hand and against enumeration of the full joint."""

import itertools

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.information import StructureStatistics, conditional_mutual_information, mutual_information_with_class
from bncbench.core.errors import ConfigError


def test_available_case_counts_by_hand():
    """a -> b. Row 2 misses a: it counts in the class prior and in nothing involving a, neither a's
    table nor b's (a is b's parent). Row 3 misses b: it counts in a's table only."""
    X = pd.DataFrame({"a": ["0", "1", None, "1", "0"], "b": ["0", "1", "1", None, "1"]})
    y = ["p", "q", "p", "q", "p"]
    clf = BNClassifier(structure={"b": ["a"]}, estimator="mle", missing="ignore").fit(X, y)
    np.testing.assert_allclose(clf.tables_[0][0][0], [3 / 5, 2 / 5])  # every row
    a = clf.cpt("a")  # rows 0, 1, 3, 4: p -> a = 0, 0; q -> a = 1, 1
    assert list(a.columns) == ["0", "1"]
    np.testing.assert_allclose(a.loc["p"], [1.0, 0.0])
    np.testing.assert_allclose(a.loc["q"], [0.0, 1.0])
    b = clf.cpt("b")  # rows 0, 1, 4: (p, a=0) -> b = 0, 1; (q, a=1) -> b = 1
    np.testing.assert_allclose(b.loc[("p", "0")], [0.5, 0.5])
    np.testing.assert_allclose(b.loc[("q", "1")], [0.0, 1.0])
    assert len(b) == 2


def test_missing_as_a_value_is_still_the_default():
    X = pd.DataFrame({"a": ["0", None, "1", None]})
    clf = BNClassifier(estimator="mle").fit(X, ["p", "q", "p", "q"])
    assert len(clf.cpt("a").columns) == 3  # "0", "1" and missing


def _random_data(seed, n, d, missing_rate):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    columns = [(y + (rng.random(n) < 0.3)) % 2]
    for j in range(1, d):
        columns.append((columns[rng.integers(j)] + y + rng.integers(0, 3, n) * (rng.random(n) < 0.5)) % 3)
    X = pd.DataFrame({f"x{j}": c.astype(float) for j, c in enumerate(columns)})
    return X.mask(rng.random(X.shape) < missing_rate), y


def _brute_force_proba(clf, X):
    """P(y | x_obs) by enumerating every value of the missing attributes in the fitted tables."""
    prior = clf.tables_[0][0][0]
    tables = {a: clf.cpt(a) for a in clf.parents_}
    values = {a: list(tables[a].columns) for a in tables}
    out = []
    for _, row in X.iterrows():
        missing = [a for a in tables if pd.isna(row[a])]
        joint = np.zeros(len(clf.classes_))
        for assignment in itertools.product(*(values[a] for a in missing)):
            full = {**row.to_dict(), **dict(zip(missing, assignment))}
            for c, label in enumerate(clf.classes_):
                p = prior[c]
                for a, parents in clf.parents_.items():
                    key = (label, *(full[q] for q in parents)) if parents else label
                    p *= tables[a].loc[key, full[a]]
                joint[c] += p
        out.append(joint / joint.sum())
    return np.array(out)


STRUCTURES = [
    {"x1": ["x0"], "x2": ["x1"], "x3": ["x1"]},  # a tree: x1 missing is the parent of observed x2, x3
    {"x1": ["x0"], "x2": ["x1", "x0"], "x3": ["x2", "x0"]},  # two parents: chains of missing parents
]


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("seed", range(3))
def test_prediction_is_the_full_joint_enumerated(structure, seed):
    X, y = _random_data(seed, 3000, 4, 0.15)
    clf = BNClassifier(structure=structure, estimator="laplace", missing="ignore").fit(X, y)
    test, _ = _random_data(seed + 10, 60, 4, 0.4)
    test.iloc[0] = [np.nan, np.nan, 1.0, 2.0]  # a missing chain above observed attributes
    test.iloc[1] = [np.nan] * 4
    np.testing.assert_allclose(clf.predict_proba(test), _brute_force_proba(clf, test), rtol=0, atol=1e-12)


def test_a_missing_parent_is_summed_out_not_dropped():
    """x1 -> x2: with x1 missing and x2 observed, the posterior mixes the tables of x2 over x1's values
    weighted by P(x1 | y); dropping x2's table too (or backing off to P(x2 | y)) gives another answer."""
    X, y = _random_data(0, 3000, 3, 0.1)
    clf = BNClassifier(structure={"x1": ["x0"], "x2": ["x1"]}, estimator="laplace", missing="ignore").fit(X, y)
    row = pd.DataFrame({"x0": [0.0], "x1": [np.nan], "x2": [2.0]})
    prior, t1, t2 = clf.tables_[0][0][0], clf.cpt("x1"), clf.cpt("x2")
    t0 = clf.cpt("x0")
    expected = np.array([
        prior[c] * t0.loc[label, 0.0] * sum(t1.loc[(label, 0.0), v] * t2.loc[(label, v), 2.0] for v in t1.columns)
        for c, label in enumerate(clf.classes_)
    ])
    np.testing.assert_allclose(clf.predict_proba(row)[0], expected / expected.sum(), atol=1e-12)
    dropped = np.array([prior[c] * t0.loc[label, 0.0] for c, label in enumerate(clf.classes_)])
    assert not np.allclose(expected / expected.sum(), dropped / dropped.sum(), atol=1e-3)


def test_informations_are_those_of_the_available_cases():
    X, y = _random_data(1, 2000, 4, 0.2)
    codes = X.to_numpy()
    coded = np.where(np.isnan(codes), -2, codes).astype(np.int64)
    cards = np.array([2, 3, 3, 3])
    found = StructureStatistics(cards, 3).add(np.column_stack([coded, y]))
    cmi = found.conditional_mutual_information()
    mi = found.mutual_information_with_class()
    for i, j in itertools.combinations(range(4), 2):
        both = ~np.isnan(codes[:, i]) & ~np.isnan(codes[:, j])
        expected = conditional_mutual_information(coded[both][:, [i, j]], y[both], cards[[i, j]], 3)[0, 1]
        assert cmi[i, j] == pytest.approx(expected, abs=1e-12)
    for i in range(4):
        seen = ~np.isnan(codes[:, i])
        assert mi[i] == pytest.approx(mutual_information_with_class(coded[seen][:, [i]], y[seen], cards[[i]], 3)[0], abs=1e-12)


@pytest.mark.parametrize("structure", ["tan"])
@pytest.mark.parametrize("seed", range(3))
def test_structure_learning_reads_available_cases(structure, seed):
    """A few missing values at random do not change TAN's tree on these data (kDB reads the same
    informations, checked above; its order by I(X; Y) is close on them, so a few holes can move it)."""
    X, y = _random_data(seed, 4000, 4, 0.0)
    holed, _ = _random_data(seed, 4000, 4, 0.05)
    complete = BNClassifier(structure=structure, k=1, estimator="laplace").fit(X, y).parents_
    ignored = BNClassifier(structure=structure, k=1, estimator="laplace", missing="ignore").fit(holed, y).parents_
    assert ignored == complete


@pytest.mark.parametrize(
    "params",
    [
        {"structure": "skdb"}, {"structure": "aode"}, {"structure": "tan_hc"}, {"structure": "direct"},
        {"estimator": "m_estimate"}, {"estimator": "hdp"}, {"estimator": "wanbia"},
    ],
)
def test_what_does_not_read_missing_values_as_none_is_refused(params):
    X, y = _random_data(0, 50, 3, 0.2)
    with pytest.raises(ConfigError, match=f"missing='ignore'.*{next(iter(params.values()))}"):
        BNClassifier(**{"estimator": "laplace", **params}, missing="ignore").fit(X, y)


def test_an_unknown_missing_mode_is_refused():
    X, y = _random_data(0, 50, 3, 0.2)
    with pytest.raises(ConfigError, match="missing must be one of"):
        BNClassifier(missing="drop").fit(X, y)
