"""The typed schema of the composed config: every setting of ``conf/config.yaml`` and of the executor
configs, with its type and range, checked before anything runs.

The schema is dataclasses whose annotations are the types: ``bool``, ``int``, ``float``, ``str``,
``Literal[...]`` (a name among these), ``list[...]``, ``dict[str, ...]``, ``X | None``, a nested dataclass
(a mapping of exactly its fields), ``Any`` (checked where it is read, e.g. a model's parameters by its
estimator), and ``Annotated[int, AtLeast(n)]`` or ``Annotated[str, NonEmpty("a folder")]`` for a range. A union of
dataclasses is told apart by their ``kind`` (the executors). ``check_types`` walks a resolved config
against it: a wrong type, an unknown key or an out-of-range value is one ``ConfigError`` naming the
setting, the value and what it may be. The config's values are only read, never converted or filled
in, so what a cell hashes is what was composed.

Why not OmegaConf's structured configs: they convert instead of refusing (``reuse_runs=no`` would be
false, ``reuse_runs=1`` true, ``cv.folds='3'`` 3), do not know ``Literal`` or ``int | str``, and merging
a schema into the config would add its keys to what the cells hash.
"""

import difflib
import functools
import math
import types
from dataclasses import dataclass, fields, is_dataclass, make_dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from bncbench.bnc.estimators import estimator_settings
from bncbench.data.sources import dataset_keys
from bncbench.core.errors import ConfigError
from bncbench.protocol.cell import DISCRETISATIONS


@dataclass(frozen=True)
class AtLeast:
    """A number's lower bound."""

    minimum: int

    def allows(self, value) -> bool:
        return value >= self.minimum

    def __str__(self) -> str:
        return f">= {self.minimum}"


@dataclass(frozen=True)
class NonEmpty:
    """A string with something in it, which is ``what`` (an empty path would be the root folder or the
    working one)."""

    what: str

    def allows(self, value) -> bool:
        return bool(value.strip())

    def __str__(self) -> str:
        return self.what


Folder = Annotated[str, NonEmpty("a folder")]


@dataclass(frozen=True)
class CrossValidation:
    repetitions: Annotated[int, AtLeast(1)]
    folds: Annotated[int, AtLeast(2)]
    seed: Annotated[int, AtLeast(0)]
    discretisation: Literal[DISCRETISATIONS]
    bins: Annotated[int, AtLeast(2)]
    sample_rows: Annotated[int, AtLeast(1)]


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str


@dataclass(frozen=True)
class Experiment:
    name: str
    datasets: list[str]
    models: list[str] | None
    grids: list[dict[str, Any]]
    comparisons: list[Comparison]
    metrics: list[str]


@dataclass(frozen=True)
class Report:
    """The report's settings; their names (``draws``, ``counting``, published tables, metrics) are
    checked by ``bncbench.report.ReportOptions.check``, which knows them."""

    draws: str
    round: int | None
    alpha: float
    published: list[str]
    reference_tying: str
    counting: str
    best_of: dict[str, list[str]]


@dataclass(frozen=True)
class Suite:
    datasets: list[str]


@dataclass(frozen=True)
class LocalExecutor:
    kind: Literal["local"]
    n_jobs: int


@dataclass(frozen=True)
class SubmititLocalExecutor:
    kind: Literal["submitit_local"]
    timeout_min: Annotated[int, AtLeast(1)]
    cpus_per_task: Annotated[int, AtLeast(1)]
    array_parallelism: Annotated[int, AtLeast(1)]


@dataclass(frozen=True)
class SlurmExecutor:
    kind: Literal["slurm"]
    partition: str | None
    timeout_min: Annotated[int, AtLeast(1)]
    cpus_per_task: Annotated[int, AtLeast(1)]
    mem_gb: Annotated[int, AtLeast(1)]
    array_parallelism: Annotated[int, AtLeast(1)]
    setup: list[str]
    additional_parameters: dict[str, Any] | None


Executors = LocalExecutor | SlurmExecutor | SubmititLocalExecutor


@dataclass(frozen=True)
class OutOfCore:
    memory_gb: Annotated[float, AtLeast(0)] | Literal["auto"]
    chunk_rows: Annotated[int, AtLeast(1)] | None
    sample_rows: Annotated[int, AtLeast(1)]
    scheduler: Annotated[str, NonEmpty("local or a dask scheduler's address (tcp://host:8786)")] | None
    local_workers: Annotated[int, AtLeast(1)]


@dataclass(frozen=True)
class Settings:
    """The composed config without Hydra's node: ``config.yaml`` and the groups it chooses; each estimator's
    settings are added to it (``settings_schema``)."""

    data_dir: Folder | None
    runs_dir: Folder | None
    tracking_uri: Annotated[str, NonEmpty("the store's URI (sqlite:///<file> or http://<host>:<port>)")]
    artifact_location: Annotated[str, NonEmpty("a folder or URI")] | None
    report_dir: Folder | None
    numba_threads: Annotated[int, AtLeast(1)] | Literal["auto"]
    reuse_runs: bool
    out_of_core: OutOfCore
    cv: CrossValidation
    experiment: Experiment
    report: Report
    suite: Suite | None
    executor: Executors


def settings_schema() -> type:
    """``Settings`` with the keys of a dataset config (``dataset``: those of every source,
    ``bncbench.data.sources.dataset_keys``, checked by the dataset's source) and a node per estimator that
    declares settings (``hdp.iterations``, ``bncbench.bnc.estimators.estimator_settings``), each typed by its
    default (None: any value, which the estimator checks when the models are built)."""
    declared = tuple((name, tuple(params.items())) for name, params in estimator_settings().items())
    return _settings_schema(dataset_keys(), declared)


@functools.cache
def _settings_schema(dataset: tuple[str, ...], declared: tuple) -> type:
    nodes = [(name, make_dataclass(name, [(parameter, Any if default is None else type(default))
                                          for parameter, default in parameters], frozen=True))
             for name, parameters in declared]
    dataset_node = make_dataclass("dataset", [(key, Any) for key in dataset], frozen=True)
    return make_dataclass("Settings", [("dataset", dataset_node | None), *nodes], bases=(Settings,), frozen=True)


def check_types(values: dict, schema=None) -> None:
    """Check a resolved config (plain containers) against ``schema``.

    Raises
    ------
    ConfigError
        The first setting whose key, type or range the schema does not allow, named with its value and
        what it may be.
    """
    problem = _problem(values, schema or settings_schema(), "")
    if problem is not None:
        key, value, expected = problem
        raise ConfigError(f"{key} must be {describe(expected)}, got {value!r}.")


def build(values: dict, schema=None):
    """The checked config ``values`` (``check_types``) as an instance of ``schema`` (default: the
    settings'): each mapping of a dataclass built as that dataclass (a union of them chosen by ``kind``),
    lists and mappings of them item by item, every other value as it is."""
    return _built(values, schema or settings_schema())


def _built(value, schema):
    base = _bounds(schema)[0]
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        nodes = {get_type_hints(branch).get("kind", Literal[None]): branch
                 for branch in get_args(base) if is_dataclass(branch)}
        if value is None or not nodes:
            return value
        return _built(value, nodes[Literal[value["kind"]]] if len(nodes) > 1 else next(iter(nodes.values())))
    if is_dataclass(base):
        hints = get_type_hints(base, include_extras=True)
        return base(**{name: _built(value.get(name), kind) for name, kind in hints.items()})  # a node left out: None
    if origin is list:
        return [_built(item, get_args(base)[0]) for item in value]
    if origin is dict:
        return {name: _built(item, get_args(base)[1]) for name, item in value.items()}
    return value


def _problem(value, schema, key: str) -> tuple[str, Any, Any] | None:
    """The first ``(key, value, schema)`` of ``value`` that ``schema`` does not allow, or None."""
    base, bounds = _bounds(schema)
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        return _union_problem(value, schema, key)
    if is_dataclass(base) or origin in (list, dict):
        container = dict if is_dataclass(base) else origin
        if not isinstance(value, container) or (container is dict and not all(isinstance(k, str) for k in value)):
            return key, value, schema
        known = get_type_hints(base, include_extras=True) if is_dataclass(base) else {}
        for name, item in value.items() if container is dict else enumerate(value):
            where = f"{key}[{name}]" if container is list else f"{key}.{name}".lstrip(".")
            if is_dataclass(base) and name not in known:
                raise ConfigError(unknown_setting_message(where, base))
            found = _problem(item, known[name] if is_dataclass(base) else get_args(base)[-1], where)
            if found is not None:
                return found
        return None
    if not _is_a(value, base) or not all(bound.allows(value) for bound in bounds):
        return key, value, schema
    return None


def _union_problem(value, schema, key: str):
    """A union: executors told apart by ``kind``; ``X | None`` checked as ``X`` (null aside), a leaf that
    fails naming the whole union (``a non-empty string or null``); other unions any branch."""
    branches = get_args(schema)
    if all(is_dataclass(branch) for branch in branches) and isinstance(value, dict):
        kinds = {get_args(get_type_hints(branch)["kind"])[0]: branch for branch in branches}
        if value.get("kind") not in kinds:
            return f"{key}.kind", value.get("kind"), Literal[tuple(kinds)]
        return _problem(value, kinds[value["kind"]], key)
    if value is None and type(None) in branches:
        return None
    others = [branch for branch in branches if branch is not type(None)]
    found = [_problem(value, branch, key) for branch in others]
    if len(others) == 1 and found[0] is not None and found[0][0] != key:
        return found[0]  # inside a mapping or list: the deepest setting
    return None if None in found else (key, value, schema)


def _is_a(value, kind) -> bool:
    if kind is Any:
        return True
    if get_origin(kind) is Literal:
        return isinstance(value, str) and value in get_args(kind)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _bounds(schema) -> tuple[Any, tuple]:
    """``Annotated[int, AtLeast(1)]`` -> ``(int, (AtLeast(1),))``."""
    if get_origin(schema) is Annotated:
        return get_args(schema)[0], schema.__metadata__
    return schema, ()


def describe(schema) -> str:
    """What a value of ``schema`` is, in words: ``an integer >= 2``, ``true or false``, ``one of mdl,
    equal_frequency``, ``a list, each a mapping of a, b``."""
    base, bounds = _bounds(schema)
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(branch) for branch in get_args(base))
    if is_dataclass(base):
        return f"a mapping of {', '.join(field.name for field in fields(base))}"
    if origin is list:
        return f"a list, each {describe(get_args(base)[0])}"
    if origin is dict:
        values = get_args(base)[1]
        return "a mapping" if values is Any else f"a mapping, each value {describe(values)}"
    if origin is Literal:
        choices = get_args(base)
        return choices[0] if len(choices) == 1 else f"one of {', '.join(choices)}"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string", type(None): "null",
             Any: "anything"}[base]
    if bounds and base is str:
        return str(bounds[0])
    return " ".join([words, *map(str, bounds)])


def setting_type(key: str, schema=None):
    """The type of the setting ``key`` (``report.best_of``), or None if the schema has no such key."""
    schema = schema or settings_schema()
    for part in key.split("."):
        nodes = [schema] if is_dataclass(schema) else [branch for branch in get_args(schema) if is_dataclass(branch)]
        schema = next(
            (get_type_hints(node, include_extras=True)[part] for node in nodes if part in get_type_hints(node)), None
        )
        if schema is None:
            return None
    return schema


def setting_names(schema=None, prefix: str = "") -> list[str]:
    """The dotted names of the settings of ``schema`` (``cv.folds``, ``executor.n_jobs``), leaves only."""
    names: list[str] = []
    for name, kind in get_type_hints(schema or settings_schema()).items():
        branches = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else (kind,)
        nodes = [branch for branch in branches if is_dataclass(branch)]
        below = [found for node in nodes for found in setting_names(node, f"{prefix}{name}.")]
        names += list(dict.fromkeys(below)) or [f"{prefix}{name}"]
    return names


def unknown_setting_message(key: str, node=None) -> str:
    """``unknown setting 'cv.fold' (did you mean cv.folds?); ...`` listing the settings of the key's node
    (``node``, a dataclass of the schema) or, for a top-level key, all of them."""
    from bncbench.core.config_files import CONFIG_NAME, config_dir

    parent = key.rpartition(".")[0]
    if not is_dataclass(node) or issubclass(node, Settings) or not parent:
        known = setting_names()
        where = f"the settings are those of {config_dir() / CONFIG_NAME}.yaml"
    else:
        known = setting_names(node, f"{parent}.")
        where = f"the settings of {parent} are"
    nodes = sorted({name.split(".")[0] for name in known})
    close = difflib.get_close_matches(key, [*known, *nodes], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown setting {key!r}{hint}; {where}: {', '.join(sorted(known))}."
