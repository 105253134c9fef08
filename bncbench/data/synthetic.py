"""Synthetic datasets drawn from a declared Bayesian network (``source: synthetic``), at any size.

A dataset config declares, under ``synthetic:``, the network and the sample::

    rows: 1000000        # rows drawn
    attributes: 16       # attributes x1 .. x16, all nominal
    values: 3            # values of every attribute (v0, v1, ...), or a list of one per attribute
    classes: 2           # class values c0, c1, ...
    k: 2                 # structure: a random kDB-k (the class, and up to k earlier attributes, as parents)
    alpha: 1.0           # every CPT row ~ symmetric Dirichlet(alpha)
    seed: 1              # of the network: parents and CPTs
    sample_seed: 1       # of the rows

The network is a function of the declaration (``SyntheticNetwork.of``): it is not stored, it is drawn
again wherever it is needed, such as the true ``P(y | x)`` of test rows (``true_posterior``). The rows
are drawn by ancestral sampling (``synthetic_kernels.sample_rows``): row ``r`` depends on
``sample_seed`` and ``r`` alone, so a file of 10^4 rows is the first 10^4 rows of one of 10^6 rows with
the same declaration otherwise, and the chunk size of the writing changes nothing. The rows are written
once into the store, in its format, under ``<name>-<12 hex digits of a hash>`` of the declaration, of
``SAMPLER`` and of the network's arrays: a dataset of another declaration, sampler or network (NumPy
drawing the same seed otherwise) is another file, never a stale one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.data.sources.base import written_format
from bncbench.data.store import CLASS_COLUMN, data_file, read_schema, write_store_stream
from bncbench.data.synthetic_kernels import log_joints, sample_rows

_log = logging.getLogger(__name__)

#: Version of the network's derivation and of the sampler: part of every store name, changed with them.
SAMPLER = "kdb-dirichlet-splitmix64/1"
#: Rows drawn and written at a time.
CHUNK_ROWS = 100_000
#: Largest number of CPT entries of a declared network (about 400 MB of float64 with its cumulative copy).
MAX_CPT_ENTRIES = 25_000_000


@dataclass(frozen=True)
class Declaration:
    """The ``synthetic`` mapping of a dataset config, checked (see the module docstring)."""

    rows: int
    attributes: int
    values: tuple[int, ...]
    classes: int
    k: int
    alpha: float
    seed: int
    sample_seed: int

    @classmethod
    def of(cls, spec: Mapping) -> Declaration:
        """The declaration of the dataset config ``spec``; a bad one (a key missing or unknown, a value of the
        wrong type or range) is refused in one line, a ConfigError."""
        where = f"conf/dataset/{spec.get('name')}.yaml"
        given = spec.get("synthetic")
        if not isinstance(given, Mapping):
            raise ConfigError(f"{where} has source synthetic but no 'synthetic' mapping declaring its network "
                              f"and sample ({', '.join(_RULES)}); see bncbench/data/synthetic.py.")
        unknown, missing = sorted(set(given) - set(_RULES)), [key for key in _RULES if key not in given]
        if unknown or missing:
            problem = f"unknown keys {unknown}" if unknown else f"no {', '.join(missing)}"
            raise ConfigError(f"{where}: synthetic has {problem}; its keys are {', '.join(_RULES)}.")
        for key, (allowed, rule) in _RULES.items():
            if not allowed(given[key]):
                raise ConfigError(f"{where}: synthetic.{key} is {given[key]!r}; it must be {rule}.")
        values = given["values"]
        values = (values,) * given["attributes"] if isinstance(values, int) else tuple(values)
        if len(values) != given["attributes"]:
            raise ConfigError(f"{where}: synthetic.values lists {len(values)} cardinalities for "
                              f"{given['attributes']} attributes; give one per attribute, or one integer for all.")
        return cls(**{key: given[key] for key in _RULES} | {"values": values, "alpha": float(given["alpha"])})

    def store_name(self, name: str) -> str:
        """The dataset's name in the store: ``name`` and a hash of the declaration, of ``SAMPLER`` and of
        the network drawn from them. NumPy does not promise ``Generator``'s draws across versions
        (NEP 19): a network drawn otherwise names another file, so rows are never scored against the
        truth of a network they were not drawn from."""
        text = json.dumps({"sampler": SAMPLER, **asdict(self)}, sort_keys=True)
        digest = hashlib.sha256(text.encode())
        network = _network(self, f"conf/dataset/{name}.yaml")
        for array in (network.parents, network.n_parents, *network.tables):
            digest.update(np.ascontiguousarray(array).tobytes())
        return f"{name}-{digest.hexdigest()[:12]}"


def _integer(minimum: int):
    return lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= minimum


_RULES = {
    "rows": (_integer(2), "an integer >= 2"),
    "attributes": (_integer(1), "an integer >= 1"),
    "values": (
        lambda v: _integer(2)(v) or (isinstance(v, list) and bool(v) and all(_integer(2)(x) for x in v)),
        "an integer >= 2 (values of every attribute) or a list of them, one per attribute",
    ),
    "classes": (_integer(2), "an integer >= 2"),
    "k": (_integer(0), "an integer >= 0 (the attribute parents of each attribute; 0: naive Bayes)"),
    "alpha": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf"),
        "a number > 0 (the Dirichlet prior of every CPT row)",
    ),
    "seed": (_integer(0), "an integer >= 0 (the network's seed)"),
    "sample_seed": (_integer(0), "an integer >= 0 (the rows' seed)"),
}


@dataclass(frozen=True, eq=False)
class SyntheticNetwork:
    """A random kDB-k over the class (variable 0) and the attributes (variables 1..n), as flat arrays.

    Attributes
    ----------
    cardinality : int64 array (n_vars,)
    parents : int64 array (n_vars, max parents)
        ``parents[v, :n_parents[v]]``: the class first, then attribute variables in increasing order.
    n_parents : int64 array (n_vars,)
    tables : list of float64 arrays
        ``tables[v][context, value]``: the CPT of variable ``v``, context as ``synthetic_kernels`` says.
    """

    cardinality: np.ndarray
    parents: np.ndarray
    n_parents: np.ndarray
    tables: list

    @classmethod
    def of(cls, declaration: Declaration, where: str = "a synthetic dataset") -> SyntheticNetwork:
        """Draw the network of ``declaration``: parents, then CPTs, from ``numpy.random.default_rng(seed)``."""
        rng = np.random.default_rng(declaration.seed)
        n_vars = declaration.attributes + 1
        cardinality = np.array([declaration.classes, *declaration.values], dtype=np.int64)
        parents = np.full((n_vars, declaration.k + 1), -1, dtype=np.int64)
        n_parents = np.zeros(n_vars, dtype=np.int64)
        for v in range(1, n_vars):
            chosen = np.sort(rng.choice(np.arange(1, v), size=min(declaration.k, v - 1), replace=False))
            n_parents[v] = 1 + len(chosen)
            parents[v, : n_parents[v]] = [0, *chosen]
        contexts = [int(np.prod(cardinality[parents[v, : n_parents[v]]])) for v in range(n_vars)]
        entries = sum(c * r for c, r in zip(contexts, cardinality))
        if entries > MAX_CPT_ENTRIES:
            raise ConfigError(
                f"{where}: the declared network's CPTs hold {entries:,} probabilities (more than {MAX_CPT_ENTRIES:,}); "
                "declare a smaller synthetic.k, fewer values or classes."
            )
        tables = [rng.dirichlet(np.full(r, declaration.alpha), size=c) for c, r in zip(contexts, cardinality)]
        return cls(cardinality, parents, n_parents, tables)

    def sample(self, seed: int, start: int, n_rows: int) -> np.ndarray:
        """Codes of rows ``start`` .. ``start + n_rows - 1`` of seed ``seed``: column 0 the class, then
        the attributes."""
        cumulative = np.concatenate([np.cumsum(table, axis=1).ravel() for table in self.tables])
        return sample_rows(
            np.uint64(seed), start, n_rows, self.cardinality, self.parents, self.n_parents, self._offset, cumulative
        )

    def posterior(self, attributes: np.ndarray) -> np.ndarray:
        """The true ``P(y | x)`` of rows of attribute codes (one column per attribute), one column per
        class value: ``P(y) prod_i P(x_i | y, parents)`` normalised over ``y``."""
        log_joint = log_joints(np.asarray(attributes, dtype=np.int64), self.cardinality, self.parents, self.n_parents,
                               self._offset, self._log_tables)
        log_joint -= log_joint.max(axis=1, keepdims=True)
        joint = np.exp(log_joint)
        return joint / joint.sum(axis=1, keepdims=True)

    @functools.cached_property
    def _offset(self) -> np.ndarray:
        """Where each CPT starts in the tables laid end to end (``synthetic_kernels``)."""
        return np.cumsum([0, *(table.size for table in self.tables[:-1])]).astype(np.int64)

    @functools.cached_property
    def _log_tables(self) -> np.ndarray:
        """The CPTs' logs laid end to end (a zero probability: -inf, its class impossible)."""
        with np.errstate(divide="ignore"):
            return np.log(np.concatenate([table.ravel() for table in self.tables]))


@functools.lru_cache(maxsize=4)
def _network(declaration: Declaration, where: str = "a synthetic dataset") -> SyntheticNetwork:
    """The network of a declaration, drawn once per process for the folds that ask for it."""
    return SyntheticNetwork.of(declaration, where)


def attribute_names(declaration: Declaration) -> list[str]:
    return [f"x{i + 1}" for i in range(declaration.attributes)]


def class_labels(declaration: Declaration) -> list[str]:
    return [f"c{y}" for y in range(declaration.classes)]


def value_labels(cardinality: int) -> list[str]:
    return [f"v{x}" for x in range(cardinality)]


def write_synthetic(data_dir: Path, spec: Mapping, chunk_rows: int = CHUNK_ROWS) -> str:
    """Draw the dataset ``spec`` declares and write it into the store ``data_dir`` (in its config's
    ``store_format``) unless it is there; return its store name. Progress goes to the log, a line per chunk."""
    declaration = Declaration.of(spec)
    name = declaration.store_name(spec["name"])
    if data_file(data_dir, name).is_file() and name in read_schema(data_dir):
        return name
    network = SyntheticNetwork.of(declaration, f"conf/dataset/{spec['name']}.yaml")
    tokens = [np.array(class_labels(declaration), dtype=object)]
    tokens += [np.array(value_labels(r), dtype=object) for r in declaration.values]
    columns = [*attribute_names(declaration), CLASS_COLUMN]
    entry = {
        "attributes": [{"name": column, "type": "nominal", "values": value_labels(r)}
                       for column, r in zip(columns, declaration.values)],
        "class": {"name": CLASS_COLUMN, "type": "nominal", "values": class_labels(declaration)},
        "synthetic": {"sampler": SAMPLER, **asdict(declaration), "values": list(declaration.values)},
    }

    def write(stream) -> dict:
        stream.write((",".join(columns) + "\n").encode())
        for start in range(0, declaration.rows, chunk_rows):
            codes = network.sample(declaration.sample_seed, start, min(chunk_rows, declaration.rows - start))
            text = [tokens[v][codes[:, v]] for v in [*range(1, codes.shape[1]), 0]]
            stream.write(("\n".join(map(",".join, zip(*text))) + "\n").encode())
            _log.info("%s: %d of %d rows drawn", name, start + len(codes), declaration.rows)
        return entry

    write_store_stream(data_dir, name, write, compresslevel=6, file_format=written_format(spec))
    return name


def true_posterior(spec: Mapping, X: pd.DataFrame) -> pd.DataFrame:
    """The true ``P(y | x)`` of the rows ``X`` (attribute tokens, as the dataset holds them) under the
    network ``spec`` declares, one column per class label."""
    declaration = Declaration.of(spec)
    network = _network(declaration)
    codes = np.column_stack([
        X[column].map({label: x for x, label in enumerate(value_labels(r))}).to_numpy(dtype=np.int64)
        for column, r in zip(attribute_names(declaration), declaration.values)
    ])
    return pd.DataFrame(network.posterior(codes), columns=class_labels(declaration), index=X.index)

