"""Hostile settings, class by class: each one is refused by the real command line before any cell runs,
in one line that names the setting (and its value), with exit status 2 and no traceback; a setting that
is given is used or refused, never ignored.

The command runs in this process (``bncbench.app.cli.main``), in an empty working directory, with
``--dry-run`` where a case could start a sweep if it were wrongly accepted: then it prints a plan and
the test fails, without running a cell. A few cases run as a separate process, where the exit status
and the absence of a traceback are the process's.
"""

import dataclasses

import pytest
from omegaconf import OmegaConf

from bncbench import tracking
from bncbench.app import cli
from bncbench.app.config import compose
from bncbench.app.schema import LocalExecutor, SlurmExecutor, setting_names
from bncbench.app.sweep import destination_of
from bncbench.core.config_files import config_dir
from bncbench.core.errors import ConfigError


@pytest.fixture
def refused(tmp_path, monkeypatch, capsys):
    """``refused(*args)``: run ``bncbench run --dry-run *args``; assert one error line and status 2, return it."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> str:
        status = cli.main(["run", "--dry-run", *args])
        out, err = capsys.readouterr()
        assert status == 2, out + err
        assert out == "" and "Traceback" not in err
        (line,) = err.strip().splitlines()
        assert line.startswith("bncbench: error: ")
        assert list(tmp_path.iterdir()) == []  # no store, no report, no folder
        return line

    return run


# --- wrong type ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cv=5"], "cv must be a mapping of repetitions, folds, seed, discretisation, bins, sample_rows, got 5."),
        (["report=5"], "report must be a mapping of draws, round, alpha"),
        (["hdp=5"], "hdp must be a mapping of iterations, got 5."),
        (["experiment.comparisons=5"], "experiment.comparisons must be a list, each a mapping of a, b, got 5."),
        (["experiment.comparisons=[[a,b]]"], "experiment.comparisons[0] must be a mapping of a, b, got ['a', 'b']."),
        (["experiment.grids=5"], "experiment.grids must be a list, each a mapping, got 5."),
        (["experiment.metrics=5"], "experiment.metrics must be a list, each a string, got 5."),
        (["experiment.models=nb_laplace"], "experiment.models must be a list, each a string or null, got 'nb_laplace'."),
        (["experiment.datasets=[1]"], "experiment.datasets[0] must be a string, got 1."),
        (["experiment.name=5"], "experiment.name must be a string, got 5."),
        (["report.published=hdp_table1"], "report.published must be a list, each a string, got 'hdp_table1'."),
        (["++report.best_of={best: 5}"], "report.best_of.best must be a list, each a string, got 5."),
        (["report.alpha=x"], "report.alpha must be a number, got 'x'."),
        (["report.round=1.5"], "report.round must be an integer or null, got 1.5."),
        (["cv.repetitions=abc"], "cv.repetitions must be an integer >= 1, got 'abc'."),
        (["cv.seed=1.5"], "cv.seed must be an integer >= 0, got 1.5."),
        (["cv.folds=true"], "cv.folds must be an integer >= 2, got True."),
        (["cv.folds='3'"], "cv.folds must be an integer >= 2, got '3'."),  # a string is not converted
        (["hdp.iterations=many"], "hdp.iterations must be an integer, got 'many'."),
        (["executor.n_jobs=abc"], "executor.n_jobs must be an integer, got 'abc'."),
        (["data_dir=5"], "data_dir must be a folder or null, got 5."),
        (["tracking_uri=[a]"], "tracking_uri must be the store's URI"),
        (["executor=5"], ("'executor=5': executor must name one of the configs of conf/executor/: local, slurm, "
                          "submitit_local; got 5.")),  # was a ValueError from Hydra
        (["experiment=null"], "'experiment=null': experiment must name one of the configs of conf/experiment/"),
        (["report.best_of=[a]"], "report.best_of must be a mapping, each value a list, each a string, got [a]."),
        (["experiment.grids={a: 1}"], "experiment.grids must be a list, each a mapping, got {a: 1}."),  # both were
        (["cv=[5, 2]"], "cv must be a mapping of repetitions, folds"),  # "invalid configuration: Error merging ..."
    ],
)
def test_a_value_of_the_wrong_type_is_one_line(refused, args, message):
    assert message in refused(*args)


# --- unknown key --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["+foo=1"], "unknown setting 'foo'; the settings are those of"),
        (["+cv.fold=3"], "unknown setting 'cv.fold' (did you mean cv.folds?); the settings of cv are: cv.bins,"),
        (["+report.reference=level"], "unknown setting 'report.reference' (did you mean report.reference_tying?)"),
        (["+hdp.tying=single"], "unknown setting 'hdp.tying'; the settings of hdp are: hdp.iterations."),
        (["+m_estimate.grid=1"], "unknown setting 'm_estimate.grid'"),
        (["+executor.mem_gb=4"], ("unknown setting 'executor.mem_gb' (did you mean executor.n_jobs?); the settings of "
                                   "executor are: executor.kind, executor.n_jobs.")),  # a slurm setting, not local's
        (["executor=slurm", "tracking_uri=http://127.0.0.1:1", "+executor.n_jobs=2"],
         "unknown setting 'executor.n_jobs'"),
        (["dataset.drop=[x]"], "dataset.drop is a setting of each cell's dataset, which the configuration composes per "
                               "cell: add it for every dataset of the sweep with a plus: +dataset.drop=[x]."),
        (["dataset.dorp=[x]"], "unknown setting 'dataset.dorp' (did you mean dataset.drop?); the settings are"),
        (["+dataset.foo=1"], "unknown setting 'dataset.foo' (did you mean dataset.drop?); the settings of dataset are: dataset.drop,"),
        (["experiment.comparisons=[{a: nb_laplace, c: tan_laplace}]"], "unknown setting 'experiment.comparisons[0].c'"),
        (["+suite.name=x"], "unknown setting 'suite.name'"),
        (["+experiment.model=[x]"], "unknown setting 'experiment.model' (did you mean experiment.models?)"),
        (["cv={repetitions: 5, foo: 1}"], "unknown setting 'cv.foo' (did you mean cv.folds?); the settings of cv are"),
        (["report.best_of={best: [nb_laplace, tan_laplace]}"],  # an open mapping: Hydra needs ++, and says so
         "Hydra adds keys to report.best_of (report.best_of.best) only with ++: write ++report.best_of={best: "),
    ],
)
def test_an_unknown_key_is_one_line_with_the_known_ones(refused, args, message):
    assert message in refused(*args)


# --- out of range -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cv.repetitions=0"], "cv.repetitions must be an integer >= 1, got 0."),
        (["cv.folds=1"], "cv.folds must be an integer >= 2, got 1."),
        (["cv.folds=-3"], "cv.folds must be an integer >= 2, got -3."),
        (["cv.discretisation=equal_frequency", "cv.bins=1"], "cv.bins must be an integer >= 2, got 1."),
        (["cv.discretisation=equal_frequency", "cv.sample_rows=0"], "cv.sample_rows must be an integer >= 1, got 0."),
        (["numba_threads=0"], "numba_threads must be an integer >= 1 or auto, got 0."),
        (["executor.n_jobs=0"], "executor.n_jobs must be a positive number of processes"),
        (["executor=submitit_local", "executor.timeout_min=0"], "executor.timeout_min must be an integer >= 1, got 0."),
        (["executor=slurm", "tracking_uri=http://127.0.0.1:1", "executor.mem_gb=0"],
         "executor.mem_gb must be an integer >= 1, got 0."),
        (["runs_dir="], "runs_dir must be a folder or null, got ''."),  # was a store at /mlflow.db
        (["runs_dir=' '"], "runs_dir must be a folder or null, got ' '."),
        (["data_dir="], "data_dir must be a folder or null, got ''."),
        (["report_dir="], "report_dir must be a folder or null, got ''."),
        (["artifact_location="], "artifact_location must be a folder or URI or null, got ''."),
        (["tracking_uri="], "tracking_uri must be the store's URI (sqlite:///<file> or http://<host>:<port>), got ''."),
        (["cv.folds=151"], "cv.folds=151 is more than the 150 rows of dataset 'sklearn-iris'"),
    ],
)
def test_a_value_out_of_range_is_one_line(refused, args, message):
    assert message in refused(*args)


# --- unknown name -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cv.discretisation=ef5"], "cv.discretisation must be one of mdl, equal_frequency, got 'ef5'."),
        (["report.reference_tying=bogus"], ("report.reference_tying must be one of none, single, level, same_parent, "
                                            "got 'bogus'.")),  # was ignored
        (["report.draws=maybe"], "report.draws must be one of exclude, split, got 'maybe'"),
        (["report.counting=votes"], "report.counting must be one of"),
        (["m_estimate.backoff=sideways"], "backoff must be one of ('value', 'value_to_root', 'context'), got 'sideways'"),
        (["experiment.metrics=[accuracy]"], "experiment.metrics names ['accuracy']"),
        (["experiment.metrics=[]"], "experiment.metrics is empty, so the report would compare nothing"),  # was accepted
        (["report.published=[hdp_table9]"], "unknown published table"),
        (["executor=nope"], "unknown executor 'nope'; valid executor names: local, slurm, submitit_local"),
        (["executor.kind=mpi"], "executor.kind must be one of local, slurm, submitit_local, got 'mpi'."),
    ],
)
def test_an_unknown_name_is_one_line_with_the_valid_ones(refused, args, message):
    assert message in refused(*args)


# --- booleans -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [("no", "'no'"), ("yes", "'yes'"), ("maybe", "'maybe'"), ("0", "0"), ("1", "1"), ("'true'", "'true'"),
     ("null", "None"), ("[]", "[]")],
)
def test_a_boolean_is_true_or_false(refused, value, shown):
    assert f"reuse_runs must be true or false, got {shown}." in refused(f"reuse_runs={value}")


@pytest.mark.parametrize(("value", "expected"), [("false", False), ("true", True), ("False", False)])
def test_a_boolean_given_is_the_cells(value, expected):
    composed = compose([f"reuse_runs={value}", "experiment.datasets=[sklearn-iris]", "experiment.models=[nb_laplace]",
                        "experiment.comparisons=[]"])
    assert destination_of(composed.settings, composed.plan).reuse_runs is expected


# --- settings that would be ignored -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cv.bins=10"], "'cv.bins=10' would change nothing: cv.bins applies only with cv.discretisation=equal_frequency"),
        (["cv.sample_rows=10"], "'cv.sample_rows=10' would change nothing"),
        (["experiment=kdb", "hdp.iterations=500"], "'hdp.iterations=500' would change nothing"),
        (["hydra.searchpath=[file:///nonexistent/conf]"], ("hydra.searchpath entry 'file:///nonexistent/conf': "
                                                           "/nonexistent/conf is not a folder.")),
        (["hydra.searchpath=[s3://bucket/conf]"], "hydra.searchpath entry 's3://bucket/conf' must be a folder"),
    ],
)
def test_a_setting_that_would_change_nothing_is_refused(refused, args, message):
    assert message in refused(*args)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("model/nb_mine.yaml", ("holds model/nb_mine.yaml, which is never read: configs go in the folders dataset, "
                                "executor, experiment, suite. Models are not files")),
        ("structure/chain.yaml", "holds structure/chain.yaml, which is never read"),
        ("config.yaml", "holds config.yaml, which is never read"),
        ("experiment/smoke.yaml", "holds experiment/smoke.yaml, which is never read: bncbench's own"),
        ("dataset/iris.yaml", "holds dataset/iris.yaml, which is never read: bncbench's own"),
    ],
)
def test_a_searchpath_file_that_would_be_ignored_is_refused(refused, tmp_path_factory, path, message):
    folder = tmp_path_factory.mktemp("conf")
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text("name: x\n")
    line = refused(f"hydra.searchpath=[file://{folder}]")
    assert f"hydra.searchpath folder {folder} " in line and message in line


def test_a_searchpath_dataset_and_suite_of_their_own_are_read(tmp_path):
    (tmp_path / "dataset").mkdir()
    (tmp_path / "suite").mkdir()
    (tmp_path / "dataset" / "iris_copy.yaml").write_text(
        "name: iris\nsource: store\nopenml_id: 61\nopenml_target: null\ndrop: []\n"
    )
    (tmp_path / "suite" / "mine.yaml").write_text("datasets: [iris_copy, zoo]\n")
    plan = compose([f"hydra.searchpath=[{tmp_path}]", "suite=mine", "experiment.datasets=${suite.datasets}",
                    "experiment.models=[nb_laplace]", "experiment.comparisons=[]"]).plan
    assert plan.datasets == ("iris_copy", "zoo")


def test_an_artifact_location_an_existing_experiment_cannot_take_is_refused_before_any_cell(
    tmp_path, new_store, run_cli
):
    uri = new_store(tmp_path / "store")
    client = tracking.open_store(uri)
    tracking.prepare_experiment(client, "smoke", str(tmp_path / "first"))
    kept = (tmp_path / "first" / "smoke").resolve().as_uri()
    tracking.check_artifact_location(client, "smoke", str(tmp_path / "first"))  # the same place: used
    one_cell = ["experiment.datasets=[sklearn-iris]", "experiment.models=[nb_laplace]", "experiment.comparisons=[]",
                f"tracking_uri={uri}", "executor.n_jobs=1", f"report_dir={tmp_path / 'reports'}"]
    result = run_cli(*one_cell, f"artifact_location={tmp_path / 'second'}", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"bncbench: error: artifact_location={tmp_path / 'second'}: the MLflow experiment 'smoke' of {uri} keeps "
        f"its artifacts in {kept}, set when it was created, and MLflow cannot change it. Leave artifact_location "
        "out, or run under another experiment.name or store."
    )
    assert client.search_runs([client.get_experiment_by_name("smoke").experiment_id]) == []
    assert not (tmp_path / "second").exists() and not (tmp_path / "reports").exists()


# --- sizes that would not fit in memory ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["experiment.datasets=[sklearn-iris]", "cv.folds=100000"], "cv.folds=100000 is more than the 150 rows"),
        (["cv.discretisation=equal_frequency", "cv.bins=100000000"],  # 800 MB of quantiles a column and fold
         "cv.bins=100000000 is more than cv.sample_rows=100000, the training rows the bins are fitted on."),
    ],
)
def test_a_cell_too_large_for_memory_is_refused_before_it_runs(refused, args, message):
    assert message in refused(*args)


# --- through a process --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "setting"),
    [(["reuse_runs=no"], "reuse_runs"), (["cv=5"], "cv"), (["experiment.comparisons=5"], "experiment.comparisons"),
     (["cv.folds=100000"], "cv.folds")],
)
def test_the_command_exits_2_with_one_line_and_no_traceback(tmp_path, run_cli, args, setting):
    result = run_cli(*args, cwd=tmp_path)  # no --dry-run: the sweep itself must not start
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"bncbench: error: {setting}")
    assert list(tmp_path.iterdir()) == []


# --- the schema itself --------------------------------------------------------------------------------


def test_the_schema_has_every_key_of_the_primary_config_and_the_executors():
    names = set(setting_names())
    primary = OmegaConf.load(config_dir() / "config.yaml")
    for key in primary:
        if key != "defaults":
            assert any(name == key or name.startswith(f"{key}.") for name in names), key
    for executor in (config_dir() / "executor").glob("*.yaml"):
        assert {f"executor.{key}" for key in OmegaConf.load(executor)} <= names, executor.name


def test_the_checked_config_is_built_once_into_the_schemas_frozen_dataclasses():
    """What runs reads typed settings, not the raw config: the executor chosen by its kind, nested nodes as
    their dataclasses, an estimator's settings as the node the registry declares, nothing to assign to."""
    settings = compose(["experiment=hdp_vs_m", "executor=slurm", "tracking_uri=http://127.0.0.1:5000",
                        "hdp.iterations=300"]).settings
    assert isinstance(settings.executor, SlurmExecutor) and settings.executor.mem_gb > 0
    assert settings.hdp.iterations == 300 and settings.cv.folds == 2
    comparisons = settings.experiment.comparisons
    assert comparisons and all(isinstance(comparison.a, str) for comparison in comparisons)
    assert isinstance(compose([]).settings.executor, LocalExecutor)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.cv.folds = 3
