"""Bad input everywhere: each case gets one clear message naming the problem (and the fix), or a
sensible result; never a traceback in place of a message, never a silent wrong number.

The command line runs in this process (``bncbench.__main__.main``: a wrong setting stops it before
Hydra starts) except where the process's exit matters; stores, OpenML caches and servers are made
here; nothing leaves the machine (an OpenML "server" is a thread on the loopback interface).
"""

import contextlib
import dataclasses
import gzip
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import openml
import pandas as pd
import pytest

from bncbench import BNClassifier, tracking
from bncbench.__main__ import main
from dataclasses import replace

from bncbench.app.config import compose
from bncbench.data.digest import dataset_digest
from bncbench.protocol.cell import Cell
from bncbench.data import load_dataset
from bncbench.core.errors import ConfigError, ContinuousColumnWarning, DatasetError, UnseenValuesWarning
from bncbench.app.runner import run_cell
from bncbench.protocol.cross_validation import cross_validate
from bncbench.app.sweep import _write_report, destination_of

NB = {"structure": "nb", "k": 0, "structure_params": {}, "estimator": "laplace", "estimator_params": {}}
KDB = {"structure": "kdb", "k": 2, "structure_params": {}, "estimator": "m_estimate", "estimator_params": {}}


def spec(name, openml_id=None):
    return {"name": name, "source": "store", "openml_id": openml_id, "openml_target": None, "drop": []}


def nominal(name, values):
    return {"name": name, "type": "nominal", "values": list(values)}


def numeric(name):
    return {"name": name, "type": "numeric", "values": None}


def entry(attributes, classes=("p", "q")):
    return {"attributes": attributes, "class": nominal("class", classes)}


@contextlib.contextmanager
def read_only(*paths: Path):
    """Make files and directories read-only for this process, even as root (chattr +i)."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("read-only files need chattr when running as root")
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {path: path.stat().st_mode for path in paths}
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


# ---------------------------------------------------------------------------------------------------
# Command line: a wrong setting is one line on stderr, exit status 2, and nothing runs.


def run_main(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["bncbench", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("bncbench: error: ")
    return line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["experimnt=kdb"], "unknown setting 'experimnt' (did you mean experiment?)"),
        (["experiment.dataset=[iris]"], "unknown setting 'experiment.dataset' (did you mean experiment.datasets?)"),
        (["+cv.fold=3"], "unknown setting 'cv.fold' (did you mean cv.folds?)"),  # added, would be ignored
        (["cv.folds=1"], "cv.folds must be an integer >= 2, got 1."),
        (["cv.folds=2.5"], "cv.folds must be an integer >= 2, got 2.5."),  # would silently run 2 folds
        (["cv.seed=-1"], "cv.seed must be an integer >= 0, got -1."),
        (["numba_threads=many"], "numba_threads must be an integer >= 1 or auto"),
        (["executor.n_jobs=0"], "executor.n_jobs must be a positive number of processes"),
        (["executor.n_jobs=-1000"], "executor.n_jobs=-1000 leaves no process on this machine's"),  # not 1, silently
        (["report.draws=maybe"], "report.draws must be one of exclude, split, got 'maybe'"),  # found after the run, before
        (["report.alpha=2"], "report.alpha must be in (0, 1), got 2"),
        (["experiment.metrics=[accuracy]"], "experiment.metrics names ['accuracy']; the metrics of every run are"),
        (["experiment.comparisons=[{a: nb_laplace}]"], "a comparison must be a mapping {a: model, b: model}"),
        (["tracking_uri="], "tracking_uri must be the store's URI (sqlite:///<file> or http://<host>:<port>), got ''."),
        (["report_dir="], "report_dir must be a folder or null, got ''."),
        (["executor=slurm"], "SQLite on a network file system is unsafe"),
    ],
)
def test_a_bad_setting_is_one_line(monkeypatch, capsys, args, message):
    assert message in run_main(monkeypatch, capsys, *args)


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({"experiment/empty.yaml": ""}, ["experiment=empty"], "experiment.name is not set by experiment 'empty'"),
        (
            {"experiment/broken.yaml": "experiment: {name: broken, datasets: [iris"},
            ["experiment=broken"],
            "a config file is not valid YAML",
        ),
        (
            {"experiment/bad.yaml": "# @package _global_\nexperiment: {name: bad, datasets: [iris], grids: [{structure: nb, estimator: laplace, estimator_params: {alpha: [x]}}]}"},
            ["experiment=bad"],
            "experiment 'bad': model 'nb_laplace_x': alpha must be a finite number >= 0, got 'x'",
        ),
        (
            {"experiment/bad.yaml": "# @package _global_\nexperiment: {name: bad, datasets: [iris], grids: [{structure: nb, estimator: m_estimate, estimator_params: {m_grid: [[0, .inf]]}, name: bad}]}"},
            ["experiment=bad"],
            "m_grid must be a non-empty list of finite numbers >= 0, got [0, inf] (not valid: [inf])",
        ),
        (
            {"experiment/bad.yaml": "# @package _global_\nexperiment: {name: bad, datasets: [iris], grids: [{structure: forest, estimator: laplace}]}"},
            ["experiment=bad"],
            "experiment 'bad': model 'forest_laplace': unknown structure 'forest'; valid structures: aode, direct",
        ),
        (
            {"experiment/bad.yaml": "# @package _global_\nexperiment: {name: bad, datasets: [iris], grids: [{structure: nb, estimator: laplace, name: '{tying}'}]}"},
            ["experiment=bad"],
            "experiment 'bad': grid name template '{tying}'",
        ),
    ],
)
def test_a_bad_config_file_is_one_line(tmp_path, monkeypatch, capsys, files, args, message):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert message in run_main(monkeypatch, capsys, f"hydra.searchpath=[file://{tmp_path}]", *args)


def test_a_read_only_tracking_store_stops_before_any_cell(tmp_path, new_store, run_cli):
    uri = new_store(tmp_path / "store")
    with read_only(tmp_path / "store" / "mlflow.db", tmp_path / "store"):
        result = run_cli(
            "experiment.datasets=[sklearn-iris]",
            "experiment.models=[nb_laplace]",
            "experiment.comparisons=[]",
            f"tracking_uri={uri}",
            "executor.n_jobs=1",
            cwd=tmp_path,
        )
    assert result.returncode == 2, result.output
    assert "bncbench: error: cannot create the MLflow experiment 'smoke'" in result.stderr
    assert "Check that the store is writable" in result.stderr
    assert "Traceback" not in result.output and "finished (run" not in result.output


# ---------------------------------------------------------------------------------------------------
# Data layer: a store written here.


def rows(n, make):
    return "".join(make(i) for i in range(n))


@pytest.mark.parametrize(
    ("content", "schema", "message"),
    [
        (b"", entry([nominal("a", "x")]), "does not parse as a gzip'd CSV file (EmptyDataError"),  # an empty file
        ("a,class\n", entry([nominal("a", "x")]), "Dataset 'd' has no rows"),
        (
            "a,b,class\n" + rows(20, lambda i: ",,\n"),
            entry([nominal("a", "x"), numeric("b")]),
            "Every row of dataset 'd' has a missing class",
        ),  # every value missing
        ("a,class\n" + rows(20, lambda i: f"x,{'pq'[i % 2]}\n"), entry([nominal("a", "x")], ["p"]), "values not declared"),
        ("a,class\nx,p\nx\n", entry([nominal("a", "x")]), "does not parse as a gzip'd CSV file"),  # a short row
        (
            "a,class\n" + rows(20, lambda i: f"{['1.5', 'inf'][i % 2]},{'pq'[i % 2]}\n"),
            entry([numeric("a")]),
            "holds 10 infinite values (line 3: 'inf'",
        ),  # MDL cuts at +-inf would bin wrongly
        ("a,class\n" + rows(20, lambda i: f"{i}.5 cm,p\n"), entry([numeric("a")]), "declared numeric in schema.json but"),
        ("a,b,class\nx,y,p\n", entry([nominal("a", "x")]), "does not match its schema.json entry"),
        ("a,label\nx,p\n", entry([nominal("a", "x")]), "The class column 'class' is absent"),
        ("é,class\n".encode("latin-1") + b"x,p\n", entry([nominal("é", "x")]), "'utf-8' codec can't decode"),
        ("a,class\n" + rows(20, lambda i: "x,p\n"), entry([nominal("a", "x")]), "has the single value 'p'"),
    ],
    ids=[
        "empty file",
        "header only",
        "every value missing",
        "undeclared class",
        "short row",
        "infinite numbers",
        "units in numbers",
        "extra column",
        "no class column",
        "not utf-8",
        "one class",
    ],
)
def test_a_bad_data_file_gets_a_message(tmp_path, write_store, content, schema, message):
    store = write_store(tmp_path / "store", {"d": (content, schema)})
    with pytest.raises(DatasetError) as err:
        load_dataset(spec("d"), store)
    assert message in str(err.value)


def test_an_interrupted_copy_into_the_store_gets_a_message(tmp_path, write_store):
    text = "a,class\n" + rows(5000, lambda i: f"{'xy'[i % 2]},{'pq'[i % 3 % 2]}\n")
    store = write_store(tmp_path / "store", {"d": (text, entry([nominal("a", "xy")]))})
    data = (store / "d.csv.gz").read_bytes()
    (store / "d.csv.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match="does not parse as a gzip'd CSV file .EOFError"):
        load_dataset(spec("d"), store)


def test_every_attribute_missing_gives_the_class_prior(tmp_path, write_store):
    text = "a,b,class\n" + rows(60, lambda i: f",,{'ppq'[i % 3]}\n")
    store = write_store(tmp_path / "store", {"d": (text, entry([nominal("a", "x"), numeric("b")]))})
    data = load_dataset(spec("d"), store)
    for model in (NB, KDB):
        cv = cross_validate(data, model, repetitions=2, folds=2, seed=0)
        assert (cv.predictions["y_pred"] == "p").all()  # the majority class: 1/3 wrong
        assert cv.metrics["zero_one_loss"].to_numpy() == pytest.approx(1 / 3)


def test_a_class_with_one_row_is_predicted_never_and_scored_finitely(tmp_path, write_store):
    text = "a,class\n" + rows(40, lambda i: f"{'xy'[i % 2]},{'pq'[i % 2]}\n") + "x,r\n"
    store = write_store(tmp_path / "store", {"d": (text, entry([nominal("a", "xy")], ["p", "q", "r"]))})
    cv = cross_validate(load_dataset(spec("d"), store), NB, repetitions=3, folds=2, seed=0)
    lone = cv.predictions[cv.predictions["y_true"] == "r"]
    assert len(lone) == 3 and (lone["proba_r"] == 0).all()  # its training half never had it
    assert np.isfinite(cv.metrics[["log_loss", "rmse"]].to_numpy()).all()
    assert (cv.metrics["zero_one_loss"] <= 1 / 20).all()  # only that row is wrong


def test_an_attribute_with_a_thousand_values_carries_no_evidence_on_unseen_ones(tmp_path, write_store):
    # an id-like attribute: each of its 1,000 values is seen in one half only, so it cannot sway a test row
    text = "id,b,class\n" + rows(1000, lambda i: f"v{i},{'xy'[i % 2]},{'pq'[(i // 2) % 2]}\n")
    store = write_store(
        tmp_path / "store", {"d": (text, entry([nominal("id", [f"v{i}" for i in range(1000)]), nominal("b", "xy")]))}
    )
    data = load_dataset(spec("d"), store)
    with pytest.warns(UnseenValuesWarning, match=r"no value of the columns \['id'\] was seen in training"):
        with_id = cross_validate(data, NB, repetitions=1, folds=2, seed=0)
    without = cross_validate(
        type(data)(data.name, data.X.drop(columns="id"), data.y, []), NB, repetitions=1, folds=2, seed=0
    )
    pd.testing.assert_frame_equal(with_id.predictions, without.predictions)


def test_a_numeric_class_written_1_and_1_0_is_one_class(tmp_path, write_store):
    text = "a,class\n" + rows(40, lambda i: f"{'xy'[i % 2]},{['1', '2', '1.0', '2.0'][i % 4]}\n")
    store = write_store(tmp_path / "store", {"d": (text, {"attributes": [nominal("a", "xy")], "class": numeric("class")})})
    cv = cross_validate(load_dataset(spec("d"), store), NB, repetitions=1, folds=2, seed=0)
    assert [c for c in cv.predictions.columns if c.startswith("proba_")] == ["proba_1", "proba_2"]
    assert (cv.metrics["zero_one_loss"] == 0).all()


def test_a_read_only_store_is_read(tmp_path, write_store):
    text = "a,class\n" + rows(20, lambda i: f"{'xy'[i % 2]},{'pq'[i % 2]}\n")
    store = write_store(tmp_path / "store", {"d": (text, entry([nominal("a", "xy")]))})
    with read_only(store / "d.csv.gz", store / "schema.json", store):
        assert len(load_dataset(spec("d"), store).y) == 20


def test_a_stale_temporary_file_of_an_interrupted_write_is_ignored(tmp_path, write_store):
    text = "a,class\n" + rows(20, lambda i: f"{'xy'[i % 2]},{'pq'[i % 2]}\n")
    store = write_store(tmp_path / "store", {"d": (text, entry([nominal("a", "xy")]))})
    (store / ".d.csv.gz.x1y2.tmp").write_bytes(gzip.compress(b"a,class\nx,p\n")[:10])
    (store / ".e.csv.gz.x1y2.tmp").write_bytes(b"")
    assert len(load_dataset(spec("d"), store).y) == 20
    with pytest.raises(DatasetError, match="Dataset 'e' not found: no e.csv.gz"):
        load_dataset(spec("e"), store)


# OpenML, offline: a server on the loopback interface answers openml-python's requests for dataset 9999
# (its description, its features, then the ARFF file the description points to).

ARFF = "@relation tiny\n@attribute a {x,y}\n@attribute b numeric\n@attribute class {p,q}\n@data\n" + "".join(
    f"{'xy'[i % 2]},{i % 7}.5,{'pq'[i % 3 % 2]}\n" for i in range(3000)
)
FEATURES = [("a", "nominal", "xy"), ("b", "numeric", ""), ("class", "nominal", "pq")]


class OpenMLServer(http.server.BaseHTTPRequestHandler):
    """Dataset 9999 of OpenML's XML API; the ARFF file has its full length announced but, while
    ``server.cut``, only half of it is sent: the connection drops mid-download."""

    def do_GET(self):
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path.endswith("/data/9999"):
            body = (
                '<oml:data_set_description xmlns:oml="http://openml.org/openml"><oml:id>9999</oml:id>'
                "<oml:name>tiny</oml:name><oml:version>1</oml:version><oml:description>test</oml:description>"
                f"<oml:format>ARFF</oml:format><oml:url>{host}/data/v1/download/9999/tiny.arff</oml:url>"
                "<oml:default_target_attribute>class</oml:default_target_attribute>"
                "<oml:status>active</oml:status></oml:data_set_description>"
            ).encode()
        elif self.path.endswith("/data/features/9999"):
            body = (
                '<oml:data_features xmlns:oml="http://openml.org/openml">'
                + "".join(
                    f"<oml:feature><oml:index>{i}</oml:index><oml:name>{name}</oml:name>"
                    f"<oml:data_type>{kind}</oml:data_type>"
                    + "".join(f"<oml:nominal_value>{v}</oml:nominal_value>" for v in values)
                    + f"<oml:is_target>{str(name == 'class').lower()}</oml:is_target>"
                    "<oml:is_ignore>false</oml:is_ignore><oml:is_row_identifier>false</oml:is_row_identifier>"
                    "<oml:number_of_missing_values>0</oml:number_of_missing_values></oml:feature>"
                    for i, (name, kind, values) in enumerate(FEATURES)
                )
                + "</oml:data_features>"
            ).encode()
        elif self.path.endswith("/tiny.arff"):
            body = ARFF.encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if self.server.cut and self.path.endswith(".arff") else body)

    def log_message(self, *args):
        pass


@pytest.fixture
def openml_server(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OpenMLServer)
    server.cut = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = {
        "cachedir": str(tmp_path / "openml"),
        "server": f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml",
        "connection_n_retries": 1,
    }
    with openml.config.overwrite_config_context(settings):
        yield server
    server.shutdown()


def test_an_interrupted_download_gets_a_message_and_the_next_one_succeeds(tmp_path, openml_server):
    store = tmp_path / "store"
    with pytest.raises(DatasetError) as err:
        load_dataset(spec("tiny", openml_id=9999), store)
    assert "Could not fetch OpenML dataset 9999 for 'tiny'" in str(err.value)
    assert "Connection broken" in str(err.value)
    assert not (store / "tiny.csv.gz").exists()  # nothing half-written to be read as the dataset
    openml_server.cut = False
    assert len(load_dataset(spec("tiny", openml_id=9999), store).y) == 3000


def test_a_read_only_store_that_must_fetch_says_where_it_cannot_write(tmp_path, openml_server):
    openml_server.cut = False
    store = tmp_path / "store"
    store.mkdir()
    with read_only(store), pytest.raises(DatasetError) as err:
        load_dataset(spec("tiny", openml_id=9999), store)
    assert f"cannot be stored in the data directory {store}" in str(err.value)
    assert "Make it writable, or use a writable one (set the data directory" in str(err.value)


# ---------------------------------------------------------------------------------------------------
# Classifier.

X = pd.DataFrame({"a": list("xyxyxyxyxy"), "b": list("uuvvuuvvuu")})
Y = pd.Series(list("pqpqpqpqpq"))


@pytest.mark.parametrize(
    ("arguments", "X_fit", "y_fit", "error", "message"),
    [
        ({"estimator": "laplace", "estimator_params": {"alhpa": 2}}, X, Y, ConfigError, "does not take ['alhpa']"),
        ({"estimator": "lapalce"}, X, Y, ConfigError, "unknown estimator 'lapalce'; valid estimators:"),
        ({"structure": "kdb", "k": -1}, X, Y, ConfigError, "k must be an integer >= 0"),
        ({"structure": {"a": ["b"], "b": ["a"]}}, X, Y, ConfigError, "the structure has a cycle"),
        ({"structure": {"a": ["c"]}}, X, Y, ConfigError, "names attributes that are not columns of X: ['c']"),
        ({}, X.iloc[:0], Y.iloc[:0], DatasetError, "cannot fit on zero rows"),
        ({}, X, pd.Series(["p", None] * 5), DatasetError, "the class has missing values"),
        ({}, X, pd.Series([0.5, 1.5] * 5), ValueError, "Unknown label type: continuous"),
        ({}, X, pd.Series([1, "1"] * 5), DatasetError, "the class mixes numbers and strings (e.g. 1, '1')"),
        ({"estimator_params": {"m": float("inf")}}, X, Y, ConfigError, "m must be a finite number >= 0 or null"),
        ({"structure": {"a": "bu"}}, X, Y, ConfigError, "write ['bu'] for one parent named 'bu', or ['b', 'u']"),
        ({}, X.assign(b=[["u", "v"]] + ["u"] * 9), Y, DatasetError, "column 'b' holds a list in row 0 (['u', 'v'])"),
        ({}, X.assign(a=[{"x": 1}] * 10), Y, DatasetError, "column 'a' holds a dict in row 0"),
    ],
    ids=[
        "parameter typo",
        "estimator typo",
        "negative k",
        "cycle",
        "unknown parent",
        "no rows",
        "missing class",
        "numeric class",
        "class of two kinds",
        "infinite m",
        "parents as a string",
        "a list in a cell",
        "a dict in a cell",
    ],
)
def test_a_bad_classifier_input_gets_a_message(arguments, X_fit, y_fit, error, message):
    with pytest.raises(error) as err:
        BNClassifier(**arguments).fit(X_fit, y_fit)
    assert message in str(err.value)


def test_predicting_with_a_missing_column_names_it():
    with pytest.raises(ValueError, match="Feature names seen at fit time, yet now missing:\n- b"):
        BNClassifier().fit(X, Y).predict_proba(X[["a"]])


def test_unseen_values_at_prediction_give_the_class_prior():
    y = pd.Series(list("ppqpqpqpqp"))
    with pytest.warns(UnseenValuesWarning, match=r"no value of the columns \['a', 'b'\] was seen in training"):
        proba = BNClassifier(estimator="laplace").fit(X, y).predict_proba(pd.DataFrame({"a": ["z"], "b": ["w"]}))
    np.testing.assert_allclose(proba, [[7 / 12, 5 / 12]])  # (6 + 1) / (10 + 2): no evidence from X


def test_numbers_given_as_strings_at_prediction_are_refused_naming_the_column_and_the_fix():
    numbers = X.assign(b=[1, 2] * 5)
    clf = BNClassifier().fit(numbers, Y)
    with pytest.raises(ValueError, match=r"column 'b' holds strings .* held numbers .* X\['b'\] = pd.to_numeric"):
        clf.predict(numbers.astype({"b": str}))


def test_continuous_columns_warn_with_the_fix():
    continuous = pd.DataFrame({"a": np.linspace(0, 1, 40), "b": ["u", "v"] * 20})
    with pytest.warns(ContinuousColumnWarning, match=r"columns 'a' \(40 distinct values\) look continuous.*make_pipeline"):
        BNClassifier().fit(continuous, ["p", "q"] * 20)


# ---------------------------------------------------------------------------------------------------
# Runner: a cell of a dataset with non-ASCII names logged to MLflow, and its report.

@pytest.fixture(scope="module")
def non_ascii_cell(tmp_path_factory, write_store, new_store):
    root = tmp_path_factory.mktemp("non_ascii")
    text = "température,日本,class\n" + rows(40, lambda i: f"{i % 5}.5,{'éあ'[i % 2]},{['oui', 'nön/ü x'][i % 2]}\n")
    write_store(
        root / "store",
        {"données": (text, entry([numeric("température"), nominal("日本", "éあ")], ["oui", "nön/ü x"]))},
    )
    composed = compose(["experiment.datasets=[iris]", "experiment.models=[kdb1_laplace]", "experiment.comparisons=[]",
                        f"tracking_uri={new_store(root)}", f"data_dir={root / 'store'}"])
    iris = composed.plan.cells[0]
    spec = {**iris.semantic()["dataset"], "name": "données", "openml_id": None}
    digest = dataset_digest(spec, root / "store").digest
    cell = Cell.of("données", "kdb1_laplace", spec, iris.semantic()["model"], iris.cv, digest)
    plan = replace(composed.plan, cells=(cell,), datasets=("données",))
    client = tracking.open_store(composed.settings.tracking_uri)
    experiment = tracking.prepare_experiment(client, "smoke", str(root / "artifacts"))
    status = run_cell(cell, destination_of(composed.settings, plan)).status
    return root, (plan, composed.settings), client, experiment, status


def test_non_ascii_names_run_and_are_logged(non_ascii_cell):
    root, _, client, experiment, status = non_ascii_cell
    assert status == "finished"
    (run,) = client.search_runs([experiment])
    assert run.info.run_name == "données/kdb1_laplace" and run.data.tags["dataset"] == "données"
    predictions = pd.read_parquet(client.download_artifacts(run.info.run_id, "predictions.parquet", str(root)))
    assert list(predictions.columns[-2:]) == ["proba_nön/ü x", "proba_oui"]
    assert set(predictions["y_true"]) == {"oui", "nön/ü x"}
    structure = json.loads(Path(client.download_artifacts(run.info.run_id, "structure.json", str(root))).read_text())
    assert set(structure["folds"][0]["parents"]) == {"température", "日本"}
    assert run.data.metrics["zero_one_loss"] == 0  # 日本 gives the class away


def test_a_report_directory_that_cannot_be_written_says_how_to_write_it_again(non_ascii_cell, capsys):
    root, (plan, cfg), *_ = non_ascii_cell
    (root / "reports").mkdir()
    cfg = dataclasses.replace(cfg, report_dir=str(root / "reports"))
    with read_only(root / "reports"):
        assert _write_report(plan, cfg) is False
    err = capsys.readouterr().err
    assert "bncbench: report not written: " in err and str(root / "reports") in err
    assert "bncbench report experiment=smoke (nothing reruns)" in err and "Traceback" not in err
    assert _write_report(plan, cfg) is True  # and once it can be
    assert "données" in (root / "reports" / "smoke" / "results.csv").read_text(encoding="utf-8")
    written = {p: p.read_bytes() for p in (root / "reports").rglob("*") if p.is_file()}
    with read_only(root / "reports", root / "reports" / "smoke"):
        assert _write_report(plan, cfg) is False
    assert {p: p.read_bytes() for p in (root / "reports").rglob("*") if p.is_file()} == written  # intact


@pytest.mark.parametrize(
    ("name", "message"), [("a_dir", "is a directory, not a SQLite file"), ("notes.txt", "is not a SQLite database")]
)
def test_a_tracking_uri_that_is_not_a_database_gets_a_message_at_once(tmp_path, name, message):
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "notes.txt").write_text("not a database")
    with pytest.raises(ConfigError, match=f"cannot open the tracking store .*{message}"):
        tracking.open_store(f"sqlite:///{tmp_path / name}")  # not after MLflow's minutes of retries



# ---------------------------------------------------------------------------------------------------
# Every command, given a malformed input, a bad file or a closed pipe: one line, exit status 2, no traceback.

SECRET = "s3cret-pw"
NO_SERVER = f"http://alice:{SECRET}@127.0.0.1:9"  # nothing listens on port 9 (discard)
#: Tokens in the path parameters, the query and the fragment (issue 42), quoted for Hydra's grammar.
NO_SERVER_TOKENS = f"'http://127.0.0.1:9/api;sid={SECRET}?token={SECRET}#{SECRET}'"
MANIFEST = "slug,rows,n_attributes,n_classes\n"


@pytest.fixture(scope="session")
def bncbench(run_cli, cli_env):
    """``bncbench(*args, cwd=..., data_dir=None)``: run ``python -m bncbench`` in a process of its own
    (``run_cli``), with the data directory ``data_dir`` if given."""

    def run(*args, cwd, data_dir=None):
        return run_cli(*args, cwd=cwd, env={**cli_env, **({"BNCBENCH_DATA_DIR": str(data_dir)} if data_dir else {})})

    return run


def data_dir_with_manifest(root: Path, content: bytes) -> Path:
    store = root / "datasets"
    store.mkdir()
    (store / "manifest.csv").write_bytes(content)
    return store


CELL = ["experiment.datasets=[sklearn-iris]", "experiment.models=[nb_laplace]", "experiment.comparisons=[]"]


@pytest.fixture(scope="module")
def cell_store(tmp_path_factory, bncbench) -> Path:
    """A store holding ``CELL``'s finished run, swept once: the export and import cases copy it."""
    directory = tmp_path_factory.mktemp("cell_store")
    done = bncbench(*CELL, "tracking_uri=sqlite:///store/mlflow.db", "executor.n_jobs=1", cwd=directory)
    assert done.returncode == 0, done.stdout + done.stderr
    return directory / "store"


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (["export", *CELL, "tracking_uri=sqlite:///store/mlflow.db", "--out", "a_file"], {"a_file": b"mine"},
         "cannot write the bundle into a_file (a file)"),
        (["export", *CELL, "tracking_uri=sqlite:///store/mlflow.db", "--out", "a_file/sub"], {"a_file": b"mine"},
         "cannot write the bundle into a_file/sub (cannot use a_file/sub: Not a directory)"),
        (["export", *CELL, "tracking_uri=sqlite:///store/mlflow.db", "--out", "/proc/self/no/such"], {},
         "cannot write the bundle into /proc/self/no/such"),
        (["list", "datasets"], {"manifest": b"name,rows\nvote,435\n"}, "has no column slug, n_classes"),
        (["list", "datasets"], {"manifest": MANIFEST.encode() + b"vote,many,16,2\n"},
         "line 2 ('vote'): rows is 'many', not a whole number"),
        (["list", "datasets"], {"manifest": MANIFEST.encode() + b"vote,435,16\n"}, "n_classes is '', not a whole number"),
        (["list", "datasets"], {"manifest": "slug,rows,n_attributes,n_classes\nvoté,1,1,2\n".encode("latin-1")},
         "cannot be read as a CSV file ('utf-8' codec can't decode"),
        (["list", "datasets"], {"manifest": MANIFEST.encode() + b'"vote,435,16,2\n'}, "cannot be read as a CSV file"),
        (["import", "no_such_bundle", "tracking_uri=sqlite:///store/mlflow.db"], {}, "no_such_bundle"),
        (["import", "a_file", "tracking_uri=sqlite:///store/mlflow.db"], {"a_file": b"mine"}, "a_file"),
        (["report", *CELL, "tracking_uri=sqlite:///nowhere/mlflow.db"], {}, "no MLflow store at"),
        (["report", *CELL, f"tracking_uri={NO_SERVER}"], {}, "cannot "),
        (["export", *CELL, f"tracking_uri={NO_SERVER}"], {}, "cannot "),
        (["run", *CELL, f"tracking_uri={NO_SERVER}"], {}, "cannot open the tracking store 'http://alice:***@127.0.0.1:9'"),
        (["run", *CELL, f"tracking_uri={NO_SERVER_TOKENS}"], {},
         "cannot open the tracking store 'http://127.0.0.1:9/api;sid=***?token=***#***'"),
        (["report", *CELL, f"tracking_uri={NO_SERVER_TOKENS}"], {}, "cannot "),
        (["run", *CELL, f"experiment.name='{'é' * 101}'"], {}, "is 202 bytes long in UTF-8, over the 200"),
        (["run", *CELL, "experiment.name=" + "é" * 101], {}, "cannot parse the command-line overrides"),
        (["run", *CELL, "tracking_uri=sqlite:///a_file/mlflow.db"], {"a_file": b"mine"}, "cannot open the tracking store"),
        (["run", "--dry-run", *CELL, "cv.folds=x"], {}, "cv.folds"),
        (["run", *CELL, "tracking_uri=sqlite:///store/mlflow.db"], {"store/.mlflow.db.lock": "-> a_file", "a_file": b"mine"},
         "is a symbolic link, where bncbench keeps a lock file of its own"),
    ],
    ids=["export into a file", "export under a file", "export into /proc", "manifest without slug",
         "manifest count not a number", "manifest short row", "manifest not utf-8", "manifest open quote",
         "import a missing bundle", "import a file", "report of no store", "report of no server (password)",
         "export from no server (password)", "run on no server (password)", "run on no server (tokens)",
         "report of no server (tokens)", "name over 200 bytes",
         "override hydra cannot parse",
         "store under a file", "dry run with a bad setting", "lock file a symlink"],
)
def test_every_command_answers_bad_input_in_one_line(tmp_path, bncbench, cell_store, args, files, message):
    data_dir = None
    for name, content in files.items():
        if name == "manifest":
            data_dir = data_dir_with_manifest(tmp_path, content)
        elif isinstance(content, str):  # "-> target": a symbolic link
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).symlink_to(tmp_path / content.removeprefix("-> "))
        else:
            (tmp_path / name).write_bytes(content)
    if "tracking_uri=sqlite:///store/mlflow.db" in args and args[0] in ("export", "import"):
        shutil.copytree(cell_store, tmp_path / "store")
    done = bncbench(*args, cwd=tmp_path, data_dir=data_dir)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and SECRET not in output, output
    assert done.returncode == 2, output
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.startswith("bncbench: error: ") and message in line, output
    assert len([x for x in done.stderr.splitlines() if x.startswith("bncbench: error")]) == 1
    if "a_file" in files:
        assert (tmp_path / "a_file").read_bytes() == b"mine"  # never truncated, nor written through a link


def test_a_closed_pipe_ends_a_listing_quietly(tmp_path):
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first line: `bncbench list models | head -0`
    try:
        done = subprocess.run([sys.executable, "-m", "bncbench", "list", "models"], cwd=tmp_path, stdout=writer,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_password_in_the_tracking_uri_is_printed_nowhere_and_kept_out_of_the_workers_jobs(tmp_path, bncbench,
                                                                                            monkeypatch):
    import pickle

    from bncbench.app.sweep import destination_of

    shown = bncbench("run", "--cfg", "job", *CELL, f"tracking_uri={NO_SERVER}", cwd=tmp_path)
    assert shown.returncode == 0 and "tracking_uri: http://alice:***@127.0.0.1:9" in shown.stdout, shown.stderr
    assert SECRET not in shown.stdout + shown.stderr
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    composed = compose([*CELL, f"tracking_uri={NO_SERVER}"])
    destination = destination_of(composed.settings, composed.plan)
    assert destination.tracking_uri == "http://127.0.0.1:9" and SECRET.encode() not in pickle.dumps(destination)
    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("alice", SECRET)
