import numpy as np
import pandas as pd

from bncbench.bnc.context_tree import ContextTree
from bncbench.bnc.network import CountedNetwork


def _random_codes(rng, n, cards):
    return np.column_stack([rng.integers(0, c, size=n) for c in cards]).astype(np.int64)


def _tree_counts_by_context(tree, codes):
    """(context tuple) -> counts vector, read back from the tree's levels."""
    out = {}
    keys = {(): 0}
    out[()] = tree.counts[0][0]
    for level in range(1, tree.depth + 1):
        new_keys = {}
        for key, node in keys.items():
            for value, child in enumerate(tree.children[level - 1][node]):
                if child >= 0:
                    assert tree.parent[level][child] == node
                    new_keys[key + (value,)] = child
                    out[key + (value,)] = tree.counts[level][child]
        keys = new_keys
    return out


def test_counts_match_a_groupby_at_every_level():
    rng = np.random.default_rng(0)
    cards = [3, 4, 2, 5]
    codes = _random_codes(rng, 500, cards)
    tree = ContextTree(child=0, n_values=3, variables=(3, 1, 2), cards=(5, 4, 2)).add(np.ascontiguousarray(codes.T))
    by_context = _tree_counts_by_context(tree, codes)
    frame = pd.DataFrame(codes, columns=["x", "a", "b", "c"])
    for depth, context_columns in enumerate([[], ["c"], ["c", "a"], ["c", "a", "b"]]):
        if context_columns:
            groups = frame.groupby(context_columns)["x"].value_counts().unstack(fill_value=0)
            expected = {(k if isinstance(k, tuple) else (k,)): row.reindex(range(3), fill_value=0).to_numpy() for k, row in groups.iterrows()}
        else:
            expected = {(): np.bincount(codes[:, 0], minlength=3)}
        got = {k: v for k, v in by_context.items() if len(k) == depth}
        assert set(got) == set(expected)  # only contexts that occur are stored
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key])


def test_chunked_counting_equals_counting_at_once():
    rng = np.random.default_rng(1)
    cards = [3, 4, 2, 5]
    codes = _random_codes(rng, 1000, cards)
    parents = [[1, 2], [2], [], [0, 1, 2]]
    whole = CountedNetwork(parents, cards, 2).add(np.column_stack([codes, codes[:, 0] % 2]))
    chunked = CountedNetwork(parents, cards, 2)
    full = np.column_stack([codes, codes[:, 0] % 2])
    for chunk in np.array_split(full, 7):
        chunked.add(chunk)
    for a, b in zip(whole.trees, chunked.trees):
        ca = _tree_counts_by_context(a, None)
        cb = _tree_counts_by_context(b, None)
        assert set(ca) == set(cb)
        for key in ca:
            np.testing.assert_array_equal(ca[key], cb[key])


def test_removing_rows_predicts_exactly_like_never_counting_them():
    from bncbench.bnc.estimators.m_estimate import MEstimate
    from bncbench.bnc.inference import PackedNetwork

    rng = np.random.default_rng(2)
    cards = [3, 4, 2, 5]
    full = np.column_stack([_random_codes(rng, 400, cards), rng.integers(0, 3, 400)])
    parents = [[1, 2], [2], [], [0, 1, 2]]
    removed, kept = full[:60], full[60:]
    by_removal = CountedNetwork(parents, cards, 3).add(full).remove(removed)
    from_scratch = CountedNetwork(parents, cards, 3).add(kept)
    estimator = MEstimate(m=1.0)
    for probe in (removed, kept[:50]):
        np.testing.assert_allclose(
            PackedNetwork(by_removal, estimator.tables_for(by_removal, 1.0)).predict_proba(probe),
            PackedNetwork(from_scratch, estimator.tables_for(from_scratch, 1.0)).predict_proba(probe),
        )


def test_a_fitted_classifier_holds_nothing_as_long_as_its_training_rows():
    """The trees keep their contexts, not the rows they were counted from: no array of the fitted network, nor
    one it is a view of, grows with the rows (a level's parents were once a view of a rows-long array: 8 bytes
    a row for every tree, 153 MiB on 1M rows of 20 attributes, issue 44)."""
    from bncbench import BNClassifier

    rng = np.random.default_rng(0)
    n = 50_000
    X = pd.DataFrame(rng.integers(0, 3, size=(n, 4)), columns=list("abcd"))
    y = pd.Series(rng.integers(0, 2, size=n))
    network = BNClassifier(structure="kdb", k=2, estimator="laplace").fit(X, y).network_
    arrays = [array for tree in network.trees for level in (tree.parent, tree.counts, tree.children) for array in level]
    held = max((array if array.base is None else array.base).nbytes for array in arrays)
    assert held < n  # the largest: 3 x 3 x 2 contexts of the deepest level, far from 8 bytes a row
