"""The README section stating the settings and the code and data versions of the runs read."""

import pandas as pd

from bncbench.report.results import PROVENANCE
from bncbench.report.run_settings import run_settings, settings_lines


def provenance(*rows):
    """Runs' provenance, row by row; columns a row leaves out at its end (``cv.discretisation``, ``cv.bins``,
    logged off MDL only) are None."""
    columns = ["dataset", "model", "run_id", *PROVENANCE]
    return pd.DataFrame([dict(zip(columns, row)) for row in rows], columns=columns)


RUNS = provenance(
    ("d0", "nb_hdp", "r1", "5", "2", "1", "5000", "0.1.0", "abc", "false", "aaaaaaaa11", "e"),
    ("d0", "nb_m", "r2", "5", "2", "1", None, "0.1.0", "abc", "false", "aaaaaaaa11", "e"),
    ("d1", "nb_hdp", "r3", "5", "2", "1", "50000", "0.1.0", "def", "true", "bbbbbbbb22", "e"),
    ("d1", "nb_m", "r4", None, None, None, None, None, None, None, None, None),  # logged before the tags
)


def test_settings_are_counted_per_value():
    settings = run_settings(RUNS)
    assert settings["CV"] == {"5x2, seed 1": 3, "not logged": 1}
    assert settings["HDP iterations"] == {"5000": 1, "50000": 1}
    assert settings["datasets"] == {"2": 4}
    assert settings["git commit"] == {"abc": 2, "def with uncommitted changes": 1, "not logged": 1}
    assert settings["data digest of d1"] == {"bbbbbbbb22": 1, "not logged": 1}


def test_the_section_shows_one_value_plainly_and_several_with_their_runs():
    other_data = "data_digest=cccccccc (another version of the dataset file)"
    left_out = pd.DataFrame({"differs": ["cv.seed=7", "cv.seed=7", other_data]})
    lines = settings_lines(run_settings(RUNS[RUNS["dataset"] == "d0"]), left_out)
    assert lines[4:] == [
        "From the params and tags of the 2 runs read:",
        "- CV: 5x2, seed 1",
        "- HDP iterations: 5000",
        "- datasets: 1",
        "- bncbench version: 0.1.0",
        "- git commit: abc",
        "- data digests: d0 aaaaaaaa",
        "",
        "Left out: 3 finished runs of these cells with other settings or data: 2 with cv.seed=7; "
        "1 with data_digest=cccccccc (another version of the dataset file).",
        "",
    ]
    lines = settings_lines(run_settings(RUNS), None)
    assert "Not checked against a configuration" in lines[2]
    assert "- HDP iterations: 5000 (1 run), 50000 (1 run)" in lines
    assert "- data digests: d0 aaaaaaaa; d1 bbbbbbbb (1 run), not logged (1 run)" in lines


def test_runs_computed_in_another_experiment_are_counted_by_experiment():
    assert "computed in experiment" not in run_settings(RUNS, "e")
    copied = RUNS.assign(experiment=["e", "other", "e", None])  # r2 was copied from experiment other
    settings = run_settings(copied, "e")
    assert settings["computed in experiment"] == {"e": 2, "other": 1, "not logged": 1}
    assert "- computed in experiment: e (2 runs), other (1 run), not logged (1 run)" in settings_lines(settings, None)


def test_the_discretisation_is_stated_only_where_a_run_logged_one_off_mdl():
    assert "discretisation" not in run_settings(RUNS)
    ef5 = RUNS.assign(**{"cv.discretisation": ["equal_frequency", None, None, None], "cv.bins": ["5", None, None, None]})
    settings = run_settings(ef5)
    assert settings["discretisation"] == {"5-bin equal frequency": 1, "MDL": 3}
    assert "- discretisation: MDL (3 runs), 5-bin equal frequency (1 run)" in settings_lines(settings, None)
