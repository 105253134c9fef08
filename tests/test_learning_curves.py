"""The learning_curves experiment: synthetic networks at 10^4..10^6 rows, the distance to the truth as a
metric, and the report's learning-curve figures."""

import numpy as np
import pandas as pd
import pytest

from bncbench.app.cli import main
from bncbench.app.config import compose
from bncbench.core.errors import ConfigError
from bncbench.report.learning_curves import learning_curves


def test_the_experiment_is_two_networks_at_three_sizes_with_the_distance_to_the_truth():
    plan = compose(["experiment=learning_curves"]).plan
    assert len(plan.cells) == 6 * 14
    specs = {cell.dataset: cell.semantic()["dataset"] for cell in plan.cells}
    assert {spec["source"] for spec in specs.values()} == {"synthetic"}
    rows = {name: spec["synthetic"]["rows"] for name, spec in specs.items()}
    assert sorted(set(rows.values())) == [10**4, 10**5, 10**6]
    networks = {tuple(sorted((k, v) for k, v in spec["synthetic"].items() if k != "rows")) for spec in specs.values()}
    assert len(networks) == 2  # each network at the three sizes
    assert {"kl_to_truth", "tv_to_truth"} <= set(compose(["experiment=learning_curves"]).settings.experiment.metrics)


def test_a_distance_to_the_truth_of_a_dataset_without_one_is_refused_in_one_line():
    with pytest.raises(ConfigError) as refused:
        compose(["experiment=learning_curves", "experiment.datasets=[iris,synthetic-kdb2-1e4]"])
    message = str(refused.value)
    assert "only a synthetic dataset has (source: synthetic), not iris" in message and "\n" not in message


def test_the_curves_group_the_sizes_of_one_declaration_and_leave_other_datasets_out():
    declaration = {"dataset.synthetic.k": "2", "dataset.synthetic.attributes": "5", "dataset.synthetic.values": "3",
                   "dataset.synthetic.classes": "2", "dataset.synthetic.alpha": "1.0", "dataset.synthetic.seed": "1",
                   "dataset.synthetic.sample_seed": "1", "cv.folds": "2"}
    params = pd.DataFrame(
        [{**declaration, "dataset.synthetic.rows": "1000"}, {**declaration, "dataset.synthetic.rows": "10000"},
         {**declaration, "dataset.synthetic.seed": "2", "dataset.synthetic.rows": "1000"},
         {"cv.folds": "2", "dataset.source": "store"}],
        index=pd.Index(["a-1e3", "a-1e4", "b-1e3", "iris"], name="dataset"),
    )
    results = pd.DataFrame({"dataset": ["a-1e3", "a-1e4", "b-1e3", "iris"], "model": "nb",
                            "kl_to_truth": [0.2, 0.02, 0.3, np.nan], "rmse": [0.5, 0.4, 0.6, 0.1]})
    curves = learning_curves(results, params, ["rmse", "not_logged", "kl_to_truth"])
    assert set(curves["dataset"]) == {"a-1e3", "a-1e4", "b-1e3"}
    assert curves["network"].nunique() == 2
    assert list(dict.fromkeys(curves.loc[curves["dataset"] == "a-1e3", "metric"])) == ["rmse", "kl_to_truth"]  # the order given
    a = curves[(curves["dataset"].str.startswith("a")) & (curves["metric"] == "kl_to_truth")]
    assert a["training_rows"].tolist() == [500, 5000] and a["value"].tolist() == [0.2, 0.02]
    assert a["network"].iloc[0].startswith("kDB-2, 5 attributes of 3 values, 2 classes, Dirichlet(1.0), seed 1")


def test_a_tiny_learning_curves_run_logs_the_distance_and_draws_the_curves(tmp_path, new_store):
    uri = new_store(tmp_path / "store")
    status = main([
        "run", "experiment=learning_curves", "experiment.datasets=[synthetic-kdb4-1e4]",
        "experiment.models=[nb_m_estimate,nb_hdp]", "experiment.comparisons=[{a: nb_hdp, b: nb_m_estimate}]",
        "hdp.iterations=50", "cv.repetitions=1", "out_of_core.memory_gb=0", f"tracking_uri={uri}",
        f"data_dir={tmp_path / 'data'}", f"report_dir={tmp_path / 'reports'}", "executor.n_jobs=1",
    ])
    assert status == 0
    report = tmp_path / "reports" / "learning_curves"
    curves = pd.read_csv(report / "learning_curves.csv")
    assert set(curves["model"]) == {"nb_m_estimate", "nb_hdp"} and set(curves["training_rows"]) == {5000}
    assert set(curves["metric"]) == {"kl_to_truth", "tv_to_truth", "rmse", "zero_one_loss", "log_loss"}
    kl, tv = (curves.loc[curves["metric"] == metric, "value"] for metric in ("kl_to_truth", "tv_to_truth"))
    assert ((kl > 0) & np.isfinite(kl)).all() and ((tv > 0) & (tv < 1)).all()
    readme = (report / "README.md").read_text()
    assert "## Learning curves" in readme and "figures/learning_curves_1.png" in readme
    assert (report / "figures" / "learning_curves_1.png").stat().st_size > 10_000


def test_the_cost_of_a_synthetic_dataset_comes_from_its_declaration_before_it_is_drawn(tmp_path):
    from bncbench.app.cost import plan_features

    plan = compose(["experiment=learning_curves", f"data_dir={tmp_path}"]).plan
    features = plan_features(plan, tmp_path).drop_duplicates("dataset").set_index("dataset")
    assert features.loc["synthetic-kdb2-1e6", ["rows", "attributes", "values", "classes"]].tolist() == [10**6, 20, 4, 3]
    assert features.loc["synthetic-kdb4-1e4", ["rows", "attributes", "values", "classes"]].tolist() == [10**4, 12, 3, 2]
    assert not list(tmp_path.iterdir())  # priced without drawing anything


@pytest.mark.parametrize(("models", "styles"), [
    (["nb_m_estimate", "kdb5_m_estimate", "skdb_m_estimate"], 3),  # one variant: a style per family
    (["nb_m_estimate", "nb_hdp", "kdb5_m_estimate", "kdb5_hdp"], 2),  # a style per variant, a colour per family
])
def test_no_two_learning_curves_differ_by_their_colour_alone(tmp_path, monkeypatch, models, styles):
    from bncbench.report import figures

    monkeypatch.setattr(figures, "_save", lambda figure, path: figure)
    curve = pd.DataFrame([{"metric": "kl_to_truth", "model": model, "training_rows": rows, "value": 1 / rows}
                          for model in models for rows in (1000, 10000)])
    lines = figures.learning_curve_plot(curve, tmp_path / "curves.png", title="t").axes[0].get_lines()
    looks = {(line.get_color(), line.get_linestyle(), line.get_marker()) for line in lines}
    assert len(looks) == len(models) and len({look[1:] for look in looks}) == styles
