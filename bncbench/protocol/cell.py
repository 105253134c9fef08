"""The cells of an experiment and the ``cfg_hash`` that identifies each: one ``Plan`` of ``Cell``s.

Composing an experiment (``bncbench.app.config``, Hydra, once) yields a ``Plan``: every consumer (the
sweep, its cost estimate, the report, ``list``, ``export``, reuse) reads the cells from it and none
composes again. A cell is one (dataset, model) cross-validation with everything that determines its
results, resolved: the dataset's config, the model's config and the CV settings.

A finished cell is skipped on resume, and the report reads a cell's run, by its ``cfg_hash``: two
configs that build the same classifier on the same data under the same protocol must hash the same.
So the hash is taken over ``canonical_model``'s form of the model: without its name (renaming or
regrouping models never invalidates a finished cell), without ``k`` where the structure ignores it and
with its default where it is left out, with the estimator's defaults written out and the structure's
defaults left out (``{}`` and ``{loss: rmse}`` are one ``skdb``). The two directions are those of the
hashes the committed bundles were logged with (estimator defaults were always written out, structure
parameters never), so that no finished cell runs again; the one model whose preset wrote a structure
default out, ``aode`` (``frequency_limit: 1``), hashes anew since (no experiment ran it).
"""

import contextlib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bncbench.bnc.estimators import ESTIMATORS, estimator_defaults
from bncbench.bnc.structures import STRUCTURES, structure_class, structure_defaults, structure_uses_k

#: The parts of a cell's config that determine its results, in the order they are logged as params.
SEMANTIC_KEYS = ("dataset", "model", "cv")
#: Params the runner logs that follow from the semantic config rather than belong to it.
DERIVED_PARAMS = ("cv.seeds",)
_INTEGER = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?|-?inf|nan")
#: Params whose text is a constant's.
_CONSTANTS = {"True": True, "False": False, "None": None}
#: How the numeric attributes of a training fold are discretised (``cv.discretisation``).
DISCRETISATIONS = ("mdl", "equal_frequency")


@dataclass(frozen=True)
class CrossValidationSettings:
    """``repetitions`` x stratified ``folds``-fold cross-validation, the repetitions' seeds derived
    from ``seed`` (``bncbench.protocol.cross_validation.repetition_seeds``), the numeric attributes
    discretised per training fold by ``discretisation``: ``mdl`` (Fayyad & Irani), or
    ``equal_frequency`` into ``bins`` bins fitted on a seeded sample of at most ``sample_rows``
    training rows (the SkDB paper's EF5, Sect. 3). ``bins`` and ``sample_rows`` are read by
    ``equal_frequency`` only.

    ``as_dict`` (hence ``cfg_hash``) holds the discretisation only off the default, MDL: the hashes
    logged before it was a setting are those of MDL."""

    repetitions: int = 5
    folds: int = 2
    seed: int = 1
    discretisation: str = "mdl"
    bins: int = 5
    sample_rows: int = 100_000

    def as_dict(self) -> dict:
        protocol = {"repetitions": self.repetitions, "folds": self.folds, "seed": self.seed}
        if self.discretisation != "mdl":
            protocol["discretisation"] = {"method": self.discretisation, **self.discretiser_params()}
        return protocol

    def discretiser_params(self) -> dict:
        """The parameters the discretisation reads: ``{}`` for MDL."""
        return {"bins": self.bins, "sample_rows": self.sample_rows} if self.discretisation != "mdl" else {}


@dataclass(frozen=True)
class Cell:
    """One (dataset, model) cell of an experiment, resolved."""

    dataset: str  # the names the experiment lists: the dataset's config name
    model: str  # and the model's name
    dataset_spec: Mapping = field(repr=False)  # conf/dataset/<name>.yaml, resolved
    model_spec: Mapping = field(repr=False)  # structure and estimator, or baseline, resolved
    cv: CrossValidationSettings = field(repr=False)
    cfg_hash: str = ""  # semantic_hash of the three
    #: The digest of the dataset file as it is now (``bncbench.data.digest``); None when the data directory has
    #: no file for it (it is fetched when loaded, or the report reads the version its latest run read).
    data_digest: str | None = None
    #: What tells this cell's run apart from runs of the same cell in other configurations: the experiment
    #: settings its model reads and CV settings other than 5x2 with seed 1 (``it=50000 cv=1x2,seed=7``); empty
    #: when there are none.
    label: str = ""

    @classmethod
    def of(cls, dataset: str, model: str, dataset_spec: Mapping, model_spec: Mapping,
           cv: CrossValidationSettings, data_digest: str | None, label: str = "") -> "Cell":
        """The cell with its ``cfg_hash`` computed."""
        semantic = {"dataset": dataset_spec, "model": model_spec, "cv": cv.as_dict()}
        return cls(dataset, model, _frozen(dataset_spec), _frozen(model_spec), cv, semantic_hash(_plain(semantic)),
                   data_digest, label)

    @property
    def name(self) -> str:
        """``<dataset>/<model>``: the cell."""
        return f"{self.dataset}/{self.model}"

    @property
    def run_name(self) -> str:
        """The name of the cell's run: ``letter/kdb5_hdp it=50000``, its name and ``label``."""
        return f"{self.name} {self.label}" if self.label else self.name

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset, self.model)

    def semantic(self) -> dict:
        """The cell's semantic config as plain data: ``{"dataset": ..., "model": ..., "cv": ...}``."""
        return {"dataset": _plain(self.dataset_spec), "model": _plain(self.model_spec), "cv": self.cv.as_dict()}

    @property
    def params(self) -> dict[str, str]:
        """The semantic config flattened, as a run logs it as params (``flatten``)."""
        return flatten(self.semantic())


@dataclass(frozen=True)
class Plan:
    """The cells of one experiment in one configuration, in the order they run."""

    experiment: str  # experiment.name: the MLflow experiment and the report's folder
    cells: tuple[Cell, ...]
    datasets: tuple[str, ...]  # the experiment's lists, in their order (the report's rows and columns)
    models: tuple[str, ...]
    cv: CrossValidationSettings = CrossValidationSettings()  # the protocol of every cell
    comparisons: tuple[Mapping, ...] = ()  # {a: model, b: model}, patterns expanded over the models
    metrics: tuple[str, ...] = ()  # those the report compares
    report: Mapping = field(default_factory=dict)  # the report's settings (report.*)
    overrides: tuple[str, ...] = ()  # those the plan was composed from (the report says how to regenerate it)
    #: For each model, the experiment's settings it takes a parameter from (``("hdp.iterations",)``).
    settings_read: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def by_key(self) -> dict[tuple[str, str], Cell]:
        """``{(dataset, model): cell}``."""
        return {cell.key: cell for cell in self.cells}

    def __len__(self) -> int:
        return len(self.cells)


def semantic_hash(semantic: Mapping) -> str:
    """``cfg_hash`` of a semantic config (``Cell.semantic``): equal configs, in any key order, give
    equal hashes; a dataset's ``store_format`` (the file format it is written in) is left out."""
    canonical = {**semantic, "model": canonical_model(semantic["model"]),
                 # how the store holds the dataset is not what the cell computes: its data digest names the file read
                 "dataset": {key: value for key, value in semantic["dataset"].items() if key != "store_format"}}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def canonical_model(model: Mapping) -> dict:
    """A resolved model config in the form two configs of the same classifier share (see the module).

    ``missing`` is left out at its default, ``"value"`` (``BNClassifier(missing=...)``), which every
    model had before the setting existed. An estimator parameter the estimator declares ``added_later``
    (``bncbench.bnc.estimators.Estimator``) is left out where it has the declared value, so that the hash
    stays the one logged before the parameter existed."""
    canonical = {key: _plain(value) for key, value in model.items() if key != "name"}
    if canonical.get("missing") == "value":
        del canonical["missing"]
    structure = canonical.get("structure")
    if isinstance(structure, str) and structure in STRUCTURES:
        if not structure_uses_k(structure):
            canonical["k"] = None
        elif canonical.get("k") is None:
            canonical["k"] = structure_class(structure).defaults()["k"]
        defaults = structure_defaults(structure)
        canonical["structure_params"] = {
            key: value for key, value in (canonical.get("structure_params") or {}).items()
            if key not in defaults or defaults[key] != value
        }
    if canonical.get("estimator") in ESTIMATORS:  # an unknown one fails its cell, whatever its hash
        added_later = ESTIMATORS[canonical["estimator"]].added_later
        params = {**estimator_defaults(canonical["estimator"]), **(canonical.get("estimator_params") or {})}
        canonical["estimator_params"] = {
            key: value for key, value in params.items() if key not in added_later or added_later[key] != value
        }
    return canonical


def flatten(config: Mapping, prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``; lists and empty mappings become JSON text."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (Mapping, list, tuple)):
            flat[name] = json.dumps(_plain(value), default=str)
        else:
            flat[name] = str(value)
    return flat


def semantic_of_params(params: Mapping[str, str]) -> dict:
    """The semantic config a run logged as params (``flatten``'s inverse), each value read back from
    its text (``"5"`` -> 5, ``"None"`` -> None, ``"[]"`` -> []).

    Raises
    ------
    ValueError
        The params are not those of a cell: a part of ``SEMANTIC_KEYS`` is missing, or a name is both a
        value and a group of values (``model.k`` and ``model.k.x``).
    """
    semantic = {}
    for name, text in sorted(params.items()):
        if name.split(".")[0] not in SEMANTIC_KEYS or name in DERIVED_PARAMS:
            continue
        *groups, key = name.split(".")
        node = semantic
        for group in groups:
            node = node.setdefault(group, {})
            if not isinstance(node, dict):
                raise ValueError(f"param {name!r} is inside {group!r}, which is a value")
        if key in node:
            raise ValueError(f"param {name!r} is both a value and a group of values")
        node[key] = _value_of_text(text)
    missing = [key for key in SEMANTIC_KEYS if not isinstance(semantic.get(key), dict)]
    if missing:
        raise ValueError(f"no params {', '.join(f'{key}.*' for key in missing)}")
    return semantic


def logged_hashes(params: Mapping[str, str]) -> set[str]:
    """The ``cfg_hash`` a run that logged ``params`` was tagged with: that of their semantic config
    (``semantic_of_params``), or, for an estimator whose defaults changed since the run
    (``Estimator.earlier_defaults``), that of the config with the earlier defaults where the params
    leave them out (the run logged the defaults of its time by leaving them out).

    Raises
    ------
    ValueError
        The params are not those of a cell (``semantic_of_params``), or not a config a hash is taken of.
    """
    semantic = semantic_of_params(params)
    model = semantic["model"]
    try:
        hashes = {semantic_hash(semantic)}
        earlier = ESTIMATORS[model["estimator"]].earlier_defaults if model.get("estimator") in ESTIMATORS else {}
        given = model.get("estimator_params") or {}
        if set(earlier) - set(given):
            hashes.add(semantic_hash({**semantic, "model": {**model, "estimator_params": {**earlier, **given}}}))
    except (TypeError, AttributeError) as err:  # e.g. estimator_params a number: not a config
        raise ValueError(f"the model params do not form a model's config ({err})") from None
    return hashes


def _value_of_text(text: str):
    """A param's value from the text ``flatten`` made of it."""
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    if _INTEGER.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if text.startswith(("[", "{")):
        with contextlib.suppress(ValueError):
            return json.loads(text)
    return text


def _frozen(value):
    """A read-only copy of plain data (mappings become ``MappingProxyType``, lists tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def _plain(value):
    """``_frozen``'s inverse: dicts and lists again."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value
