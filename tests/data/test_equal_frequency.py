"""Equal-frequency discretisation (the SkDB paper's EF5, Sect. 3 and Appendix B): cut points on hand-computed
cases, ties, missing values, and the seeded sample of at most ``sample_rows`` training rows."""

import numpy as np
import pandas as pd
import pytest

from bncbench.core.errors import ConfigError
from bncbench.data.equal_frequency import (
    EqualFrequencyDiscretizer,
    equal_frequency_cut_points,
)


def test_five_bins_of_ten_values_by_hand():
    # linear quantiles of 1..10 at 0.2, 0.4, 0.6, 0.8: positions 1.8, 3.6, 5.4, 7.2 between order statistics
    values = np.arange(1.0, 11.0)
    cuts = equal_frequency_cut_points(values, 5)
    np.testing.assert_allclose(cuts, [2.8, 4.6, 6.4, 8.2])
    codes = EqualFrequencyDiscretizer().fit(pd.DataFrame({"x": values})).transform(pd.DataFrame({"x": values}))
    assert codes["x"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.parametrize(
    ("values", "cuts"),
    [
        ([0.0] * 5 + [1.0] * 5, [1.0]),  # candidates 0, 0, 1, 1: 0 is the minimum, 1 opens bin 1
        ([0.0] * 6 + [1.0] * 4, [1.0]),  # candidates 0, 0, 0.4, 1: [0.4, 1) holds no value, so 0.4 goes
        ([3.0] * 7, []),  # constant: one bin
        ([1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 9.0], [2.0]),  # candidates 2, 2, 2, 2: one cut
    ],
)
def test_ties_merge_equal_and_empty_bins(values, cuts):
    found = equal_frequency_cut_points(np.array(values), 5)
    np.testing.assert_allclose(found, cuts)
    codes = np.searchsorted(found, values, side="right")
    assert set(codes) == set(range(len(found) + 1))  # every bin holds a value


def test_missing_values_take_no_part_and_get_their_own_code():
    frame = pd.DataFrame({"x": [1.0, np.nan, 2.0, 3.0, 4.0, 5.0, np.nan], "nominal": list("abababa")})
    fitted = EqualFrequencyDiscretizer(bins=5).fit(frame)
    np.testing.assert_allclose(fitted.cut_points_["x"], np.quantile([1, 2, 3, 4, 5], [0.2, 0.4, 0.6, 0.8]))
    out = fitted.transform(frame)
    assert out["x"].tolist() == [0, 5, 1, 2, 3, 4, 5]  # missing: code B = 5
    assert out["nominal"].tolist() == list("abababa")  # not numeric: unchanged


def test_the_bins_come_from_a_seeded_sample_of_at_most_sample_rows():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.exponential(size=250), "z": rng.normal(size=250)})
    fitted = EqualFrequencyDiscretizer(bins=5, sample_rows=100, random_state=7).fit(frame)
    expected = np.sort(np.random.default_rng(7).choice(250, size=100, replace=False))
    np.testing.assert_array_equal(fitted.sample_, expected)
    for column in ("x", "z"):  # one sample of rows for every column
        np.testing.assert_allclose(
            fitted.cut_points_[column], equal_frequency_cut_points(frame[column].to_numpy()[expected], 5)
        )
    again = EqualFrequencyDiscretizer(bins=5, sample_rows=100, random_state=7).fit(frame)
    np.testing.assert_array_equal(again.cut_points_["x"], fitted.cut_points_["x"])
    other = EqualFrequencyDiscretizer(bins=5, sample_rows=100, random_state=8).fit(frame)
    assert not np.array_equal(other.sample_, fitted.sample_)
    every_row = EqualFrequencyDiscretizer(bins=5, sample_rows=250, random_state=7).fit(frame)
    np.testing.assert_array_equal(every_row.sample_, np.arange(250))
    np.testing.assert_allclose(every_row.cut_points_["x"], equal_frequency_cut_points(frame["x"].to_numpy(), 5))


@pytest.mark.parametrize(("setting", "value"), [("bins", 1), ("bins", 2.5), ("sample_rows", 0), ("sample_rows", True)])
def test_bad_settings_are_named(setting, value):
    with pytest.raises(ConfigError, match=f"cv.{setting} must be an integer"):
        EqualFrequencyDiscretizer(**{setting: value}).fit(pd.DataFrame({"x": [1.0, 2.0]}))
