"""Where bncbench's Hydra configs live, and composing them with errors a user can act on.

The configs are the top-level ``conf/`` directory of a checkout. An installed (non-editable) package
carries the same files as ``bncbench/conf`` (see ``setup.py``), so the app finds them either way.

``compose(overrides)`` gives the config ``python -m bncbench <overrides>`` would run with, minus the
``hydra`` node; ``python -m bncbench.report`` uses it, and ``python -m bncbench`` calls it before
handing over to Hydra so that a wrong name is one line naming the valid ones, not a stack trace.
"""

from collections.abc import Sequence
from pathlib import Path

import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from bncbench.errors import ConfigError

CONFIG_NAME = "config"
SWEEP_RESOLVER = "bncbench.sweep"
#: Config groups an experiment's lists refer to, keyed by the experiment field that names them.
NAMED_GROUPS = {"datasets": "dataset", "models": "model"}


def config_dir() -> Path:
    """The directory holding ``config.yaml``: ``bncbench/conf`` when installed, else ``<checkout>/conf``."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / f"{CONFIG_NAME}.yaml").is_file():
            return candidate
    raise ConfigError(
        f"no {CONFIG_NAME}.yaml in {package / 'conf'} or {package.parent / 'conf'}; "
        "reinstall bncbench (pip install .) or run it from a checkout."
    )


def sweep_choices(names) -> str:
    """``[a, b]`` -> ``"a,b"``: a list of config names as the value of a Hydra choice sweep."""
    if not isinstance(names, (list, tuple, ListConfig)):
        raise ConfigError(f"expected a list of config names, got {names!r}.")
    return ",".join(str(name) for name in names)


OmegaConf.register_new_resolver(SWEEP_RESOLVER, sweep_choices, replace=True)


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """Compose the primary config with command-line style ``overrides`` and check the names in it.

    Parameters
    ----------
    overrides : sequence of str
        Hydra overrides, e.g. ``["experiment=kdb", "tracking_uri=sqlite:///x.db"]``.

    Returns
    -------
    DictConfig
        The composed config, without the ``hydra`` node, unresolved.

    Raises
    ------
    ConfigError
        An unknown experiment, suite, dataset, model, structure or estimator name (the message lists
        the valid ones), an override or config file that does not parse, or an experiment that lacks
        its datasets or models.
    """
    overrides = list(overrides)
    _check_overrides(overrides)
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="bncbench"):
        cfg = _compose(overrides)
        loader = GlobalHydra.instance().config_loader()

        def options(group):
            return loader.get_group_options(group, config_name=CONFIG_NAME, overrides=overrides)

        check_experiment(cfg, options)
        for model in cfg.experiment.models:
            check_model(str(model), _compose([*overrides, f"model={model}"]).model)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _compose(overrides: list[str]) -> DictConfig:
    try:
        return hydra_compose(CONFIG_NAME, overrides=overrides, return_hydra_config=True)
    except MissingConfigException as err:
        raise ConfigError(_missing_config_message(err)) from None
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"invalid configuration: {err}") from None
    except yaml.YAMLError as err:
        where = " ".join(str(err).split())
        raise ConfigError(f"a config file is not valid YAML: {where}; fix that file.") from None


def check_experiment(cfg: DictConfig, options) -> None:
    """Check that ``cfg.experiment`` names existing datasets and models, each once.

    ``options(group)`` lists the config names of a group.
    """
    experiment = cfg.experiment
    name = OmegaConf.select(cfg, "hydra.runtime.choices.experiment", default=None) or experiment.get("name")
    for field, group in NAMED_GROUPS.items():
        try:
            names = experiment[field]
        except OmegaConfBaseException as err:
            raise ConfigError(f"experiment {name!r}: experiment.{field} is not set ({err}).") from None
        if not isinstance(names, ListConfig) or not names:
            raise ConfigError(
                f"experiment {name!r}: experiment.{field} must be a non-empty list of {group} names."
            )
        valid = set(options(group))
        unknown = [str(n) for n in names if str(n) not in valid]
        if unknown:
            raise ConfigError(
                f"experiment {name!r}: unknown {group} {', '.join(map(repr, unknown))}; "
                f"valid {group} names: {', '.join(sorted(valid))} (files in conf/{group}/)."
            )
        repeated = sorted({str(n) for n in names if list(names).count(n) > 1})
        if repeated:
            raise ConfigError(f"experiment {name!r}: experiment.{field} lists {repeated} more than once.")
    models = {str(m) for m in experiment.models}
    for comparison in experiment.get("comparisons") or []:
        outside = [
            str(comparison.get(side)) for side in ("a", "b") if str(comparison.get(side)) not in models
        ]
        if outside:
            raise ConfigError(
                f"experiment {name!r}: comparison {OmegaConf.to_container(comparison)} names {outside}, "
                f"which are not in experiment.models ({', '.join(sorted(models))}); add them there, or "
                "leave the comparison out (experiment.comparisons=[...] or [] on the command line)."
            )


def check_model(name: str, model: DictConfig) -> None:
    """Check a model config's structure and estimator, or baseline (names and parameters), without
    fitting."""
    from bncbench.bnc.estimators import make_estimator
    from bncbench.bnc.structures import STRUCTURES

    model = OmegaConf.to_container(model, resolve=True)
    if "baseline" in model:
        from bncbench.baselines import make_baseline

        try:
            make_baseline(model["baseline"], dict(model.get("baseline_params") or {}))
        except ConfigError as err:
            raise ConfigError(f"model {name!r} (conf/model/{name}.yaml): {err}") from None
        return
    structure = model.get("structure")
    if not isinstance(structure, dict) and structure not in STRUCTURES:
        raise ConfigError(
            f"model {name!r} (conf/model/{name}.yaml): unknown structure {structure!r}; valid structures: "
            f"{', '.join(sorted(STRUCTURES))}, or a mapping {{attribute: [parents]}}."
        )
    try:
        make_estimator(model.get("estimator"), model.get("estimator_params") or {})
    except ConfigError as err:
        raise ConfigError(f"model {name!r} (conf/model/{name}.yaml): {err}") from None


def _check_overrides(overrides: list[str]) -> None:
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        raise ConfigError(f"cannot parse the command-line overrides: {err}") from None
    for override in parsed:
        key = override.get_key_element().lstrip("+~")
        if key in NAMED_GROUPS.values():
            field = next(f for f, g in NAMED_GROUPS.items() if g == key)
            raise ConfigError(
                f"'{override.input_line}': the experiment chooses the {key}s of its cells; to run a subset, "
                f"override experiment.{field} instead, e.g. "
                f"experiment.{field}=[{override.get_value_element_as_str()}]."
            )
        if override.is_sweep_override():
            raise ConfigError(
                f"'{override.input_line}' is a sweep: an experiment already sweeps over its (dataset, model) "
                "cells, other sweeps are not supported. Write a list as key=[a,b], or add an experiment file."
            )
        if key == "hydra.mode" and str(override.value()) != "MULTIRUN":
            raise ConfigError(f"'{override.input_line}': an experiment always runs as a Hydra multirun.")


def _missing_config_message(err: MissingConfigException) -> str:
    missing = err.missing_cfg_file or ""
    group, _, name = missing.rpartition("/")
    if group and err.options is not None:
        where = "" if group.startswith("hydra/") else f" (files in conf/{group}/)"
        valid = ", ".join(sorted(err.options)) or "none"
        return f"unknown {group} {name!r}; valid {group} names: {valid}{where}."
    return f"{str(err).splitlines()[0]} (configs are in {config_dir()})."
