"""The report's compute layer from plain arguments, its one search of the store, and the check of
its settings without data."""

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.core.errors import ConfigError
from bncbench.report import ReportOptions, compute_report, read_runs, write_files

TOY = {"metrics": ("zero_one_loss", "rmse"), "comparisons": ({"a": "a", "b": "b"},)}


def test_compute_report_from_plain_arguments(store):
    uri, run_ids = store
    report = compute_report(read_runs(uri, "toy"), ReportOptions(**TOY, datasets=("d0", "d1", "d2", "d3")))
    assert list(report.results["run_id"]) == [run_ids[cell] for cell in sorted(run_ids)]
    assert [(w.metric, w.wins, w.draws, w.losses, w.missing) for w in report.wdls] == [
        ("zero_one_loss", 1, 1, 1, ("d3",)),
        ("rmse", 1, 1, 1, ("d3",)),
    ]
    assert list(report.tests["dataset"]) == ["d0", "d1", "d2"] * 2
    assert report.rankings == [] and report.unranked[0].startswith("zero_one_loss: the Friedman test ranks")
    assert list(report.scatters) == [("a", "b", "zero_one_loss"), ("a", "b", "rmse")]
    assert [c.kind for c in report.curves] == ["iterations", "tying"]
    assert all(frame.empty for c in report.curves for frame in c.by_metric.values())
    assert report.settings["datasets"] == {"4": 7} and report.left_out is None


def test_the_report_searches_the_runs_once_and_reads_fold_scores_in_bulk(store, monkeypatch):
    uri, _ = store
    calls = {"search_runs": 0, "get_metric_history": 0}

    def counted(name):
        method = getattr(MlflowClient, name)

        def call(self, *args, **kwargs):
            calls[name] += 1
            return method(self, *args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(MlflowClient, name, counted(name))
    report = compute_report(read_runs(uri, "toy"), ReportOptions(**TOY))
    assert calls == {"search_runs": 1, "get_metric_history": 0}
    assert len(report.tests) == 6  # the fold scores were read all the same


def test_write_files_states_the_report_options_by_default(store, tmp_path):
    uri, _ = store
    out = write_files(compute_report(read_runs(uri, "toy"), ReportOptions(**TOY, alpha=0.1)), tmp_path)
    readme = (out / "README.md").read_text()
    assert (
        "Report settings of this version: `report.draws=exclude`, `report.round=null`, "
        "`report.alpha=0.1`, `report.published=[]`, `report.reference_tying=level`. 7 finished cells"
    ) in readme
    assert pd.read_csv(out / "wdl.csv")["significant"].tolist() == [False, False]
    assert "**Cells without a finished run: 1 of the experiment's 8**, by dataset: d3 (1);" in readme
    # the sign tests' rows (9 columns), not the Bayesian section's (7)
    left_out = [line for line in readme.splitlines() if line.startswith("| a vs b |") and line.count("|") == 10]
    assert len(left_out) == 2 and all(line.endswith("| 1: d3 |") for line in left_out)


def test_valid_report_settings_pass():
    ReportOptions(("rmse",), ({"a": "x", "b": "y"},), draws="split", round=3, alpha=0.01,
                  published=("hdp_table1",)).check(["rmse", "log_loss"])


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"comparisons": [{"a": "x"}]}, r"a comparison must be a mapping \{a: model, b: model\}"),
        ({"comparisons": [{"a": "x", "b": "x"}]}, "compares a model with itself"),
        ({"metrics": ["auc"]}, r"experiment.metrics names \['auc'\]; the metrics of every run are rmse"),
        ({"metrics": []}, "experiment.metrics is empty, so the report would compare nothing; name at least one of rmse"),
        ({"draws": "half"}, "report.draws must be one of exclude, split, got 'half'"),
        ({"round": -1}, "report.round must be null"),
        ({"alpha": "0.05"}, r"report.alpha must be in \(0, 1\), got '0.05'"),
        ({"alpha": 1.5}, r"report.alpha must be in \(0, 1\)"),
        ({"published": ["hdp_table9"]}, "unknown published table"),
        ({"reference_tying": 3}, "report.reference_tying must be one of none, single, level, same_parent, got 3."),
        ({"reference_tying": "bogus"}, "report.reference_tying must be one of none, single, level, same_parent"),
    ],
)
def test_invalid_report_settings_are_named_without_data(settings, match):
    arguments = {"comparisons": [{"a": "x", "b": "y"}], "metrics": ["rmse"], **settings}
    with pytest.raises(ConfigError, match=match):
        ReportOptions.of_settings(arguments.pop("metrics"), arguments.pop("comparisons"), arguments).check(
            ["rmse", "log_loss"])
