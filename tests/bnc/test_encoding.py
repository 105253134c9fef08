"""The category encoder: ``fit_transform`` (one factorisation per column, used by ``BNClassifier.fit``)
gives the categories and codes of ``fit`` then ``transform``, whatever the columns hold."""

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.encoding import CategoryEncoder, CodesOverflow

COLUMNS = {
    "strings with missing": pd.Series(["b", None, "a", "c", "a", np.nan, "b", "c"], dtype=object),
    "arrow strings": pd.Series(["x", "y", None, "x", "z", "y", "x", "z"], dtype="str"),
    "integers": pd.Series([3, 1, 2, 3, 10, 1, 2, 2]),
    "floats with missing": pd.Series([0.5, np.nan, 2.0, 0.5, -1.0, np.nan, 2.0, 3.25]),
    "booleans": pd.Series([True, False, True, True, False, False, True, False]),
    "unorderable mix": pd.Series([1, "a", 2.5, "a", 1, None, "b", 2.5], dtype=object),
    "categorical": pd.Series(pd.Categorical(["lo", "hi", "mid", "hi", None, "lo", "mid", "lo"])),
    "all missing": pd.Series([None] * 8, dtype=object),
    "one value": pd.Series(["only"] * 8),
}


@pytest.mark.parametrize("name", COLUMNS)
def test_fit_transform_is_fit_then_transform(name):
    X = pd.DataFrame({"a": COLUMNS[name], "b": COLUMNS["integers"]})
    apart = CategoryEncoder().fit(X)
    at_once = CategoryEncoder()
    codes = at_once.fit_transform(X)
    np.testing.assert_array_equal(codes, apart.transform(X))
    assert at_once.columns_ == apart.columns_
    for together, separately in zip(at_once.categories_, apart.categories_):
        assert pd.Index(together).equals(pd.Index(separately))
    assert at_once.kinds_ == apart.kinds_
    assert (codes >= 0).all()  # every training value has a code


def test_codes_follow_the_sorted_values_and_missing_is_last():
    X = pd.DataFrame({"a": ["b", None, "a", "b"]})
    encoder = CategoryEncoder()
    np.testing.assert_array_equal(encoder.fit_transform(X)[:, 0], [1, 2, 0, 1])
    assert list(encoder.categories_[0][:2]) == ["a", "b"] and pd.isna(encoder.categories_[0][2])


def test_codes_too_many_for_the_type_asked_for_are_refused_not_wrapped():
    X = pd.DataFrame({"a": np.arange(200)})
    with pytest.raises(CodesOverflow, match="'a' has 200 values, more than int8"):
        CategoryEncoder().fit_transform(X, out=np.empty((200, 1), dtype=np.int8))



@pytest.mark.parametrize(("n_values", "dtype"), [(127, np.int8), (128, np.int16), (40_000, np.int32)])
def test_a_fit_holds_its_codes_in_the_narrowest_type_and_counts_them_exactly(n_values, dtype):
    """int8 codes for up to 127 values (the class's too), a wider type only when a column needs it; the
    posteriors are naive Bayes's by hand from the values themselves whatever the type (no code wraps)."""
    rng = np.random.default_rng(0)
    n = 2 * n_values + 1000
    X = pd.DataFrame({"wide": rng.permutation(np.arange(n) % n_values), "narrow": rng.integers(0, 3, n)})
    y = pd.Series(rng.integers(0, 2, n))
    model = BNClassifier(structure="nb", estimator="mle")
    codes = model._training_codes(X, y)
    assert codes.dtype == dtype and codes.flags.f_contiguous
    rows = X.iloc[[0, n // 2, n - 1]]
    joint = y.value_counts(normalize=True).sort_index().to_numpy()[None, :].repeat(len(rows), axis=0)
    for column in X:
        counts = pd.crosstab(X[column], y)
        joint = joint * (counts / counts.sum()).loc[rows[column]].to_numpy()
    expected = joint / joint.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.fit(X, y).predict_proba(rows), expected, rtol=1e-9)
