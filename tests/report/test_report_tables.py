"""W-D-L tables as Markdown, LaTeX and CSV, and the report written from a real MLflow store."""

import pandas as pd
import pytest
from omegaconf import OmegaConf

from bncbench.errors import ConfigError
from bncbench.report import load_results, to_frame, to_latex, to_markdown, wdl_table, write_report


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


def config(uri, report_dir, **experiment):
    return OmegaConf.create(
        {
            "tracking_uri": uri,
            "report_dir": str(report_dir),
            "experiment": {
                "name": "toy",
                "datasets": ["d0", "d1", "d2", "d3"],
                "models": ["a", "b"],
                "comparisons": [{"a": "a", "b": "b"}],
                "metrics": ["zero_one_loss", "rmse"],
                **experiment,
            },
            "report": {"draws": "exclude", "round": None, "alpha": 0.05},
        }
    )


def test_write_report_from_mlflow(store, tmp_path):
    uri, _ = store
    out = write_report(config(uri, tmp_path))
    assert out == tmp_path / "toy"
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "wdl.csv", "wdl.md", "wdl.tex"]

    results = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(results, load_results(uri, "toy"), check_dtype=False)

    # d0 won, d1 lost, d2 drawn (equal but for summation order), d3 missing (b FAILED)
    wdl = pd.read_csv(out / "wdl.csv", keep_default_na=False)
    assert list(wdl["metric"]) == ["zero_one_loss", "rmse"]
    for row in wdl.to_dict("records"):
        assert (row["comparison"], row["wins"], row["draws"], row["losses"]) == ("a vs b", 1, 1, 1)
        assert (row["n"], row["p_value"], row["significant"]) == (2, 1.0, False)
        assert (row["missing"], row["missing_datasets"]) == (1, "d3")

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


def test_write_report_options(store, tmp_path):
    uri, _ = store
    cfg = config(uri, tmp_path)
    cfg.report.draws, cfg.report.round = "split", 0
    out = write_report(cfg)
    wdl = pd.read_csv(out / "wdl.csv")
    assert list(wdl["draws"]) == [3, 3]
    assert list(wdl["n"]) == [2, 2]
    assert "equal after rounding to 0 decimals" in (out / "wdl.md").read_text()
    assert "draws split evenly between A and B (an odd one dropped)" in (out / "wdl.md").read_text()


def test_write_report_without_comparisons(store, tmp_path):
    uri, _ = store
    out = write_report(config(uri, tmp_path, comparisons=[]))
    assert pd.read_csv(out / "results.csv").shape == (7, 6)
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
def test_write_report_errors(store, tmp_path, experiment, match):
    uri, _ = store
    with pytest.raises(ConfigError, match=match):
        write_report(config(uri, tmp_path, **experiment))
