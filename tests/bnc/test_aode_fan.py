import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.information import conditional_mutual_information


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(11)
    n = 300
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.75, y, rng.integers(0, 2, n))
    b = (a + rng.integers(0, 2, n) * (rng.random(n) < 0.2)) % 3
    c = rng.integers(0, 3, n)
    X = pd.DataFrame({"a": a, "b": b, "c": c}).astype(str)
    return X, y


def test_aode_averages_the_joint_probabilities_of_its_spodes(frame):
    X, y = frame
    aode = BNClassifier(structure="aode", estimator="laplace").fit(X, y)
    joints = []
    for s in X.columns:
        spode = {name: ([] if name == s else [s]) for name in X.columns}
        clf = BNClassifier(structure=spode, estimator="laplace").fit(X, y)
        joints.append(np.exp(clf.packed_.log_joint(clf._codes(X))))
    expected = np.mean(joints, axis=0)
    np.testing.assert_allclose(aode.predict_proba(X), expected / expected.sum(axis=1, keepdims=True))
    assert aode.structure_info_["super_parents"] == ["a", "b", "c"]


def test_aode_falls_back_to_naive_bayes_when_no_super_parent_is_frequent_enough(frame):
    X, y = frame
    aode = BNClassifier(structure="aode", structure_params={"frequency_limit": 10**6}, estimator="laplace").fit(X, y)
    nb = BNClassifier(structure="nb", estimator="laplace").fit(X, y)
    np.testing.assert_allclose(aode.predict_proba(X), nb.predict_proba(X))


def test_aode_skips_super_parents_with_rare_or_unseen_values(frame):
    X, y = frame
    probe = X.iloc[:5].assign(a="never seen")
    aode = BNClassifier(structure="aode", estimator="laplace").fit(X, y)
    joints = []
    for s in ("b", "c"):
        spode = {name: ([] if name == s else [s]) for name in X.columns}
        clf = BNClassifier(structure=spode, estimator="laplace").fit(X, y)
        joints.append(np.exp(clf.packed_.log_joint(clf._codes(probe))))
    expected = np.mean(joints, axis=0)
    np.testing.assert_allclose(aode.predict_proba(probe), expected / expected.sum(axis=1, keepdims=True))


def test_tan_likelihood_score_is_the_spanning_tree(frame):
    X, y = frame
    default = BNClassifier(structure="tan", estimator="laplace").fit(X, y)
    explicit = BNClassifier(structure="tan", structure_params={"score": "likelihood"}, estimator="laplace").fit(X, y)
    assert default.parents_ == explicit.parents_
    assert sum(len(p) for p in default.parents_.values()) == 2


@pytest.mark.parametrize("score,per_parameter", [("aic", lambda n: 1.0), ("bic", lambda n: np.log(n) / 2)])
def test_fan_keeps_only_edges_that_pay_their_penalty(frame, score, per_parameter):
    X, y = frame
    fan = BNClassifier(structure="tan", structure_params={"score": score}, estimator="laplace").fit(X, y)
    codes = fan._codes(X)
    cards = fan.encoder_.cardinalities_
    cmi = conditional_mutual_information(codes, np.asarray(y, dtype=np.int64), cards, 2)
    columns = list(X.columns)
    edges = [(columns.index(a), columns.index(p)) for a, ps in fan.parents_.items() for p in ps]
    gain = lambda i, j: len(X) * cmi[i, j] - per_parameter(len(X)) * 2 * (cards[i] - 1) * (cards[j] - 1)
    for i, j in edges:
        assert gain(i, j) > 0
    assert (0, 1) in edges or (1, 0) in edges  # a and b are strongly dependent
    assert all(2 not in edge for edge in edges)  # c is noise: its edges do not pay
    with pytest.raises(ValueError, match="score must be one of"):
        BNClassifier(structure="tan", structure_params={"score": "aicc"}).fit(X, y)
