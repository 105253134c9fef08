"""The cost model of cells (``bncbench.protocol.cost``): it recovers a known law, stays monotone, guesses finite
costs for what it never saw, round-trips, and its shipped default prices every experiment's models."""

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bncbench.app.config import compose, config_dir
from bncbench.app.cost import plan_features
from bncbench.core.errors import DatasetError
from bncbench.protocol.cost import CostModel, wall_seconds
from bncbench.protocol.cost_features import (
    FEATURE_COLUMNS,
    CellFeatures,
    DatasetFeatures,
    cell_features,
    dataset_features,
    numeric_bins,
)

#: A known law: log seconds per fit = intercept + slopes . log(rows, attributes, values, classes), times
#: (1 + iterations / C) for the iterative groups.
LAW = {
    ("nb", None, "m_estimate", None): (-9.0, [1.0, 1.0, 0.5, 0.5]),
    ("kdb", 2, "hdp", "level"): (-12.0, [0.8, 1.2, 1.5, 0.7]),
    ("random_forest", None, "baseline", None): (-7.0, [1.1, 0.6, 0.2, 0.1]),
}
C = 1000.0


def synthetic_cells(n_per_group: int, seed: int, law=LAW, noise: float = 0.0) -> pd.DataFrame:
    """Cells of random dataset sizes whose seconds follow ``law`` (times exp(noise * N(0, 1)))."""
    rng = np.random.default_rng(seed)
    rows = []
    for (structure, k, estimator, tying), (intercept, slopes) in law.items():
        for _ in range(n_per_group):
            sizes = {
                "rows": int(np.exp(rng.uniform(np.log(50), np.log(60_000)))),
                "attributes": int(rng.integers(2, 100)),
                "values": float(np.exp(rng.uniform(0, np.log(20)))),
                "classes": int(rng.integers(2, 30)),
            }
            iterations = int(rng.choice([500, 5000, 50_000])) if estimator == "hdp" else None
            log_fit = intercept + np.dot(slopes, np.log(list(sizes.values()))) + noise * rng.standard_normal()
            if iterations is not None:
                log_fit += np.log1p(iterations / C)
            cell = CellFeatures(structure, k, estimator, tying, iterations, **sizes, folds=10)
            rows.append({**cell.__dict__, "seconds": 10 * np.exp(log_fit)})
    return pd.DataFrame(rows)


def true_seconds(cells: pd.DataFrame) -> np.ndarray:
    seconds = []
    for cell in cells.itertuples():
        k = None if pd.isna(cell.k) else int(cell.k)
        tying = None if pd.isna(cell.tying) else cell.tying
        intercept, slopes = LAW[(cell.structure, k, cell.estimator, tying)]
        log_fit = intercept + np.dot(slopes, np.log([cell.rows, cell.attributes, cell.values, cell.classes]))
        if not pd.isna(cell.iterations):
            log_fit += np.log1p(cell.iterations / C)
        seconds.append(cell.folds * np.exp(log_fit))
    return np.array(seconds)


def test_the_fit_recovers_a_known_law():
    model = CostModel(shrinkage=1e-3).fit(synthetic_cells(60, seed=0))
    unseen = synthetic_cells(20, seed=1)
    assert model.iteration_scale_ == pytest.approx(C)
    np.testing.assert_allclose(model.predict(unseen), true_seconds(unseen), rtol=1e-3)


def test_noise_is_smeared_into_means_and_reported():
    noise = 0.4
    model = CostModel().fit(synthetic_cells(400, seed=2, noise=noise))
    unseen = synthetic_cells(50, seed=3)
    lognormal_mean = np.exp(noise**2 / 2)  # of exp(noise * N(0, 1)), whose median is 1
    for family in model.families_.values():
        assert family["smearing"] == pytest.approx(lognormal_mean, rel=0.03)
        assert family["median_error"] == pytest.approx(0.6745 * noise, rel=0.2)  # the median of |N(0, noise)|
    assert np.median(model.predict(unseen) / true_seconds(unseen)) == pytest.approx(lognormal_mean, rel=0.05)


def test_conditions_are_shifted_to_the_reference():
    new = synthetic_cells(60, seed=4).assign(condition="new")
    old = synthetic_cells(60, seed=5).assign(condition="old")
    old["seconds"] *= np.where(old["iterations"].notna(), 2.0, 1.0)  # an older, slower sampler
    model = CostModel(shrinkage=1e-3, condition_shrinkage=1e-3, reference_condition="new")
    model.fit(pd.concat([new, old], ignore_index=True))
    unseen = synthetic_cells(20, seed=6)
    hdp = unseen["iterations"].notna().to_numpy()
    np.testing.assert_allclose(model.predict(unseen), true_seconds(unseen), rtol=1e-3)
    np.testing.assert_allclose(
        model.predict(unseen, condition="old")[hdp], 2 * true_seconds(unseen)[hdp], rtol=1e-3
    )
    assert model.condition_shifts_[("iterative", "old")] == pytest.approx(np.log(2), abs=1e-3)


def test_more_rows_or_iterations_never_predict_less():
    law = {**LAW, ("kdb", 2, "hdp", "level"): (-12.0, [-0.5, 1.2, 1.5, 0.7])}  # fewer seconds with more rows
    fitted = CostModel().fit(synthetic_cells(60, seed=7, law=law, noise=0.3))
    for model in (fitted, CostModel.default()):
        for structure, k in (
            ("kdb", 2),
            ("kdb", 5),
            ("tan", None),
            ("skdb", 5),
            ("nb", None),
            ("aode", None),
        ):
            by_rows = [
                CellFeatures(structure, k, "hdp", "level", 5000, rows, 20, 4.0, 3)
                for rows in np.geomspace(10, 1e6, 40)
            ]
            by_iterations = [
                CellFeatures(structure, k, "hdp", "level", i, 5000, 20, 4.0, 3)
                for i in range(0, 200_001, 5000)
            ]
            assert np.all(np.diff(model.predict(by_rows)) >= 0)
            assert np.all(np.diff(model.predict(by_iterations)) > 0)


@pytest.mark.parametrize(
    "cell",
    [
        CellFeatures("aode", None, "m_estimate", None, None, 1000, 20, 4.0, 3),
        CellFeatures("aode", None, "hdp", "level", 5000, 1000, 20, 4.0, 3),
        CellFeatures("nb", None, "laplace", None, None, 1000, 20, 4.0, 3),
        CellFeatures("kdb", 9, "m_estimate", None, None, 1000, 20, 4.0, 3),
        CellFeatures("direct", None, "hpb", None, None, 1000, 20, 4.0, 3),
        CellFeatures("tan", None, "hdp", "none", 50_000, 1000, 20, 4.0, 3),
        CellFeatures("catboost", None, "baseline", None, None, 1000, 20, 4.0, 3),
    ],
)
def test_unseen_pairs_get_a_finite_positive_stated_guess(cell):
    only_counts = synthetic_cells(
        30, seed=8, law={("nb", None, "m_estimate", None): LAW[("nb", None, "m_estimate", None)]}
    )
    for model in (CostModel.default(), CostModel().fit(only_counts)):
        seconds = model.predict(cell)
        assert seconds.shape == (1,) and np.isfinite(seconds[0]) and seconds[0] > 0
        assert "a guess" in model.describe(cell)[0]


def test_to_dict_from_dict_round_trip():
    model = CostModel(reference_condition="new").fit(
        pd.concat(
            [
                synthetic_cells(30, seed=9).assign(condition="new"),
                synthetic_cells(30, seed=10).assign(condition="old"),
            ]
        )
    )
    data = json.loads(json.dumps(model.to_dict()))
    again = CostModel.from_dict(data)
    cells = synthetic_cells(10, seed=11)
    assert again.to_dict() == data
    np.testing.assert_array_equal(again.predict(cells), model.predict(cells))
    np.testing.assert_array_equal(
        again.predict(cells, condition="old"), model.predict(cells, condition="old")
    )
    assert again.describe(cells) == model.describe(cells)


def test_a_file_of_another_format_is_refused():
    with pytest.raises(ValueError, match="not a cost model"):
        CostModel.from_dict({"format": "something-else", "format_version": 1})


@pytest.mark.parametrize(
    "experiment", sorted(path.stem for path in (config_dir() / "experiment").glob("*.yaml"))
)
def test_the_default_prices_every_model_of_every_experiment(experiment, shared_data_dir):
    datasets = ["sklearn-iris", "zoo", "splice", "adult"]
    plan = compose(
        [
            f"experiment={experiment}",
            f"experiment.datasets=[{','.join(datasets)}]",
            "experiment.comparisons=[]",
            "experiment.metrics=[zero_one_loss]",  # learning_curves' distances to the truth need synthetic data
            f"data_dir={shared_data_dir}",
        ]
    ).plan
    cells = plan_features(plan, shared_data_dir)
    seconds = CostModel.default().predict(cells)
    assert len(cells) == len(datasets) * len(plan.models)
    assert np.all(np.isfinite(seconds)) and np.all(seconds > 0)
    assert len(CostModel.default().describe(cells)) == len(cells)


def test_dataset_features_come_from_the_manifest_and_schema(tmp_path, shared_data_dir):
    (tmp_path / "manifest.csv").write_text("slug,rows,n_classes,class_missing\nmixed,1003,4,3\n")
    schema = {
        "mixed": {
            "attributes": [
                {"name": "colour", "type": "nominal", "values": ["r", "g", "b"]},
                {"name": "size", "type": "numeric", "values": None},
                {"name": "id", "type": "nominal", "values": [str(i) for i in range(1000)]},
            ],
            "class": {"name": "class", "type": "nominal", "values": ["a", "b", "c", "d", "e"]},
        }
    }
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    assert dataset_features(tmp_path, "mixed", drop=["id"]) == DatasetFeatures(
        1000, 2, (3 + numeric_bins(1000)) / 2, 4
    )
    assert dataset_features(shared_data_dir, "iris") == DatasetFeatures(150, 4, numeric_bins(150), 3)
    assert dataset_features(shared_data_dir, "sklearn-wine") == DatasetFeatures(178, 13, numeric_bins(178), 3)
    with pytest.raises(DatasetError, match="manifest.csv"):
        dataset_features(tmp_path, "absent")


def test_the_scikit_learn_shapes_are_those_of_scikit_learn():
    from bncbench.data.sources.scikit_learn import read_sklearn_table

    for name in ("sklearn-iris", "sklearn-wine", "sklearn-breast-cancer"):
        frame, numeric, class_name = read_sklearn_table(name)
        features = dataset_features("unused", name)
        assert (features.rows, features.attributes, features.classes) == (
            len(frame),
            len(numeric),
            frame[class_name].nunique(),
        )


def test_cell_features_of_model_configs():
    dataset = DatasetFeatures(100, 5, 3.0, 2)
    hdp = {
        "structure": "kdb",
        "k": 5,
        "estimator": "hdp",
        "estimator_params": {"iterations": 500, "tying": "single"},
    }
    forest = {"baseline": "xgboost", "baseline_params": {"max_depth": 6}}
    assert cell_features(hdp, dataset, folds=4) == CellFeatures(
        "kdb", 5, "hdp", "single", 500, 100, 5, 3.0, 2, folds=4
    )
    assert cell_features(forest, dataset) == CellFeatures(
        "xgboost", None, "baseline", None, None, 100, 5, 3.0, 2
    )
    assert list(CellFeatures.__dataclass_fields__) == list(FEATURE_COLUMNS)


def test_wall_time_of_cells_taken_in_order_by_free_workers():
    assert wall_seconds([3.0, 1.0, 1.0, 1.0], workers=2) == 3.0
    assert wall_seconds([1.0, 1.0, 1.0, 3.0], workers=2) == 4.0
    assert wall_seconds([1.0, 2.0, 3.0], workers=1) == 6.0
    assert wall_seconds([1.0, 2.0], workers=8) == 2.0
    assert wall_seconds([], workers=2) == 0.0


def test_the_module_imports_no_heavy_library():
    loaded = subprocess.run(
        [sys.executable, "-c", "import bncbench.protocol.cost, sys; print(' '.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert not {name.split(".")[0] for name in loaded} & {"numba", "mlflow", "hydra", "sklearn", "omegaconf"}


def _dry_run_lines(*overrides, data_dir) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "bncbench", "run", "--dry-run", *overrides, "executor.n_jobs=1",
                          f"data_dir={data_dir}", "tracking_uri=sqlite:////nonexistent/none.db"],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_a_lighter_setting_is_priced_as_its_own_dry_run_prices_it(shared_data_dir, tmp_path):
    """The lighter settings were priced by their HDP cells alone ("both": 1 CPU-minute, its dry run 8): one price
    of a cell for both (``Costs.cpu_seconds``)."""
    lines = _dry_run_lines("experiment=hdp_vs_m", data_dir=shared_data_dir)
    lighter = dict(re.findall(r"(hdp\.iterations=1000|suite=small|both) \(about ([^)]+)\)", lines[-1]))
    assert set(lighter) == {"hdp.iterations=1000", "suite=small", "both"}
    for setting, overrides in [("hdp.iterations=1000", ["hdp.iterations=1000"]), ("suite=small", ["suite=small"]),
                               ("both", ["hdp.iterations=1000", "suite=small"])]:
        (cost,) = [line for line in _dry_run_lines("experiment=hdp_vs_m", *overrides, data_dir=shared_data_dir)
                   if line.startswith("bncbench: expected cost about ")]
        assert cost.startswith(f"bncbench: expected cost about {lighter[setting]}, "), (setting, cost)


def test_cells_of_datasets_the_store_does_not_describe_are_not_priced_by_a_guess(tmp_path):
    """A fresh data directory priced every cell at one second ("about 2.4 CPU-hours" for the headline): the cost of
    cells of unknown datasets is said to be unknown, not made up."""
    lines = _dry_run_lines("experiment=kdb", "experiment.datasets=[sklearn-iris,zoo]", data_dir=tmp_path / "absent")
    (cost,) = [line for line in lines if line.startswith("bncbench: expected cost about ")]
    assert " for the 7 cells of the datasets the data directory describes " in cost
    assert "bncbench: no cost known for 7 cells, those of zoo (not in the data directory's manifest.csv): the " \
           "expected cost leaves them out." in lines
