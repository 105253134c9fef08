"""Dataset sources: each is one module here defining a subclass of ``base.DatasetSource``; setting its ``name``
registers it in ``SOURCES``, and a dataset config's ``source:`` names it. Importing this package imports
every module under it (``Registry.discover``), so every source is registered, with no list to edit.
"""

from collections.abc import Mapping

from bncbench.core.errors import ConfigError
from bncbench.core.registry import registered
from bncbench.data.sources.base import COMMON_KEYS, SOURCES, DatasetSource, written_format
from bncbench.data.store import STORE_FORMATS

SOURCES.discover(__name__)


def dataset_keys() -> tuple[str, ...]:
    """The keys a dataset config may have: ``COMMON_KEYS`` and those of every source (null where not read)."""
    return tuple(dict.fromkeys([*COMMON_KEYS, *(key for source in SOURCES.values() for key in source.keys)]))


def dataset_source(spec: Mapping) -> DatasetSource:
    """The source of the dataset config ``spec`` (``store`` when it names none), the config checked: a known
    source, only keys a source reads, a name, the source's own values (``DatasetSource.check``), ``drop`` a list of
    names and ``store_format`` csv or parquet.

    Raises
    ------
    ConfigError
        Naming the config, what is wrong and what it may be.
    """
    name = spec.get("name")
    where = f"conf/dataset/{name}.yaml" if name else "a dataset config"
    if spec.get("source", "store") not in SOURCES:
        raise ConfigError(f"{where} has source {spec.get('source')!r}; use one of {sorted(SOURCES)}.")
    source = SOURCES[spec.get("source", "store")]()
    keys = set(dataset_keys())
    unknown = sorted(set(spec) - keys)
    if unknown:
        raise ConfigError(f"{where} has unknown keys {unknown}; the keys are {sorted(keys)}.")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where} needs a 'name' (the dataset's name in its source).")
    source.check(spec, where)
    if spec.get("store_format") not in (None, *STORE_FORMATS):
        raise ConfigError(f"{where} has store_format {spec['store_format']!r}; it must be one of {list(STORE_FORMATS)} "
                          "or null.")
    drop = spec.get("drop") or []
    if isinstance(drop, str) or not all(isinstance(column, str) for column in drop):
        raise ConfigError(f"{where} has drop {drop!r}; it must be a list of column names.")
    return source


__all__ = ["COMMON_KEYS", "SOURCES", "DatasetSource", "dataset_keys", "dataset_source", "registered", "written_format"]
