"""Adding an estimator is one class: defined here, with no config file and nothing else edited, it runs
end to end through an experiment (settings check, sweep, MLflow runs, report) by the name
``<structure>_<estimator>``."""

import sqlite3

from bncbench.bnc.estimators import Estimator, registered
from bncbench.bnc.estimators.dirichlet import smoothed
from bncbench.app.cli import main


class Jeffreys(Estimator, register=False):
    """Dirichlet tables with ``alpha = 0.5`` (Jeffreys' prior)."""

    name = "jeffreys"
    count_based = True

    def tables(self, network, data, rng):
        return [[smoothed(counts, 0.5) for counts in tree.counts] for tree in network.trees]


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
