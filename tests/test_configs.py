"""Every config composes: each experiment, each model, and the primary config's Hydra settings."""

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest
import yaml

from bncbench.app.config import compose, config_dir
from bncbench.core.errors import ConfigError
from bncbench.bnc.structures import structure_presets
from bncbench.protocol.models import catalogue, grid_models, model_spec
from bncbench.protocol.models import make_model
from bncbench.bnc.estimators import ESTIMATORS

EXPERIMENTS = sorted(p.stem for p in (config_dir() / "experiment").glob("*.yaml"))


@functools.cache
def experiment_cfg(experiment: str):
    """The experiment's composed config, composed once per process (on first use, not at collection)."""
    return compose([f"experiment={experiment}"]).settings


def written(experiment: str) -> dict:
    """The experiment's file as written, read without composing: its ``models`` (those its grids give where
    it names none) and its first dataset (its own, or its suite's)."""
    text = yaml.safe_load((config_dir() / "experiment" / f"{experiment}.yaml").read_text())
    datasets = text["experiment"]["datasets"]
    if datasets == "${suite.datasets}":
        suite = next(entry["override /suite"] for entry in text["defaults"] if "override /suite" in entry)
        datasets = yaml.safe_load((config_dir() / "suite" / f"{suite}.yaml").read_text())["datasets"]
    models = text["experiment"].get("models") or list(grid_models(text["experiment"]["grids"]))
    return {"models": models, "first_dataset": datasets[0]}


#: The models of every experiment, each baseline, each structure preset with Laplace estimates and
#: naive Bayes with each estimator (``test_every_experiment_composes`` checks that the experiments'
#: models read here are those they compose to).
MODELS = sorted(
    {m for e in EXPERIMENTS for m in written(e)["models"]}
    | {m for m in catalogue() if model_spec(m).get("baseline")}
    | {f"{s}_laplace" for s in structure_presets()}
    | {f"nb_{e}" for e in ESTIMATORS}
)


def test_configs_are_found():
    assert (config_dir() / "config.yaml").is_file()
    assert {"smoke", "kdb"} <= set(EXPERIMENTS)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes(name):
    cfg = experiment_cfg(name)  # composing checks every dataset, model and comparison name
    experiment = dataclasses.asdict(cfg.experiment)
    assert experiment["name"] == name
    assert experiment["models"] == written(name)["models"]  # MODELS has them all
    assert experiment["datasets"][0] == written(name)["first_dataset"]
    assert experiment["datasets"] and experiment["models"]
    assert set(experiment["metrics"]) <= {"zero_one_loss", "rmse", "log_loss", "kl_to_truth", "tv_to_truth",
                                          "peak_rss_bytes", "cpu_seconds"}


def test_default_experiment_is_smoke_with_enough_cells():
    cfg = compose([]).settings
    assert cfg.experiment.name == "smoke"
    assert list(cfg.experiment.datasets) == ["sklearn-iris", "sklearn-wine", "sklearn-breast-cancer"]
    models = set(cfg.experiment.models)
    assert {
        "nb_laplace",
        "nb_m_estimate",
        "tan_laplace",
        "tan_m_estimate",
        "kdb1_laplace",
        "kdb1_m_estimate",
    } <= models
    assert len(cfg.experiment.datasets) * len(models) >= 6


def test_kdb_experiment_compares_each_kdb_with_nb_and_tan():
    cfg = experiment_cfg("kdb")
    assert len(cfg.experiment.datasets) == 68
    models = list(cfg.experiment.models)
    kdbs = [f"kdb{k}_m_estimate" for k in range(1, 6)]
    assert models == ["nb_m_estimate", "tan_m_estimate", *kdbs]
    pairs = {(c.a, c.b) for c in cfg.experiment.comparisons}
    assert pairs == {(k, base) for k in kdbs for base in ("nb_m_estimate", "tan_m_estimate")}


@pytest.mark.parametrize("name", MODELS)
def test_every_model_config_fits(name, weka_missing):
    experiment = next((e for e in EXPERIMENTS if name in written(e)["models"]), "smoke")
    first_dataset = written(experiment)["first_dataset"]  # composing 68 datasets would add seconds
    composed = compose([f"experiment={experiment}", f"experiment.models=[{name}]", "experiment.comparisons=[]",
                        f"experiment.datasets=[{first_dataset}]"])
    assert composed.plan.models == (name,)
    model = composed.plan.cells[0].semantic()["model"]
    assert model["name"] == name
    if model.get("estimator") == "hdp":  # the config is what is checked; the chain's length is not
        params = {**model["estimator_params"], "iterations": 50}
        model = {**model, "estimator_params": {**params, **({"burn_in": 10} if params.get("burn_in") else {})}}
    if model.get("baseline") == "weka_random_forest" and weka_missing:
        pytest.skip(f"Weka is not installed here: {weka_missing}")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 3, (60, 4)).astype(str), columns=list("abcd"))
    y = np.where(X["a"] == "0", "p", "q")
    proba = make_model(model, random_state=0).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_model_names_follow_structure_and_estimator():
    for structure in ["nb", "tan", "kdb1", "kdb2", "kdb3", "kdb4", "kdb5", "skdb"]:
        for estimator in ESTIMATORS:
            spec = model_spec(f"{structure}_{estimator}")
            assert spec["estimator"] == estimator
            assert spec["structure"] == structure.rstrip("12345")
            assert spec["k"] == (int(structure[-1]) if structure[-1].isdigit() else 5 if structure == "skdb" else None)


def test_primary_config_settings():
    composed = compose([])
    cfg = composed.settings
    assert not hasattr(cfg, "hydra")
    assert cfg.executor.kind == "local" and cfg.executor.n_jobs == -1
    assert composed.plan.datasets == ("sklearn-iris", "sklearn-wine", "sklearn-breast-cancer")
    assert cfg.tracking_uri == "sqlite:///runs/mlflow.db"
    assert cfg.report_dir is None  # <runs_dir>/reports, beside the store
    assert cfg.artifact_location is None  # runs/artifacts with SQLite, the server's with an mlflow server
    assert cfg.numba_threads == "auto"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["experiment=nope"], "unknown experiment 'nope'; valid experiment names: " + ", ".join(EXPERIMENTS)),
        (["suite=nope"], "unknown suite 'nope'"),
        (["executor=nope"], "unknown executor 'nope'; valid executor names: local, slurm, submitit_local"),
        (["hydra/launcher=basic"], "cells no longer run through Hydra's launchers but an executor"),
        (["experiment.datasets=[nope]"], "unknown dataset 'nope'; valid dataset names:"),
        (["experiment.models=[nope]"], "unknown model 'nope': a model is <structure>_<estimator>"),
        (["experiment.datasets=[]"], "must be a non-empty list"),
        (["experiment.datasets=[iris,iris]"], "more than once"),
        (["experiment.models=[nb_mle]"], "not in experiment.models"),
        (["dataset=iris"], "override experiment.datasets instead"),
        (["model=nb_mle"], "override experiment.models instead"),
        (["cv.seed=1,2"], "is a sweep"),
        (["hydra.mode=RUN"], "'hydra.mode=RUN': Hydra only composes bncbench's config"),
        (["hydra.sweep.dir=/x"], "'hydra.sweep.dir=/x': Hydra only composes bncbench's config"),
        (["cv.seed=="], "cannot parse"),
    ],
)
def test_bad_overrides_name_the_problem(overrides, expected):
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[")):
        compose(overrides)


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        ("{structure: forest, estimator: mle, name: bad}", "unknown structure 'forest'; valid structures: aode, direct, fan_aic"),
        ("{structure: nb, estimator: hdp2, name: bad}", "unknown estimator 'hdp2'; valid estimators: " + ", ".join(sorted(ESTIMATORS))),
        ("{structure: nb, estimator: mle, estimator_params: {beta: [1]}, name: bad}", "does not take"),
        ("{structure: nb, estimator: laplace, estimator_params: {alpha: [-1]}, name: bad}", "alpha"),
    ],
)
def test_bad_models_are_refused_before_running(grid, expected):
    with pytest.raises(ConfigError, match=f"experiment 'smoke': .*{expected}"):
        compose([f"experiment.grids=[{grid}]", "experiment.models=[bad]", "experiment.comparisons=[]"])


def test_a_config_file_that_is_not_yaml_is_named(tmp_path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "broken.yaml").write_text("experiment:\n  models: [nb\n")
    with pytest.raises(ConfigError, match=r"not valid YAML: .*experiment/broken\.yaml"):
        compose([f"hydra.searchpath=[file://{tmp_path}]", "experiment=broken"])


def test_an_unknown_published_table_is_refused_before_running():
    with pytest.raises(ConfigError, match="unknown published table"):
        compose(["experiment=skdb", "report.published=[hdp_table9]"])
    assert list(compose(["experiment=hdp_vs_m"]).settings.report.published) == [
        "hdp_table1_class_kept", "hdp_table1", "hdp_table1_java", "hdp_table1_m1", "hdp_table1_class_kept_normalised",
        "hdp_table1_normalised", "hdp_table1_node",
    ]


@pytest.mark.parametrize(
    "overrides",
    [
        ["experiment=kdb", "hdp.iterations=500"],  # no HDP model at all
        ["experiment=tying", "hdp.iterations=500"],  # HDP models that fix their own iterations
        ["experiment=hdp_vs_m", "experiment.models=[nb_m_estimate]", "experiment.comparisons=[]", "hdp={iterations: 9}"],
    ],
)
def test_a_setting_no_model_reads_is_refused(overrides):
    with pytest.raises(ConfigError, match="would change nothing: no model of experiment"):
        compose(overrides)


@pytest.mark.parametrize("experiment", ["hdp_quick", "hdp_vs_m", "bnc_vs_rf"])
def test_hdp_iterations_on_the_command_line_reach_every_hdp_model(experiment):
    plan = compose([f"experiment={experiment}", "hdp.iterations=123"]).plan
    models = {cell.model: cell.semantic()["model"] for cell in plan.cells}
    assert set(models) == set(plan.models)
    for name, model in models.items():
        if model.get("estimator") == "hdp":
            assert model["estimator_params"]["iterations"] == 123, name
