"""Fixtures: hand-made results and a real SQLite MLflow store laid out as the runner logs it."""

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from bncbench.app.config import compose
from bncbench.protocol.cell import Plan
from bncbench.protocol.models import experiment_comparisons
from bncbench.tracking.record import CellRecord, fold_history, write_record


#: Test rows of every fold of a cell logged by ``log_cell``: a fold's errors are its rate times these.
TEST_ROWS = 10**6


def _make_results(means: dict[str, dict[str, list[float | None]]]) -> pd.DataFrame:
    rows = []
    for model, metrics in means.items():
        for i, values in enumerate(zip(*metrics.values(), strict=True)):
            if any(v is not None for v in values):
                floats = [np.nan if v is None else v for v in values]
                rows.append(
                    {"dataset": f"d{i}", "model": model, **dict(zip(metrics, floats, strict=True))}
                )
    return pd.DataFrame(rows)


@pytest.fixture
def make_results():
    """Build a results frame from ``{model: {metric: [mean on d0, mean on d1, ...]}}``.

    None is a missing value; a (dataset, model) whose values are all None gets no row at all.
    """
    return _make_results


@pytest.fixture
def cell_logger():
    """``log_cell``, for a test's own store."""
    return log_cell


def log_cell(
    client, experiment_id, dataset, model, folds, status="FINISHED", start=0, params=None, tags=None
):
    """Log one (dataset, model) cell following the contract's MLflow layout.

    ``folds`` maps a metric to its 10 per-fold values; their mean is logged as the metric. A fold's
    ``zero_one_loss`` also gives its ``errors`` out of ``TEST_ROWS`` test rows, as the runner counts them.
    ``params`` are logged as run params (the runner logs the flattened config, ``model.*``).
    ``tags`` are added to ``dataset``, ``model`` and a made-up ``cfg_hash``.
    """
    if "zero_one_loss" in folds:
        rates = folds["zero_one_loss"]
        folds = {**folds, "errors": [round(r * TEST_ROWS) for r in rates], "test_rows": [TEST_ROWS] * len(rates)}
    tags = {"dataset": dataset, "model": model, "cfg_hash": f"h-{dataset}-{model}-{start}", **(tags or {})}
    if status == "FAILED":
        tags["error"] = "boom"
    run_id = client.create_run(experiment_id, start_time=start, run_name=f"{dataset}/{model}").info.run_id
    history = fold_history({name: dict(enumerate(values)) for name, values in folds.items()}, start)
    write_record(client, run_id, CellRecord(run_id, f"{dataset}/{model}", status, start, start + 1, tags,
                                            params or {}, history=history))
    return run_id


@pytest.fixture(scope="session")
def report_plan():
    """``report_plan(name, datasets=(), models=(), comparisons=(), metrics=..., **report)``: a plan without
    cells, whose report reads each cell's latest finished run (``write_report``); a comparison may name
    a model outside ``models`` (one never run), as the report shows it."""

    def make(name, datasets=(), models=(), comparisons=(), metrics=("zero_one_loss", "rmse"), **report):
        named = [c[side] for c in comparisons if isinstance(c, dict) for side in ("a", "b") if side in c]
        expanded = experiment_comparisons({"models": [*models, *named], "comparisons": comparisons})
        settings = {"draws": "exclude", "round": None, "alpha": 0.05, **report}
        return Plan(name, (), tuple(datasets), tuple(models), comparisons=tuple(expanded), metrics=tuple(metrics),
                    report=settings)

    return make


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A SQLite MLflow store with three experiments.

    ``empty`` has no run. ``smoke`` (as conf/experiment/smoke.yaml) has two cells on sklearn-iris,
    tagged with the ``cfg_hash`` and ``data_digest`` of that configuration: nb_m_estimate beats
    nb_laplace. ``toy`` has models ``a`` and ``b`` on datasets d0..d3:

    - d0: a wins; d1: b wins; d2: draw (means equal but for summation order);
    - d3: ``b``'s only run FAILED, so d3 is missing for b;
    - (d0, a) also has an older FINISHED run with a worse loss, which must be ignored;
    - a RUNNING run (killed cell) of (d1, a) with a better loss, which must be ignored.

    Returns ``(tracking_uri, run_ids)``, run_ids of the ``toy`` runs that count, keyed by
    (dataset, model).
    """
    tmp = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{tmp}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("toy", artifact_location=(tmp / "artifacts").as_uri())
    client.create_experiment("empty", artifact_location=(tmp / "artifacts-empty").as_uri())
    folds = {
        "good": {"zero_one_loss": [0.1] * 10, "rmse": [0.3] * 10},
        "bad": {"zero_one_loss": [0.2] * 10, "rmse": [0.4] * 10},
        # same values in another order: means that differ only in the last bit
        "mixed": {"zero_one_loss": [0.05, 0.35] * 5, "rmse": [0.3, 0.5] * 5},
        "mixed_reversed": {"zero_one_loss": [0.35, 0.05] * 5, "rmse": [0.5, 0.3] * 5},
    }
    run_ids = {
        ("d0", "a"): log_cell(client, exp, "d0", "a", folds["good"], start=2000),
        ("d0", "b"): log_cell(client, exp, "d0", "b", folds["bad"], start=100),
        ("d1", "a"): log_cell(client, exp, "d1", "a", folds["bad"], start=100),
        ("d1", "b"): log_cell(client, exp, "d1", "b", folds["good"], start=100),
        ("d2", "a"): log_cell(client, exp, "d2", "a", folds["mixed"], start=100),
        ("d2", "b"): log_cell(client, exp, "d2", "b", folds["mixed_reversed"], start=100),
        ("d3", "a"): log_cell(client, exp, "d3", "a", folds["good"], start=100),
    }
    log_cell(client, exp, "d0", "a", folds["bad"], start=1000)
    log_cell(client, exp, "d3", "b", folds["good"], status="FAILED", start=100)
    log_cell(client, exp, "d1", "a", folds["good"], status="RUNNING", start=3000)
    smoke = client.create_experiment("smoke", artifact_location=(tmp / "smoke").as_uri())
    log_loss = {"good": {"log_loss": [0.5] * 10}, "bad": {"log_loss": [0.6] * 10}}
    cells = compose(["experiment=smoke"]).plan.by_key()
    for model, fit in [("nb_m_estimate", "good"), ("nb_laplace", "bad")]:
        cell = cells[("sklearn-iris", model)]
        tags = {"cfg_hash": cell.cfg_hash, "data_digest": cell.data_digest}
        log_cell(client, smoke, "sklearn-iris", model, folds[fit] | log_loss[fit], start=100, tags=tags)
    return uri, run_ids


HDP_DATASETS = [f"d{i}" for i in range(6)]
#: Fold differences A - B of nb_hdp vs nb_m_estimate on d0 (negated): see test_paired_tests.
D0_DIFFERENCES = [0.1, 0.3, 0.2, 0.2, 0.0, 0.4, 0.1, 0.1, 0.3, 0.1]


def _folds(means, spread):
    """Per dataset, 10 folds alternating mean + spread and mean - spread."""
    return [[m + spread * s for s in (1, -1) * 5] for m in means]


def _params(structure, estimator, k=1, **estimator_params):
    """The ``model.*`` run params as the runner logs them (flattened, empty mappings as '{}')."""
    params = {
        "model.structure": structure,
        "model.k": k,
        "model.structure_params": "{}",
        "model.estimator": estimator,
    }
    if estimator_params:
        params |= {f"model.estimator_params.{key}": v for key, v in estimator_params.items()}
    else:
        params["model.estimator_params"] = "{}"
    return params


@pytest.fixture(scope="session")
def hdp_store(tmp_path_factory):
    """A SQLite MLflow store with experiment ``hdp``: 6 datasets d0..d5, base loss 0.30 + 0.02 i.

    rmse means (zero_one_loss = rmse - 0.1), each cell's 10 folds at mean +- a spread:

    - nb_hdp beats nb_m_estimate everywhere (6-0-0); on d0 their fold differences are
      -D0_DIFFERENCES (nb_m_estimate 0.5 on every fold);
    - kdb5_hdp beats kdb5_m_estimate on d0..d3, loses on d4, d5 (4-0-2), every fold the same way;
    - skdb_m_estimate beats kdb5_m_estimate on every mean (6-0-0), on every fold of d0..d2 but on
      only 5 of the 10 folds of d3..d5 (fold Wilcoxon: 3-3-0);
    - five TAN-HDP models told apart only by their params (names h1..h5): level tying with 500,
      the default (5000, not logged) and 50000 iterations; single tying with 500 and 50000.
      Against the most iterations: h1 0-0-6, h2 3-0-3, h4 0-0-6; against level tying: h4 vs h1
      1-0-5, h5 vs h3 3-0-3.

    Returns the tracking URI.
    """
    tmp = tmp_path_factory.mktemp("mlflow-hdp")
    uri = f"sqlite:///{tmp}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("hdp", artifact_location=(tmp / "artifacts").as_uri())
    base = np.array([0.30 + 0.02 * i for i in range(6)])
    shift = np.array([1, 1, 1, -1, -1, -1])
    cells = {
        "nb_m_estimate": (_folds(base + 0.05, 0.01), _params("nb", "m_estimate")),
        "nb_hdp": (_folds(base, 0.02), _params("nb", "hdp")),
        "kdb5_m_estimate": (_folds(base + 0.02, 0.01), _params("kdb", "m_estimate", k=5)),
        "kdb5_hdp": (_folds(base + [0, 0, 0, 0, 0.04, 0.04], 0.02), _params("kdb", "hdp", k=5)),
        "skdb_m_estimate": (
            _folds(base[:3] + 0.02 - 0.05, 0.02) + _folds(base[3:] + 0.02 - 0.002, 0.05),
            _params("skdb", "m_estimate", k=5),
        ),
        "h1": (_folds(base + 0.03, 0.01), _params("tan", "hdp", tying="level", iterations=500)),
        "h2": (_folds(base + 0.01 * shift, 0.01), _params("tan", "hdp", tying="level")),
        "h3": (_folds(base, 0.01), _params("tan", "hdp", tying="level", iterations=50000)),
        "h4": (
            _folds(base + np.array([0.04] * 5 + [0.02]), 0.01),
            _params("tan", "hdp", tying="single", iterations=500),
        ),
        "h5": (
            _folds(base + 0.01 * shift, 0.01),
            _params("tan", "hdp", tying="single", iterations=50000),
        ),
    }
    cells["nb_m_estimate"][0][0] = [0.5] * 10
    cells["nb_hdp"][0][0] = [0.5 - d for d in D0_DIFFERENCES]
    for model, (folds, params) in cells.items():
        for dataset, rmse in zip(HDP_DATASETS, folds, strict=True):
            metrics = {"rmse": rmse, "zero_one_loss": [v - 0.1 for v in rmse]}
            log_cell(client, exp, dataset, model, metrics, start=100, params=params)
    return uri
