"""Notes on log-loss comparisons dominated by clipped rows, from results and in a written report."""

import pandas as pd
import pytest

from bncbench import tracking
from bncbench.tracking.record import CellRecord, fold_history, write_record
from bncbench.report import plan_runs, write_report
from bncbench.report.clipping import clip_dominated, clipping_note

# Mean log_loss and clipped_log_loss per dataset d0..d3 (None: not logged, a run older than the metric).
# m: clipped 90% on d0, 60% on d1, 25% on d2, 50% (not more) on d3; l: 80% on d2 only; old: no clipped part.
MEANS = {
    "m": {"log_loss": [1.0, 0.5, 0.4, 0.4], "clipped_log_loss": [0.9, 0.3, 0.1, 0.2]},
    "l": {"log_loss": [0.2, 0.3, 0.5, 0.3], "clipped_log_loss": [0.0, 0.0, 0.4, 0.0]},
    "old": {"log_loss": [0.3, 0.3, 0.3, 0.3], "clipped_log_loss": [None] * 4},
}


def test_datasets_where_the_clip_is_more_than_half_of_either_side(make_results):
    results = make_results(MEANS)
    dominated = clip_dominated(results, "m", "l")
    assert dominated[["dataset", "model"]].values.tolist() == [["d0", "m"], ["d1", "m"], ["d2", "l"]]
    assert dominated["share"].tolist() == pytest.approx([0.9, 0.6, 0.8])
    assert clip_dominated(results, "m", "l", datasets=["d1", "d3"])["dataset"].tolist() == ["d1"]
    assert clip_dominated(results, "old", "l")["model"].tolist() == ["l"]  # NaN: no note on old's side
    assert clip_dominated(results.drop(columns="clipped_log_loss"), "m", "l").empty


def test_the_note_names_the_models_and_datasets(make_results):
    note = clipping_note("m", "l", clip_dominated(make_results(MEANS), "m", "l"))
    assert note == (
        "- m vs l, log_loss: on 3 datasets more than 50% of the mean log_loss is clipped rows (true "
        "class given probability below 1e-15): m on d0, d1; l on d2. There this comparison measures the 1e-15 "
        "clip (`clipped_log_loss` in results.csv)."
    )
    assert clipping_note("m", "l", clip_dominated(make_results(MEANS), "m", "l", datasets=["d3"])) == ""


def _log(client, experiment_id, dataset, model, means):
    tags = {"dataset": dataset, "model": model}
    run_id = tracking.start_run(client, experiment_id, f"{dataset}/{model}", tags)
    folds = {name: dict.fromkeys(range(10), value) for name, value in means.items() if value is not None}
    record = CellRecord(run_id, f"{dataset}/{model}", "FINISHED", None, None, tags, {}, history=fold_history(folds, 0))
    write_record(client, run_id, record)


def test_the_report_notes_clipped_log_loss_comparisons_and_still_reports_old_runs(tmp_path, new_store, report_plan):
    uri = new_store(tmp_path / "store")
    client = tracking.open_store(uri)
    experiment_id = tracking.prepare_experiment(client, "clip", str(tmp_path / "artifacts"))
    for model, metrics in MEANS.items():
        for i, values in enumerate(zip(*metrics.values(), strict=True)):
            means = dict(zip(metrics, values, strict=True)) | {"rmse": 0.3}
            _log(client, experiment_id, f"d{i}", model, means)
    comparisons = [{"a": "m", "b": "l"}, {"a": "old", "b": "m"}, {"a": "old", "b": "l"}]
    plan = report_plan("clip", comparisons=comparisons, metrics=["rmse", "log_loss"])
    out = write_report(plan, plan_runs(plan, uri), tmp_path / "reports")
    readme, wdl = (out / "README.md").read_text(), (out / "wdl.md").read_text()
    notes = [line for line in readme.splitlines() if "measures the 1e-15 clip" in line]
    assert [note.split(":")[0] for note in notes] == [
        "- m vs l, log_loss", "- old vs m, log_loss", "- old vs l, log_loss"
    ]
    assert "): m on d0, d1; l on d2. There" in notes[0]
    # old's runs have no clipped part: they are compared and reported, their side gets no note
    assert "on 2 datasets" in notes[1] and "): m on d0, d1. There" in notes[1]
    assert "on 1 dataset more" in notes[2] and "): l on d2. There" in notes[2]
    assert all(note in wdl for note in notes)
    assert "| old vs l | log_loss | 1–2–1 |" in readme
    results = pd.read_csv(out / "results.csv")
    assert results.loc[results["model"] == "old", "clipped_log_loss"].isna().all()
