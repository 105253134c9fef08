"""TAN-HC and TAN-HCSP (bnclassify's methods vignette, Sect. "TAN HC and TAN HC SP"): the greedy
searches replayed with an independent, plain scorer; the alphabetical rule; determinism; a forest;
and a real dataset end to end."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.bnc.inputs import check_acyclic
from bncbench.bnc.structures import make_structure
from bncbench.bnc.structures.tan_hill_climbing import log_bayesian_estimates
from bncbench.core.errors import ConfigError

NAMES = ["d", "b", "a", "c"]  # column order is not alphabetical: the tie rule reads the names


def _dataset(seed, n=160, d=4):
    """Attributes that copy the class or each other noisily, so that arcs change the accuracy."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    columns = [np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))]
    for _ in range(d - 1):
        source = columns[rng.integers(len(columns))]
        columns.append(np.where(rng.random(n) < 0.55, (source + y) % 3, rng.integers(0, 3, n)))
    X = np.column_stack(columns).astype(np.int64)
    # values seen once, in a row of the last class: held out, no class explains them at alpha = 0 and
    # every class scores -inf, a tie that goes to the first class, as in prediction
    for a in range(2):
        X[np.flatnonzero(y == 2)[a], a] = 3
    return X, y.astype(np.int64)


def _plain_accuracy(X, y, parents, folds, seed, alpha):
    """Mean over stratified folds of the held-out accuracy of the Bayesian estimates of Eq.
    (incp_params), row by row and table by table (a context without rows: uniform)."""
    cards, n_classes = X.max(axis=0) + 1, y.max() + 1
    accuracies = []
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
        hits = 0
        for i in test:
            scores = []
            for c in range(n_classes):
                n_c = np.sum(y[train] == c)
                score = np.log((n_c + alpha) / (len(train) + n_classes * alpha))
                for a, ps in enumerate(parents):
                    rows = train[(y[train] == c) & np.all([X[train, p] == X[i, p] for p in ps], axis=0)]
                    r = cards[a]
                    n_value = np.sum(X[rows, a] == X[i, a])
                    theta = (n_value + alpha) / (len(rows) + r * alpha) if len(rows) else 1.0 / r
                    score += np.log(theta) if theta > 0 else -np.inf
                scores.append(score)
            hits += int(np.argmax(scores) == y[i])
        accuracies.append(hits / len(test))
    return float(np.mean(accuracies))


def _has_cycle(parents, attribute, new_parent):
    node = new_parent
    while True:
        if node == attribute:
            return True
        if not parents[node]:
            return False
        node = parents[node][0]


def _plain_greedy(X, y, names, superparent, folds=5, seed=3, alpha=1.0):
    """The greedy search written out: every candidate scored by ``_plain_accuracy``, ties to the first
    in alphabetical order of (parent, child); the parents, the arcs added and the accuracies."""
    d = X.shape[1]
    parents = [[] for _ in range(d)]
    order = sorted(range(d), key=lambda a: names[a])
    current = _plain_accuracy(X, y, parents, folds, seed, alpha)
    arcs, accuracies = [], [current]
    while True:
        orphans = [a for a in order if not parents[a]]
        if len(orphans) <= 1:
            break
        if superparent:
            takes = {sp: [o for o in orphans if o != sp and not _has_cycle(parents, o, sp)] for sp in order}
            sps = [sp for sp in order if takes[sp]]
            sp_scores = [
                _plain_accuracy(X, y, [[sp] if a in takes[sp] else parents[a] for a in range(d)], folds, seed, alpha)
                for sp in sps
            ]
            best_sp = sps[int(np.argmax(sp_scores))]
            candidates = [(best_sp, o) for o in takes[best_sp]]
        else:
            candidates = [
                (p, o) for p in order for o in orphans
                if o != p and not _has_cycle(parents, o, p) and not (not parents[p] and names[p] > names[o])
            ]
        scores = [
            _plain_accuracy(X, y, [[p] if a == o else parents[a] for a in range(d)], folds, seed, alpha)
            for p, o in candidates
        ]
        best = int(np.argmax(scores))
        if scores[best] <= current + 1e-12:
            break
        p, o = candidates[best]
        parents[o] = [p]
        arcs.append((p, o))
        current = scores[best]
        accuracies.append(current)
    return parents, arcs, accuracies


def _fit(structure, X, y, names=NAMES, **params):
    frame = pd.DataFrame(X, columns=names).astype(str)
    params = {"folds": 5, "seed": 3, **params}
    return BNClassifier(structure=structure, structure_params=params, estimator="laplace").fit(frame, y)


@pytest.mark.parametrize("structure", ["tan_hc", "tan_hcsp"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [1.0, 0.0])
def test_the_search_is_the_greedy_search_written_out(structure, seed, alpha):
    X, y = _dataset(seed)
    classifier = _fit(structure, X, y, alpha=alpha)
    parents, arcs, accuracies = _plain_greedy(X, y, NAMES, superparent=structure == "tan_hcsp", alpha=alpha)
    assert arcs, "the data should make at least one arc worth adding"
    assert classifier.structure_info_["arcs"] == arcs
    assert classifier.structure_info_["cv_accuracy"] == pytest.approx(accuracies, abs=1e-12)
    assert classifier.parents_ == {NAMES[a]: [NAMES[p] for p in ps] for a, ps in enumerate(parents)}


def test_the_first_step_picks_the_best_arc_by_brute_force():
    X, y = _dataset(5)
    found = _fit("tan_hc", X, y).structure_info_
    naive_bayes = _plain_accuracy(X, y, [[], [], [], []], 5, 3, 1.0)
    arcs = [(p, o) for p in range(4) for o in range(4) if NAMES[p] < NAMES[o]]
    accuracy = {arc: _plain_accuracy(X, y, [[arc[0]] if a == arc[1] else [] for a in range(4)], 5, 3, 1.0)
                for arc in arcs}
    best = max(accuracy.values())
    assert best > naive_bayes
    assert found["cv_accuracy"][:2] == pytest.approx([naive_bayes, best], abs=1e-12)
    assert accuracy[found["arcs"][0]] == best


def test_arcs_between_orphans_go_from_the_alphabetically_earlier_name():
    """Two attributes only: the one arc scored is the one from the earlier name, whatever the columns'
    order; reversing the names reverses it."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    first = np.where(rng.random(400) < 0.7, y, 1 - y)
    second = (first + y + (rng.random(400) < 0.1)) % 2  # XOR of the class with the other: an arc pays
    X = np.column_stack([first, second])
    for names in (["x", "w"], ["w", "x"]):
        for structure in ("tan_hc", "tan_hcsp"):
            parents = _fit(structure, X, y, names=names).parents_
            if structure == "tan_hc":
                assert parents == {"w": [], "x": ["w"]}
            else:  # the superparent rule scores both directions: the best wins
                assert sum(map(len, parents.values())) == 1


def test_equal_candidates_go_to_the_alphabetically_first():
    """b and c are copies: the arcs from a to either score the same, and a -> b comes first."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    a = np.where(rng.random(300) < 0.7, y, 1 - y)
    b = (a + y + (rng.random(300) < 0.1)) % 2
    X = np.column_stack([b, a, b])
    found = _fit("tan_hc", X, y, names=["c", "a", "b"]).structure_info_
    names = ["c", "a", "b"]
    assert [(names[p], names[o]) for p, o in found["arcs"]][0] == ("a", "b")


@pytest.mark.parametrize("structure", ["tan_hc", "tan_hcsp"])
def test_the_same_seed_gives_the_same_search_and_the_seed_sets_the_folds(structure):
    X, y = _dataset(7, n=200, d=6)
    names = list("abcdef")
    runs = [_fit(structure, X, y, names=names, seed=s).structure_info_ for s in (11, 11, 12)]
    assert runs[0] == runs[1]
    assert runs[0]["cv_accuracy"][0] != runs[2]["cv_accuracy"][0]


@pytest.mark.parametrize("structure", ["tan_hc", "tan_hcsp"])
@pytest.mark.parametrize("seed", range(4))
def test_the_structure_is_a_forest(structure, seed):
    X, y = _dataset(seed, n=300, d=7)
    names = list("gfedcba")
    classifier = _fit(structure, X, y, names=names, epsilon=0.0)
    parents = classifier.parents_
    assert all(len(ps) <= 1 for ps in parents.values())
    check_acyclic([[names.index(p) for p in parents[a]] for a in names], names)
    assert len(classifier.structure_info_["arcs"]) <= len(names) - 1
    scores = classifier.structure_info_["cv_accuracy"]
    assert all(later > earlier for earlier, later in zip(scores, scores[1:]))


def test_epsilon_stops_the_search_at_a_smaller_gain():
    X, y = _dataset(0)
    found = _fit("tan_hc", X, y).structure_info_
    gains = np.diff(found["cv_accuracy"])
    threshold = float(gains.min()) + 1e-9
    stopped = _fit("tan_hc", X, y, epsilon=threshold).structure_info_
    first_small = int(np.argmax(gains < threshold))
    assert stopped["arcs"] == found["arcs"][:first_small]


def test_too_few_rows_for_two_folds_give_naive_bayes():
    X = pd.DataFrame({"a": ["0", "1"], "b": ["1", "1"]})
    classifier = BNClassifier(structure="tan_hc", estimator="laplace").fit(X, ["p", "q"])
    assert classifier.parents_ == {"a": [], "b": []}


@pytest.mark.parametrize("params", [{"folds": 1}, {"epsilon": -0.1}, {"alpha": -1.0}, {"seed": 1.5}])
def test_bad_parameters_are_refused_by_name(params):
    with pytest.raises(ConfigError, match=next(iter(params))):
        make_structure("tan_hc", structure_params=params)


@pytest.mark.parametrize("structure", ["tan_hc", "tan_hcsp"])
def test_car_fits_end_to_end(structure, shared_data_dir):
    data = pd.read_csv(shared_data_dir / "car.csv.gz", dtype=str)
    X, y = data.drop(columns="class"), data["class"]
    train = np.arange(len(X)) % 2 == 0
    classifier = BNClassifier(structure=structure, estimator="m_estimate", random_state=0).fit(X[train], y[train])
    accuracy = float(np.mean(classifier.predict(X[~train]) == y[~train]))
    nb = BNClassifier(structure="nb", estimator="m_estimate", random_state=0).fit(X[train], y[train])
    assert accuracy > float(np.mean(nb.predict(X[~train]) == y[~train]))
    assert sum(map(len, classifier.parents_.values())) >= 2


def test_the_inner_estimates_are_equation_incp_params():
    """Values along axis 0, contexts along axis 1: (N + alpha) / (N_context + r alpha); a context
    without rows is uniform."""
    counts = np.array([[2.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(np.exp(log_bayesian_estimates(counts, 0, 1.0)), [[3 / 6, 1 / 3], [2 / 6, 1 / 3], [1 / 6, 1 / 3]])
    np.testing.assert_allclose(np.exp(log_bayesian_estimates(counts, 0, 0.0)), [[2 / 3, 1 / 3], [1 / 3, 1 / 3], [0.0, 1 / 3]])
