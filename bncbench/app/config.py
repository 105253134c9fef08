"""Composing an experiment, once, into its plan, with errors a user can act on.

``compose(overrides)`` is what every command starts with: Hydra composes the config with the
overrides, every setting is checked (a wrong name or value is one line naming the valid ones, not a
stack trace), and the experiment becomes a ``Plan`` of ``Cell``s (``bncbench.protocol.cell``), which
the sweep, the report, ``export`` and the cost estimate read. Hydra is imported here and nowhere below.
"""

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import get_origin

import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from bncbench.app.checks import (
    check_cell_sizes,
    check_experiment,
    check_model,
    check_overrides,
    check_overrides_apply,
    check_report,
    check_settings,
    check_truth_metrics,
    experiment_grids,
)
from bncbench.app.runs_dir import RESOLVER as RUNS_DIR_RESOLVER  # noqa: F401 (registers config.yaml's resolver)
from bncbench.app.schema import Settings, build, describe, setting_names, setting_type, unknown_setting_message
from bncbench.bnc.estimators import estimator_defaults, estimator_settings
from bncbench.core.config_files import CONFIG_NAME, config_dir
from bncbench.core.errors import ConfigError
from bncbench.data import resolve_data_dir
from bncbench.data.digest import dataset_digest
from bncbench.protocol.cell import Cell, CrossValidationSettings, Plan, canonical_model
from bncbench.protocol.models import experiment_comparisons, model_spec, reads_setting

#: The config of the estimators' settings (``estimator_settings``), which ``config.yaml``'s defaults list names.
ESTIMATOR_SETTINGS = "estimator_settings"
#: The key under which ``_dataset_specs`` composes the experiment's dataset configs.
_CELLS = "_cells"
@dataclasses.dataclass(frozen=True)
class Composed:
    """An experiment composed with its overrides: the plan of its cells, and the checked settings of where
    and how they run (places, executor, threads), typed by the schema (``bncbench.app.schema.build``)."""

    settings: Settings
    plan: Plan


def compose(overrides: Sequence[str] = ()) -> Composed:
    """Compose the primary config with command-line style ``overrides`` (``["experiment=kdb", ...]``), check
    it, and build the plan.

    Hydra composes the primary config once, and the experiment's dataset configs once more in one
    call (each under a key of its own); every model is built and resolved once
    (``bncbench.protocol.models``), then every cell is hashed (``bncbench.protocol.cell``).

    Raises
    ------
    ConfigError
        An unknown experiment, suite, dataset, model, structure or estimator name (the message lists
        the valid ones), an override or config file that does not parse, or an experiment that lacks
        its datasets or models.
    """
    overrides = list(overrides)
    check_overrides(overrides)
    ConfigStore.instance().store(name=ESTIMATOR_SETTINGS, node=estimator_settings())  # config.yaml's defaults
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="bncbench"):
        cfg = _compose(overrides)
        loader = GlobalHydra.instance().config_loader()
        check_settings(cfg)
        check_experiment(cfg, loader.get_group_options("dataset", config_name=CONFIG_NAME, overrides=overrides))
        models = experiment_models(cfg)
        check_report(cfg)
        check_overrides_apply(overrides, cfg, models)
        datasets = _dataset_specs(cfg, overrides)
        check_truth_metrics(cfg, datasets)
    with open_dict(cfg):
        del cfg["hydra"]
    settings = build(OmegaConf.to_container(cfg, resolve=True))
    plan = _plan(settings, overrides, datasets, models)
    check_cell_sizes(plan, resolve_data_dir(settings.data_dir))
    return Composed(settings, plan)


def _dataset_specs(cfg: DictConfig, overrides: list[str]) -> dict[str, dict]:
    """Each dataset config of the experiment, resolved in the place of ``dataset`` in ``cfg``.

    A plain dataset file (``_plain_dataset_file``: every one of ``conf/dataset/``) is loaded as Hydra
    loads it, from the first config folder that has it, which is what composing it would give at a
    fraction of the cost; any other (a defaults list, a ``@package`` header, a ``pkg://`` searchpath
    entry), or keys the overrides or the experiment set inside ``dataset`` itself, are composed by Hydra
    (``_composed_dataset_specs``).
    """
    names = [str(name) for name in cfg.experiment.datasets]
    folders = _config_folders(cfg)
    if cfg.get("dataset") is None and folders is not None:
        nodes = [_plain_dataset_file(folders, name) for name in names]
        if all(node is not None for node in nodes):
            return _resolved(cfg, names, nodes)
    return _composed_dataset_specs(names, overrides)


def _config_folders(cfg: DictConfig) -> list[Path] | None:
    """The folders Hydra reads bncbench's configs from, in its order: ``conf/``, then each
    ``hydra.searchpath`` folder (``check_config_folder`` refuses any other entry); None if an entry is a
    ``pkg://`` package, whose files only Hydra finds."""
    entries = [str(entry) for entry in cfg.hydra.searchpath]
    if any(entry.startswith("pkg://") for entry in entries):
        return None
    return [config_dir(), *(Path(entry.removeprefix("file://")) for entry in entries)]


#: A Hydra header line that moves a config file's content elsewhere (``# @package _global_``).
_PACKAGE_HEADER = re.compile(r"^\s*#\s*@package\b", re.MULTILINE)


def _plain_dataset_file(folders: list[Path], name: str) -> DictConfig | None:
    """``dataset/<name>.yaml`` of the first of ``folders`` that has it, loaded by ``OmegaConf.load`` as
    Hydra loads it, if composing it gives it as it is: a mapping without a defaults list or a
    ``@package`` header; else (or if no folder has it) None."""
    for folder in folders:
        path = folder / "dataset" / f"{name}.yaml"
        if path.is_file():
            node = OmegaConf.load(path)
            plain = isinstance(node, DictConfig) and "defaults" not in node
            return node if plain and not _PACKAGE_HEADER.search(path.read_text(encoding="utf-8")) else None
    return None


def _composed_dataset_specs(names: list[str], overrides: list[str]) -> dict[str, dict]:
    """The dataset configs ``names`` composed in one call as ``+dataset@_cells.dataset<i>=<name>``; where
    the overrides or the experiment set keys inside ``dataset`` itself, each composed with them, as one
    cell's config."""
    root = _compose([*overrides, *(f"+dataset@{_CELLS}.dataset{i}={name}" for i, name in enumerate(names))])
    if root.get("dataset") is not None:
        nodes = [_compose([*overrides, f"dataset={name}"]).dataset for name in names]
    else:
        nodes = [root[_CELLS][f"dataset{i}"] for i in range(len(names))]
    return _resolved(root, names, nodes)


def _resolved(root: DictConfig, names: list[str], nodes: list) -> dict[str, dict]:
    """Each dataset node, resolved in the place of ``root.dataset`` (interpolations resolve as in a
    cell's config); ``root`` is left as it was."""
    root = root.copy()
    specs = {}
    with open_dict(root):
        for name, node in zip(names, nodes, strict=True):
            root.dataset = node
            specs[name] = OmegaConf.to_container(root.dataset, resolve=True)
    return specs


def _plan(settings: Settings, overrides: list[str], datasets: dict[str, dict], models: dict[str, dict]) -> Plan:
    experiment = settings.experiment
    cv = CrossValidationSettings(**dataclasses.asdict(settings.cv))
    settings_read = _settings_read(settings, models)
    labels = {model: _label(models[model], read, cv) for model, read in settings_read.items()}
    cells = []
    for dataset, spec in datasets.items():
        data = dataset_digest(spec, settings.data_dir)
        cells += [Cell.of(dataset, model, spec, model_spec, cv, data.digest if data else None, labels[model])
                  for model, model_spec in models.items()]
    comparisons = experiment_comparisons(dataclasses.asdict(experiment), derived=settings.report.best_of)
    return Plan(
        experiment=experiment.name, cells=tuple(cells), datasets=tuple(datasets), models=tuple(models), cv=cv,
        comparisons=tuple(comparisons), metrics=tuple(experiment.metrics), report=dataclasses.asdict(settings.report),
        overrides=tuple(overrides), settings_read=settings_read,
    )


#: How a run's name shows an experiment setting its model reads (``letter/kdb5_hdp it=50000``); settings
#: in ``_SHOWN_OFF_DEFAULT`` only where they differ from the estimator's default (``backoff=value`` in the
#: kdb experiment; every m-estimate of the others backs off to the root, the default).
_LABELS = {"hdp.iterations": "it", "m_estimate.backoff": "backoff", "m_estimate.m": "m"}
_SHOWN_OFF_DEFAULT = {"m_estimate.backoff", "m_estimate.m"}


def run_label(name: str, semantic: Mapping, grids) -> str:
    """The label of a run of the model ``name`` that logged the semantic config ``semantic``
    (``bncbench.protocol.cell.semantic_of_params``) in an experiment of ``grids``: what ``Cell.label`` is for a
    sweep of that configuration (``it=50000``), read from the run; a setting the run's params hold counts as read
    from the config unless the model's grid sets it."""
    model, cv = semantic["model"], semantic["cv"]
    estimator, params = model.get("estimator"), model.get("estimator_params") or {}
    read = tuple(f"{estimator}.{parameter}" for parameter in estimator_settings().get(estimator, {})
                 if parameter in params and reads_setting(model, grids, name, estimator, parameter))
    discretisation = cv.get("discretisation") or {}
    settings = CrossValidationSettings(cv["repetitions"], cv["folds"], cv["seed"], discretisation.get("method", "mdl"),
                                       **{key: discretisation[key] for key in ("bins", "sample_rows") if key in discretisation})
    return _label(model, read, settings)


def _label(model: dict, read: tuple[str, ...], cv: CrossValidationSettings) -> str:
    """The settings that tell a cell's run apart from the same cell's runs in other configurations."""
    parts = []
    for setting in read:
        estimator, parameter = setting.split(".")
        value = model["estimator_params"][parameter]
        if setting not in _SHOWN_OFF_DEFAULT or value != estimator_defaults(estimator)[parameter]:
            parts.append(f"{_LABELS.get(setting, setting)}={value}")
    if (cv.repetitions, cv.folds, cv.seed) != (5, 2, 1):
        parts.append(f"cv={cv.repetitions}x{cv.folds},seed={cv.seed}")
    if cv.discretisation != "mdl":
        parts.append(f"ef{cv.bins},sample={cv.sample_rows}")
    return " ".join(parts)


def _settings_read(settings: Settings, models: dict[str, dict]) -> dict[str, tuple[str, ...]]:
    """For each model, the estimators' settings it takes from the config (``hdp.iterations``)."""
    return {
        name: tuple(
            f"{estimator}.{parameter}"
            for estimator in estimator_settings()
            for parameter, value in dataclasses.asdict(getattr(settings, estimator)).items()
            if value is not None and reads_setting(model, settings.experiment.grids, name, estimator, parameter)
        )
        for name, model in models.items()
    }


def _compose(overrides: list[str]) -> DictConfig:
    try:
        return hydra_compose(CONFIG_NAME, overrides=overrides, return_hydra_config=True)
    except MissingConfigException as err:
        raise ConfigError(_missing_config_message(err)) from None
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(_composition_message(err)) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"a config file is not valid YAML: {' '.join(str(err).split())}; fix that file.") from None


def experiment_models(cfg: DictConfig) -> dict[str, dict]:
    """Model name -> its config (``bncbench.protocol.models.model_spec``), for each model of the
    experiment, its estimators' parameters from their settings (``hdp.iterations``, ``estimator_settings``),
    each checked without fitting; no two models may be one classifier (their cells would share a
    ``cfg_hash``, hence their runs)."""
    name = cfg.experiment.name
    settings = {key: OmegaConf.to_container(cfg[key], resolve=True) for key in estimator_settings()}
    grids = experiment_grids(cfg)
    seen, models = {}, {}
    for model_name in map(str, cfg.experiment.models):
        try:
            model = model_spec(model_name, grids, settings)
            check_model(model_name, model)
        except ConfigError as err:
            raise ConfigError(f"experiment {name!r}: {err}") from None
        canonical = json.dumps(canonical_model(model), sort_keys=True, default=str)
        if canonical in seen:
            raise ConfigError(f"experiment {name!r}: models {seen[canonical]!r} and {model_name!r} are the same "
                              "classifier (same structure, estimator and parameters); list one of them.")
        seen[canonical] = model_name
        models[model_name] = model
    return models


def _composition_message(err: Exception) -> str:
    """One line for Hydra's refusal of an override, naming the setting: a key that is not one; a key added
    to an open mapping without ``++`` (``report.best_of={best: [...]}``); a list where a mapping belongs."""
    inner = getattr(err.__cause__, "full_key", None)  # where OmegaConf failed, inside the value given
    unknown = re.match(r"Could not override '([^']+)'", str(err))
    if unknown:
        key = inner or unknown.group(1)
        if unknown.group(1).startswith(f"{key}."):  # OmegaConf stopped at a group left null: name the whole key
            key = unknown.group(1)
        parent = key.rpartition(".")[0]
        given = re.search(r"use \+(.*)$", str(err), re.MULTILINE)
        if get_origin(setting_type(parent)) is dict:  # an open mapping: all its keys are new
            return f"Hydra adds keys to {parent} ({key}) only with ++: write ++{given.group(1)}."
        if given and unknown.group(1) in setting_names():  # a setting of a group this config leaves null
            group = unknown.group(1).split(".")[0]
            return (f"{unknown.group(1)} is a setting of each cell's {group}, which the configuration composes per "
                    f"cell: add it for every {group} of the sweep with a plus: +{given.group(1)}.")
        return unknown_setting_message(key, setting_type(parent))
    merging = re.match(r"Error merging override [^=]+=(.*)", str(err))
    if merging and setting_type(inner or "") is not None:
        return f"{inner} must be {describe(setting_type(inner))}, got {merging.group(1)}."
    return f"invalid configuration: {' '.join(str(err).split())}"


def _missing_config_message(err: MissingConfigException) -> str:
    group, _, name = (err.missing_cfg_file or "").rpartition("/")
    if group and err.options is not None:
        where = "" if group.startswith("hydra/") else f" (files in conf/{group}/)"
        valid = ", ".join(sorted(err.options)) or "none"
        return f"unknown {group} {name!r}; valid {group} names: {valid}{where}."
    return f"{str(err).splitlines()[0]} (configs are in {config_dir()})."
