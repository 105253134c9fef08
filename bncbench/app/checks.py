"""The checks of a composed config, before anything runs: every setting's key, type and range, the
experiment's names (datasets, models, comparisons), its models' structures and estimators, and the
command-line overrides; each failure is one ``ConfigError`` naming the setting and what it may be.
"""

import difflib
from collections.abc import Sequence

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from bncbench.core.config_files import CONFIG_NAME, config_dir
from bncbench.core.errors import ConfigError
from bncbench.core.names import check_path_name
from bncbench.protocol.cell import DISCRETISATIONS
from bncbench.protocol.models import experiment_comparisons, grid_models, reads_setting

#: What an experiment's lists name, keyed by the experiment field that names them: the dataset configs
#: (``conf/dataset``) and the models (``bncbench.protocol.models``).
NAMED_GROUPS = {"datasets": "dataset", "models": "model"}

#: Top-level nodes filled by config groups rather than by ``config.yaml``'s own keys.
GROUP_NODES = ("dataset", "suite", "executor")

#: The executors of ``conf/executor/`` by their ``kind`` (``bncbench.app.executors``).
EXECUTORS = ("local", "slurm", "submitit_local")

#: Nodes of ``config.yaml`` whose keys are all its own: any other key in them is a typo.
CLOSED_NODES = ("cv", "experiment", "report")

#: Nodes of ``config.yaml`` that reach a cell only through the model configs interpolating them
#: (``iterations: ${hdp.iterations}``): overriding one that no model of the experiment reads changes nothing.
MODEL_SETTINGS = ("hdp", "m_estimate")

#: Metrics every run logs (per fold and as means), which an experiment's report may compare.
RUN_METRICS = ("zero_one_loss", "rmse", "log_loss", "fit_seconds", "predict_seconds")


def _default_models(cfg: DictConfig) -> None:
    """``experiment.models`` left null: the models of the experiment's grids, in their order."""
    if cfg.experiment.get("models") is None:
        with open_dict(cfg):
            cfg.experiment.models = list(grid_models(experiment_grids(cfg)))


def check_settings(cfg: DictConfig) -> None:
    """Check the keys and values of the settings that are not names of configs.

    Keys must be those of ``config.yaml`` (config groups aside), so that a mistyped key added with
    ``+`` is refused rather than ignored; ``cv`` must be integers with ``folds >= 2``,
    ``numba_threads`` "auto" or a positive integer, a joblib launcher's ``n_jobs`` non-zero.
    """
    primary = _primary_settings()
    for key in cfg:
        if key != "hydra" and key not in primary and key not in GROUP_NODES:
            raise ConfigError(unknown_setting_message(str(key)))
    for node in CLOSED_NODES:
        for key in cfg.get(node) or {}:
            if key not in primary[node]:
                raise ConfigError(unknown_setting_message(f"{node}.{key}"))
    try:
        for key, minimum in (("repetitions", 1), ("folds", 2), ("seed", 0), ("bins", 2), ("sample_rows", 1)):
            _check_integer(f"cv.{key}", cfg.cv[key], minimum)
        if cfg.cv.discretisation not in DISCRETISATIONS:
            raise ConfigError(
                f"cv.discretisation must be one of {', '.join(DISCRETISATIONS)}, got {cfg.cv.discretisation!r}."
            )
        threads = cfg.numba_threads
        if threads != "auto":
            _check_integer("numba_threads", threads, 1, also="or auto (a share of the cores)")
        if not isinstance(cfg.tracking_uri, str) or not cfg.tracking_uri.strip():
            raise ConfigError("tracking_uri must be set, e.g. tracking_uri=sqlite:///runs/mlflow.db.")
        if cfg.report_dir is not None and (not isinstance(cfg.report_dir, str) or not cfg.report_dir.strip()):
            raise ConfigError(
                f"report_dir must be a directory, e.g. report_dir=reports (or null: <runs_dir>/reports), "
                f"got {cfg.report_dir!r}."
            )
        check_path_name("experiment.name", cfg.experiment.name)
        check_executor(cfg.executor, cfg.tracking_uri)
    except MissingMandatoryValue as err:
        choice = OmegaConf.select(cfg, "hydra.runtime.choices.experiment", default=None)
        where = f" by experiment {choice!r} (conf/experiment/{choice}.yaml)" if choice else ""
        raise ConfigError(
            f"{err.full_key} is not set{where}; an experiment sets name, datasets and models."
        ) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"invalid configuration: {err}") from None


def check_executor(executor: DictConfig, tracking_uri: str) -> None:
    """Check the executor's kind and sizes; a cluster's cells must log to a server, not to SQLite."""
    if executor.get("kind") not in EXECUTORS:
        raise ConfigError(f"executor.kind must be one of {', '.join(EXECUTORS)}, got {executor.get('kind')!r}.")
    if executor.kind == "local":
        n_jobs = executor.get("n_jobs")
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
            raise ConfigError(
                f"executor.n_jobs must be a positive number of processes, or -1 for one per core "
                f"(-2 all but one, ...), got {n_jobs!r}."
            )
        return
    for key in ("timeout_min", "cpus_per_task", "array_parallelism"):
        _check_integer(f"executor.{key}", executor.get(key), 1)
    if executor.kind == "slurm" and tracking_uri.startswith("sqlite:"):
        raise ConfigError(
            f"tracking_uri={tracking_uri} with cells on a cluster: SQLite on a network file system "
            "is unsafe. Start an `mlflow server` and set tracking_uri=http://<host>:<port> (README: "
            "docs/cluster.md)."
        )


def _check_integer(name: str, value, minimum: int, also: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        also = f" {also}" if also else ""
        raise ConfigError(f"{name} must be an integer >= {minimum}{also}, got {value!r}.")


def check_report(cfg: DictConfig) -> None:
    """Check ``experiment.metrics``, ``experiment.comparisons`` and ``report.*`` before anything runs
    (an option the report refuses would otherwise be found only after the last cell)."""
    from bncbench.report import check_report_settings

    experiment = OmegaConf.to_container(cfg.experiment, resolve=True)
    report = OmegaConf.to_container(cfg.report, resolve=True)
    try:
        check_report_settings(
            experiment_comparisons(experiment, derived=report.get("best_of") or {}),
            experiment.get("metrics") or [],
            RUN_METRICS,
            draws=report.get("draws"),
            round=report.get("round"),
            alpha=report.get("alpha"),
            published=report.get("published"),
            reference_tying=report.get("reference_tying", "level"),
            counting=report.get("counting", "means"),
            best_of=report.get("best_of") or {},
        )
    except ConfigError as err:
        raise ConfigError(f"experiment {experiment.get('name')!r}: {err}") from None


def _primary_settings() -> dict:
    """The keys of ``config.yaml`` (without ``defaults`` and ``hydra``), with their nested keys."""
    primary = yaml.safe_load((config_dir() / f"{CONFIG_NAME}.yaml").read_text(encoding="utf-8"))
    return {k: v for k, v in primary.items() if k not in ("defaults", "hydra")}


def unknown_setting_message(key: str) -> str:
    primary = _primary_settings()
    known = [*primary, *GROUP_NODES]
    known += [f"{node}.{k}" for node, value in primary.items() if isinstance(value, dict) for k in value]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    leaves = sorted(k for k in known if k not in GROUP_NODES and not isinstance(primary.get(k), dict))
    return (
        f"unknown setting {key!r}{hint}; the settings are those of {config_dir() / CONFIG_NAME}.yaml: "
        f"{', '.join(leaves)}."
    )


def check_experiment(cfg: DictConfig, options) -> None:
    """Check that ``cfg.experiment`` names existing datasets, and lists datasets and models each once.

    ``options(group)`` lists the config names of a group.
    """
    experiment = cfg.experiment
    name = OmegaConf.select(cfg, "hydra.runtime.choices.experiment", default=None) or experiment.get("name")
    try:
        _default_models(cfg)
    except ConfigError as err:
        raise ConfigError(f"experiment {name!r}: {err}") from None
    for field, group in NAMED_GROUPS.items():
        try:
            names = experiment[field]
        except OmegaConfBaseException as err:
            raise ConfigError(f"experiment {name!r}: experiment.{field} is not set ({err}).") from None
        if not isinstance(names, (ListConfig, list)) or not names:
            raise ConfigError(
                f"experiment {name!r}: experiment.{field} must be a non-empty list of {group} names"
                + (" (or experiment.grids a list of model grids)." if group == "model" else ".")
            )
        for name_ in names:
            check_path_name(group, name_)  # a dataset's file, a model's figures
        if group == "dataset":
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


def experiment_grids(cfg: DictConfig) -> list:
    return OmegaConf.to_container(cfg.experiment.grids, resolve=True) if cfg.experiment.get("grids") else []


def check_model(name: str, model: dict) -> None:
    """Check a resolved model config's structure and estimator, or baseline (names and parameters)."""
    from bncbench.bnc.estimators import check_pairing, make_estimator
    from bncbench.bnc.structures import STRUCTURES

    where = f"model {name!r}"
    if "baseline" in model:
        from bncbench.baselines import make_baseline

        try:
            make_baseline(model["baseline"], dict(model.get("baseline_params") or {}))
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None
        return
    structure = model.get("structure")
    if not isinstance(structure, dict) and (not isinstance(structure, str) or structure not in STRUCTURES):
        raise ConfigError(
            f"{where}: unknown structure {structure!r}; valid structures: "
            f"{', '.join(sorted(STRUCTURES))}, or a mapping {{attribute: [parents]}}."
        )
    from bncbench.bnc.encoding import MISSING_MODES

    if model.get("missing", "value") not in MISSING_MODES:
        raise ConfigError(f"{where}: missing must be one of {', '.join(MISSING_MODES)}, got {model['missing']!r}.")
    k = model.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise ConfigError(f"{where}: k must be an integer >= 0 (or null), got {k!r}.")
    try:
        make_estimator(model.get("estimator"), model.get("estimator_params") or {})
        check_pairing(model.get("estimator"), structure, k)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    except (TypeError, ValueError) as err:  # a parameter of the wrong type that the estimator did not name
        raise ConfigError(
            f"{where}: invalid estimator_params {model.get('estimator_params')} for estimator "
            f"{model.get('estimator')!r}: {err}."
        ) from None


def check_overrides_apply(overrides: Sequence[str], cfg: DictConfig, models: dict[str, dict]) -> None:
    """Refuse a command-line override of a ``MODEL_SETTINGS`` key that no model of the experiment reads.

    Such a setting was given and would be ignored, e.g. ``hdp.iterations=500`` with models whose grid
    fixes their own iterations: the run would look like one at 500 iterations and be another.
    """
    grids = experiment_grids(cfg)
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element().lstrip("+~")
        estimator, _, parameter = key.partition(".")
        if estimator not in MODEL_SETTINGS:
            continue
        parameters = [parameter] if parameter else list(cfg[estimator])
        if not any(
            reads_setting(model, grids, name, estimator, p) for name, model in models.items() for p in parameters
        ):
            shown = ", ".join(list(models)[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
            raise ConfigError(
                f"'{override.input_line}' would change nothing: no model of experiment {cfg.experiment.name!r} "
                f"({shown}) reads {key}; it applies only to {estimator} models whose grid leaves "
                f"{parameter or 'it'} unset. Leave it out, or choose such models in experiment.models."
            )


def check_overrides(overrides: list[str]) -> None:
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        raise ConfigError(f"cannot parse the command-line overrides: {err}") from None
    for override in parsed:
        key = override.get_key_element().lstrip("+~")
        if key in NAMED_GROUPS.values():
            field = next(f for f, g in NAMED_GROUPS.items() if g == key)
            value = override.input_line.partition("=")[2]
            raise ConfigError(
                f"'{override.input_line}': the experiment chooses the {key}s of its cells; to run a subset, "
                f"override experiment.{field} instead, e.g. experiment.{field}=[{value}]."
            )
        if override.is_sweep_override():
            raise ConfigError(
                f"'{override.input_line}' is a sweep: an experiment already sweeps over its (dataset, model) "
                "cells, other sweeps are not supported. Write a list as key=[a,b], or add an experiment file."
            )
        if key.startswith(("hydra/launcher", "hydra.launcher")):
            raise ConfigError(
                f"'{override.input_line}': cells no longer run through Hydra's launchers but an executor: "
                "executor.n_jobs=4 (this machine), executor=slurm (a cluster), executor.timeout_min=... "
                "(see conf/executor/)."
            )
        if key.startswith("hydra") and key != "hydra.searchpath":
            raise ConfigError(
                f"'{override.input_line}': Hydra only composes bncbench's config, so its own settings would "
                "change nothing; of them only hydra.searchpath (more config folders) applies."
            )
