"""Names that reach a report are shown, never run: HTML in Markdown is escaped, a line break cannot
start a heading, and a CSV cell a spreadsheet would take for a formula is neutralised."""

import pandas as pd
from mlflow.tracking import MlflowClient

from bncbench.report import plan_runs, write_report
from bncbench.report.tables import csv_safe, markdown_table, markdown_text

from .conftest import log_cell

SCRIPT = "<script>alert(1)</script>"
FORMULA = "=HYPERLINK(\"http://x\",\"y\")"


def test_markdown_text_escapes_html_and_line_breaks():
    assert markdown_text(f"a{SCRIPT}\n# heading") == "a&lt;script&gt;alert(1)&lt;/script&gt; # heading"
    assert markdown_table(["m"], [["x|y<b>"]]).splitlines()[-1] == "| x\\|y&lt;b&gt; |"


def test_csv_cells_that_would_run_as_formulas_are_neutralised():
    frame = pd.DataFrame({"name": [FORMULA, "+1+2", "-2", "@SUM(A1)", "\tx", "plain", "-0.5"], "value": [1.0] * 7})
    assert csv_safe(frame)["name"].tolist() == [f"'{FORMULA}", "'+1+2", "-2", "'@SUM(A1)", "'\tx", "plain", "-0.5"]
    assert csv_safe(frame)["value"].tolist() == [1.0] * 7


def test_a_report_of_hostile_names(tmp_path, report_plan):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    experiment = client.create_experiment("hostile", artifact_location=(tmp_path / "art").as_uri())
    folds = {"zero_one_loss": [0.1] * 10, "rmse": [0.2] * 10}
    for start, (dataset, model) in enumerate([(SCRIPT, FORMULA), (SCRIPT, "b"), ("d1", FORMULA), ("d1", "b")]):
        log_cell(client, experiment, dataset, model, folds, start=start)
    plan = report_plan("hostile", datasets=[SCRIPT, "d1"], models=[FORMULA, "b"], comparisons=[{"a": FORMULA, "b": "b"}])
    out = write_report(plan, plan_runs(plan, uri), tmp_path / "reports")
    for markdown in out.glob("*.md"):
        assert "<script>" not in markdown.read_text(encoding="utf-8"), markdown.name
    for csv in out.glob("*.csv"):
        text = csv.read_text(encoding="utf-8")
        assert "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text and '"=HYPERLINK' not in text, csv.name
    assert pd.read_csv(out / "results.csv")["model"].str.startswith("'=").any()
