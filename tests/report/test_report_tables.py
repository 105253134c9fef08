"""W-D-L tables as Markdown, LaTeX and CSV, and the report written from a real MLflow store."""

import subprocess

import pandas as pd
import pytest

from bncbench.core.errors import ConfigError
from bncbench.app.config import compose
from bncbench.report import load_results, plan_runs, to_frame, to_latex, to_markdown, wdl_table, write_report
from bncbench.report.writer import regenerate_command


@pytest.fixture
def wdls(make_results):
    """a vs b: rmse 9-0-1 (p = 22/1024), 0-1 loss 8-0-2 (p = 0.109375); c vs b: 0-3-6 and 6-3-0
    (p = 2/64) with d9 missing for c."""
    results = make_results(
        {
            "a": {"rmse": [0.1] * 9 + [0.5], "zero_one_loss": [0.1] * 8 + [0.5] * 2},
            "b": {"rmse": [0.2] * 10, "zero_one_loss": [0.2] * 10},
            "c": {
                "rmse": [0.2] * 3 + [0.3] * 6 + [None],
                "zero_one_loss": [0.2] * 3 + [0.1] * 6 + [None],
            },
        }
    )
    comparisons = [{"a": "a", "b": "b"}, {"a": "c", "b": "b"}]
    return wdl_table(results, comparisons, ["rmse", "zero_one_loss"])


def test_markdown(wdls):
    assert to_markdown(wdls) == (
        "| comparison | rmse | zero_one_loss |\n"
        "| --- | --- | --- |\n"
        "| a vs b | **9–0–1 (p = 0.0215)** | 8–0–2 (p = 0.109) |\n"
        "| c vs b | **0–3–6 (p = 0.0312, 1 missing)** | **6–3–0 (p = 0.0312, 1 missing)** |\n"
    )


def test_latex_booktabs_bold_and_escaped(wdls):
    latex = to_latex(wdls, caption="W--D--L")
    assert "\\caption{W--D--L}" in latex
    assert (
        "\\begin{tabular}{lrr}\n\\toprule\n & rmse & zero\\_one\\_loss \\\\\n\\midrule\n" in latex
    )
    assert "a vs b & \\bfseries 9--0--1 (p = 0.0215) & 8--0--2 (p = 0.109) \\\\\n" in latex
    assert "\\bottomrule\n\\end{tabular}" in latex


def test_csv_frame(wdls):
    frame = to_frame(wdls)
    assert list(frame["comparison"]) == ["a vs b", "a vs b", "c vs b", "c vs b"]
    assert list(frame["metric"]) == ["rmse", "zero_one_loss"] * 2
    assert list(frame["wins"]) == [9, 8, 0, 6]
    assert list(frame["draws"]) == [0, 0, 3, 3]
    assert list(frame["losses"]) == [1, 2, 6, 0]
    assert list(frame["n"]) == [10, 10, 6, 6]
    assert frame["p_value"].tolist() == pytest.approx([22 / 1024, 0.109375, 2 / 64, 2 / 64])
    assert list(frame["significant"]) == [True, False, True, True]
    assert list(frame["missing_datasets"]) == ["", "", "d9", "d9"]


@pytest.fixture
def config(report_plan):
    """``config(uri, report_dir, report=None, **experiment)``: write_report's arguments for the toy experiment."""

    def make(uri, report_dir, report=None, **experiment):
        fields = {"name": "toy", "datasets": ["d0", "d1", "d2", "d3"], "models": ["a", "b"],
                  "comparisons": [{"a": "a", "b": "b"}], **experiment}
        plan = report_plan(**fields, **(report or {}))
        return plan, plan_runs(plan, uri), report_dir

    return make


def test_write_report_from_mlflow(store, tmp_path, config):
    uri, _ = store
    out = write_report(*config(uri, tmp_path))
    assert out == tmp_path / "toy"
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "bayesian.csv",
        "figures",
        "results.csv",
        "tests.csv",
        "wdl.csv",
        "wdl.md",
        "wdl.tex",
    ]

    results = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(results.drop(columns="total_errors"), load_results(uri, "toy"), check_dtype=False)
    # log_cell's folds have 10**6 test rows each: total errors are the mean rate times 10 folds of them
    assert (results["total_errors"] == (results["zero_one_loss"] * 10 * 10**6).round()).all()

    # d0 won, d1 lost, d2 drawn (equal but for summation order), d3 missing (b FAILED)
    wdl = pd.read_csv(out / "wdl.csv", keep_default_na=False)
    assert list(wdl["metric"]) == ["zero_one_loss", "rmse"]
    for row in wdl.to_dict("records"):
        assert (row["comparison"], row["wins"], row["draws"], row["losses"]) == ("a vs b", 1, 1, 1)
        assert (row["n"], row["p_value"], row["significant"]) == (2, 1.0, False)
        assert (row["missing"], row["missing_datasets"]) == (1, "d3")
        # differences -x, +x and 0: W = 1.5, p = 1 (the sign flips of ranks 1.5, 1.5)
        assert (row["wilcoxon_statistic"], row["wilcoxon_p_value"]) == (1.5, 1.0)

    markdown = (out / "wdl.md").read_text()
    assert markdown.startswith("# Win–draw–loss: toy\n\n")
    assert "draws left out; bold: p ≤ 0.05." in markdown
    assert markdown.endswith(
        "| comparison | zero_one_loss | rmse |\n"
        "| --- | --- | --- |\n"
        "| a vs b | 1–1–1 (p = 1, 1 missing) | 1–1–1 (p = 1, 1 missing) |\n"
    )
    latex = (out / "wdl.tex").read_text()
    assert "a vs b & 1--1--1 (p = 1, 1 missing) & 1--1--1 (p = 1, 1 missing) \\\\" in latex
    assert "bold: p $\\le$ 0.05" in latex


def test_write_report_options(store, tmp_path, config):
    uri, _ = store
    out = write_report(*config(uri, tmp_path, report={"draws": "split", "round": 0}))
    wdl = pd.read_csv(out / "wdl.csv")
    assert list(wdl["draws"]) == [1, 3]  # 0-1 loss compares whole errors, which are not rounded
    assert list(wdl["n"]) == [2, 2]
    assert "equal after rounding to 0 decimals" in (out / "wdl.md").read_text()
    assert "draws split evenly between A and B (an odd one dropped)" in (out / "wdl.md").read_text()


def test_write_report_without_comparisons(store, tmp_path, config):
    uri, _ = store
    out = write_report(*config(uri, tmp_path, comparisons=[]))
    assert pd.read_csv(out / "results.csv").shape == (7, 7)
    assert pd.read_csv(out / "wdl.csv").empty
    assert (out / "wdl.md").read_text().endswith("| comparison |\n| --- |\n")


@pytest.mark.parametrize(
    ("experiment", "match"),
    [
        ({"comparisons": [{"a": "a"}]}, r"a comparison must be a mapping \{a: model, b: model\}"),
        ({"metrics": ["auc"]}, "no metric 'auc'"),
        ({"name": "empty"}, "experiment 'empty' has no finished run"),
        ({"name": "nope"}, "no MLflow experiment 'nope'"),
    ],
)
def test_write_report_errors(store, tmp_path, experiment, match, config):
    uri, _ = store
    with pytest.raises(ConfigError, match=match):
        write_report(*config(uri, tmp_path, **experiment))


def test_write_report_says_what_is_undefined(store, tmp_path, config):
    uri, _ = store
    out = write_report(*config(uri, tmp_path))
    readme = (out / "README.md").read_text()
    assert readme.startswith(
        "# Report: toy\n\nRegenerate with `bncbench report experiment=toy`"
    )
    assert "![a vs b, rmse](figures/scatter_rmse_a_vs_b.png)" in readme
    # sections the toy does not define are left out, each listed at the end with why, none shown empty
    for title in ("Ranks of all models", "Win–loss against iterations", "Published results beside ours"):
        assert f"## {title}" not in readme
    left_out = readme[readme.index("Sections left out, which these runs do not define:") :]
    assert "- Ranks of all models: Friedman test, Nemenyi critical difference: zero_one_loss: the Friedman " in left_out
    assert "- Win–loss against iterations: against the most iterations: no two models differ only in" in left_out
    assert "- Published results beside ours: none declared in `report.published`" in left_out
    assert "## What differs from the paper" not in readme  # no published table
    # d0 and d1 differ on every fold by the same amount (significant), d2 by +-0.2 (not)
    assert "| a vs b | rmse | 1–1–1 | 1 | 1 | 1–1–1 | 1–1–1 | 1–1–1 |" in readme
    tests = pd.read_csv(out / "tests.csv", keep_default_na=False)
    assert list(tests["dataset"]) == ["d0", "d1", "d2"] * 2
    # constant folds 0.1 vs 0.2: no variance, the 5x2cv t is infinite
    assert tests.loc[0, "t_statistic"] == float("-inf") and tests.loc[0, "t_p_value"] == 0.0


def test_the_regenerate_command_leaves_out_places_but_a_relative_report_dir():
    overrides = ["experiment=hdp_vs_m", "hdp.iterations=50000", "tracking_uri=sqlite:////tmp/x.db", "data_dir=/data"]
    assert regenerate_command(overrides, "hdp_vs_m") == "bncbench report experiment=hdp_vs_m hdp.iterations=50000"
    assert regenerate_command([*overrides, "report_dir=/tmp/r"], "hdp_vs_m").endswith("hdp.iterations=50000")
    assert regenerate_command(["report_dir=reports/paper_protocol"], "x") == "bncbench report report_dir=reports/paper_protocol"
    assert regenerate_command(None, "toy") == "bncbench report experiment=toy"


@pytest.fixture
def hdp_config(config):
    """``hdp_config(uri, report_dir, **report)``: write_report's arguments for the HDP experiment."""

    def make(uri, report_dir, **report):
        settings = {"published": ["hdp_table1", "hdp_table2", "skdb_table2"], "reference_tying": "level", **report}
        return config(
            uri,
            report_dir,
            report=settings,
            name="hdp",
            datasets=[f"d{i}" for i in range(6)],
            models=["nb_m_estimate", "nb_hdp", "kdb5_m_estimate", "kdb5_hdp", "skdb_m_estimate"]
            + [f"h{i}" for i in range(1, 6)],
            comparisons=[
                {"a": "nb_hdp", "b": "nb_m_estimate"},
                {"a": "kdb5_hdp", "b": "kdb5_m_estimate"},
            ],
        )

    return make


def is_png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000


def test_write_report_everything(hdp_store, tmp_path, hdp_config):
    stale = tmp_path / "hdp" / "figures" / "scatter_rmse_old_vs_gone.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    (tmp_path / "hdp" / "ranks.csv").write_text("old")
    out = write_report(*hdp_config(hdp_store, tmp_path))
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "bayesian.csv",
        "figures",
        "published.csv",
        "published.md",
        "ranks.csv",
        "results.csv",
        "tests.csv",
        "wdl.csv",
        "wdl.md",
        "wdl.tex",
        "wl_curves.csv",
    ]
    figures = sorted((out / "figures").iterdir())
    assert [f.name for f in figures] == [
        "cd_rmse.png",
        "cd_zero_one_loss.png",
        "scatter_rmse_kdb5_hdp_vs_kdb5_m_estimate.png",
        "scatter_rmse_nb_hdp_vs_nb_m_estimate.png",
        "scatter_zero_one_loss_kdb5_hdp_vs_kdb5_m_estimate.png",
        "scatter_zero_one_loss_nb_hdp_vs_nb_m_estimate.png",
        "wl_iterations_rmse.png",
        "wl_iterations_zero_one_loss.png",
        "wl_tying_rmse.png",
        "wl_tying_zero_one_loss.png",
    ]
    assert all(is_png(f) for f in figures)

    readme = (out / "README.md").read_text()
    assert "`report.published=[hdp_table1,hdp_table2,skdb_table2]`, `report.reference" in readme
    assert "(as hdp_table1: Fig. 6a (journal; arXiv Fig. 5a))" in readme
    assert (
        "- not drawn: Petitjean, Buntine, Webb and Zaidi (2018) Fig. 8 (journal; arXiv Fig. 7): "
        "needs models skdb_hdp and random_forest"
    ) in readme
    table1 = "Table 1 (HDP paper) with m-estimates backing off through the class to p(x) (*_m_estimate)"
    assert f"- {table1} (`hdp_table1`): 1 of 4 compared cells agree" in readme
    top = readme[: readme.index("## Win–draw–loss")]
    assert "## What differs from the paper, and why" in top
    assert (
        f"| datasets | 68 | 6 | the experiment's datasets where both models of a cell have runs | {table1}; "
        "Table 2 (HDP paper) against scikit-learn's random forest (random_forest) with m-estimates backing off "
        "through the class to p(x) (*_m_estimate) |"
    ) in top
    assert "| discretisation | 5-bin equal frequency | MDL | bncbench's cross-validation" in top
    assert f"The same as the paper: discretisation (MDL) in {table1}, Table 2 (HDP paper) against" in top
    assert "| nb_hdp | " in readme and "![critical-difference diagram, rmse]" in readme

    published = pd.read_csv(out / "published.csv")
    assert published.groupby("table", sort=False).size().to_dict() == {
        "Table 1": 16,
        "Table 2": 8 + 15,
    }
    assert set(published.loc[published["table"] == "Table 2", "source"]) == {
        "hdp-estimates-for-bnc-arxiv-with-tables.txt",
        "selective-kdb-jmlr.txt",
    }
    skdb = published.loc[(published["row"] == "SKDB") & (published["column"] == "k=5")].iloc[0]
    assert (skdb["wins"], skdb["draws"], skdb["losses"]) == (3, 3, 0)
    assert (out / "published.md").read_text().count("\n## Table") == 3

    tests = pd.read_csv(out / "tests.csv")  # the comparisons, then the published pairs
    pairs = list(dict.fromkeys(zip(tests["a"], tests["b"], strict=True)))
    assert pairs == [
        ("nb_hdp", "nb_m_estimate"),
        ("kdb5_hdp", "kdb5_m_estimate"),
        ("skdb_m_estimate", "kdb5_m_estimate"),
    ]
    curves = pd.read_csv(out / "wl_curves.csv")
    assert curves.groupby(["kind", "metric"]).size().to_dict() == {
        ("iterations", "rmse"): 3,
        ("iterations", "zero_one_loss"): 3,
        ("tying", "rmse"): 2,
        ("tying", "zero_one_loss"): 2,
    }
    ranks = pd.read_csv(out / "ranks.csv")
    assert set(ranks["datasets"]) == {6} and len(ranks) == 2 * 10
    assert not stale.exists()


def test_write_report_unknown_published_table(hdp_store, tmp_path, hdp_config):
    with pytest.raises(ConfigError, match="unknown published table"):
        write_report(*hdp_config(hdp_store, tmp_path, published=["hdp_table3"]))


def test_write_report_with_a_model_not_run(store, tmp_path, config):
    uri, _ = store
    out = write_report(*config(uri, tmp_path, comparisons=[{"a": "a", "b": "never_run"}]))
    readme = (out / "README.md").read_text()
    assert "- Per-dataset scatter plots: a vs never_run, zero_one_loss: no dataset has a zero_one_loss for both a and " in readme
    assert "a vs never_run, rmse: no dataset has a rmse for both a and never_run" in readme
    assert "| a vs never_run | rmse | 0–0–0 | 1 | undefined | 0–0–0 | 0–0–0 | 0–0–0 |" in readme
    assert pd.read_csv(out / "tests.csv").empty


def test_a_report_in_the_way_is_replaced_only_when_asked(store, tmp_path):
    """A report of other cells, or one git tracks (a committed report), is not written over by accident."""
    uri, _ = store
    plan = compose(["experiment=smoke"]).plan
    place = write_report(plan, plan_runs(plan, uri), tmp_path)
    assert write_report(plan, plan_runs(plan, uri), tmp_path) == place  # the same cells: the report is brought up to date
    subset = compose(["experiment=smoke", "experiment.models=[nb_laplace]", "experiment.comparisons=[]"]).plan
    with pytest.raises(ConfigError, match=r"holds a report of \d+ cells \(\d datasets\): write this report elsewhere"):
        write_report(subset, plan_runs(subset, uri), tmp_path)
    assert write_report(subset, plan_runs(subset, uri), tmp_path, scratch=True) == place  # bncbench's own folder beside the store
    assert write_report(plan, plan_runs(plan, uri), tmp_path, replace=True) == place
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "smoke"], check=True)
    with pytest.raises(ConfigError, match="tracked by git: write this report elsewhere"):
        write_report(subset, plan_runs(subset, uri), tmp_path, scratch=True)  # committed: even in a scratch folder
    assert write_report(subset, plan_runs(subset, uri), tmp_path, replace=True) == place


def test_a_report_into_a_folder_git_tracks_refuses_runs_of_uncommitted_code(tmp_path, cell_logger, report_plan,
                                                                            capsys):
    """Committed reports come from committed code: runs tagged ``mlflow.source.git.dirty`` true are refused
    into a folder git tracks, unless asked, and said in the README where they are written."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    experiment = client.create_experiment("toy", artifact_location=(tmp_path / "artifacts").as_uri())
    for model, dirty in (("a", "true"), ("b", "false")):
        tags = {"mlflow.source.git.commit": "4f2a0c8b" * 5, "mlflow.source.git.dirty": dirty}
        cell_logger(client, experiment, "d0", model, {"rmse": [0.3] * 10}, tags=tags)
    plan = report_plan(name="toy", models=["a", "b"], comparisons=[{"a": "a", "b": "b"}], metrics=["rmse"])
    reports = tmp_path / "reports"
    assert write_report(plan, plan_runs(plan, uri), reports).is_dir()  # not tracked: written, and said
    assert "4f2a0c8b with uncommitted changes" in (reports / "toy" / "README.md").read_text()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "reports"], check=True)
    with pytest.raises(ConfigError, match=r"git tracks, and 1 of its 2 runs were made by code with uncommitted "
                                          r"changes \(git 4f2a0c8b; d0/a\).*--allow-uncommitted"):
        write_report(plan, plan_runs(plan, uri), reports, replace=True)
    assert write_report(plan, plan_runs(plan, uri), reports, replace=True, allow_uncommitted=True).is_dir()
