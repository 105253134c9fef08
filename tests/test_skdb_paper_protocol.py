"""The SkDB paper's protocol settings (Sect. 3, Appendix B): 10-fold CV, stratified and fixed by the seed;
5-bin equal-frequency discretisation per training fold; both entering ``cfg_hash`` only off the default."""

import numpy as np
import pandas as pd
import pytest

from bncbench.app.config import compose
from bncbench.core.errors import ConfigError
from bncbench.data import Dataset
from bncbench.protocol.cell import Cell, CrossValidationSettings
from bncbench.protocol.cross_validation import cross_validate

NB = {"name": "nb_m_estimate", "structure": "nb", "k": None, "structure_params": {},
      "estimator": "m_estimate", "estimator_params": {"m": 1.0}}


@pytest.fixture(scope="module")
def dataset():
    rng = np.random.default_rng(3)
    y = np.repeat(["a", "b", "c"], [53, 31, 16])  # 100 rows, classes not multiples of 10
    x = rng.normal(size=100) + (y == "b") * 2.0
    return Dataset("toy", pd.DataFrame({"x": x, "n": rng.choice(["u", "v"], 100)}), pd.Series(y), ["x"])


def _test_rows(result):
    return [frame["row"].to_numpy() for _, frame in result.predictions.groupby("fold", sort=True)]


def test_ten_fold_cv_is_stratified_and_fixed_by_the_seed(dataset):
    result = cross_validate(dataset, NB, repetitions=1, folds=10, seed=1)
    folds = _test_rows(result)
    assert len(folds) == 10 and len(result.metrics) == 10
    assert sorted(np.concatenate(folds).tolist()) == list(range(100))  # each row tested once
    y = dataset.y.to_numpy()
    for rows in folds:
        for label, total in (("a", 53), ("b", 31), ("c", 16)):
            assert abs((y[rows] == label).sum() - total / 10) < 1  # stratified: floor or ceiling of n_c / 10
    again = _test_rows(cross_validate(dataset, NB, repetitions=1, folds=10, seed=1))
    assert all(np.array_equal(a, b) for a, b in zip(folds, again, strict=True))
    other = _test_rows(cross_validate(dataset, NB, repetitions=1, folds=10, seed=2))
    assert not all(np.array_equal(a, b) for a, b in zip(folds, other, strict=True))


def test_equal_frequency_folds_are_discretised_on_the_training_part(dataset):
    ef = cross_validate(dataset, NB, 1, 10, 1, "equal_frequency", bins=5, sample_rows=100_000)
    mdl = cross_validate(dataset, NB, 1, 10, 1)
    assert not np.allclose(ef.metrics["rmse"], mdl.metrics["rmse"])
    assert np.array_equal(ef.predictions["row"], mdl.predictions["row"])  # the same folds


def test_a_bad_discretisation_is_named(dataset):
    with pytest.raises(ConfigError, match="cv.discretisation must be mdl or equal_frequency"):
        cross_validate(dataset, NB, 1, 10, 1, "equal_width")
    with pytest.raises(ConfigError, match="cv.discretisation must be one of mdl, equal_frequency"):
        compose(["experiment=smoke", "cv.discretisation=ef5"])
    with pytest.raises(ConfigError, match="cv.bins must be an integer >= 2"):
        compose(["experiment=smoke", "cv.bins=1"])


def test_the_settings_enter_the_hash_only_off_the_default():
    assert CrossValidationSettings().as_dict() == {"repetitions": 5, "folds": 2, "seed": 1}
    assert CrossValidationSettings(bins=7).as_dict() == CrossValidationSettings().as_dict()  # read by EF only
    ef = CrossValidationSettings(1, 10, 1, "equal_frequency")
    assert ef.as_dict() == {"repetitions": 1, "folds": 10, "seed": 1,
                            "discretisation": {"method": "equal_frequency", "bins": 5, "sample_rows": 100_000}}
    hashes = {Cell.of("iris", "nb", {"name": "iris"}, NB, cv, None).cfg_hash
              for cv in (CrossValidationSettings(), ef, CrossValidationSettings(1, 10, 1))}
    assert len(hashes) == 3


def test_skdb_paper_composes_with_the_papers_protocol():
    plan = compose(["experiment=skdb_paper", "experiment.datasets=[iris]"]).plan
    assert plan.cv == CrossValidationSettings(1, 10, 1, "equal_frequency", 5, 100_000)
    assert len(plan.cells) == 18 and {"a": "skdb_m_estimate", "b": "kdb_best_k"} in plan.comparisons
    assert {"a": "skdb_m_estimate", "b": "weka_random_forest"} in plan.comparisons  # Table 6, RF(5EF)
    assert plan.report["counting"] == "wilcoxon"
    assert all(cell.label.endswith("cv=1x10,seed=1 ef5,sample=100000") for cell in plan.cells)
