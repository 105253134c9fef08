"""Weka's RandomForest baseline: the same forest as Weka's own command line, on any data the runner gives."""

import shutil
import subprocess
import zipfile

import numpy as np
import pandas as pd
import pytest

from bncbench.baselines import make_baseline
from bncbench.baselines.weka_forest import WekaRandomForestBaseline, find_weka_jar
from bncbench.data import load_dataset
from bncbench.core.errors import ConfigError
from bncbench.protocol.models import model_spec, model_tags
from bncbench.protocol.cross_validation import cross_validate


def _weka_missing() -> str:
    try:
        find_weka_jar()
    except ConfigError as err:
        return str(err)
    return "" if shutil.which("javac") else "no JDK (javac)"


needs_weka = pytest.mark.skipif(bool(_weka_missing()), reason=f"Weka is not installed here: {_weka_missing()}")


@pytest.fixture(scope="module")
def coded():
    """Bin codes and nominal values with missing ones; the class depends on both."""
    rng = np.random.default_rng(0)
    n = 300
    y = rng.choice(["a", "b it's", "c,{d}"], n)
    X = pd.DataFrame(
        {
            "colour": np.where(y == "a", "red", rng.choice(["green", "blue 'sky'", None], n)),
            "bins": np.where(y == "c,{d}", 2, rng.choice([0, 1, 3], n)),
            "noise": rng.integers(0, 5, n),
        }
    )
    return X, y


@needs_weka
def test_the_forest_is_wekas_own_for_the_seed(coded, tmp_path):
    """Weka's command line (-p 0 -distribution, rounded to 3 decimals) on the ARFF files the baseline
    writes gives the baseline's probabilities: same forest, same seed, same class order."""
    X, y = coded
    forest = WekaRandomForestBaseline(n_estimators=10, random_state=7).fit(X.iloc[:200], y[:200])
    proba = forest.predict_proba(X.iloc[200:])
    forest._write_arff(tmp_path / "train.arff", X.iloc[:200], y[:200])
    forest._write_arff(tmp_path / "test.arff", X.iloc[200:], None)
    out = subprocess.run(
        ["java", "-cp", str(find_weka_jar()), "weka.classifiers.trees.RandomForest", "-I", "10", "-K", "0",
         "-S", "7", "-t", str(tmp_path / "train.arff"), "-T", str(tmp_path / "test.arff"), "-p", "0",
         "-distribution"],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = [line.split()[-1] for line in out.splitlines() if line.strip()[:1].isdigit()]
    weka = np.array([[float(p.lstrip("*")) for p in row.split(",")] for row in rows])
    assert weka.shape == proba.shape == (100, 3)
    np.testing.assert_allclose(proba, weka, atol=5e-4)
    assert not np.allclose(proba, np.round(proba, 3))  # ours are not rounded


@needs_weka
def test_learns_nominal_data_with_missing_and_unseen_values_deterministically(coded):
    X, y = coded
    forest = make_baseline("weka_random_forest", {}, random_state=0).fit(X, y)
    assert list(forest.classes_) == ["a", "b it's", "c,{d}"]
    proba = forest.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    assert (forest.predict(X) == y).mean() > 0.9
    unseen = X.iloc[:5].assign(colour="ultraviolet", bins=9)
    assert np.isfinite(forest.predict_proba(unseen)).all()
    np.testing.assert_array_equal(make_baseline("weka_random_forest", {}, random_state=0).fit(X, y).predict_proba(X), proba)
    assert not np.array_equal(make_baseline("weka_random_forest", {}, random_state=1).fit(X, y).predict_proba(X), proba)


@needs_weka
def test_bin_codes_are_nominal_and_a_column_without_values_is_kept(coded, tmp_path):
    X, y = coded
    X = X.assign(empty=pd.Series([None] * len(X), dtype=object))
    forest = WekaRandomForestBaseline(n_estimators=5).fit(X, y)
    forest._write_arff(tmp_path / "h.arff", X.iloc[:1], None)
    header = (tmp_path / "h.arff").read_text().splitlines()
    assert header[2] == "@attribute 'a1' {'0','1','2','3'}"  # one value per code: Weka splits by value
    assert header[4] == "@attribute 'a3' {'(no value in training)'}"
    assert np.isfinite(forest.predict_proba(X.assign(empty="seen at last"))).all()


@needs_weka
def test_numbers_go_to_weka_as_numbers_when_asked(coded):
    X, y = coded
    X = X.assign(size=np.where(y == "a", 5.5, 0.25) + np.random.default_rng(1).normal(0, 0.1, len(X)))
    with pytest.raises(ConfigError, match="'size' has non-integer numbers.*nominal_numbers: false"):
        WekaRandomForestBaseline().fit(X, y)
    forest = WekaRandomForestBaseline(nominal_numbers=False, n_estimators=20).fit(X, y)
    assert (forest.predict(X) == y).mean() > 0.9


def test_a_missing_weka_is_refused_with_how_to_install_it(coded):
    X, y = coded
    with pytest.raises(ConfigError, match=r"/nowhere/weka.jar \(named by weka_jar\).*apt-get install weka"):
        WekaRandomForestBaseline(weka_jar="/nowhere/weka.jar").fit(X, y)
    model = model_spec("weka_random_forest")
    missing = {**model, "baseline_params": {**model["baseline_params"], "weka_jar": "/nowhere/weka.jar"}}
    assert model_tags(missing)["version.weka"] == "not found"


@pytest.mark.parametrize("content", [b"root:x:0:0:root:/root:/bin/bash\n", b"", "a jar of something else"])
def test_a_file_that_is_not_wekas_jar_is_refused_before_java_runs(coded, tmp_path, monkeypatch, content):
    jar = tmp_path / "weka.jar"
    if isinstance(content, str):
        with zipfile.ZipFile(jar, "w") as archive:
            archive.writestr("other/Main.class", content)
    else:
        jar.write_bytes(content)
    monkeypatch.setenv("WEKA_JAR", str(jar))
    with pytest.raises(ConfigError, match=rf"{jar} \(named by WEKA_JAR\) is not one \(no weka/classifiers/trees/"):
        WekaRandomForestBaseline().fit(*coded)
    model = model_spec("weka_random_forest")
    assert model_tags(model)["version.weka"] == "not found"  # the plan is made, the cell then says why


@needs_weka
def test_runs_in_the_papers_protocol_and_says_which_weka(shared_data_dir):
    model = model_spec("weka_random_forest")
    tags = model_tags(model)
    assert tags["version.weka"].startswith("3.") and tags["weka.jar"].endswith(".jar")
    folds = cross_validate(load_dataset({"name": "zoo"}, shared_data_dir), model)
    assert len(folds.metrics) == 10
    assert folds.metrics["zero_one_loss"].mean() < 0.15
    assert (folds.metrics["fit_seconds"] > 0).all() and (folds.metrics["predict_seconds"] > 0).all()
