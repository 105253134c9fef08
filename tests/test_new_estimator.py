"""Adding an estimator is one class: defined here, with no config file and nothing else edited, it runs
end to end through an experiment (settings check, sweep, MLflow runs, report) by the name
``<structure>_<estimator>``; a setting it declares (``settings``) is one an experiment sets for all its models
on the command line (``<estimator>.<setting>=...``) and sweeps as a grid."""

import sqlite3

import pytest

from bncbench.app.config import compose
from bncbench.core.errors import ConfigError

from bncbench.bnc.estimators import Estimator, registered
from bncbench.bnc.estimators.dirichlet import smoothed
from bncbench.app.cli import main


class Jeffreys(Estimator, register=False):
    """Dirichlet tables with ``alpha = 0.5`` (Jeffreys' prior)."""

    name = "jeffreys"
    count_based = True

    def tables(self, network, data, rng):
        return [[smoothed(counts, 0.5) for counts in tree.counts] for tree in network.trees]


class Lidstone(Estimator, register=False):
    """Dirichlet tables with the pseudo-count ``alpha``, which an experiment sets for all its models."""

    name = "lidstone"
    count_based = True
    settings = ("alpha",)

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def tables(self, network, data, rng):
        return [[smoothed(counts, self.alpha) for counts in tree.counts] for tree in network.trees]


def alphas(*overrides) -> dict[str, float]:
    """Each model's ``alpha`` in the plan of ``experiment.models=[nb_lidstone, kdb1_lidstone]`` with ``overrides``."""
    plan = compose(["experiment.datasets=[iris]", "experiment.models=[nb_lidstone,kdb1_lidstone]",
                    "experiment.comparisons=[]", *overrides]).plan
    return {cell.model: cell.semantic()["model"]["estimator_params"]["alpha"] for cell in plan.cells}


def test_a_setting_a_new_estimator_declares_is_set_on_the_command_line_and_swept_as_a_grid(
    tmp_path, new_store, shared_data_dir
):
    with registered(Lidstone):
        assert alphas() == {"nb_lidstone": 1.0, "kdb1_lidstone": 1.0}  # __init__'s default
        assert alphas("lidstone.alpha=0.25") == {"nb_lidstone": 0.25, "kdb1_lidstone": 0.25}
        grid = ("+experiment.grids=[{structure: [nb], estimator: lidstone, estimator_params: {alpha: [0.5, 2.0]}, "
                "name: 'nb_lidstone_{alpha}'}]")
        swept = ["experiment.datasets=[iris]", "experiment.models=[nb_lidstone_0.5,nb_lidstone_2.0]",
                 "experiment.comparisons=[]", grid]
        assert [cell.semantic()["model"]["estimator_params"]["alpha"] for cell in compose(swept).plan.cells] == [0.5, 2.0]
        with pytest.raises(ConfigError, match=r"'lidstone.alpha=0.25' would change nothing: no model"):
            compose([*swept, "lidstone.alpha=0.25"])  # the grid's own values win
        with pytest.raises(ConfigError, match=r"lidstone.alpha must be a number, got 'much'"):
            alphas("lidstone.alpha=much")
        with pytest.raises(ConfigError, match=r"unknown setting 'lidstone.beta'.*; the settings of lidstone are: "
                                              r"lidstone.alpha"):
            alphas("+lidstone.beta=1")
        uri = new_store(tmp_path / "store")
        status = main(["run", "experiment.datasets=[iris]", "experiment.models=[nb_lidstone]",
                       "experiment.comparisons=[]", "lidstone.alpha=0.25", f"tracking_uri={uri}",
                       f"data_dir={shared_data_dir}", f"report_dir={tmp_path / 'reports'}", "executor.n_jobs=1"])
    assert status == 0
    with sqlite3.connect(tmp_path / "store" / "mlflow.db") as db:
        logged = db.execute("select value from params where key = 'model.estimator_params.alpha'").fetchall()
    assert logged == [("0.25",)]
    with pytest.raises(ConfigError, match=r"unknown setting 'lidstone.alpha'"):  # not registered: no such setting
        alphas("lidstone.alpha=0.25")


def test_a_new_estimator_runs_through_an_experiment(tmp_path, new_store, shared_data_dir):
    uri = new_store(tmp_path / "store")
    with registered(Jeffreys):
        status = main(
            [
                "run",
                "experiment.datasets=[iris,zoo]",
                "experiment.models=[nb_jeffreys,kdb2_jeffreys,nb_laplace]",
                "experiment.comparisons=[{a: '*_jeffreys', b: nb_laplace}]",
                f"tracking_uri={uri}",
                f"data_dir={shared_data_dir}",
                f"report_dir={tmp_path / 'reports'}",
                "executor.n_jobs=1",  # joblib runs the cells in this process, where the class is registered
            ]
        )
    assert status == 0
    with sqlite3.connect(tmp_path / "store" / "mlflow.db") as db:
        finished = db.execute(
            "select t.value from runs r join tags t on t.run_uuid = r.run_uuid "
            "where r.status = 'FINISHED' and t.key = 'estimator'"
        ).fetchall()
    assert sorted(value for (value,) in finished) == ["jeffreys"] * 4 + ["laplace"] * 2
    wdl = (tmp_path / "reports" / "smoke" / "wdl.md").read_text()
    assert "| nb_jeffreys vs nb_laplace |" in wdl and "| kdb2_jeffreys vs nb_laplace |" in wdl
