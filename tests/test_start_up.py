"""Start-up: numba's kernels are compiled once per machine (the launching process warms the on-disk
cache, and a later process, a sweep's worker or the next run, loads every kernel instead of compiling
it), the classifier alone loads none of the tracking, config or plotting libraries, the command line
none of the numerical ones until a subcommand needs them, and the classifier's package imports no upper
layer."""

import subprocess
import sys
from pathlib import Path

import numpy as np

from bncbench.app.compile_cache import synthetic_data

WARM = """
from bncbench.app.compile_cache import warm_kernels
from bncbench.protocol.models import model_spec
models = [model_spec(name) for name in ("nb_laplace", "random_forest")]
print(warm_kernels(models)[0])
"""


def test_a_second_process_compiles_nothing(tmp_path, cli_env):
    env = {**cli_env, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # an empty cache: a fresh install

    def compilations() -> int:
        result = subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True, text=True, check=True)
        return int(result.stdout.split()[-1])

    assert compilations() > 0
    assert compilations() == 0


def test_the_synthetic_data_has_every_class_and_numeric_columns_to_cut():
    X, y = synthetic_data()
    assert sorted(y.unique()) == ["p", "q", "r"]
    assert X["a0"].isna().any() and not X.drop(columns="a0").isna().any().any()
    assert all(np.corrcoef(X[column], y.map({"p": 0, "q": 1, "r": 2}))[0, 1] ** 2 > 0.3 for column in ("x0", "x1"))


def test_the_classifier_alone_imports_no_tracking_config_or_plotting_library(cli_env):
    code = "import sys; from bncbench import BNClassifier; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in result.stdout.split()}
    assert not loaded & {"mlflow", "hydra", "omegaconf", "matplotlib", "sqlalchemy", "xgboost"}


def test_the_command_line_answers_help_without_the_numerical_libraries(cli_env):
    """``bncbench --help`` and argument errors come at once: the subcommands import what they use."""
    code = "import sys; import bncbench.app.cli; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in result.stdout.split()}
    assert not loaded & {"numba", "sklearn", "scipy", "pandas", "mlflow", "hydra", "matplotlib"}
    help_text = subprocess.run(
        [sys.executable, "-m", "bncbench", "--help"], env=cli_env, capture_output=True, text=True, check=True
    ).stdout
    assert "run" in help_text and "report" in help_text


def test_the_layers_hold():
    """The import contracts of pyproject.toml (``lint-imports``, which .ci/run also runs): each layer
    imports only those below it, MLflow is imported in tracking/ alone, Hydra in the app alone."""
    linted = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports"))], cwd=Path(__file__).resolve().parents[1],
        capture_output=True, text=True,
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "0 broken" in linted.stdout


def test_the_report_computes_without_mlflow_or_hydra(cli_env):
    """``compute_report`` from Python loads neither the tracking library nor the config one: MLflow comes
    when a store is read, Hydra never (issue 24's layers)."""
    code = "import sys; from bncbench.report import compute_report; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in result.stdout.split()}
    assert not loaded & {"mlflow", "hydra", "omegaconf", "sqlalchemy"}
