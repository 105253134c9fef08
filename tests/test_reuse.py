"""A cell finished in another experiment of the store is copied, not run again (``bncbench.tracking.reuse``):
the copy carries the source's numbers and provenance, says where it comes from, is skipped on resume,
and ``reuse_runs=false`` or another configuration computes the cell anew."""

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench import tracking
from bncbench.tracking import tags as tag
from bncbench.report.results import read_runs
from bncbench.report.run_settings import run_settings
from dataclasses import replace

from bncbench.app.runner import run_cell

CELL = ("sklearn-iris", "nb_laplace")


@pytest.fixture
def store(tmp_path, new_store, plan_cell):
    """A store whose experiment ``first`` has the finished cell, with a provenance the copy must keep:
    another git commit, and no ``cpu.model`` tag."""
    uri = new_store(tmp_path)
    job = cell_job(plan_cell, uri, tmp_path, "first")
    client = tracking.open_store(uri)
    first = tracking.prepare_experiment(client, "first", None)
    assert run_cell(*job).status == "finished"
    (source,) = client.search_runs([first])
    client.set_tag(source.info.run_id, "mlflow.source.git.commit", "0123456789abcdef")
    client.delete_tag(source.info.run_id, "cpu.model")
    second = cell_job(plan_cell, uri, tmp_path, "second")
    return client, second, client.get_run(source.info.run_id)


def cell_job(plan_cell, uri, tmp_path, experiment, *overrides):
    """The cell and its destination in a sweep of ``experiment`` (its MLflow experiment: the name)."""
    return plan_cell(
        *CELL, f"tracking_uri={uri}", f"artifact_location={tmp_path}/artifacts", f"experiment.name={experiment}", *overrides
    )


def history(client, run_id: str) -> dict[str, list[tuple[int, float]]]:
    run = client.get_run(run_id)
    return {
        key: sorted((m.step, m.value) for m in client.get_metric_history(run_id, key)) for key in run.data.metrics
    }


def artifacts(client, run_id: str, folder: Path) -> dict[str, bytes]:
    local = Path(client.download_artifacts(run_id, "", str(folder)))
    return {str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()}


def test_the_copy_is_the_source_record_and_says_where_it_comes_from(store, tmp_path):
    client, job, source = store
    second = tracking.prepare_experiment(client, "second", None)
    assert run_cell(*job).status == "copied"
    (copy,) = client.search_runs([second])
    assert copy.info.status == "FINISHED"
    assert copy.info.run_name == "sklearn-iris/nb_laplace"
    assert history(client, copy.info.run_id) == history(client, source.info.run_id)
    assert len(history(client, copy.info.run_id)["fold/rmse"]) == 10
    assert copy.data.params == source.data.params
    assert copy.data.params["experiment.name"] == "first"  # the experiment that computed it
    tags = copy.data.tags
    assert tags[tag.COPIED_FROM] == f"first/{source.info.run_id}"
    assert tags[tag.ORIGIN_RUN] == source.info.run_id
    assert tags["mlflow.source.git.commit"] == "0123456789abcdef"
    assert "cpu.model" not in tags  # this process's machine did not compute it
    for key in ("cfg_hash", "data_digest", "numba_threads", "version.numba", "dataset", "model"):
        assert tags[key] == source.data.tags[key]
    assert [d.dataset.digest for d in copy.inputs.dataset_inputs] == [
        d.dataset.digest for d in source.inputs.dataset_inputs
    ]
    copied = artifacts(client, copy.info.run_id, tmp_path / "copy")
    assert {"config.yaml", "predictions.parquet", "structure.json"} <= set(copied)
    assert copied == artifacts(client, source.info.run_id, tmp_path / "source")


def test_a_copied_cell_is_skipped_next_time(store):
    client, job, source = store
    second = tracking.prepare_experiment(client, "second", None)
    assert run_cell(*job).status == "copied"
    assert run_cell(*job).status == "skipped"
    assert len(client.search_runs([second])) == 1


def test_the_report_of_copied_runs_reads_them_as_the_source_and_names_the_experiment(store):
    client, job, source = store
    run_cell(*job)
    first, copied = (read_runs(client.tracking_uri, name) for name in ("first", "second"))
    pd.testing.assert_frame_equal(copied.results(), first.results())  # same numbers, same run id
    assert run_settings(copied.provenance(), "second")["computed in experiment"] == {"first": 1}
    assert "computed in experiment" not in run_settings(first.provenance(), "first")


@pytest.mark.parametrize("reuse_runs", ["true", "false"])
def test_a_renamed_model_has_its_finished_cell_copied_under_the_new_name(store, plan_cell, tmp_path, reuse_runs):
    client, _, source = store
    cell, destination = cell_job(plan_cell, client.tracking_uri, tmp_path, "first", f"reuse_runs={reuse_runs}")
    first = source.info.experiment_id
    renamed = replace(cell, model="nb_laplace_renamed")  # the same classifier, so the same cfg_hash
    outcome = run_cell(renamed, destination)
    assert outcome.status == "copied"
    assert run_cell(renamed, destination).status == "skipped"
    assert run_cell(cell, destination).status == "skipped"  # the old name keeps its run
    copy = tracking.finished_run(client, first, source.data.tags["cfg_hash"], source.data.tags["data_digest"], renamed.key)
    assert copy.data.tags[tag.COPIED_FROM] == f"first/{source.info.run_id}"
    assert history(client, copy.info.run_id) == history(client, source.info.run_id)
    results = read_runs(client.tracking_uri, "first").results()
    assert sorted(results["model"]) == ["nb_laplace", "nb_laplace_renamed"]
    assert results["rmse"].nunique() == 1


@pytest.mark.parametrize("override", ["reuse_runs=false", "cv.seed=7"])
def test_the_cell_is_computed_when_reuse_is_off_or_the_configuration_differs(
    store, plan_cell, tmp_path, override
):
    client, job, source = store
    other = cell_job(plan_cell, client.tracking_uri, tmp_path, "second", override)
    second = tracking.prepare_experiment(client, "second", None)
    assert run_cell(*other).status == "finished"
    (run,) = client.search_runs([second])
    assert tag.COPIED_FROM not in run.data.tags
    assert run.data.params["experiment.name"] == "second"


def test_a_sweep_copies_the_cells_another_experiment_finished(tmp_path, run_cli, new_store):
    """Two real sweeps on one store: the second experiment (same cells, another name) computes none."""
    uri = new_store(tmp_path)
    cells = ["experiment.datasets=[sklearn-iris,sklearn-wine]", "experiment.models=[nb_laplace]", "executor.n_jobs=1"]
    first = run_cli(*cells, "experiment.comparisons=[]", f"tracking_uri={uri}", cwd=tmp_path)
    assert first.returncode == 0, first.output
    second = run_cli(
        *cells, "experiment.comparisons=[]", "experiment.name=smoke_again", f"tracking_uri={uri}", cwd=tmp_path
    )
    assert second.returncode == 0, second.output
    assert second.output.strip().splitlines()[-1] == (
        "bncbench: experiment 'smoke_again': 2 cells, 0 run, 2 copied from a finished run of the same config, "
        "0 skipped (finished before), 0 failed."
    ), second.output
    client = MlflowClient(uri)
    again = client.search_runs([client.get_experiment_by_name("smoke_again").experiment_id])
    assert sorted(r.data.tags[tag.COPIED_FROM].split("/")[0] for r in again) == ["smoke", "smoke"]
