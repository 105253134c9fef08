"""Hostile bundles (issue 27): a real bundle exported from real runs, edited, its manifest hashed again,
is refused whole with the run, the field and the reason; runs of one cell with other numbers are a
conflict; an import holds the cells' leases as a sweep does; a report names the bundles it read."""

import json
import os
import shutil
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bncbench import tracking
from bncbench.app.cli import main
from bncbench.app.config import compose
from bncbench.app.runner import run_cell
from bncbench.bundles import BundleError, ConflictError, export_bundle, import_bundles, read_bundle
from bncbench.bundles.format import ARTIFACTS, MANIFEST, METRICS, RUNS, bundle_id, file_sha256
from bncbench.core.errors import ConfigError
from bncbench.protocol.cell import semantic_hash, semantic_of_params
from bncbench.report import plan_runs, write_report
from bncbench.tracking import lease
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, metric_history, write_record

DATASETS, MODELS = ["sklearn-iris", "sklearn-wine"], ["nb_laplace", "nb_m_estimate"]
REPORT = ["experiment=smoke", f"experiment.datasets=[{','.join(DATASETS)}]", f"experiment.models=[{','.join(MODELS)}]",
          "experiment.comparisons=[{a:nb_m_estimate,b:nb_laplace}]"]


@pytest.fixture(scope="module")
def origin(tmp_path_factory, new_store, plan_cell):
    """A store with the finished smoke cells of ``DATASETS`` x ``MODELS`` and its bundle."""
    directory = tmp_path_factory.mktemp("origin")
    uri = new_store(directory / "store")
    tracking.prepare_experiment(tracking.open_store(uri), "smoke", str(directory / "artifacts"))
    for dataset in DATASETS:
        for model in MODELS:
            assert run_cell(*plan_cell(dataset, model, f"tracking_uri={uri}")).status == "finished"
    return uri, export_bundle(uri, "smoke", directory / "bundles")


def tampered(bundle: Path, where: Path, runs=None, metrics=None, files=None) -> Path:
    """A copy of ``bundle`` whose tables changed, ``runs(table)`` (tags, params, inputs as the JSON text
    stored) and ``metrics(table, id of the first run)``, and whose manifest is hashed again, as a forger
    would; a change returns the new table or changes it in place."""
    copy = Path(shutil.copytree(bundle, where))
    first = pd.read_parquet(bundle / RUNS)["run_id"].iloc[0]
    for name, change in ((RUNS, runs), (METRICS, metrics and (lambda table: metrics(table, first)))):
        if change is not None:
            table = pd.read_parquet(copy / name)
            changed = change(table)
            (table if changed is None else changed).to_parquet(copy / name, index=False)
    if files is not None:
        files(copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["files"] = {name: file_sha256(copy / name) for name in manifest["files"]}
    manifest["id"] = bundle_id(manifest["files"])
    try:
        manifest["counts"].update(runs=len(pd.read_parquet(copy / RUNS)), metrics=len(pd.read_parquet(copy / METRICS)))
    except Exception:  # a table that no longer reads: its counts stay
        pass
    (copy / MANIFEST).write_text(json.dumps(manifest))
    return copy


def rows(metrics: pd.DataFrame, run_id: str, key: str, step: int | None = None) -> pd.Series:
    chosen = (metrics["run_id"] == run_id) & (metrics["key"] == key)
    return chosen & (metrics["step"] == step) if step is not None else chosen


def set_value(key, value, step=None):
    def change(table, run_id):
        table.loc[rows(table, run_id, key, step), "value"] = value
    return change


def add_row(key, step, value):
    def change(table, run_id):
        row = {"run_id": run_id, "key": key, "value": value, "step": step, "timestamp": 1}
        return pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    return change


def drop_rows(*keys, step=None):
    def change(table, run_id):
        dropped = np.logical_or.reduce([rows(table, run_id, key, step) for key in keys])
        return table[~dropped]
    return change


def edit_json(column, edit):
    """A change of the first run's ``column`` (tags, params or inputs), parsed and written back as JSON."""
    def runs(table):
        value = json.loads(table.loc[0, column])
        table.loc[0, column] = json.dumps(edit(value))
    return runs


def forged_means(table, run_id):
    """Every fold and the mean of zero_one_loss and errors set to 0: consistent, hence undetectable."""
    for key in ("zero_one_loss", "errors"):
        table.loc[rows(table, run_id, f"fold/{key}") | rows(table, run_id, key), "value"] = 0.0


def fold_and_mean(key, step, value):
    """Fold ``step`` of ``key`` set to ``value`` and its mean made the folds' mean again (NaN left out)."""
    def change(table, run_id):
        table.loc[rows(table, run_id, f"fold/{key}", step), "value"] = value
        table.loc[rows(table, run_id, key), "value"] = table.loc[rows(table, run_id, f"fold/{key}"), "value"].mean()
    return change


def run_times(start, end):
    def change(table):
        table.loc[0, "start_time"], table.loc[0, "end_time"] = start, end
    return change


def cv_1x3_consistent(table):
    """Params of a 1x3 CV with the cfg_hash of those params (the folds stay ten)."""
    params = json.loads(table.loc[0, "params"])
    params.update({"cv.folds": "3", "cv.repetitions": "1"})
    tags = json.loads(table.loc[0, "tags"])
    tags["cfg_hash"] = semantic_hash(semantic_of_params(params))
    table.loc[0, "params"], table.loc[0, "tags"] = json.dumps(params), json.dumps(tags)


INCONSISTENT = {  # name: (runs change, metrics change, message)
    "a mean set to 0.0, its folds unchanged": (None, set_value("zero_one_loss", 0.0), "metric zero_one_loss is 0.0, the mean of its folds"),
    "a fold changed, its mean unchanged": (None, set_value("fold/rmse", 0.9, step=3), "metric rmse is .*, the mean of its folds fold/rmse is"),
    "params of a 1x3 CV with the 5x2 cfg_hash": (
        edit_json("params", lambda p: {**p, "cv.folds": "3", "cv.repetitions": "1"}), None,
        "tag cfg_hash '[0-9a-f]+' is not the hash of its params"),
    "params of a 1x3 CV with their own hash, ten folds": (cv_1x3_consistent, None, r"fold/\w+ has 10 values at steps 0..9, not one at each fold 0..2"),
    "a second value of a fold at one step": (None, add_row("fold/rmse", 3, 0.5), "metric fold/rmse has 2 values at step 3"),
    "a mean logged again at another step": (None, add_row("rmse", 1, 0.5), r"metric rmse \(a mean\) is logged 2 times"),
    "a fold missing": (None, drop_rows("fold/log_loss", step=9), "metric fold/log_loss has 9 values"),
    "a fold outside the cross-validation": (None, add_row("fold/test_rows", 10, 75.0), "metric fold/test_rows has 11 values at steps 0..10"),
    "a mean without folds": (None, add_row("made_up", 0, 0.5), "metric made_up is a mean without its folds"),
    "folds without a mean": (None, drop_rows("errors"), "metric fold/errors has no mean"),
    "a loss missing": (None, drop_rows("log_loss", "fold/log_loss"), "has no folds of log_loss"),
    "a fold of an added loss missing": (None, drop_rows("fold/rmse_all_classes", step=4), "metric fold/rmse_all_classes has 9 values"),
    "a cfg_hash changed": (edit_json("tags", lambda t: {**t, "cfg_hash": "0123456789abcdef"}), None, "tag cfg_hash '0123456789abcdef' is not the hash"),
    "an estimator param added": (
        edit_json("params", lambda p: {**p, "model.estimator_params": "{}", "model.estimator_params.alpha": "2.0"}), None,
        "is not the hash of its params|both a value and a group"),
    "a data_digest its inputs did not read": (
        edit_json("tags", lambda t: {**t, "data_digest": "f" * 32}), None, "inputs read the data '[0-9a-f]+', its tag data_digest says 'f+'"),
    "no metrics at all": (None, lambda table, run_id: table[table["run_id"] != run_id], "has no metrics"),
    # numbers the runner could never have logged (issue 42), each with its mean consistent
    "a 0-1 loss above 1": (None, fold_and_mean("zero_one_loss", 2, 1.5), r"metric fold/zero_one_loss is 1.5 at fold 2, outside its domain \[0, 1\]"),
    "a negative RMSE": (None, fold_and_mean("rmse", 0, -0.5), r"metric fold/rmse is -0.5 at fold 0, outside its domain \[0, 1\]"),
    "a log loss above the clip": (None, fold_and_mean("log_loss", 1, 40.0), r"metric fold/log_loss is 40.0 at fold 1, outside its domain \[0, 34.5"),
    "an infinite log loss": (None, set_value("log_loss", np.inf), "metric log_loss is inf, outside its domain"),
    "a NaN fold beside the mean of the other nine": (None, fold_and_mean("log_loss", 4, np.nan), "metric fold/log_loss is nan at fold 4, outside its domain"),
    "a negative fit time": (None, fold_and_mean("fit_seconds", 3, -1.0), r"metric (fold/)?fit_seconds is -[.\d]+( at fold 3)?, outside its domain \[0, inf\]"),
    "a fold's rate changed, its errors not": (None, fold_and_mean("zero_one_loss", 0, 0.5), r"fold/zero_one_loss is 0.5, but fold/errors / fold/test_rows is \d+ / \d+ at fold 0"),
    "more errors than test rows": (None, fold_and_mean("errors", 0, 1000.0), "fold/errors 1000 exceeds fold/test_rows"),
    "a fraction of a row": (None, fold_and_mean("test_rows", 5, 74.5), "metric fold/test_rows is 74.5 at fold 5, not a whole number of rows"),
    "clipped rows that are not the clipped loss": (None, fold_and_mean("zero_probability_rows", 6, 3.0), "fold/clipped_log_loss is 0.0, but 3 zero-probability rows of \\d+ clip"),
    "an end before the start": (run_times(2_000_000, 1_000_000), None, "end_time 1000000 is before its start_time 2000000"),
}


def test_a_run_logged_before_a_loss_was_added_is_complete_without_it(origin, tmp_path, new_store):
    """Runs logged before the all-class RMSE (issue 41), as the committed bundles' are, import as finished."""
    uri, bundle = origin
    older = tampered(bundle, tmp_path / "older", metrics=lambda table, run_id: table[
        ~table["key"].isin(["rmse_all_classes", "fold/rmse_all_classes"])])
    store = new_store(tmp_path / "store")
    assert len(import_bundles(store, [older]).imported) == len(DATASETS) * len(MODELS)


@pytest.mark.parametrize("case", INCONSISTENT)
def test_an_inconsistent_bundle_is_refused_whole_naming_run_field_and_reason(origin, tmp_path, new_store, case):
    uri, bundle = origin
    runs_change, metrics_change, message = INCONSISTENT[case]
    bad = tampered(bundle, tmp_path / "bad", runs=runs_change, metrics=metrics_change)
    run_id = pd.read_parquet(bundle / RUNS)["run_id"].iloc[0]
    store = new_store(tmp_path / "store")
    before = file_sha256(Path(store.removeprefix("sqlite:///")))
    with pytest.raises(BundleError, match=message) as refused:
        import_bundles(store, [bundle, bad])  # the good bundle is not imported either
    said = str(refused.value)
    assert "Nothing was imported" in said and "\n" not in said
    assert f"run {run_id}" in said
    assert file_sha256(Path(store.removeprefix("sqlite:///"))) == before


def test_a_consistently_forged_run_is_not_caught_as_documented(origin, tmp_path, new_store):
    """The checksums and the checks find careless edits, not a forger (docs/bundles.md): folds and mean
    changed together import."""
    uri, bundle = origin
    forged = tampered(bundle, tmp_path / "forged", metrics=forged_means)
    assert len(import_bundles(new_store(tmp_path / "store"), [forged]).imported) == 4


def json_text_list(table):
    table.loc[0, "tags"] = json.dumps(["dataset", "model"])


MALFORMED = {  # name: (runs change, metrics change, files change, message)
    "tags that are not JSON": (lambda t: t.__setitem__("tags", ["{not json"] * len(t)), None, None, "tags is not JSON"),
    "tags a JSON list": (json_text_list, None, None, "tags is list, not dict"),
    "a param not text": (edit_json("params", lambda p: {**p, "cv.folds": 2}), None, None, "params 'cv.folds' is 2, not text"),
    "a tag not text": (edit_json("tags", lambda t: {**t, "model": None}), None, None, "tags 'model' is None, not text"),
    "metric values as text": (None, lambda t, _: t.assign(value=t["value"].astype(str)), None, "metrics column value holds '.*' \\(str\\), not a number"),
    "a step that is not whole": (None, lambda t, _: t.assign(step=t["step"] + 0.5), None, "metrics column step holds 0.5 .*not an integer"),
    "a run id that is a number": (lambda t: t.assign(run_id=range(len(t))), None, None, "runs column run_id holds 0 \\(int\\), not text"),
    "a start time as text": (lambda t: t.assign(start_time="yesterday"), None, None, "runs column start_time holds 'yesterday'"),
    "inputs of another shape": (edit_json("inputs", lambda i: [{"dataset": "iris"}]), None, None, "not a dataset input"),
    "inputs not a list": (edit_json("inputs", lambda i: {"dataset": {}}), None, None, "inputs is dict, not list"),
    "a metrics column missing": (None, lambda t, _: t.drop(columns="timestamp"), None, "metrics.parquet has columns"),
    "runs that are not parquet": (None, None, lambda b: (b / RUNS).write_bytes(b"PAR1 not really"), "runs.parquet does not read as parquet"),
    "artifacts of another type": (None, None, lambda b: pd.DataFrame({"run_id": ["x"], "name": ["config.yaml"], "content": [5]}).to_parquet(b / ARTIFACTS), "artifacts.parquet holds a row"),
    "params without the model": (edit_json("params", lambda p: {k: v for k, v in p.items() if not k.startswith("model.")}), None, None, "params are not a cell's config: no params model"),
    "a param both a value and a group": (edit_json("params", lambda p: {**p, "model.k.x": "1"}), None, None, "is inside 'k', which is a value"),
    "estimator params that are a number": (edit_json("params", lambda p: {**p, "model.estimator_params": "5"}), None, None, "do not form a model's config"),
    # what MLflow's store would refuse or cut, found before the first run is written (issue 42)
    "an artifact name with a NUL byte": (None, None, lambda b: artifact_named(b, "config\x00.yaml"), "a name that is not one of the artifacts a bundle carries"),
    "an artifact not carried": (None, None, lambda b: artifact_named(b, "model.pkl"), "a name that is not one of the artifacts"),
    "a metric key longer than MLflow takes": (None, add_row("fold/" + "x" * 300, 0, 0.5), None, r"metric name 'fold/x+'\.\.\. is 305 characters long, over the 250 MLflow takes"),
    "a param longer than MLflow keeps": (edit_json("params", lambda p: {**p, "note": "x" * 7000}), None, None, "params 'note' is 7000 characters long, over the 6000 MLflow keeps"),
    "a tag name MLflow refuses": (edit_json("tags", lambda t: {**t, "../up": "1"}), None, None, r"name '\.\./up' is not one MLflow takes"),
    "a manifest that is a FIFO": (None, None, None, "its manifest.json is not a regular file"),
    "a manifest nested too deep": (None, None, None, "nested deeper than a manifest is"),
    "a manifest that is a list": (None, None, None, "not the manifest of a bncbench bundle"),
    "a manifest with counts a list": (None, None, None, "lacks or mistypes counts"),
}


def artifact_named(bundle: Path, name: str) -> None:
    """The bundle's artifacts table with one artifact ``name`` of its first run."""
    first = pd.read_parquet(bundle / RUNS)["run_id"].iloc[0]
    pd.DataFrame({"run_id": [first], "name": [name], "content": [b"x"]}).to_parquet(bundle / ARTIFACTS)
    manifest = json.loads((bundle / MANIFEST).read_text())
    manifest["files"][ARTIFACTS] = ""  # listed, so that tampered() hashes it
    (bundle / MANIFEST).write_text(json.dumps(manifest))


def malformed(bundle: Path, where: Path, case: str) -> Path:
    runs, metrics, files, _ = MALFORMED[case]
    bad = tampered(bundle, where, runs=runs, metrics=metrics, files=files)
    if case == "a manifest that is a list":
        (bad / MANIFEST).write_text("[1, 2]")
    if case == "a manifest that is a FIFO":  # read, it would be waited on without end
        (bad / MANIFEST).unlink()
        os.mkfifo(bad / MANIFEST)
    if case == "a manifest nested too deep":
        (bad / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    if case == "a manifest with counts a list":
        manifest = json.loads((bad / MANIFEST).read_text())
        (bad / MANIFEST).write_text(json.dumps({**manifest, "counts": [4]}))
    return bad


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_bundle_is_one_line_from_the_command(origin, tmp_path, capsys, case):
    uri, bundle = origin
    bad = malformed(bundle, tmp_path / "bad", case)
    with pytest.raises(BundleError, match=MALFORMED[case][3]):
        read_bundle(bad)
    store = tmp_path / "store" / "mlflow.db"
    assert main(["import", str(bad), f"tracking_uri=sqlite:///{store}"]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("bncbench: error: bundle ") and "is refused" in said and "\n" not in said
    assert "Traceback" not in said and not store.exists()


def test_a_manifest_that_does_not_parse_is_one_line_from_the_python_command(origin, tmp_path, run_cli):
    """Through ``python -m bncbench`` in its own process: no traceback reaches the user."""
    uri, bundle = origin
    bad = Path(shutil.copytree(bundle, tmp_path / "bad"))
    (bad / MANIFEST).write_text('{"format": "bncbench-bundle", ')
    done = run_cli("import", str(bad), f"tracking_uri=sqlite:///{tmp_path}/s.db", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if "error" in line] == [done.stderr.strip().splitlines()[-1]]
    assert "manifest.json does not parse" in done.stderr


def test_the_committed_bundles_pass_verification():
    """Bundles committed before verification read back (the m-estimate runs logged before its
    ``backoff`` default changed among them: ``Estimator.earlier_defaults``)."""
    for pattern in ("kdb/bundles/*", "hdp_vs_m/bundles/hdp_vs_m-2a08fae8d95dfc06"):
        for path in sorted(Path(__file__).parents[1].glob(f"reports/{pattern}")):
            assert len(read_bundle(path).runs) > 0


# Conflicts: runs of one cell with other numbers


def other_numbers(bundle: Path, where: Path) -> Path:
    """The bundle with every run's rmse folds and mean moved consistently: a bundle of the same cells with
    other numbers."""
    def change(table, _):
        moved = table["key"].isin(["rmse", "fold/rmse"])
        table.loc[moved, "value"] = table.loc[moved, "value"] + 0.001
    return tampered(bundle, where, metrics=change)


def db_sha(uri: str) -> str:
    return file_sha256(Path(uri.removeprefix("sqlite:///")))


def read_results(uri: str, tmp_path: Path, name: str) -> pd.DataFrame:
    plan = compose(REPORT).plan
    place = write_report(plan, plan_runs(plan, uri), tmp_path / name)
    return pd.read_csv(place / "results.csv")


@pytest.mark.parametrize("order", ["original first", "other first"])
def test_a_bundle_with_other_numbers_than_the_store_is_refused_in_either_order(origin, tmp_path, new_store, order):
    uri, bundle = origin
    other = other_numbers(bundle, tmp_path / "other")
    first, second = (bundle, other) if order == "original first" else (other, bundle)
    store = new_store(tmp_path / "store")
    assert len(import_bundles(store, [first]).imported) == 4
    before = db_sha(store)
    with pytest.raises(ConflictError, match="disagree on 4 cells") as refused:
        import_bundles(store, [second])
    said = str(refused.value)
    assert f"bundle {read_bundle(second).id}" in said and f"from bundle {read_bundle(first).id}" in said
    assert "store run" in said and "Nothing was imported" in said and "--keep" in said
    assert db_sha(store) == before


def test_two_bundles_given_together_that_disagree_are_refused(origin, tmp_path):
    uri, bundle = origin
    other = other_numbers(bundle, tmp_path / "other")
    absent = tmp_path / "new" / "mlflow.db"
    with pytest.raises(ConflictError, match="the bundles given disagree on 4 cells") as refused:
        import_bundles(f"sqlite:///{absent}", [bundle, other])
    assert read_bundle(bundle).id in str(refused.value) and read_bundle(other).id in str(refused.value)
    assert not absent.parent.exists()


def test_a_conflict_with_a_run_the_store_computed_names_it(origin, tmp_path):
    uri, bundle = origin
    store = f"sqlite:///{tmp_path / 'copy.db'}"
    shutil.copyfile(uri.removeprefix("sqlite:///"), tmp_path / "copy.db")
    client = tracking.open_store(store)
    ids = {run.info.run_id for run in tracking.cell_runs(client, tracking.experiment_id(client, "smoke"))}
    with pytest.raises(ConflictError) as refused:
        import_bundles(store, [other_numbers(bundle, tmp_path / "other")])
    assert any(f"store run {run_id})" in str(refused.value) for run_id in ids)  # computed here: no bundle


def test_keep_store_or_bundle_chooses_and_the_report_reads_the_one_kept(origin, tmp_path, new_store):
    uri, bundle = origin
    other = other_numbers(bundle, tmp_path / "other")
    store = new_store(tmp_path / "store")
    import_bundles(store, [bundle])
    original = read_results(store, tmp_path, "original")
    kept = import_bundles(store, [other], keep="store")
    assert (kept.imported, len(kept.kept_store)) == ([], 4) and "--keep store" in "\n".join(kept.lines())
    pd.testing.assert_frame_equal(read_results(store, tmp_path, "kept"), original)
    replaced = import_bundles(store, [other], keep="bundle")
    assert len(replaced.imported) == 4 and len(replaced.replaced) == 4
    results = read_results(store, tmp_path, "replaced")
    assert np.allclose(results["rmse"], original["rmse"] + 0.001)
    client = tracking.open_store(store)
    finished = [run for run in tracking.cell_runs(client, tracking.experiment_id(client, "smoke"))
                if run.info.status == "FINISHED"]
    assert len(finished) == 4  # the store's runs were deleted, not left beside
    assert import_bundles(store, [other]).already_there and import_bundles(store, [bundle], keep="store").kept_store


def test_the_import_command_refuses_a_conflict_in_one_line_and_takes_keep(origin, tmp_path, capsys):
    uri, bundle = origin
    other = other_numbers(bundle, tmp_path / "other")
    store = f"tracking_uri=sqlite:///{tmp_path / 'store.db'}"
    assert main(["import", str(bundle), store]) == 0
    capsys.readouterr()
    assert main(["import", str(other), store]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("bncbench: error: the bundles and the store") and "\n" not in said
    assert main(["import", str(other), "--keep", "bundle", store]) == 0
    assert "4 runs of the store deleted" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["import", str(other), "--keep", "newest", store])


def test_runs_that_differ_in_their_timings_alone_are_already_there(origin, tmp_path, new_store):
    uri, bundle = origin
    def slower(table, _):
        timed = table["key"].str.contains("seconds")
        table.loc[timed, "value"] = table.loc[timed, "value"] * 2
    store = new_store(tmp_path / "store")
    import_bundles(store, [bundle])
    again = import_bundles(store, [tampered(bundle, tmp_path / "slower", metrics=slower)])
    assert (again.imported, len(again.already_there)) == ([], 4)


def second_finished_run(uri: str, model: str, change: dict) -> str:
    """A second FINISHED run of the sklearn-iris cell of ``model``, a copy of the first with the metric
    values of ``change``: a store that somehow holds two (written before leases, or by hand)."""
    client = tracking.open_store(uri)
    experiment = tracking.experiment_id(client, "smoke")
    (source,) = [run for run in tracking.cell_runs(client, experiment) if run.info.run_name == f"sklearn-iris/{model}"]
    record = CellRecord.of_run(source)
    history = [(key, change.get(key, value), step, at) for key, value, step, at in metric_history(client, record)]
    run_id = tracking.start_run(client, experiment, record.name, record.tags)
    write_record(client, run_id, replace(record, end_time=None, history=history))
    return run_id


def test_the_report_refuses_two_runs_of_one_cell_with_other_numbers(origin, tmp_path):
    uri, _ = origin
    store = f"sqlite:///{tmp_path / 'copy.db'}"
    shutil.copyfile(uri.removeprefix("sqlite:///"), tmp_path / "copy.db")
    second_finished_run(store, "nb_laplace", {"fit_seconds": 99.0})  # a timing alone: the same numbers
    assert len(read_results(store, tmp_path, "same")) == 4
    other = second_finished_run(store, "nb_m_estimate", {"rmse": 0.5})
    with pytest.raises(ConfigError, match=f"cell sklearn-iris/nb_m_estimate has two finished runs .* run {other}"):
        read_results(store, tmp_path, "two")


# Leases


def held_by_a_live_sweep(uri: str, bundle: Path) -> str:
    """A RUNNING run of the bundle's first cell leased to a live process (this one's parent), as a sweep's."""
    client = tracking.open_store(uri)
    experiment = tracking.prepare_experiment(client, "smoke", None)
    run = read_bundle(bundle).runs.iloc[0]
    tags = {key: run.tags[key] for key in tag.CELL} | {lease.OWNER_TAG: lease.owner(os.getppid()),
                                                       lease.HEARTBEAT_TAG: f"{time.time():.0f}"}
    return tracking.start_run(client, experiment, run.run_name, tags)


def test_an_import_leaves_a_cell_a_live_sweep_holds_and_marks_a_dead_ones_killed(origin, tmp_path, new_store):
    uri, bundle = origin
    store = new_store(tmp_path / "store")
    live = held_by_a_live_sweep(store, bundle)
    summary = import_bundles(store, [bundle])
    assert len(summary.imported) == 3 and summary.running_elsewhere == [f"smoke/{read_bundle(bundle).runs.iloc[0].run_name}"]
    assert "a sweep is running their cells now" in "\n".join(summary.lines())
    client = tracking.open_store(store)
    assert client.get_run(live).info.status == "RUNNING"
    tracking.set_tags(client, live, {lease.OWNER_TAG: "gone/0:1:1", lease.HEARTBEAT_TAG: "0"})  # another host, long silent
    assert len(import_bundles(store, [bundle]).imported) == 1
    assert client.get_run(live).info.status == "KILLED"


def test_an_imported_run_holds_its_cell_as_a_sweep_does(origin, tmp_path, new_store, plan_cell):
    """While an import writes a cell, the cell is leased: a sweep of it waits its turn, and finds it done."""
    uri, bundle = origin
    store = new_store(tmp_path / "store")
    client = tracking.open_store(store)
    experiment = tracking.prepare_experiment(client, "smoke", None)
    run = read_bundle(bundle).runs.iloc[0]
    claimed = lease.claim_cell(client, experiment, run.run_name, dict(run.tags), run.tags["data_digest"])
    assert claimed.status == "claimed"
    dataset, model = run.tags["dataset"], run.tags["model"]
    assert run_cell(*plan_cell(dataset, model, f"tracking_uri={store}")).status == "running elsewhere"


def test_a_sweep_and_an_import_at_once_give_each_cell_one_finished_run(origin, tmp_path, new_store, start_cli):
    uri, bundle = origin
    store = new_store(tmp_path / "store")
    sweep = start_cli(*REPORT, f"tracking_uri={store}", "executor.n_jobs=1", "reuse_runs=false", cwd=tmp_path,
                      stderr="stdout")
    imported = import_bundles(store, [bundle])
    ended = sweep.wait(timeout=600)
    output = ended.stdout
    assert ended.returncode == 0, output
    with sqlite3.connect(store.removeprefix("sqlite:///")) as connection:
        finished = connection.execute(
            "select name, count(*) from runs where status = 'FINISHED' and lifecycle_stage = 'active' group by name"
        ).fetchall()
    assert sorted(count for _, count in finished) == [1] * 4, (finished, imported, output)
    again = import_bundles(store, [bundle])  # the sweep's runs have the bundle's numbers
    assert again.imported == [] and len(again.already_there) == 4


def test_an_import_links_a_dataset_a_sweep_inserted_meanwhile(origin, tmp_path, new_store, monkeypatch):
    """The race the test above met in CI: MLflow looked the dataset up, the sweep inserted it, and the import's
    insert failed on the table's unique constraint; the import tries again, as a cell does."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    _, bundle = origin
    store = new_store(tmp_path / "store")
    log_inputs, calls = MlflowClient.log_inputs, []

    def raced_once(self, run_id, datasets=None):
        calls.append(run_id)
        if len(calls) == 1:
            raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                                  "datasets.name, datasets.digest")
        return log_inputs(self, run_id, datasets=datasets)

    monkeypatch.setattr(MlflowClient, "log_inputs", raced_once)
    imported = import_bundles(store, [bundle])
    assert len(imported.imported) == 4 and calls[0] == calls[1]


# The report names its bundles


def test_the_report_lists_the_bundles_its_runs_came_from(origin, tmp_path, new_store):
    uri, bundle = origin
    store = new_store(tmp_path / "store")
    import_bundles(store, [bundle])
    plan = compose(REPORT).plan
    readme = write_report(plan, plan_runs(plan, store), tmp_path / "imported")
    assert f"- bundles: {read_bundle(bundle).id}\n" in (readme / "README.md").read_text()
    computed = write_report(plan, plan_runs(plan, uri), tmp_path / "computed")
    assert "- bundles:" not in (computed / "README.md").read_text()
    other = new_store(tmp_path / "other-store")
    import_bundles(other, [other_numbers(bundle, tmp_path / "other")])
    changed = write_report(plan, plan_runs(plan, other), tmp_path / "changed")
    assert read_bundle(tmp_path / "other").id in (changed / "README.md").read_text()  # a change shows in the diff


def test_a_report_of_bundles_is_the_report_of_their_import_without_a_store(origin, tmp_path, new_store):
    """``bncbench report --bundles`` reads the runs an import would write, without MLflow: every file the
    same, byte for byte, but the README's sentence on what its command reads."""
    _, bundle = origin
    store = new_store(tmp_path / "store")
    import_bundles(store, [bundle])
    plan = compose(REPORT).plan
    imported = write_report(plan, plan_runs(plan, store), tmp_path / "imported")
    folder = str(bundle.parent)  # a folder of bundles: each of its bundles (those of other experiments passed by)
    assert main(["report", *REPORT, f"report_dir={tmp_path / 'read'}", "--bundles", folder]) == 0
    read = tmp_path / "read" / "smoke"
    files = sorted(path.relative_to(imported) for path in imported.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(read) for path in read.rglob("*") if path.is_file())
    assert len(files) >= 9  # the tables and figures
    for name in files:
        if name.name != "README.md":
            assert (imported / name).read_bytes() == (read / name).read_bytes(), name
    store_readme, bundles_readme = ((place / "README.md").read_text().splitlines() for place in (imported, read))
    (differ,) = [i for i, (a, b) in enumerate(zip(store_readme, bundles_readme)) if a != b]
    assert store_readme[differ].replace("(reads the MLflow store of your tracking_uri,", "(reads the bundles it names,") \
        .replace("` (reads", f" --bundles {folder}` (reads") == bundles_readme[differ]
    assert f"- bundles: {read_bundle(bundle).id}" in bundles_readme


def test_a_report_of_bundles_refuses_what_an_import_refuses(origin, tmp_path, capsys):
    _, bundle = origin
    report = ["report", *REPORT, f"report_dir={tmp_path / 'read'}", "--bundles"]
    assert main([*report, str(bundle), str(other_numbers(bundle, tmp_path / "other"))]) == 2
    assert "disagree on 4 cells" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([*report, str(tmp_path / "empty")]) == 2
    assert f"{tmp_path / 'empty'}: neither a bundle nor a folder of bundles" in capsys.readouterr().err
    cut = Path(shutil.copytree(bundle, tmp_path / "cut"))
    (cut / RUNS).write_bytes((cut / RUNS).read_bytes()[:100])
    assert main([*report, str(cut)]) == 2
    assert "runs.parquet differs from the file exported" in capsys.readouterr().err
    assert not (tmp_path / "read").exists()


def test_an_artifact_location_the_existing_experiment_cannot_take_refuses_the_import(
    origin, tmp_path, new_store, capsys
):
    _, bundle = origin
    uri = new_store(tmp_path / "store")
    client = tracking.open_store(uri)
    tracking.prepare_experiment(client, "smoke", str(tmp_path / "first"))
    assert main(["import", str(bundle), f"tracking_uri={uri}", f"artifact_location={tmp_path / 'second'}"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"bncbench: error: artifact_location={tmp_path / 'second'}: the MLflow experiment 'smoke'")
    assert client.search_runs([client.get_experiment_by_name("smoke").experiment_id]) == []
    assert main(["import", str(bundle), f"tracking_uri={uri}", f"artifact_location={tmp_path / 'first'}"]) == 0


def test_a_report_of_bundles_says_which_runs_it_passed_over_as_repeats(origin, tmp_path):
    """Two bundles of the same cells with the same numbers but other timings: the first named is read, as an import
    reads it, and the README says that the other's runs were passed over (their times are not those shown)."""
    _, bundle = origin
    def slower(table, _):
        timed = table["key"].str.contains("seconds")
        table.loc[timed, "value"] = table.loc[timed, "value"] * 2
    later = tampered(bundle, tmp_path / "slower", metrics=slower)
    assert main(["report", *REPORT, f"report_dir={tmp_path / 'both'}", "--bundles", str(bundle), str(later)]) == 0
    assert main(["report", *REPORT, f"report_dir={tmp_path / 'one'}", "--bundles", str(bundle)]) == 0
    both, one = ((tmp_path / place / "smoke" / "README.md").read_text() for place in ("both", "one"))
    passed = f"Not read: 4 runs of cells that a bundle read before holds with the same numbers (4 of {read_bundle(later).id};"
    assert passed in both and "Not read" not in one
    for name in ("results.csv", "resources.csv"):  # the first bundle's runs, their timings included
        assert (tmp_path / "both" / "smoke" / name).read_bytes() == (tmp_path / "one" / "smoke" / name).read_bytes()
