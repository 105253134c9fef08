"""The checks of a composed config, before anything runs: every setting's key, type and range, the
experiment's names (datasets, models, comparisons), its models' structures and estimators, and the
command-line overrides; each failure is one ``ConfigError`` naming the setting and what it may be.
"""

from collections.abc import Sequence
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from bncbench.app import some_of
from bncbench.app.schema import check_types
from bncbench.bnc.estimators import estimator_settings
from bncbench.core.config_files import config_dir
from bncbench.core.errors import ConfigError, DatasetError
from bncbench.core.metrics import TRUTH
from bncbench.core.names import check_path_name
from bncbench.protocol.cell import Plan
from bncbench.protocol.cost_features import config_features
from bncbench.protocol.models import experiment_comparisons, grid_models, reads_setting
from bncbench.tracking import tags as tag

#: What an experiment's lists name, keyed by the experiment field that names them: the dataset configs
#: (``conf/dataset``) and the models (``bncbench.protocol.models``).
NAMED_GROUPS = {"datasets": "dataset", "models": "model"}

#: Settings of ``cv`` that only ``cv.discretisation=equal_frequency`` reads.
EQUAL_FREQUENCY_SETTINGS = ("cv.bins", "cv.sample_rows")

#: Metrics every run logs (per fold and as means), which an experiment's report may compare; on a
#: synthetic dataset, the distances to the true P(y | x) (``bncbench.core.metrics.TRUTH``); and each cell's
#: peak memory and CPU time (``tag.RESOURCES``, one value a cell).
RUN_METRICS = ("zero_one_loss", "rmse", "log_loss", "fit_seconds", "predict_seconds", *TRUTH, *tag.RESOURCES)


def check_settings(cfg: DictConfig) -> None:
    """Check every setting's key, type and range against the schema (``bncbench.app.schema``), the
    experiment's name, and the executor's sizes.

    The config is resolved for the check only (``cfg`` is left as composed): a key that is not the
    schema's, even one added with ``+``, is refused rather than ignored, and so is a value of the wrong
    type (``reuse_runs=no``: a boolean is true or false).
    """
    try:
        settings = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
        values = OmegaConf.to_container(settings, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as err:
        choice = OmegaConf.select(cfg, "hydra.runtime.choices.experiment", default=None)
        where = f" by experiment {choice!r} (conf/experiment/{choice}.yaml)" if choice else ""
        raise ConfigError(f"{err.full_key} is not set{where}; an experiment sets name, datasets and models.") from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"invalid configuration: {str(err).splitlines()[0]}") from None
    check_types(values)
    check_path_name("experiment.name", values["experiment"]["name"])
    check_executor(values["executor"], values["tracking_uri"])


def check_executor(executor: dict, tracking_uri: str) -> None:
    """Check what the schema cannot: a local executor's ``n_jobs`` is not 0 and, counted from the cores when
    negative, leaves a process; a cluster's cells log to a server, not to SQLite."""
    if executor["kind"] == "local" and executor["n_jobs"] == 0:
        raise ConfigError("executor.n_jobs must be a positive number of processes, or -1 for one per core "
                          "(-2 all but one, ...), got 0.")
    if executor["kind"] == "local" and executor["n_jobs"] < 0:
        import joblib  # the executors' count of this machine's cores

        cores = joblib.cpu_count()
        if cores + 1 + executor["n_jobs"] < 1:
            raise ConfigError(f"executor.n_jobs={executor['n_jobs']} leaves no process on this machine's {cores} cores "
                              f"(-1 is one per core, -{cores} one process); give a number between -{cores} and -1, "
                              "or a positive one.")
    if executor["kind"] == "slurm" and tracking_uri.startswith("sqlite:"):
        raise ConfigError(f"tracking_uri={tracking_uri} with cells on a cluster: SQLite on a network file system "
                          "is unsafe. Start an `mlflow server` and set tracking_uri=http://<host>:<port> (README: "
                          "docs/cluster.md).")


def check_report(cfg: DictConfig) -> None:
    """Check ``experiment.metrics``, ``experiment.comparisons`` and ``report.*`` before anything runs
    (an option the report refuses would otherwise be found only after the last cell)."""
    from bncbench.report import ReportOptions

    experiment = OmegaConf.to_container(cfg.experiment, resolve=True)
    report = OmegaConf.to_container(cfg.report, resolve=True)
    try:
        comparisons = experiment_comparisons(experiment, derived=report.get("best_of") or {})
        ReportOptions.of_settings(experiment.get("metrics") or [], comparisons, report).check(RUN_METRICS)
    except ConfigError as err:
        raise ConfigError(f"experiment {experiment.get('name')!r}: {err}") from None


def check_truth_metrics(cfg: DictConfig, datasets: dict[str, dict]) -> None:
    """Refuse a report comparing a distance to the true P(y | x) (``TRUTH``) of a dataset whose truth is
    unknown: the metric exists for synthetic datasets alone."""
    truth = [metric for metric in cfg.experiment.metrics if metric in TRUTH]
    from bncbench.data.sources import dataset_source

    unknown = [name for name, spec in datasets.items() if not dataset_source(spec).knows_truth]
    if truth and unknown:
        raise ConfigError(
            f"experiment {cfg.experiment.name!r}: experiment.metrics names {', '.join(truth)}, a distance to the "
            f"true P(y | x), which only a synthetic dataset has (source: synthetic), not {', '.join(unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''}; leave {', '.join(truth)} out of experiment.metrics or run "
            "synthetic datasets alone."
        )


def check_experiment(cfg: DictConfig, dataset_names) -> None:
    """Check that ``cfg.experiment`` names existing datasets (among ``dataset_names``, the configs of the
    group ``dataset``), and lists datasets and models each once."""
    experiment = cfg.experiment
    name = OmegaConf.select(cfg, "hydra.runtime.choices.experiment", default=None) or experiment.get("name")
    try:
        if experiment.get("models") is None:  # the models of the experiment's grids, in their order
            with open_dict(cfg):
                cfg.experiment.models = list(grid_models(experiment_grids(cfg)))
    except ConfigError as err:
        raise ConfigError(f"experiment {name!r}: {err}") from None
    for field, group in NAMED_GROUPS.items():
        try:
            names = experiment[field]
        except OmegaConfBaseException as err:
            raise ConfigError(f"experiment {name!r}: experiment.{field} is not set ({err}).") from None
        if not isinstance(names, (ListConfig, list)) or not names:
            raise ConfigError(f"experiment {name!r}: experiment.{field} must be a non-empty list of {group} names"
                              + (" (or experiment.grids a list of model grids)." if group == "model" else "."))
        for name_ in names:
            check_path_name(group, name_)  # a dataset's file, a model's figures
        unknown = [str(n) for n in names if group == "dataset" and str(n) not in dataset_names]
        if unknown:
            raise ConfigError(f"experiment {name!r}: unknown {group} {', '.join(map(repr, unknown))}; "
                              f"valid {group} names: {', '.join(sorted(set(dataset_names)))} (files in conf/{group}/).")
        repeated = sorted({str(n) for n in names if list(names).count(n) > 1})
        if repeated:
            raise ConfigError(f"experiment {name!r}: experiment.{field} lists {repeated} more than once.")


def experiment_grids(cfg: DictConfig) -> list:
    return OmegaConf.to_container(cfg.experiment.grids, resolve=True) if cfg.experiment.get("grids") else []


def check_model(name: str, model: dict) -> None:
    """Check a resolved model config's structure and estimator, or baseline (names and parameters)."""
    from bncbench.baselines import make_baseline
    from bncbench.bnc.encoding import MISSING_MODES
    from bncbench.bnc.estimators import check_pairing, make_estimator
    from bncbench.bnc.structures import STRUCTURES

    structure, k = model.get("structure"), model.get("k")
    try:
        if "baseline" in model:
            make_baseline(model["baseline"], dict(model.get("baseline_params") or {}))
            return
        if not isinstance(structure, dict) and (not isinstance(structure, str) or structure not in STRUCTURES):
            raise ConfigError(f"unknown structure {structure!r}; valid structures: {', '.join(sorted(STRUCTURES))}, or "
                              "a mapping {attribute: [parents]}.")
        if model.get("missing", "value") not in MISSING_MODES:
            raise ConfigError(f"missing must be one of {', '.join(MISSING_MODES)}, got {model['missing']!r}.")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
            raise ConfigError(f"k must be an integer >= 0 (or null), got {k!r}.")
        try:
            make_estimator(model.get("estimator"), model.get("estimator_params") or {})
            check_pairing(model.get("estimator"), structure, k)
        except ConfigError:
            raise
        except (TypeError, ValueError) as err:  # a parameter of the wrong type that the estimator did not name
            raise ConfigError(f"invalid estimator_params {model.get('estimator_params')} for estimator "
                              f"{model.get('estimator')!r}: {err}.") from None
    except ConfigError as err:
        raise ConfigError(f"model {name!r}: {err}") from None


def check_overrides_apply(overrides: Sequence[str], cfg: DictConfig, models: dict[str, dict]) -> None:
    """Refuse a command-line override of an estimator's setting (``estimator_settings``) that no model of the
    experiment reads, or of an equal-frequency setting (``EQUAL_FREQUENCY_SETTINGS``) of a run discretised by MDL.

    Such a setting was given and would be ignored, e.g. ``hdp.iterations=500`` with models whose grid
    fixes their own iterations: the run would look like one at 500 iterations and be another.
    """
    grids = experiment_grids(cfg)
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element().lstrip("+~")
        if key in EQUAL_FREQUENCY_SETTINGS and cfg.cv.discretisation != "equal_frequency":
            raise ConfigError(f"'{override.input_line}' would change nothing: {key} applies only with "
                              f"cv.discretisation=equal_frequency, and this run's is {cfg.cv.discretisation}. Leave it "
                              "out, or add cv.discretisation=equal_frequency.")
        estimator, _, parameter = key.partition(".")
        if estimator not in estimator_settings():
            continue
        parameters = [parameter] if parameter else list(cfg[estimator])
        reads = (reads_setting(model, grids, name, estimator, p) for name, model in models.items() for p in parameters)
        if not any(reads):
            raise ConfigError(f"'{override.input_line}' would change nothing: no model of experiment "
                              f"{cfg.experiment.name!r} ({some_of(models)}) reads {key}; it applies only to "
                              f"{estimator} models whose grid leaves {parameter or 'it'} unset. Leave it out, or "
                              "choose such models in experiment.models.")


def check_overrides(overrides: list[str]) -> None:
    """Refuse a command-line override that would not do what it says (one line each: the override, why, what does)."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        raise ConfigError(f"cannot parse the command-line overrides: {err}") from None
    for override in parsed:
        key = override.get_key_element().lstrip("+~")
        if key in NAMED_GROUPS.values():
            field = next(f for f, g in NAMED_GROUPS.items() if g == key)
            value = override.input_line.partition("=")[2]
            raise ConfigError(f"'{override.input_line}': the experiment chooses the {key}s of its cells; to run a "
                              f"subset, override experiment.{field} instead, e.g. experiment.{field}=[{value}].")
        if (config_dir() / key).is_dir() and not override.is_delete() and not isinstance(override.value(), str):
            names = sorted(path.stem for path in (config_dir() / key).glob("*.yaml"))
            raise ConfigError(f"'{override.input_line}': {key} must name one of the configs of conf/{key}/: "
                              f"{', '.join(names)}; got {override.value()!r}.")
        if override.is_sweep_override():
            raise ConfigError(f"'{override.input_line}' is a sweep: an experiment already sweeps over its (dataset, "
                              "model) cells, other sweeps are not supported. Write a list as key=[a,b], or add an "
                              "experiment file.")
        if key.startswith(("hydra/launcher", "hydra.launcher")):
            raise ConfigError(f"'{override.input_line}': cells no longer run through Hydra's launchers but an "
                              "executor: executor.n_jobs=4 (this machine), executor=slurm (a cluster), "
                              "executor.timeout_min=... (see conf/executor/).")
        if key.startswith("hydra") and key != "hydra.searchpath":
            raise ConfigError(f"'{override.input_line}': Hydra only composes bncbench's config, so its own settings "
                              "would change nothing; of them only hydra.searchpath (more config folders) applies.")
        if key == "hydra.searchpath":
            value = override.value()
            for entry in value if isinstance(value, list) else [value]:
                check_config_folder(str(entry))


def check_config_folder(entry: str) -> None:
    """Check a ``hydra.searchpath`` entry: a folder (``file://`` or not; a ``pkg://`` package is not
    checked) whose configs are all read, i.e. YAML files in folders of the config groups of ``conf/``
    (experiment, dataset, suite, executor) that no config of ``conf/`` of the same name shadows: Hydra
    reads ``conf/`` first and skips a missing folder with a warning, so any other file would be
    silently ignored."""
    if entry.startswith("pkg://"):
        return
    if "://" in entry and not entry.startswith("file://"):
        raise ConfigError(f"hydra.searchpath entry {entry!r} must be a folder, file:///<folder> or pkg://<package>.")
    folder = Path(entry.removeprefix("file://"))
    if not folder.is_dir():
        raise ConfigError(f"hydra.searchpath entry {entry!r}: {folder} is not a folder.")
    groups = sorted(path.name for path in config_dir().iterdir() if path.is_dir())
    for path in sorted(folder.rglob("*.yaml")):
        group = path.relative_to(folder).parent.as_posix()
        never_read = f"hydra.searchpath folder {folder} holds {path.relative_to(folder)}, which is never read:"
        if group not in groups:
            raise ConfigError(f"{never_read} configs go in the folders {', '.join(groups)}. Models are not files but "
                              "named by an experiment's grids or presets (docs/experiments.md), and structures and "
                              "estimators are Python modules (docs/extending.md).")
        if (config_dir() / group / path.name).is_file():
            raise ConfigError(f"{never_read} bncbench's own {config_dir() / group / path.name} has its name and comes "
                              "first. Rename it.")


def check_cell_sizes(plan: Plan, data_dir: Path) -> None:
    """Refuse CV settings that a dataset of the plan cannot take, before any cell runs: more equal-frequency
    bins than the rows they are fitted on, or more folds than a dataset has rows. A dataset the store does not
    describe counts as the fewest rows that the folds can split."""
    cv = plan.cv
    if cv.discretisation == "equal_frequency" and cv.bins > cv.sample_rows:
        raise ConfigError(f"cv.bins={cv.bins} is more than cv.sample_rows={cv.sample_rows}, the training rows the bins "
                          "are fitted on. Use fewer bins (the SkDB paper's: 5).")
    sizes = {}
    for cell in plan.cells:
        try:
            sizes[cell.dataset] = config_features(data_dir, cell.semantic()["dataset"]).rows
        except DatasetError:
            sizes[cell.dataset] = cv.folds
    for name, rows in sizes.items():
        if rows < cv.folds:
            raise ConfigError(f"cv.folds={cv.folds} is more than the {rows} rows of dataset {name!r}: each fold tests "
                              f"some rows. Use cv.folds <= {rows}, or leave the dataset out "
                              "(experiment.datasets=[...]).")
