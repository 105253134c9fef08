"""MDL discretisation (Fayyad & Irani 1993): hand-worked cut points, codes, and Orange."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.data.discretize import bin_codes, mdl_cut_points


def cut_points(values, labels):
    codes, classes = pd.factorize(pd.Series(labels), sort=True)
    return mdl_cut_points(np.asarray(values, dtype=float), codes, len(classes))


def test_hand_worked_recursive_split():
    # value 1: 20 x a, value 2: 20 x b, value 3: 20 x a; N = 60.
    # Ent(S) = H(2/3, 1/3) = 0.918296.
    # Boundary cuts 1.5 and 2.5 both give E = 40/60 * H(1/2, 1/2) = 0.666667; the tie goes to
    # the lowest, 1.5: Gain = 0.251629, k = 2, k1 = 1, k2 = 2,
    # Delta = log2(3^2 - 2) - [2 * 0.918296 - 1 * 0 - 2 * 1] = 2.807355 + 0.163408 = 2.970763,
    # threshold = (log2(59) + Delta) / 60 = (5.882643 + 2.970763) / 60 = 0.147557 < Gain: cut.
    # Left {1: 20a} has a single value. Right {2: 20b, 3: 20a}: N = 40, Ent = 1, the cut 2.5
    # gives E = 0, Gain = 1, k = 2, k1 = k2 = 1, Delta = log2(7) - 2 = 0.807355,
    # threshold = (log2(39) + 0.807355) / 40 = 0.152319 < Gain: cut.
    values = [1] * 20 + [2] * 20 + [3] * 20
    labels = ["a"] * 20 + ["b"] * 20 + ["a"] * 20
    np.testing.assert_array_equal(cut_points(values, labels), [1.5, 2.5])


def test_hand_worked_split_rejected_by_mdl():
    # The same class distribution with 5 examples per value: N = 15, the best cut 1.5 has the
    # same Gain = 0.251629 and Delta = 2.970763, but the threshold is
    # (log2(14) + 2.970763) / 15 = (3.807355 + 2.970763) / 15 = 0.451875 > Gain: no cut.
    values = [1] * 5 + [2] * 5 + [3] * 5
    labels = ["a"] * 5 + ["b"] * 5 + ["a"] * 5
    assert cut_points(values, labels).size == 0


def test_hand_worked_midpoint_of_the_only_boundary_point():
    # Values 1, 2 (class a) and 5, 7 (class b), three examples each: N = 12. The only boundary
    # point lies between 2 and 5 (1|2 are both pure a, 5|7 both pure b): cut at (2 + 5) / 2.
    # Ent(S) = 1, E = 0, Gain = 1; Delta = log2(7) - 2 = 0.807355;
    # threshold = (log2(11) + 0.807355) / 12 = (3.459432 + 0.807355) / 12 = 0.355566 < Gain.
    values = [1, 1, 1, 2, 2, 2, 5, 5, 5, 7, 7, 7]
    labels = ["a"] * 6 + ["b"] * 6
    np.testing.assert_array_equal(cut_points(values, labels), [3.5])


def test_missing_values_take_no_part_in_the_search():
    values = [1, 1, 1, 2, 2, 2, 5, 5, 5, 7, 7, 7, np.nan, np.nan]
    labels = ["a"] * 6 + ["b"] * 6 + ["b", "a"]
    np.testing.assert_array_equal(cut_points(values, labels), [3.5])


def test_many_classes():
    # 50 classes, 20 examples each, one value per class: every boundary is a cut.
    values = np.repeat(np.arange(50.0), 20)
    labels = [f"c{int(v):02d}" for v in values]
    np.testing.assert_array_equal(cut_points(values, labels), np.arange(49) + 0.5)


def test_bin_codes_convention():
    cuts = np.array([1.5, 2.5])
    values = np.array([-10.0, 1.0, 1.5, 2.0, 2.5, 3.0, 99.0, np.nan])
    np.testing.assert_array_equal(bin_codes(values, cuts), [0, 0, 1, 1, 2, 2, 2, 3])
    np.testing.assert_array_equal(bin_codes(values, np.array([])), [0] * 7 + [1])


def toy_frame():
    return pd.DataFrame(
        {
            "x": [1.0] * 20 + [2.0] * 20 + [3.0] * 20,
            "noise": np.tile([0.0, 1.0], 30),
            "colour": pd.Series(["red", "blue", None] * 20, dtype="str"),
            "count": np.repeat([1, 2, 3], 20),
        }
    )


TOY_Y = ["a"] * 20 + ["b"] * 20 + ["a"] * 20


def test_transformer_fits_numeric_columns_and_passes_nominal_through():
    X = toy_frame()
    disc = MDLDiscretizer().fit(X, TOY_Y)
    assert set(disc.cut_points_) == {"x", "noise", "count"}
    np.testing.assert_array_equal(disc.cut_points_["x"], [1.5, 2.5])
    np.testing.assert_array_equal(disc.cut_points_["count"], [1.5, 2.5])
    assert disc.cut_points_["noise"].size == 0
    out = disc.transform(X)
    assert list(out.columns) == list(X.columns)
    assert out["x"].dtype == np.int64
    assert out["x"].tolist() == [0] * 20 + [1] * 20 + [2] * 20
    assert set(out["noise"]) == {0}
    pd.testing.assert_series_equal(out["colour"], X["colour"])


def test_transform_uses_training_cut_points_only():
    disc = MDLDiscretizer().fit(toy_frame(), TOY_Y)
    test = pd.DataFrame(
        {
            "x": [-5.0, 1.7, 2.5, 100.0, np.nan],
            "noise": [np.nan, 0.0, 7.0, -1.0, 0.0],
            "colour": ["green", "red", None, "blue", "red"],
            "count": [0, 1, 2, 3, 4],
        }
    )
    out = disc.transform(test)
    assert out["x"].tolist() == [0, 1, 2, 2, 3]
    assert out["noise"].tolist() == [1, 0, 0, 0, 0]
    assert out["count"].tolist() == [0, 0, 1, 2, 2]
    assert out["colour"].tolist()[:2] == ["green", "red"]


def test_transformer_is_a_scikit_learn_estimator():
    disc = clone(MDLDiscretizer())
    assert disc.get_params() == {"missing": "bin"}
    out = disc.fit_transform(toy_frame(), np.array(TOY_Y))
    assert out.shape == (60, 4)
    assert list(disc.feature_names_in_) == ["x", "noise", "colour", "count"]


def test_transformer_rejects_bad_input():
    disc = MDLDiscretizer()
    with pytest.raises(TypeError, match="needs a pandas DataFrame"):
        disc.fit(toy_frame().to_numpy(), TOY_Y)
    with pytest.raises(ValueError, match="60 rows but y has 59"):
        disc.fit(toy_frame(), TOY_Y[1:])
    with pytest.raises(ValueError, match="y has missing labels"):
        disc.fit(toy_frame(), [None] + TOY_Y[1:])
    disc.fit(toy_frame(), TOY_Y)
    with pytest.raises(ValueError, match="fitted on"):
        disc.transform(toy_frame()[["colour", "x", "noise", "count"]])


#: Cut points of Weka 3.6.14's supervised Discretize with its defaults (Fayyad & Irani's MDL, as in the
#: papers) fitted on the whole dataset, for its numeric columns in order; hepatitis has missing values.
WEKA_CUT_POINTS = {
    "iris": [[5.55, 6.15], [2.95, 3.3499999999999996], [2.45, 4.75], [0.8, 1.75]],
    "hepatitis": [[], [1.65], [], [], [2.6500000000000004, 3.8499999999999996], [44.5]],
}


@pytest.mark.parametrize("name", sorted(WEKA_CUT_POINTS))
def test_cut_points_are_wekas(shared_data_dir, name):
    ds = load_dataset({"name": name}, shared_data_dir)
    ours = MDLDiscretizer().fit(ds.X, ds.y).cut_points_
    assert [list(ours[column]) for column in ds.numeric] == WEKA_CUT_POINTS[name]


# hepatitis has numeric columns with missing values.
@pytest.mark.parametrize("name", ["iris", "glass", "pima", "hepatitis", "adult"])
def test_cut_points_match_orange_entropy_mdl(shared_data_dir, name):
    """Orange's EntropyMDL (force=False) on the same columns gives the same cut points.

    Orange searches every cut between distinct values, ours only boundary points (Fayyad &
    Irani's Theorem: the minimum lies on one); both leave missing values out and take the
    midpoint between adjacent distinct values.
    """
    pytest.importorskip("Orange")
    from Orange.data import ContinuousVariable, DiscreteVariable, Domain, Table
    from Orange.preprocess.discretize import EntropyMDL

    ds = load_dataset({"name": name}, shared_data_dir)
    classes = sorted(ds.y.unique())
    domain = Domain(
        [ContinuousVariable(c) for c in ds.numeric], DiscreteVariable("class", values=classes)
    )
    table = Table.from_numpy(
        domain, ds.X[ds.numeric].to_numpy(float), ds.y.map(classes.index).to_numpy(float)
    )
    ours = MDLDiscretizer().fit(ds.X, ds.y).cut_points_
    for column in ds.numeric:
        variable = EntropyMDL(force=False)(table, column)
        orange = variable.compute_value.points
        np.testing.assert_array_equal(ours[column], orange, err_msg=f"{name}: {column}")
