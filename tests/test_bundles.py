"""Bundles: an experiment's finished cells exported from one MLflow store and imported into another.

Two "machines" (real SQLite stores) run the real runner on disjoint datasets of the smoke experiment;
their bundles are imported into fresh stores and the reports written from both are compared file by file.
"""

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bncbench import tracking
from bncbench.tracking import tags as tag
from bncbench.bundles import (
    BundleError,
    export_bundle,
    import_bundles,
    read_bundle,
)
from bncbench.bundles.format import MANIFEST, METRICS, RUNS, write_bundle
from bncbench.app.cli import main
from bncbench.app.config import compose
from bncbench.core.errors import ConfigError
from bncbench.report import plan_runs, write_report
from bncbench.app.runner import run_cell
from bncbench.app.ui import imported_run_name

MODELS = ["nb_laplace", "nb_m_estimate"]
LAPTOP, CLUSTER = ["sklearn-iris"], ["sklearn-wine"]


def run_cells(client, directory: Path, datasets, plan_cell, *overrides) -> str:
    """Run every (dataset, model) cell of ``datasets`` x ``MODELS`` into the smoke experiment."""
    experiment_id = tracking.prepare_experiment(client, "smoke", str(directory / "artifacts"))
    for dataset in datasets:
        for model in MODELS:
            job = plan_cell(dataset, model, f"tracking_uri={client.tracking_uri}", *overrides)
            assert run_cell(*job).status == "finished"
    return experiment_id


@pytest.fixture(scope="module")
def machines(tmp_path_factory, new_store, plan_cell):
    """Two stores, each with the finished cells of one dataset, and their exported bundles."""
    found = {}
    for name, datasets in {"laptop": LAPTOP, "cluster": CLUSTER}.items():
        directory = tmp_path_factory.mktemp(name)
        uri = new_store(directory / "store")
        run_cells(tracking.open_store(uri), directory, datasets, plan_cell)
        found[name] = uri
        found[f"{name}_bundle"] = export_bundle(uri, "smoke", directory / "bundles")
    return found


def report(uri: str, datasets, report_dir: Path) -> dict[str, bytes]:
    """Every file of the smoke report of ``datasets`` x ``MODELS`` read from ``uri``, by relative path."""
    overrides = [
        "experiment=smoke",
        f"experiment.datasets=[{','.join(datasets)}]",
        f"experiment.models=[{','.join(MODELS)}]",
        "experiment.comparisons=[{a:nb_m_estimate,b:nb_laplace}]",
        f"tracking_uri={uri}",
        f"report_dir={report_dir}",
    ]
    composed = compose(overrides)
    place = write_report(composed.plan, plan_runs(composed.plan, uri), report_dir)
    return {
        str(path.relative_to(place)): path.read_bytes() for path in sorted(place.rglob("*")) if path.is_file()
    }


def but_bundles(files: dict[str, bytes]) -> dict[str, bytes]:
    """A report's files without the README's line naming the bundles its runs came from, the one line
    by which the report of imported runs differs from the report of the originals."""
    readme = [line for line in files["README.md"].split(b"\n") if not line.startswith(b"- bundles: ")]
    return {**files, "README.md": b"\n".join(readme)}


def copy_store(uri: str, directory: Path) -> str:
    directory.mkdir(parents=True)
    database = directory / "mlflow.db"
    shutil.copyfile(uri.removeprefix("sqlite:///"), database)
    return f"sqlite:///{database}"


def runs_of(uri: str) -> list:
    client = tracking.open_store(uri)
    return tracking.cell_runs(client, tracking.experiment_id(client, "smoke"))


def file_sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_export_then_import_gives_the_same_runs_and_report(machines, new_store, tmp_path, plan_cell):
    fresh = new_store(tmp_path / "fresh")
    summary = import_bundles(
        fresh, [machines["laptop_bundle"]], artifact_location=str(tmp_path / "artifacts")
    )
    assert sorted(summary.imported) == [f"smoke/sklearn-iris/{model}" for model in MODELS]
    client, original = tracking.open_store(fresh), tracking.open_store(machines["laptop"])
    originals = {run.info.run_id: run for run in runs_of(machines["laptop"])}
    for run in runs_of(fresh):
        source = originals[run.data.tags[tag.ORIGIN_RUN]]
        assert run.data.tags[tag.ORIGIN_BUNDLE] == read_bundle(machines["laptop_bundle"]).id
        assert (run.info.status, run.info.run_name) == ("FINISHED", source.info.run_name)
        assert (run.info.start_time, run.info.end_time) == (source.info.start_time, source.info.end_time)
        assert run.data.params == source.data.params and run.data.metrics == source.data.metrics
        assert {k: v for k, v in run.data.tags.items() if not k.startswith("bncbench.")} == {
            k: v for k, v in source.data.tags.items() if not k.startswith("bncbench.")
        }
        history = client.get_metric_history(run.info.run_id, "fold/rmse")
        assert [(m.step, m.value, m.timestamp) for m in history] == [
            (m.step, m.value, m.timestamp)
            for m in original.get_metric_history(source.info.run_id, "fold/rmse")
        ]
        assert run.inputs.dataset_inputs[0].dataset.digest == source.data.tags["data_digest"]
        carried = {a.path for a in client.list_artifacts(run.info.run_id)}  # what produced the numbers
        assert {"config.yaml", "structure.json"} <= carried and "predictions.parquet" not in carried
        for name in ("config.yaml", "structure.json"):
            here = Path(client.download_artifacts(run.info.run_id, name, str(tmp_path / "here" / run.info.run_id)))
            there = Path(original.download_artifacts(source.info.run_id, name, str(tmp_path / "there" / run.info.run_id)))
            assert here.read_bytes() == there.read_bytes()
    imported = report(fresh, LAPTOP, tmp_path / "imported")
    assert but_bundles(imported) == report(machines["laptop"], LAPTOP, tmp_path / "original")
    assert f"\n- bundles: {read_bundle(machines['laptop_bundle']).id}\n".encode() in imported["README.md"]
    results = pd.read_csv(tmp_path / "imported" / "smoke" / "results.csv")
    assert set(results["run_id"]) == set(originals)  # the report names the imported runs by their original id
    again = export_bundle(fresh, "smoke", tmp_path / "bundles")  # the same runs make the same bundle
    assert read_bundle(again).id == read_bundle(machines["laptop_bundle"]).id
    job = plan_cell("sklearn-iris", "nb_laplace", f"tracking_uri={fresh}")  # a sweep there skips the cell
    assert run_cell(*job).status == "skipped"


def test_importing_twice_adds_nothing(machines, new_store, tmp_path):
    fresh = new_store(tmp_path / "fresh")
    import_bundles(fresh, [machines["laptop_bundle"]])
    summary = import_bundles(fresh, [machines["laptop_bundle"], machines["laptop_bundle"]])
    assert summary.imported == [] and len(summary.already_there) == 4
    assert import_bundles(fresh, str(machines["laptop_bundle"])).imported == []  # one path, not a list
    assert len(runs_of(fresh)) == 2
    home = copy_store(machines["laptop"], tmp_path / "home")  # into the store it came from: nothing either
    assert import_bundles(home, [machines["laptop_bundle"]]).imported == []
    assert len(runs_of(home)) == 2


@pytest.mark.parametrize("imported_before", [0, 1])
def test_an_import_stopped_as_mlflow_starts_a_run_leaves_none_looking_alive(machines, new_store, tmp_path,
                                                                            monkeypatch, imported_before):
    """A SIGTERM that came inside MLflow's create_run, once the run was written and before its id came back, left
    the run RUNNING (seen in CI): the import deletes every RUNNING run it started, and what was imported stays."""
    fresh = new_store(tmp_path / "fresh")
    start_run, started = tracking.start_run, []

    def stopped_once_written(*args, **kwargs):
        started.append(start_run(*args, **kwargs))
        if len(started) > imported_before:
            raise KeyboardInterrupt
        return started[-1]

    monkeypatch.setattr(tracking, "start_run", stopped_once_written)
    with pytest.raises(KeyboardInterrupt):
        import_bundles(fresh, [machines["laptop_bundle"]])
    runs = runs_of(fresh)
    assert [run.info.status for run in runs] == ["FINISHED"] * imported_before
    monkeypatch.undo()  # the same command imports the rest
    assert len(import_bundles(fresh, [machines["laptop_bundle"]]).imported) == 2 - imported_before


def test_a_cell_copied_under_another_name_comes_in_under_both(machines, new_store, tmp_path, plan_cell):
    """A sweep copies a finished cell to a renamed model of the same config (``bncbench.tracking.reuse``); the
    report reads each model's runs by its name, so an import brings both runs, as the sweep left the store."""
    source = copy_store(machines["laptop"], tmp_path / "source")
    renamed = "experiment.grids=[{structure: nb, estimator: laplace, name: nb_renamed}]"
    assert run_cell(*plan_cell("sklearn-iris", "nb_renamed", f"tracking_uri={source}", renamed)).status == "copied"
    bundle = export_bundle(source, "smoke", tmp_path / "bundles")
    fresh = new_store(tmp_path / "fresh")
    summary = import_bundles(fresh, [bundle])
    assert sorted(run.split("/")[2].split()[0] for run in summary.imported) == sorted([*MODELS, "nb_renamed"])
    assert import_bundles(fresh, [bundle]).imported == []


def test_two_bundles_of_disjoint_parts_give_the_report_of_the_whole(machines, new_store, tmp_path):
    whole = copy_store(
        machines["cluster"], tmp_path / "cluster"
    )  # the cluster's store takes the laptop's part
    assert len(import_bundles(whole, [machines["laptop_bundle"]]).imported) == 2
    fresh = new_store(tmp_path / "fresh")
    summary = import_bundles(fresh, [machines["laptop_bundle"], machines["cluster_bundle"]])
    assert len(summary.imported) == 4
    both = LAPTOP + CLUSTER
    fresh_report = report(fresh, both, tmp_path / "fresh_report")
    assert but_bundles(fresh_report) == but_bundles(report(whole, both, tmp_path / "whole_report"))
    ids = [read_bundle(machines[f"{name}_bundle"]).id for name in ("laptop", "cluster")]
    assert all(f"{bundle} (2 runs)".encode() in fresh_report["README.md"] for bundle in ids)
    results = pd.read_csv(tmp_path / "fresh_report" / "smoke" / "results.csv")
    original_ids = {
        run.info.run_id for uri in (machines["laptop"], machines["cluster"]) for run in runs_of(uri)
    }
    assert len(results) == 4 and set(results["run_id"]) == original_ids


def _truncate(bundle: Path) -> None:
    data = (bundle / METRICS).read_bytes()
    (bundle / METRICS).write_bytes(data[: len(data) // 2])


def _change_a_value(bundle: Path) -> None:
    metrics = pd.read_parquet(bundle / METRICS)
    metrics.loc[0, "value"] += 0.01
    metrics.to_parquet(bundle / METRICS, index=False)


def _edit_manifest(change):
    def edit(bundle: Path) -> None:
        manifest = json.loads((bundle / MANIFEST).read_text())
        change(manifest)
        (bundle / MANIFEST).write_text(json.dumps(manifest))

    return edit


DAMAGES = {
    "truncated": (_truncate, "metrics.parquet differs from the file exported"),
    "a changed value": (_change_a_value, "metrics.parquet differs from the file exported"),
    "a missing file": (lambda b: (b / RUNS).unlink(), "runs.parquet is missing"),
    "no manifest": (lambda b: (b / MANIFEST).unlink(), "it has no manifest.json"),
    "a manifest that does not parse": (lambda b: (b / MANIFEST).write_text('{"format": '), "does not parse"),
    "an unknown format version": (
        _edit_manifest(lambda m: m.update(format_version=99)),
        "format version 99 is not the one this bncbench reads",
    ),
    "wrong counts": (_edit_manifest(lambda m: m["counts"].update(runs=3)), "its manifest says"),
    "a file outside the bundle": (
        _edit_manifest(lambda m: m["files"].update({"../runs.parquet": m["files"][RUNS]})),
        "not a file of the bundle",
    ),
    "an experiment name that is a path": (
        _edit_manifest(lambda m: m.update(experiment="../smoke")),
        "holds a path separator",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_bundle_is_refused_and_the_store_left_untouched(machines, tmp_path, damage):
    damaged = shutil.copytree(machines["laptop_bundle"], tmp_path / "damaged")
    change, message = DAMAGES[damage]
    change(damaged)
    store = copy_store(machines["cluster"], tmp_path / "store")
    before = file_sha(store.removeprefix("sqlite:///"))
    absent = tmp_path / "new" / "mlflow.db"
    for uri in (store, f"sqlite:///{absent}"):
        with pytest.raises(BundleError, match="is refused: .*" + message) as refused:
            import_bundles(uri, [machines["laptop_bundle"], damaged])  # the good one is not imported either
        assert "Nothing was imported" in str(refused.value)
    assert file_sha(store.removeprefix("sqlite:///")) == before
    assert not absent.parent.exists()


def test_another_data_digest_is_reported(tmp_path, new_store, plan_cell, shared_data_dir):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copyfile(shared_data_dir / "iris.csv.gz", data_dir / "iris.csv.gz")
    schema = json.loads((shared_data_dir / "schema.json").read_text())
    (data_dir / "schema.json").write_text(json.dumps({"iris": schema["iris"]}))
    uri = new_store(tmp_path / "store")
    client = tracking.open_store(uri)
    tracking.prepare_experiment(client, "smoke", str(tmp_path / "artifacts"))
    job = plan_cell("iris", "nb_laplace", f"tracking_uri={uri}", f"data_dir={data_dir}")
    assert run_cell(*job).status == "finished"
    bundle = export_bundle(uri, "smoke", tmp_path / "bundles")

    same = import_bundles(new_store(tmp_path / "same"), [bundle], data_dir=data_dir)
    assert same.other_data == {} and same.data_not_checked == []
    unchecked = import_bundles(new_store(tmp_path / "elsewhere"), [bundle], data_dir=tmp_path / "empty")
    assert unchecked.data_not_checked == ["iris"]

    text = gzip.decompress((data_dir / "iris.csv.gz").read_bytes()).decode()
    (data_dir / "iris.csv.gz").write_bytes(
        gzip.compress(text.rsplit("\n", 2)[0].encode() + b"\n")
    )  # a row fewer
    changed = import_bundles(new_store(tmp_path / "changed"), [bundle], data_dir=data_dir)
    assert changed.imported == ["smoke/iris/nb_laplace"]  # imported, and said
    assert list(changed.other_data) == ["smoke/iris/nb_laplace"]
    assert "another version of their dataset" in "\n".join(changed.lines())


def test_another_code_version_is_reported(machines, new_store, tmp_path):
    carried = read_bundle(machines["laptop_bundle"])
    runs = carried.runs.copy()
    older = {
        "version.bncbench": "0.0.1",
        "mlflow.source.git.commit": "f" * 40,
        "mlflow.source.git.dirty": "false",
    }
    runs["tags"] = [{**tags, **older} for tags in runs["tags"]]
    (tmp_path / "old").mkdir()
    write_bundle(tmp_path / "old", "smoke", runs, carried.metrics, {}, {})  # as an older bncbench exported it
    fresh = new_store(tmp_path / "fresh")
    summary = import_bundles(fresh, [tmp_path / "old", machines["cluster_bundle"]])
    old = "bncbench 0.0.1, git ffffffffffff"
    assert summary.code_versions[old] == 2 and summary.this_code != old
    assert summary.code_versions[summary.this_code] == 2  # the cluster's runs: this checkout
    assert old in summary.lines()[1] and "this checkout" in summary.lines()[1]
    readme = report(fresh, LAPTOP + CLUSTER, tmp_path / "report")["README.md"].decode()
    assert "0.0.1 (2 runs)" in readme  # the report states the versions it mixes


def test_predictions_travel_only_when_asked(machines, new_store, tmp_path):
    assert read_bundle(machines["laptop_bundle"]).predictions == {}
    bundle = export_bundle(machines["laptop"], "smoke", tmp_path / "bundles", predictions=True)
    assert bundle != machines["laptop_bundle"] and len(read_bundle(bundle).predictions) == 2
    assert export_bundle(machines["laptop"], "smoke", tmp_path / "bundles", predictions=True) == bundle
    fresh = new_store(tmp_path / "fresh")
    import_bundles(fresh, [bundle], artifact_location=str(tmp_path / "artifacts"))
    client, original = tracking.open_store(fresh), tracking.open_store(machines["laptop"])
    for run in runs_of(fresh):
        imported = client.download_artifacts(
            run.info.run_id, "predictions.parquet", str(tmp_path / run.info.run_id)
        )
        source = run.data.tags[tag.ORIGIN_RUN]
        exported = original.download_artifacts(source, "predictions.parquet", str(tmp_path / source))
        assert file_sha(imported) == file_sha(exported)


def test_export_refuses_what_it_cannot_export(machines, tmp_path):
    with pytest.raises(ConfigError, match="no MLflow store"):
        export_bundle(f"sqlite:///{tmp_path / 'none.db'}", "smoke", tmp_path / "out")
    assert not (tmp_path / "none.db").exists()
    with pytest.raises(ConfigError, match="no MLflow experiment 'kdb'"):
        export_bundle(machines["laptop"], "kdb", tmp_path / "out")
    with pytest.raises(ConfigError, match="no bundle to import"):
        import_bundles(machines["laptop"], [])


def test_a_run_that_cannot_be_written_whole_is_not_left_behind(machines, new_store, tmp_path):
    bundle = export_bundle(machines["laptop"], "smoke", tmp_path / "bundles", predictions=True)
    (tmp_path / "a_file").write_text("")
    fresh = new_store(tmp_path / "fresh")
    with pytest.raises(ConfigError, match="could not be written to .* 0 runs were imported before it"):
        import_bundles(fresh, [bundle], artifact_location=str(tmp_path / "a_file"))  # artifacts under a file
    assert runs_of(fresh) == []  # the run whose predictions failed was deleted, not left RUNNING


def test_export_of_a_configuration_carries_the_runs_its_report_reads(machines, tmp_path, plan_cell):
    """``bncbench export`` with overrides exports the cells of that configuration only (its datasets,
    models and settings); ``--all`` (``cells=None``) every finished cell of the experiment."""
    uri = copy_store(machines["laptop"], tmp_path / "store")
    run_cells(tracking.open_store(uri), tmp_path, LAPTOP, plan_cell, "cv.seed=7")  # a second configuration

    def exported(*overrides: str, every: bool = False) -> pd.DataFrame:
        overrides = ["experiment=smoke", f"experiment.datasets=[{LAPTOP[0]}]", "experiment.comparisons=[]",
                     f"tracking_uri={uri}", *overrides]
        cells = None if every else compose(overrides).plan.by_key()
        bundle = export_bundle(uri, "smoke", tmp_path / "bundles", cells=cells)
        return read_bundle(bundle).runs

    models = f"experiment.models=[{','.join(MODELS)}]"
    default, seed7 = exported(models), exported(models, "cv.seed=7")
    assert sorted(default["run_name"]) == [f"{LAPTOP[0]}/{m}" for m in sorted(MODELS)]
    assert sorted(seed7["run_name"]) == [f"{LAPTOP[0]}/{m} cv=5x2,seed=7" for m in sorted(MODELS)]  # told apart
    assert {run["cv.seed"] for run in default["params"]} == {"1"}
    assert {run["cv.seed"] for run in seed7["params"]} == {"7"}
    assert list(exported("experiment.models=[nb_laplace]", "cv.seed=7")["run_name"]) == [
        f"{LAPTOP[0]}/nb_laplace cv=5x2,seed=7"
    ]
    assert len(exported(models, every=True)) == 4
    with pytest.raises(ConfigError, match="no finished cell of this configuration"):
        exported(models, "cv.seed=9")


def test_the_export_command_exports_its_configuration_or_with_all_the_whole_experiment(machines, tmp_path, capsys):
    common = ["export", "experiment=smoke", f"tracking_uri={machines['laptop']}", "--out"]
    only_nb = ["experiment.models=[nb_laplace]", "experiment.comparisons=[]"]  # overrides after an option too
    assert main([*common, str(tmp_path / "one"), *only_nb]) == 0
    assert main([*common, str(tmp_path / "all"), *only_nb, "--all"]) == 0
    assert "bundle written to" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main([*common, str(tmp_path / "none"), "--no-such-option"])
    assert refused.value.code == 2 and "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    (one,), (every,) = (tmp_path / "one").iterdir(), (tmp_path / "all").iterdir()
    assert list(read_bundle(one).runs["run_name"]) == [f"{LAPTOP[0]}/nb_laplace"]
    assert sorted(read_bundle(every).runs["run_name"]) == [f"{LAPTOP[0]}/{m}" for m in sorted(MODELS)]


def test_the_import_command_puts_the_artifacts_beside_the_database_wherever_it_runs(
    machines, tmp_path, monkeypatch, capsys
):
    store = tmp_path / "store"
    store.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    assert main(["import", str(machines["laptop_bundle"]), f"tracking_uri={uri}"]) == 0
    client = tracking.open_store(uri)
    location = client.get_experiment(tracking.experiment_id(client, "smoke")).artifact_location
    assert location.removeprefix("file://").startswith(str(store / "artifacts"))
    assert list(elsewhere.iterdir()) == []
    said = capsys.readouterr()
    bundle = machines["laptop_bundle"].name
    assert f"bncbench: bundle 1/1 {bundle}: 2 runs imported, 0 already there\n" in said.err  # progress
    assert f"mlflow ui --backend-store-uri sqlite:///{store / 'mlflow.db'}" in said.out  # and how to browse
    tags = client.get_experiment(tracking.experiment_id(client, "smoke")).tags  # described as a sweep describes it
    assert tags["mlflow.note.content"].startswith("bncbench experiment `smoke`: ")
    assert tags["mlflow.experimentKind"] == "custom_model_development"


@pytest.mark.parametrize("overrides", [["experiment=hdp_vs_m"], ["experiment=hdp_vs_m", "hdp.iterations=5000"],
                                       ["experiment=tying"], ["experiment=kdb"], ["experiment=learning_curves"]])
def test_a_run_imported_under_its_bare_cell_name_is_named_as_a_sweep_names_it(overrides):
    # runs logged before labels were are named <dataset>/<model> in their bundles, the 5000- and 50000-iteration
    # runs of a cell alike; the import names each as a sweep of its configuration does, from its params
    plan = compose(overrides).plan
    for cell in plan.cells[:: max(1, len(plan.cells) // 60)]:
        tags = {tag.DATASET: cell.dataset, tag.MODEL: cell.model}
        assert (imported_run_name(plan.experiment, cell.name, tags, cell.params) or cell.name) == cell.run_name
        assert imported_run_name(plan.experiment, f"{cell.name} it=7", tags, cell.params) is None  # a name with more
