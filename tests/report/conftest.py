"""Fixtures: hand-made results and a real SQLite MLflow store laid out as the runner logs it."""

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient


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


def log_cell(client, experiment_id, dataset, model, folds, status="FINISHED", start=0):
    """Log one (dataset, model) cell following the contract's MLflow layout.

    ``folds`` maps a metric to its 10 per-fold values; their mean is logged as the metric.
    """
    run = client.create_run(
        experiment_id,
        start_time=start,
        run_name=f"{dataset}/{model}",
        tags={"dataset": dataset, "model": model, "cfg_hash": f"h-{dataset}-{model}-{start}"},
    )
    run_id = run.info.run_id
    metrics = [
        Metric(f"fold/{name}", value, start + step, step)
        for name, values in folds.items()
        for step, value in enumerate(values)
    ]
    metrics += [Metric(name, sum(values) / len(values), start, 0) for name, values in folds.items()]
    client.log_batch(run_id, metrics=metrics)
    if status == "FAILED":
        client.set_tag(run_id, "error", "boom")
    if status != "RUNNING":
        client.set_terminated(run_id, status=status, end_time=start + 1)
    return run_id


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A SQLite MLflow store with three experiments.

    ``empty`` has no run. ``smoke`` (as conf/experiment/smoke.yaml) has two cells on sklearn-iris:
    nb_m_estimate beats nb_laplace. ``toy`` has models ``a`` and ``b`` on datasets d0..d3:

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
    for model, fit in [("nb_m_estimate", "good"), ("nb_laplace", "bad")]:
        log_cell(client, smoke, "sklearn-iris", model, folds[fit] | log_loss[fit], start=100)
    return uri, run_ids
