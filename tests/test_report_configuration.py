"""The report reads the runs of its own configuration: two cells rerun with another CV protocol
(``cv.repetitions=1 cv.seed=7``) are neither mixed into the report of the default 5x2 CV nor missing
from the report of theirs. Real ``python -m bncbench`` runs on a real SQLite store.
"""

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.app.cli import main

EXPERIMENT = [
    "experiment.datasets=[sklearn-iris,sklearn-wine]",
    "experiment.models=[nb_laplace,nb_m_estimate]",
    "experiment.comparisons=[{a: nb_m_estimate, b: nb_laplace}]",
]
OTHER_CV = ["experiment.datasets=[sklearn-iris]", "cv.repetitions=1", "cv.seed=7"]
LEFT_OUT = "Left out: 2 finished runs of these cells with other settings or data:"


@pytest.fixture(scope="module")
def store(tmp_path_factory, new_store, run_cli):
    """Four 5x2 CV cells, then the two sklearn-iris cells again with 1x2 CV: ``(cwd, overrides, runs)``,
    the overrides of the first command and the store's FINISHED runs by their cv.repetitions."""
    cwd = tmp_path_factory.mktemp("two_configurations")
    common = [*EXPERIMENT, f"tracking_uri={new_store(cwd / 'store')}"]
    first = run_cli(*common, "executor.n_jobs=1", cwd=cwd)
    assert first.returncode == 0, first.output
    other = run_cli(*common, *OTHER_CV, "executor.n_jobs=1", cwd=cwd)  # its report over the first's, beside the store
    assert other.returncode == 0, other.output
    assert "2 cells, 2 run, 0 skipped" in other.output  # another configuration: nothing to skip
    client = MlflowClient(common[-1].removeprefix("tracking_uri="))
    experiment_id = client.get_experiment_by_name("smoke").experiment_id
    runs = client.search_runs([experiment_id], "attributes.status = 'FINISHED'")
    by_protocol = {}
    for run in runs:
        by_protocol.setdefault(run.data.params["cv.repetitions"], set()).add(run.info.run_id)
    return cwd, common, by_protocol


def test_the_report_of_the_other_configuration_reads_its_two_cells(store):
    cwd, _, runs = store
    results = pd.read_csv(cwd / "store" / "reports" / "smoke" / "results.csv")  # written by the second command
    assert set(results["run_id"]) == runs["1"] and len(results) == 2
    readme = (cwd / "store" / "reports" / "smoke" / "README.md").read_text()  # beside the store
    assert "- CV: 1x2, seed 7\n- datasets: 1\n" in readme
    assert f"{LEFT_OUT} 2 with cv.repetitions=5, cv.seed=1." in readme


def test_the_report_of_the_default_configuration_reads_only_its_runs(store, capsys):
    cwd, common, runs = store
    assert main(["report", *common, f"report_dir={cwd / 'default'}"]) == 0
    results = pd.read_csv(cwd / "default" / "smoke" / "results.csv")
    assert set(results["run_id"]) == runs["5"] and len(results) == 4
    readme = (cwd / "default" / "smoke" / "README.md").read_text()
    assert "From the params and tags of the 4 runs read:\n- CV: 5x2, seed 1\n- datasets: 2\n" in readme
    assert f"{LEFT_OUT} 2 with cv.repetitions=1, cv.seed=7." in readme
