"""The ``bncbench`` command end to end, in subprocesses: its subcommands and help, ``python -m bncbench``
(the smoke experiment, resume, failures, bad input), where a run leaves its files (``runs_dir``). The
stores a sweep leaves are built once per test session and read; a test that writes copies one. Bad
input and the listings run the command in this process (``bncbench.app.cli.main``)."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.bnc.estimators import ESTIMATORS
from bncbench.app.cli import main
from bncbench.app.config import compose, config_dir
from bncbench.app.sweep import _submitit_folder
from bncbench.app.runs_dir import artifact_location

EXPERIMENTS = sorted(p.stem for p in (config_dir() / "experiment").glob("*.yaml"))

SMOKE_DATASETS = ["sklearn-iris", "sklearn-wine", "sklearn-breast-cancer"]
SMOKE_MODELS = [
    "nb_laplace",
    "nb_m_estimate",
    "tan_laplace",
    "tan_m_estimate",
    "kdb1_laplace",
    "kdb1_m_estimate",
]
METRICS = ["zero_one_loss", "rmse", "log_loss", "fit_seconds", "predict_seconds"]


def last_line(result) -> str:
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def smoke(smoke_store):
    """The smoke experiment, run once per session on two worker processes into a new store (read only)."""
    return smoke_store.cwd, smoke_store.uri, smoke_store.result


@pytest.fixture(scope="module")
def smoke_runs(smoke):
    _, uri, _ = smoke
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("smoke")
    return client, experiment, client.search_runs([experiment.experiment_id])


@pytest.fixture
def smoke_copy(smoke_store, copy_store, tmp_path):
    """A copy of the smoke store in ``tmp_path/store``, for a test that writes: its tracking URI."""
    return copy_store(smoke_store.cwd / "store", tmp_path / "store")


def test_smoke_runs_every_cell(smoke):
    cwd, _, result = smoke
    assert result.returncode == 0, result.output
    assert "Traceback" not in result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 18 cells, 18 run, 0 skipped (finished before), 0 failed."
    )
    assert "bncbench: experiment 'smoke': 18 cells (3 datasets x 6 models): 18 to run, 0 finished before." in result.output
    assert "expected cost about" in result.output
    assert (cwd / "store" / "reports" / "smoke" / "wdl.md").is_file()  # beside the store
    assert not (cwd / "reports").exists()  # never in the working directory (a checkout's committed reports)


def test_smoke_logs_each_cell_as_one_run(smoke_runs):
    client, experiment, runs = smoke_runs
    assert sorted(r.info.run_name for r in runs) == sorted(
        f"{d}/{m}" for d in SMOKE_DATASETS for m in SMOKE_MODELS
    )
    for run in runs:
        tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
        assert run.info.status == "FINISHED"
        assert f"{tags['dataset']}/{tags['model']}" == run.info.run_name
        assert tags["structure"] == params["model.structure"]
        assert tags["estimator"] == params["model.estimator"]
        assert len(tags["cfg_hash"]) == 16
        assert params["dataset.name"] == tags["dataset"] and params["model.name"] == tags["model"]
        assert params["cv.repetitions"] == "5" and params["cv.folds"] == "2"
        assert len(json.loads(params["cv.seeds"])) == 5
        assert set(METRICS) <= set(metrics)
    assert len({r.data.tags["cfg_hash"] for r in runs}) == len(runs)
    assert len({r.data.params["cv.seeds"] for r in runs}) == 1  # one CV protocol for every cell


def test_smoke_logs_per_fold_metrics_and_their_means(smoke_runs):
    client, _, runs = smoke_runs
    run = next(r for r in runs if r.info.run_name == "sklearn-wine/tan_m_estimate")
    for metric in METRICS:
        history = client.get_metric_history(run.info.run_id, f"fold/{metric}")
        assert sorted(m.step for m in history) == list(range(10))
        assert run.data.metrics[metric] == pytest.approx(sum(m.value for m in history) / 10)


def test_smoke_logs_config_predictions_and_structures(smoke, smoke_runs, tmp_path):
    cwd, _, _ = smoke
    client, experiment, runs = smoke_runs
    assert experiment.artifact_location == (cwd / "store" / "artifacts" / "smoke").as_uri()  # beside the store
    run = next(r for r in runs if r.info.run_name == "sklearn-iris/kdb1_laplace")
    run_id = run.info.run_id
    assert sorted(a.path for a in client.list_artifacts(run_id)) == [
        "config.yaml",
        "predictions.parquet",
        "structure.json",
    ]
    local = tmp_path

    def artifact(path):
        return Path(client.download_artifacts(run_id, path, str(local)))

    config = artifact("config.yaml").read_text()
    assert "name: kdb1_laplace" in config and "${" not in config  # resolved
    predictions = pd.read_parquet(artifact("predictions.parquet"))
    assert len(predictions) == 5 * 150
    assert list(predictions.columns[:5]) == ["fold", "repetition", "row", "y_true", "y_pred"]
    assert len(predictions.columns) == 5 + 3  # one probability column per class
    structures = json.loads(artifact("structure.json").read_text())
    assert [f["fold"] for f in structures["folds"]] == list(range(10))
    assert all(len(ps) <= 1 for f in structures["folds"] for ps in f["parents"].values())  # kDB-1


def test_rerun_skips_every_finished_cell(smoke_copy, run_cli, tmp_path):
    uri = smoke_copy
    result = run_cli(f"tracking_uri={uri}", "executor.n_jobs=1", cwd=tmp_path)
    assert result.returncode == 0, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 18 cells, 0 run, 18 skipped (finished before), 0 failed."
    )
    assert (
        len(MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("smoke").experiment_id]))
        == 18
    )


def test_a_run_left_running_is_run_again(smoke_copy, run_cli, tmp_path):
    uri = smoke_copy
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("smoke").experiment_id
    (done,) = client.search_runs([experiment_id], "attributes.run_name = 'sklearn-iris/nb_laplace'")
    client.delete_run(done.info.run_id)  # as if the process was killed before the run finished:
    stale = client.create_run(experiment_id, run_name=done.info.run_name, tags=done.data.tags).info.run_id
    result = run_cli(
        f"tracking_uri={uri}", "experiment.datasets=[sklearn-iris]", "executor.n_jobs=1", cwd=tmp_path
    )
    assert result.returncode == 0, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 6 cells, 1 run, 5 skipped (finished before), 0 failed."
    )
    assert client.get_run(stale).info.status == "KILLED"
    (again,) = client.search_runs(
        [experiment_id], "attributes.run_name = 'sklearn-iris/nb_laplace' and attributes.status = 'FINISHED'"
    )
    assert again.data.tags["cfg_hash"] == done.data.tags["cfg_hash"]
    assert again.data.metrics["rmse"] == pytest.approx(done.data.metrics["rmse"])  # deterministic


def test_a_failing_cell_does_not_stop_the_others(tmp_path, run_cli, write_store, simple_schema, new_store):
    store = write_store(tmp_path / "store", {"iris": ("", simple_schema)})
    (store / "iris.csv.gz").write_bytes(b"\x1f\x8b garbage")  # a broken gzip stream
    result = run_cli(
        "experiment.datasets=[iris,sklearn-iris]",
        "experiment.models=[nb_laplace,nb_mle]",
        "experiment.comparisons=[{a: nb_laplace, b: nb_mle}]",
        f"data_dir={tmp_path / 'store'}",
        f"tracking_uri={new_store(tmp_path)}",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.output
    assert (
        last_line(result)
        == "bncbench: experiment 'smoke': 4 cells, 2 run, 0 skipped (finished before), 2 failed."
    ), result.output
    assert "bncbench: FAILED iris/nb_laplace, iris/nb_mle: " in result.output, result.output
    assert "Traceback" not in result.output
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("smoke").experiment_id])
    status = {r.info.run_name: (r.info.status, r.data.tags.get("error", "")) for r in runs}
    assert status["sklearn-iris/nb_laplace"] == ("FINISHED", "")
    assert status["iris/nb_mle"][0] == "FAILED" and "does not parse" in status["iris/nb_mle"][1]


@pytest.fixture(scope="module")
def bad_data(built_once, run_cli, write_store, simple_schema, simple_table, new_store):
    """One run over four store datasets, each broken in its own way (once per session)."""

    def build(cwd):
        store = write_store(
            cwd / "store",
            {
                "iris": ("", simple_schema),  # made unparsable below
                "zoo": (simple_table().replace("a,b,class", "a,c,class"), simple_schema),  # schema mismatch
                "tae": (simple_table().replace("a,b,class", "a,b,label"), simple_schema),  # no class column
                "haberman": (simple_table(classes=("p",)), simple_schema),  # a single class
            },
        )
        (store / "iris.csv.gz").write_bytes(b"\x1f\x8b garbage")  # a broken gzip stream, not a gzip'd file
        return run_cli(
            "experiment.datasets=[iris,zoo,tae,haberman]",
            "experiment.models=[nb_mle]",
            "experiment.comparisons=[]",
            f"data_dir={store}",
            f"tracking_uri={new_store(cwd)}",
            "executor.n_jobs=1",
            cwd=cwd,
        )

    return built_once("bad_data", build)[1]


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ("iris", "does not parse as a gzip'd CSV file"),
        ("zoo", "does not match its schema.json entry"),
        ("tae", "The class column 'class' is absent"),
        ("haberman", "has the single value 'p', so there is nothing to classify"),
    ],
)
def test_bad_data_gives_one_clear_message(bad_data, dataset, message):
    assert bad_data.returncode == 1
    assert "Traceback" not in bad_data.output
    (line,) = [
        x for x in bad_data.stdout.splitlines() if x.startswith(f"bncbench: FAILED {dataset}/nb_mle: ")
    ]
    assert message in line
    assert (
        last_line(bad_data)
        == "bncbench: experiment 'smoke': 4 cells, 0 run, 0 skipped (finished before), 4 failed."
    )


@pytest.fixture
def in_process(tmp_path, monkeypatch, capsys, cli_env):
    """``in_process(*args)``: the command ``bncbench *args`` run in this process (``bncbench.app.cli.main``, which
    the console script exits with) from ``tmp_path``: its ``returncode``, ``stdout``, ``stderr`` and ``output``.
    Whether a real process exits with the status is checked by the tests of the console script below."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BNCBENCH_DATA_DIR", cli_env["BNCBENCH_DATA_DIR"])
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)

    def run(*args: str) -> SimpleNamespace:
        status = main(list(args))
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=status, stdout=out, stderr=err, output=out + err)

    return run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["experiment=nope"], "unknown experiment 'nope'; valid experiment names: " + ", ".join(EXPERIMENTS)),
        (["experiment.datasets=[irsi]"], "unknown dataset 'irsi'; valid dataset names: abalone, adult,"),
        (["experiment.models=[nb]"], "unknown model 'nb': a model is <structure>_<estimator> (structures: aode,"),
        (["model=nb_mle"], "override experiment.models instead"),
        (
            ["tracking_uri=sqlite:///{tmp}/a_file/mlflow.db"],
            "cannot open the tracking store 'sqlite:///{tmp}/a_file/mlflow.db'",
        ),
        (["tracking_uri={tmp}/mlruns"], "is a file store"),
        (["tracking_uri=http://127.0.0.1:1"], "cannot open the tracking store 'http://127.0.0.1:1'"),
    ],
)
def test_bad_input_gives_one_line_and_status_2(tmp_path, in_process, args, message):
    (tmp_path / "a_file").write_text("")
    result = in_process(*[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("bncbench: error: ")
    assert message.format(tmp=tmp_path) in line
    assert not (tmp_path / "runs" / "artifacts").exists()  # nothing ran


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("structure", "forest", "unknown structure 'forest'; valid structures: aode, direct, fan_aic, fan_bic, kdb1"),
        ("estimator", "hdp2", "unknown estimator 'hdp2'; valid estimators: " + ", ".join(sorted(ESTIMATORS))),
    ],
)
def test_unknown_structure_or_estimator_is_refused_before_running(tmp_path, in_process, field, value, message):
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    grid = {"structure": "nb", "estimator": "mle", "name": "bad", field: value}
    experiment = {"experiment": {"name": "mine", "datasets": ["iris"], "grids": [grid]}}
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\n" + json.dumps(experiment))
    result = in_process(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=mine")
    assert result.returncode == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("bncbench: error: experiment 'mine': model 'bad': ") and message in line


@pytest.fixture(scope="session")
def bncbench(cli_env):
    """``bncbench(*args, cwd=...)``: run the console script ``bncbench`` that pyproject.toml declares (its
    entry point, called as the installed script calls it); ``result.output`` is stdout and stderr."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    module, function = pyproject["project"]["scripts"]["bncbench"].split(":")
    script = f"import sys; from {module} import {function}; sys.exit({function}())"

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "-c", script, *args], cwd=cwd, env=cli_env, capture_output=True, text=True, timeout=300
        )
        result.output = result.stdout + result.stderr
        return result

    return run


def test_help_names_each_subcommand_and_what_it_does(bncbench, tmp_path):
    result = bncbench("--help", cwd=tmp_path)
    assert result.returncode == 0, result.output
    assert result.stdout.startswith("usage: bncbench [-h] <command> ...")
    for line in (
        "run       run an experiment (default: smoke)",
        "report    write an experiment's tables again from its logged runs",
        "list      list the experiments, models, datasets or suites",
        "data      add a dataset to the data directory from its original files",
    ):
        assert line in result.stdout
    assert "hydra" not in result.stdout.lower()


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("run", "Run every (dataset, model) cell of an experiment"),
        ("report", "Write the report of an experiment"),
        ("list", "{experiments,models,datasets,suites}"),
        ("data", "Manage the datasets of the data directory"),
    ],
)
def test_subcommand_help(bncbench, tmp_path, command, says):
    result = bncbench(command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.output
    assert result.stdout.startswith(f"usage: bncbench {command} [-h]")
    assert says in " ".join(result.stdout.split())
    assert not (tmp_path / "runs").exists()  # help runs nothing


def test_run_shows_the_composed_config_or_the_plan_and_runs_nothing(bncbench, in_process, tmp_path):
    shown = in_process("run", "--cfg", "job", "experiment=kdb")
    assert shown.returncode == 0, shown.output
    assert "  name: kdb\n" in shown.stdout  # the composed config, and nothing run
    assert list(tmp_path.iterdir()) == []
    wrong = bncbench("run", "--cfg", "job", "experiment=nope", cwd=tmp_path)  # the console script's status
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("bncbench: error: unknown experiment 'nope'; valid experiment names: ")
    plan = in_process("run", "--dry-run", "experiment=kdb")
    assert plan.returncode == 0, plan.output
    assert plan.stdout.startswith("bncbench: experiment 'kdb': 476 cells (68 datasets x 7 models): 476 to run, 0 finished")
    assert "bncbench: expected cost about " in plan.stdout
    assert list(tmp_path.iterdir()) == []


def test_unknown_subcommand_is_one_clear_error(bncbench, tmp_path):
    result = bncbench("rnu", "experiment=kdb", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        "bncbench: error: argument <command>: invalid choice: 'rnu' (choose from 'run', 'report', 'list', 'export', 'import', "
        "'data')"
    )


def test_list_models_gives_structure_and_estimator(in_process):
    result = in_process("list", "models")
    assert result.returncode == 0, result.output
    lines = {line.split()[0]: " ".join(line.split()[1:]) for line in result.stdout.splitlines()}
    assert {"nb_laplace", "kdb5_hdp", "skdb_m_estimate", "direct_hpb", "xgboost"} <= set(lines)
    assert "tan_manb" not in lines  # MANB takes naive Bayes only
    assert lines["kdb5_hdp"] == "structure=kdb k=5 estimator=hdp iterations=5000 (hdp.iterations)"
    assert lines["fan_aic_laplace"] == "structure=tan score=aic estimator=laplace"
    assert lines["kdb5_hdp_single_it500"] == "structure=kdb k=5 estimator=hdp iterations=500 tying=single"
    assert lines["random_forest_raw"].startswith("baseline=random_forest n_estimators=100")
    assert lines["random_forest_raw"].endswith("discretise=false")


@pytest.mark.parametrize(
    ("kind", "name", "description"),
    [
        ("experiments", "smoke", "3 datasets x 6 models (suite sklearn)"),
        ("experiments", "kdb", "68 datasets x 7 models (suite all)"),
        ("datasets", "adult", "48842 rows, 14 attributes, 2 classes"),  # from the store's manifest.csv
        ("datasets", "sklearn-iris", "source sklearn"),
        ("suites", "small", "12 datasets"),
    ],
)
def test_list_names_with_one_line_each(in_process, kind, name, description):
    result = in_process("list", kind)
    assert result.returncode == 0, result.output
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == sorted(p.stem for p in (config_dir() / kind.removesuffix("s")).glob("*.yaml"))
    (line,) = [line for line in result.stdout.splitlines() if line.split()[0] == name]
    assert line.split(maxsplit=1)[1] == description


def test_list_datasets_names_its_data_directory_and_says_when_it_is_missing(in_process, tmp_path, cli_env):
    """``list datasets`` was silent when the data directory was missing, and ``data_dir=`` raised a traceback
    (issue 42)."""
    result = in_process("list", "datasets", f"data_dir={tmp_path / 'absent'}")
    assert result.returncode == 0, result.output
    assert result.stderr.startswith(f"bncbench: the data directory {tmp_path / 'absent'} does not exist: a run "
                                    "fetches the datasets with an OpenML id into it on first use")
    assert "adult                  source store (OpenML 1590)" in result.stdout
    result = in_process("list", "datasets")  # BNCBENCH_DATA_DIR: the shared datasets
    assert result.stderr == (f"bncbench: the data directory {Path(cli_env['BNCBENCH_DATA_DIR']).resolve()} holds 68 "
                             "of the datasets listed.\n")
    for args, allowed in [(("models", "x=1"), "no override"), (("datasets", "seed=3"), "data_dir=... alone")]:
        result = in_process("list", *args)
        assert result.returncode == 2 and result.stderr == (
            f"bncbench: error: bncbench list {args[0]} takes {allowed}, got '{args[1]}'.\n")


@pytest.mark.parametrize(
    ("overrides", "store", "files"),
    [
        ([], "sqlite:///runs/mlflow.db", "runs"),
        (["runs_dir=/data/b"], "sqlite:////data/b/mlflow.db", "/data/b"),
        (["tracking_uri=sqlite:////data/a/x.db"], "sqlite:////data/a/x.db", "/data/a"),  # beside the database
        (["runs_dir=/data/b", "tracking_uri=sqlite:////data/a/x.db"], "sqlite:////data/a/x.db", "/data/b"),
        (["tracking_uri=http://host:5000"], "http://host:5000", "runs"),
    ],
)
def test_run_files_follow_runs_dir_or_the_sqlite_store(overrides, store, files):
    composed = compose(overrides)
    cfg = composed.settings
    assert cfg.tracking_uri == store
    assert str(_submitit_folder(cfg, composed.plan)).startswith(f"{files}/submitit/smoke/")
    server = store.startswith("http")
    assert artifact_location(cfg) == (None if server else f"{files}/artifacts")  # a server keeps its own


KDB_CELLS = [
    "experiment=kdb",
    "experiment.datasets=[iris]",
    "experiment.models=[nb_m_estimate,kdb1_m_estimate]",
    "experiment.comparisons=[{a: kdb1_m_estimate, b: nb_m_estimate}]",
]


@pytest.fixture(scope="module")
def elsewhere(built_once, bncbench):
    """``bncbench run`` from directory B with its SQLite store and report in directory A (once per session)."""

    def build(root):
        (root / "a").mkdir()
        (root / "b").mkdir()
        return bncbench("run", *overrides(root), "executor.n_jobs=1", cwd=root / "b")

    def overrides(root):
        return [*KDB_CELLS, f"tracking_uri=sqlite:///{root / 'a'}/mlflow.db", f"report_dir={root / 'a'}/reports"]

    root, result = built_once("elsewhere", build)
    return root / "a", root / "b", overrides(root), result


def test_a_store_elsewhere_leaves_nothing_in_the_working_directory(elsewhere):
    a, b, _, result = elsewhere
    assert result.returncode == 0, result.output
    assert last_line(result) == "bncbench: experiment 'kdb': 2 cells, 2 run, 0 skipped (finished before), 0 failed."
    assert list(b.iterdir()) == []
    files = {p.name for p in a.iterdir()}
    assert {"artifacts", "mlflow.db", "reports"} <= files and "hydra" not in files  # no job folders any more
    experiment = MlflowClient(f"sqlite:///{a}/mlflow.db").get_experiment_by_name("kdb")
    assert experiment.artifact_location == (a / "artifacts" / "kdb").as_uri()


def test_a_sweep_says_how_to_browse_its_runs(elsewhere):
    a, _, _, result = elsewhere
    experiment = MlflowClient(f"sqlite:///{a}/mlflow.db").get_experiment_by_name("kdb")
    assert f"bncbench: browse the runs: mlflow ui --backend-store-uri sqlite:///{a}/mlflow.db\n" in result.stdout
    link = f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs?workflowType=machine_learning"
    assert f"bncbench: then open {link}&viewStateShareKey=bncbench\n" in result.stdout
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"  # the UI's runs view
    assert experiment.tags["mlflow.note.content"].startswith(
        "bncbench experiment `kdb`: 1 datasets x 2 models, 5x2 cross-validation (seed 1)."
    )


def test_report_subcommand_writes_the_report_from_the_store(elsewhere, bncbench, tmp_path):
    a, _, overrides, _ = elsewhere
    result = bncbench("report", *overrides, f"report_dir={tmp_path}", cwd=tmp_path)
    assert result.returncode == 0, result.output
    assert result.stdout == f"report written to {tmp_path / 'kdb'}\n"
    wdl = (tmp_path / "kdb" / "wdl.md").read_text()
    assert "| kdb1_m_estimate vs nb_m_estimate |" in wdl
    assert (tmp_path / "kdb" / "wdl.md").read_text() == (a / "reports" / "kdb" / "wdl.md").read_text()
