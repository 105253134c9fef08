"""HDP estimates (Petitjean et al. 2018, Sect. 4): worked example, properties, kernels, edge cases."""

import itertools
import math

import numba
import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.context_tree import ContextTree
from bncbench.bnc.estimators.hdp import forest as hdp_forest
from bncbench.bnc.estimators.hdp.estimator import HDPEstimator
from bncbench.bnc.estimators.hdp.forest import Forest, _moving_nodes, _tie, interleaved
from bncbench.bnc.estimators.hdp.concentration import SMALL_TOTAL, sum_log_inverse_beta
from bncbench.bnc.estimators.hdp.sampler import ROW_CACHE, _fill_steps, run_chains
from bncbench.bnc.estimators.hdp.stirling import shared_table
from bncbench.core.errors import ConfigError

# Java's Test2LevelMLPaperMain runs the worked example with no tying and concentrations every iteration.
WORKED = {"tying": "none", "concentration_every": 1, "iterations": 20_000, "seed": 1}


def worked_dataset(y1_counts):
    """Sect. 4.6: n(X1=0|Y=0) = 2, n(X1=1|Y=0) = 0, and (n(X1=0|Y=1), n(X1=1|Y=1)) = y1_counts."""
    pairs = [(0, 0)] * 2 + [(0, 1)] * y1_counts[0] + [(1, 1)] * y1_counts[1]
    return pd.DataFrame({"X1": [x for x, _ in pairs]}), np.array([y for _, y in pairs])


def hdp_table(X, y, **params):
    clf = BNClassifier(structure="nb", estimator="hdp", estimator_params=params).fit(X, y)
    return clf.cpt(X.columns[0]).to_numpy()


def exact_posterior_mean(y1_counts, prior_shape=2.0, prior_rate=1.0):
    """E[p(X1 | Y)] under the sampler's target (the model of the authors' code: root t = min(n, 1),
    root concentration 2, one Gamma-distributed concentration per class node), by enumerating every
    pseudo-count and integrating each concentration on a grid."""
    n = {(0, 0): 2, (0, 1): 0, (1, 0): y1_counts[0], (1, 1): y1_counts[1]}
    grid = np.exp(np.linspace(-12, math.log(4000), 20001))
    step = math.log(grid[1] / grid[0])
    log_gamma_grid = np.array([math.lgamma(a) for a in grid])
    weights, estimates = [], []
    for t in itertools.product(*(range(1, n[c] + 1) if n[c] else [0] for c in sorted(n))):
        t = dict(zip(sorted(n), t))
        root_n = [t[(0, x)] + t[(1, x)] for x in (0, 1)]
        log_w = sum(shared_table.log(n[c], t[c]) for c in n)
        log_w += sum(shared_table.log(m, min(m, 1)) + min(m, 1) * math.log(2) for m in root_n)
        log_w -= math.lgamma(2 + sum(root_n)) - math.lgamma(2)
        root = [(m + 1.0) / (sum(root_n) + 2) for m in root_n]
        estimate = []
        for y in (0, 1):
            big_n, big_t = n[(y, 0)] + n[(y, 1)], t[(y, 0)] + t[(y, 1)]
            log_f = (prior_shape + big_t) * np.log(
                grid
            ) - prior_rate * grid  # Gamma prior x alpha^T, d log alpha
            log_f -= (
                np.array([math.lgamma(a + big_n) for a in grid]) - log_gamma_grid
            )  # / alpha^(N)
            f = np.exp(log_f - log_f.max())
            log_w += log_f.max() + math.log(f.sum() * step)
            estimate += [
                (f * (n[(y, x)] + grid * root[x]) / (big_n + grid)).sum() / f.sum() for x in (0, 1)
            ]
        weights.append(log_w)
        estimates.append(estimate)
    weights = np.exp(np.array(weights) - max(weights))
    return (weights[:, None] * np.array(estimates)).sum(axis=0).reshape(2, 2) / weights.sum()


@pytest.fixture(scope="module")
def worked():
    out = {}
    for name, y1 in {"dataset1": (20, 5), "dataset2": (5, 20)}.items():
        X, y = worked_dataset(y1)
        out[name] = {"hdp": hdp_table(X, y, **WORKED), "exact": exact_posterior_mean(y1)}
        counts = np.array([[2, 0], list(y1)], dtype=float)
        out[name]["mle"] = counts / counts.sum(axis=1, keepdims=True)
        out[name]["m"] = (counts + 0.5) / (counts.sum(axis=1, keepdims=True) + 1)  # m = 1
    return out


def test_worked_example_matches_the_exact_posterior(worked):
    for found in worked.values():
        np.testing.assert_allclose(found["hdp"], found["exact"], atol=3e-3)


def test_worked_example_behaves_as_the_paper_says(worked):
    """Sect. 4.6, with Dataset #2 the mirror of #1 at Y = 1 (Table 2's numbers are not in our copy)."""
    one, two = worked["dataset1"], worked["dataset2"]
    # Y = 0 has the same data in both: so do the MLEs and the m-estimates
    np.testing.assert_array_equal(one["mle"][0], two["mle"][0])
    np.testing.assert_array_equal(one["m"][0], two["m"][0])
    # Dataset #1: Y = 1 corroborates P(X1=0|Y) >> P(X1=1|Y), so HDP moves from the m-estimate towards
    # the MLE (the paper: "closer to the MLEs"; nearer in distance too once m > 2)
    assert one["m"][0, 0] < one["hdp"][0, 0] < one["mle"][0, 0]
    # Dataset #2: the marginal no longer supports Y = 0's data, so its estimate falls back...
    assert two["hdp"][0, 0] < one["hdp"][0, 0]
    assert abs(two["hdp"][0, 0] - two["m"][0, 0]) < abs(one["hdp"][0, 0] - one["m"][0, 0])
    # ...and P(X1|Y=1) is pulled even closer to uniform than the m-estimate pulls it
    assert abs(two["hdp"][1, 0] - 0.5) < abs(two["m"][1, 0] - 0.5) < abs(two["mle"][1, 0] - 0.5)


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(3)
    n = 400
    y = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    X = pd.DataFrame(
        {
            "u": np.where(y == "a", rng.choice(["0", "1", "2"], n), rng.choice(["0", "1"], n)),
            "v": rng.choice(["x", "y"], n),
            "w": rng.choice(["p", "q", "r", "s"], n),
            "z": np.where(rng.random(n) < 0.7, y, "none"),
        }
    )
    return X, y


@pytest.mark.parametrize(
    "structure,k", [("nb", 1), ("tan", 1), ("kdb", 2), ("aode", 1), ("skdb", 2)]
)
@pytest.mark.parametrize("tying", ["level", "none", "single", "same_parent"])
def test_every_table_is_a_distribution(mixed, structure, k, tying):
    X, y = mixed
    clf = BNClassifier(
        structure=structure,
        k=k,
        estimator="hdp",
        estimator_params={"iterations": 200, "tying": tying},
        random_state=0,
    ).fit(X, y)
    for tree_tables in clf.tables_:
        for table in tree_tables:
            assert np.all(table > 0)
            np.testing.assert_allclose(table.sum(axis=1), 1.0)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.6


def test_class_prior_is_the_root_estimate():
    X, y = worked_dataset((20, 5))
    clf = BNClassifier(estimator="hdp", estimator_params={"iterations": 50}).fit(X, y)
    np.testing.assert_allclose(clf.tables_[0][0][0], [(2 + 1) / (27 + 2), (25 + 1) / (27 + 2)])


@pytest.mark.parametrize("class_prior, expected", [
    ("counted", [20 / 27, 7 / 27]), ("laplace", [21 / 29, 8 / 29]), ("root", [(20 + 1) / 29, (7 + 1) / 29]),
])
def test_class_prior_setting(class_prior, expected):
    X, y = worked_dataset((20, 5))
    y = np.where(np.arange(len(y)) < 20, "a", "b")  # 20 rows of one class, 7 of the other
    clf = BNClassifier(estimator="hdp", estimator_params={"iterations": 50, "class_prior": class_prior}).fit(X, y)
    np.testing.assert_allclose(clf.tables_[0][0][0], expected)
    default = BNClassifier(estimator="hdp", estimator_params={"iterations": 50}, random_state=0).fit(X, y)
    counted = BNClassifier(estimator="hdp", estimator_params={"iterations": 50, "class_prior": class_prior},
                           random_state=0).fit(X, y)
    for same, other in zip(default.tables_[1:], counted.tables_[1:]):  # the attributes' tables are the chain's
        for same_level, other_level in zip(same, other):
            np.testing.assert_array_equal(same_level, other_level)


@pytest.mark.parametrize("initial_tables, rule", [("eq15", None), ("one", lambda n: min(n, 1)), ("all", lambda n: n)])
def test_initial_tables(initial_tables, rule):
    """After iteration 0's initialisation alone (a chain stopped before its first sweep), the leaves' pseudo-counts
    are those of the rule (Eq. 15: floor(alpha (digamma(alpha + n) - digamma(alpha))), at least 1, for n >= 2)."""
    from scipy.special import digamma

    tree = ContextTree(0, 3, (1,), (3,)).add(np.array([[0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2],
                                                       [0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2]]))
    forest = Forest([tree], "level", 2.0, False)
    table = shared_table.ensure(forest.max_count)
    stirling = (table.ratio, table.inverse_ratio, table.rows, *forest.row_cache(table.bound))
    estimates = (np.zeros(forest.n_cells), np.zeros(forest.n_cells))
    from bncbench.bnc.estimators.hdp.sampler import INITIAL_TABLES

    run_chains(True, forest.layout, forest.forest, forest.state, stirling,
               (10, 1, 10, 5, 1, INITIAL_TABLES.index(initial_tables)), (2.0, 1.0, 4000.0), 5, estimates,
               np.zeros((1, 10, 2)), 0, 0)  # fmt: skip
    n_cell, t_cell = forest.state[:2]
    leaves = forest.layout[1][1], forest.layout[1][2]
    cells = forest.forest[4][leaves[0]], forest.forest[4][leaves[1] - 1] + tree.n_values
    n, t = n_cell[cells[0]:cells[1]], t_cell[cells[0]:cells[1]]
    eq15 = lambda n: n if n <= 1 else max(1, math.floor(2.0 * (digamma(2.0 + n) - digamma(2.0))))
    assert list(t) == [(rule or eq15)(int(v)) for v in n]
    assert n.max() >= 4  # a leaf where the three rules differ


def test_many_samples_per_leaf_give_the_empirical_frequencies():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 20_000)
    X = pd.DataFrame(
        {
            "a": np.where(
                y == 0, rng.choice(4, y.size, p=[0.1, 0.2, 0.3, 0.4]), rng.choice(4, y.size)
            )
        }
    )
    mle = pd.crosstab(y, X["a"], normalize="index").to_numpy()
    hdp = hdp_table(X, y, iterations=300)
    np.testing.assert_allclose(hdp, mle, atol=2e-3)


def test_sparse_leaves_are_pulled_towards_their_parent():
    rng = np.random.default_rng(1)
    n = 3000
    A = rng.choice(["a0", "a1"], n)
    B = rng.choice(["b0", "b1", "b2"], n, p=[0.2, 0.5, 0.3])
    X = pd.DataFrame({"A": np.append(A, "rare"), "B": np.append(B, "b0")})
    y = np.zeros(n + 1, dtype=int)
    y[: n // 2] = 1
    clf = BNClassifier(
        structure={"B": ["A"]}, estimator="hdp", estimator_params={"iterations": 2000}
    ).fit(X, y)
    b = clf.cpt("B")
    sparse, parent = (
        b.loc[(0, "rare")].to_numpy(),
        clf.tables_[2][1][0],
    )  # one row; B's node for y = 0
    mle = np.array([1.0, 0.0, 0.0])
    assert np.all(np.abs(sparse - parent) < np.abs(mle - parent))
    assert sparse[1] > 0.2  # most of its mass comes from the parent's P(b1 | y = 0) = 0.5
    busy = b.loc[(0, "a0")].to_numpy()  # ~750 rows: close to its own frequencies
    frequencies = pd.Series(B[:n][(y[:n] == 0) & (A == "a0")]).value_counts(normalize=True)
    np.testing.assert_allclose(busy, frequencies[["b0", "b1", "b2"]].to_numpy(), atol=0.01)


def test_same_seed_same_tables_whatever_the_threads(mixed):
    X, y = mixed
    params = {
        "structure": "kdb",
        "k": 2,
        "estimator": "hdp",
        "estimator_params": {"iterations": 300},
    }
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = BNClassifier(**params, random_state=7).fit(X, y).tables_
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = BNClassifier(**params, random_state=7).fit(X, y).tables_
    finally:
        numba.set_num_threads(threads)
    other = BNClassifier(**params, random_state=8).fit(X, y).tables_
    flat = [
        np.concatenate([t.ravel() for tables in result for t in tables])
        for result in (one, many, other)
    ]
    np.testing.assert_array_equal(flat[0], flat[1])
    assert not np.array_equal(flat[0], flat[2])


@pytest.mark.parametrize("tying, window", [("level", 4), ("none", 4), ("level", 1), ("level", 10), ("level", 12)])
def test_fast_kernel_equals_the_reference_kernel(mixed, tying, window):
    """Windows short (all masked to ``SHORT_STEPS`` at window 1), up to ``LONG_STEPS`` (window 10) and longer
    (window 12: the fast kernel's loop of any length), identical draws."""
    X, y = mixed
    tables = {
        kernel: BNClassifier(
            structure="kdb",
            k=3,
            estimator="hdp",
            random_state=0,
            estimator_params={"iterations": 300, "kernel": kernel, "tying": tying, "window": window},
        )
        .fit(X, y)
        .tables_
        for kernel in ("fast", "reference")
    }
    for fast, reference in zip(tables["fast"], tables["reference"]):
        for a, b in zip(fast, reference):
            np.testing.assert_array_equal(a, b)


def test_counts_beyond_the_stirling_table():
    """Class nodes with > 3000 rows per value: both kernels compute those ratios, identically."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 9000)
    X = pd.DataFrame({"a": np.where(rng.random(y.size) < 0.9, 0, rng.integers(1, 3, y.size))})
    fitted = {
        kernel: hdp_table(X, y, iterations=150, kernel=kernel, seed=3)
        for kernel in ("fast", "reference")
    }
    np.testing.assert_array_equal(fitted["fast"], fitted["reference"])
    np.testing.assert_allclose(
        fitted["fast"], pd.crosstab(y, X["a"], normalize="index").to_numpy(), atol=5e-3
    )


def run_forest(tree, spans, iterations=200, burn_in=20, every=5, on_iteration=None):
    """Run the chain of one tree's forest in the calls ``spans`` (``(start, stop)`` ranges), calling
    ``on_iteration(forest)`` after each call; returns the forest and the summed estimates."""
    forest = Forest([tree], "level", 2.0, False)
    table = shared_table.ensure(forest.max_count)
    stirling = (table.ratio, table.inverse_ratio, table.rows, *forest.row_cache(table.bound))
    estimates = (np.zeros(forest.n_cells), np.zeros(forest.n_cells))
    trace = np.zeros((1, 1000, tree.depth + 1))
    for start, stop in spans:
        run_chains(True, forest.layout, forest.forest, forest.state, stirling, (iterations, burn_in, 10, every, 1, 0),
                   (2.0, 1.0, 4000.0), 5, estimates, trace, start, stop)  # fmt: skip
        if on_iteration is not None:
            on_iteration(forest)
    return forest, estimates[0]


def test_pseudo_counts_stay_consistent():
    """After the chain: 1 <= t <= n where n > 0 (t = 0 where n = 0), root t = min(n, 1), and every
    count above the leaves is the sum of its children's pseudo-counts (Eq. 10)."""
    rng = np.random.default_rng(4)
    columns = rng.integers(0, 3, (4, 2000))
    columns[0] = np.where(
        columns[1] == 2, 0, columns[0]
    )  # values that never occur in some contexts
    tree = ContextTree(0, 3, (3, 1, 2), (3, 3, 3)).add(columns)
    forest, _ = run_forest(tree, [(0, 200)])
    n_cell, t_cell, n_total, t_total, _ = forest.state
    parent = forest.forest[3]
    n, t = n_cell.reshape(-1, 3), t_cell.reshape(-1, 3)
    assert np.all((t >= 1) == (n >= 1)) and np.all(t <= n)
    np.testing.assert_array_equal(t[0], np.minimum(n[0], 1))
    np.testing.assert_array_equal(n[-tree.counts[-1].shape[0] :], forest.trees[0].counts[-1])  # its numbering
    children_t = np.zeros_like(n)
    np.add.at(children_t, parent[1:], t[1:])
    internal = np.arange(forest.layout[1][-2])
    np.testing.assert_array_equal(n[internal], children_t[internal])
    np.testing.assert_array_equal(n_total, n.sum(axis=1))
    np.testing.assert_array_equal(t_total, t.sum(axis=1))


def test_unseen_context_uses_the_deepest_ancestor():
    X = pd.DataFrame({"A": ["a0", "a0", "a1", "a1", "a0"], "B": ["b0", "b1", "b1", "b0", "b0"]})
    y = np.array([0, 0, 1, 1, 1])
    clf = BNClassifier(
        structure={"B": ["A"]}, estimator="hdp", estimator_params={"iterations": 200}
    ).fit(X, y)
    prior, a_tables, b_tables = clf.tables_
    # (y = 0, A = a1) never occurred: P(B | y = 0) at the class level answers for it
    joint = [
        prior[0][0, c] * a_tables[1][c, 1] * (b_tables[1][0, 0] if c == 0 else b_tables[2][1, 0])
        for c in (0, 1)
    ]  # B's leaves: (0, a0) is node 0, (1, a1) node 1, (1, a0) node 2
    assert clf.network_.trees[2].parent[2].tolist() == [0, 1, 1]
    np.testing.assert_allclose(
        clf.predict_proba(pd.DataFrame({"A": ["a1"], "B": ["b0"]}))[0], np.array(joint) / sum(joint)
    )


def test_edge_cases():
    one_row = BNClassifier(estimator="hdp").fit(pd.DataFrame({"a": ["x"]}), ["yes"])
    assert one_row.predict(pd.DataFrame({"a": ["x"]}))[0] == "yes"
    X = pd.DataFrame({"constant": ["c"] * 6, "a": ["p", "q", "p", "q", "p", "q"]})
    y = ["s", "s", "s", "t", "t", "t"]
    for params in ({"iterations": 5}, {"iterations": 1}, {"iterations": 7, "burn_in": 6}):
        clf = BNClassifier(structure="tan", estimator="hdp", estimator_params=params).fit(X, y)
        np.testing.assert_array_equal(clf.cpt("constant").to_numpy(), 1.0)  # a one-valued attribute
        assert np.all(
            np.isfinite(clf.predict_proba(pd.DataFrame({"constant": ["new"], "a": ["new"]})))
        )
    assert HDPEstimator(iterations=5).burn_in == 0 and HDPEstimator().burn_in == 500
    assert HDPEstimator(iterations=50_000).burn_in == 1000


@pytest.mark.parametrize(
    "params,message",
    [
        ({"iterations": 0}, "iterations must be an integer >= 1"),
        ({"iterations": 10, "burn_in": 10}, "burn_in (10) must be smaller than iterations (10)"),
        ({"tying": "parent"}, "tying must be one of"),
        ({"window": 0}, "window must be an integer >= 1"),
        ({"prior_rate": 0}, "prior_rate must be a finite number > 0"),
        ({"kernel": "gpu"}, "kernel must be one of"),
        ({"seed": -1}, "seed must be an integer in 0..9223372036854775807"),
        ({"seed": 2**63}, "seed must be an integer in 0..9223372036854775807"),
    ],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        HDPEstimator(**params)


def test_tying_strategies():
    tree = ContextTree(0, 2, (3, 1, 2), (2, 2, 2)).add(
        np.array([[0, 1, 0, 1], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 1, 1]])
    )
    starts = np.concatenate([[0], np.cumsum([p.shape[0] for p in tree.parent])])
    level_of = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    slots = {
        tying: _tie(tree, tying, starts, 0) for tying in ("level", "single", "same_parent", "none")
    }
    assert slots["level"][0].tolist() == level_of.tolist() and slots["level"][1] == 4
    assert slots["single"][0].tolist() == [0] + [1] * (starts[-1] - 1)
    assert slots["none"][0].tolist() == list(range(starts[-1]))
    parents = np.concatenate(
        [[-1]] + [starts[level - 1] + tree.parent[level] for level in range(1, 4)]
    )
    same_parent = slots["same_parent"][0]
    for a, b in itertools.combinations(range(1, starts[-1]), 2):
        assert (same_parent[a] == same_parent[b]) == (parents[a] == parents[b])


def test_concentrations_are_capped_and_the_root_can_be_sampled(mixed):
    X, y = mixed
    capped = BNClassifier(
        structure="kdb",
        k=2,
        estimator="hdp",
        estimator_params={"iterations": 100, "max_concentration": 0.5},
    ).fit(X, y)
    trace = capped.estimator_.concentration_trace_
    assert np.nanmax(trace[:, :, 1:]) <= 0.5 and np.all(trace[:, :, 0] == 2.0)
    sampled = BNClassifier(
        estimator="hdp", estimator_params={"iterations": 100, "sample_root_concentration": True}
    )
    assert np.ptp(sampled.fit(X, y).estimator_.concentration_trace_[:, :, 0]) > 0


def test_diagnostics_report_concentrations_per_level(mixed):
    X, y = mixed
    clf = BNClassifier(
        structure="kdb", k=2, estimator="hdp", estimator_params={"iterations": 1000}
    ).fit(X, y)
    found = clf.diagnostics()
    concentrations = found["hdp_concentrations"]
    assert concentrations.index[0] == "class"
    assert all(
        clf.parents_[a] == label.split(" | ")[1].split(", ")[1:]
        for label in concentrations.index[1:]
        for a in [label.split(" | ")[0]]
    )
    assert concentrations.shape[1] == 4 and np.all(concentrations[0] == 2.0)
    assert found["hdp_concentration_level1"] == pytest.approx(concentrations.iloc[1:, 1].mean())
    trace = found["hdp_concentration_trace"]
    assert trace.columns.name == "iteration" and trace.shape[1] == 50 and trace.columns[0] == 3
    long = trace.stack().rename("value").reset_index()  # as the runner logs it
    assert list(long.columns) == ["tree", "level", "iteration", "value"]
    np.testing.assert_allclose(
        trace.iloc[:, -1].to_numpy(), concentrations.stack().dropna().to_numpy()
    )


def test_diagnostics_of_the_direct_structure_have_no_attribute_tree_means(mixed):
    X, y = mixed
    found = BNClassifier(structure="direct", estimator="hdp", estimator_params={"iterations": 20}).fit(
        X.iloc[:, :2], y
    ).diagnostics()
    assert not [name for name in found if name.startswith("hdp_concentration_level")]
    assert found["hdp_concentrations"].shape[0] == 1


def test_trace_keeps_a_bounded_number_of_updates():
    X, y = worked_dataset((20, 5))
    params = {"iterations": 12_000, "concentration_every": 1, "tying": "none"}
    estimator = BNClassifier(estimator="hdp", estimator_params=params).fit(X, y).estimator_
    assert estimator.concentration_trace_.shape == (2, 1000, 2)
    np.testing.assert_array_equal(estimator.trace_iterations_[:3], [0, 12, 24])
    final = estimator.concentrations_[1]
    assert final[0] == 2.0 and final[1] != 2.0


def test_row_cache_beyond_the_table_changes_no_value():
    table = shared_table.ensure(100)
    row_key, row_first, row_log = (
        np.full(1, -1),
        np.zeros(1, dtype=np.int64),
        np.zeros((1, ROW_CACHE)),
    )
    stirling = (table.ratio, table.inverse_ratio, table.rows)
    for n, t, lo, hi in [
        (5000, 40, 30, 50),
        (5000, 45, 35, 55),
        (5000, 90, 80, 100),
        (4000, 20, 10, 30),
    ]:
        out = []
        for row in (-1, 0):  # without, then with the cache (a miss, then hits and misses)
            numerators, denominators = np.zeros(2 * 10), np.zeros(2 * 10)
            _fill_steps(n, t, lo, hi, 300, 12, 1.5, 340.0, *stirling, row, row_key, row_first, row_log,
                        numerators, denominators)  # fmt: skip
            out.append(numerators.copy())
        np.testing.assert_array_equal(out[0], out[1])
        assert row_key[0] == n and row_first[0] <= lo and hi < row_first[0] + ROW_CACHE


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0, 60.0])
def test_pooled_beta_draws_have_the_law_of_one_draw_per_node(alpha):
    """``sum_j log 1/q_j``, ``q_j ~ Beta(alpha, n_j)``: nodes with small totals share their draws
    (alpha >= 1), yet the sum keeps the exact mean ``sum_j psi(alpha + n_j) - psi(alpha)`` and variance
    ``sum_j psi'(alpha) - psi'(alpha + n_j)``."""
    from scipy.special import polygamma, psi

    totals = np.array([0, 1, 1, 1, 2, 3, 3, 7, SMALL_TOTAL, SMALL_TOTAL + 1, 40])
    nodes = np.arange(totals.size)
    stream, spare = np.array([12345], dtype=np.uint64), np.zeros(2)
    histogram = np.zeros(SMALL_TOTAL + 1, dtype=np.int64)
    draws = np.array(
        [sum_log_inverse_beta(alpha, nodes, totals, stream, spare, histogram) for _ in range(40_000)]
    )
    seen = totals[totals > 0]
    mean = np.sum(psi(alpha + seen) - psi(alpha))
    variance = np.sum(polygamma(1, alpha) - polygamma(1, alpha + seen))
    assert abs(draws.mean() - mean) < 5 * math.sqrt(variance / draws.size)
    assert draws.var() == pytest.approx(variance, rel=0.05)


@pytest.mark.parametrize("every", [1, 5, 7])
@pytest.mark.parametrize("dense", [True, False])
def test_estimates_are_the_sum_of_eq12_over_the_iterations(every, dense):
    """The static nodes' estimates, added once per concentration update (``record_static``), and the
    others, added every iteration, are the sums after burn-in of Eqs. 12-14 computed from each
    iteration's state, whichever calls the chain is run in. Dense: 600 rows under 3 parents, only the
    leaves are static; sparse: 40 rows under 4, nodes of the two levels above the leaves are static too
    (children with data counts of at most 1), some under static parents."""
    rng = np.random.default_rng(5)
    if dense:
        tree = ContextTree(0, 3, (3, 1, 2), (3, 3, 3)).add(rng.integers(0, 3, (4, 600)))
    else:
        tree = ContextTree(0, 3, (4, 1, 2, 3), (4, 4, 4, 4)).add(rng.integers(0, 3, (5, 40)))
    static_internal = [int((~moving).sum()) for moving in _moving_nodes(tree)[:-1]]
    assert static_internal == ([0, 0, 0] if dense else [0, 0, 3, 17])
    expected = []

    def eq12(forest):
        _, _, _, parent, _, slot = forest.forest
        n_cell, _, n_total, _, alpha = forest.state
        n = n_cell.reshape(-1, 3)
        a = alpha[slot][:, None]
        p = np.empty_like(n, dtype=float)
        p[0] = (n[0] + a[0] / 3) / (n_total[0] + a[0])
        for node in range(1, n.shape[0]):  # nodes are numbered level by level
            p[node] = (n[node] + a[node] * p[parent[node]]) / (n_total[node] + a[node])
        expected.append(p.ravel())

    iterations, burn_in = 60, 13
    _, accumulated = run_forest(
        tree, [(i, i + 1) for i in range(iterations)], iterations, burn_in, every, eq12
    )
    np.testing.assert_allclose(accumulated, np.sum(expected[burn_in:], axis=0), rtol=1e-12)
    _, in_chunks = run_forest(tree, [(0, 17), (17, 40), (40, iterations)], iterations, burn_in, every)
    _, at_once = run_forest(tree, [(0, iterations)], iterations, burn_in, every)
    np.testing.assert_array_equal(in_chunks, accumulated)
    np.testing.assert_array_equal(at_once, accumulated)


def test_counts_beyond_32_bits_are_refused():
    tree = ContextTree(0, 2, (1,), (2,)).add(np.array([[0, 1, 1], [1, 0, 1]]))
    tree.counts[-1][0, 0] = 2.0**31
    with pytest.raises(ValueError, match="counts in 32 bits.*2147483648"):
        Forest([tree], "level", 2.0, False)


def test_interleaved_order_alternates_parents_and_keeps_siblings_in_order():
    rng = np.random.default_rng(4)
    parent = rng.integers(0, 30, 500)  # not sorted: a level's moving nodes come before the others
    for streams in (1, 2, 3):
        order = interleaved(parent, streams)
        assert sorted(order) == list(range(500))
        for p in range(30):  # each parent's cells in their given order
            mine = order[parent[order] == p]
            assert np.all(np.diff(mine) > 0)
    order = interleaved(np.sort(parent), 2)
    pairs = np.sort(parent)[order][: 2 * 200].reshape(-1, 2)
    assert np.all(pairs[:, 0] != pairs[:, 1])  # successive windows under different parents


def test_the_chain_does_not_depend_on_the_interleaving(mixed, monkeypatch):
    """Any sweep order that keeps each parent's cells in order is the same chain; reversing the cells
    of a level is not (the check can fail)."""
    X, y = mixed

    def tables():
        params = {"iterations": 300, "tying": "level"}
        fitted = BNClassifier(structure="kdb", k=3, estimator="hdp", estimator_params=params, random_state=0)
        return np.concatenate([t.ravel() for tree in fitted.fit(X, y).tables_ for t in tree])

    by_stream = {}
    for streams in (1, 2, 3):
        monkeypatch.setattr(hdp_forest, "ACTIVE_STREAMS", streams)
        by_stream[streams] = tables()
    np.testing.assert_array_equal(by_stream[1], by_stream[2])
    np.testing.assert_array_equal(by_stream[1], by_stream[3])
    monkeypatch.setattr(hdp_forest, "interleaved", lambda parent, streams: np.arange(parent.shape[0])[::-1])
    assert not np.array_equal(tables(), by_stream[1])
