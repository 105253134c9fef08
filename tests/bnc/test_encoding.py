"""The category encoder: ``fit_transform`` (one factorisation per column, used by ``BNClassifier.fit``)
gives the categories and codes of ``fit`` then ``transform``, whatever the columns hold."""

import numpy as np
import pandas as pd
import pytest

from bncbench.bnc.encoding import CategoryEncoder

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
