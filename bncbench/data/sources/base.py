"""The contract of a dataset source: where the rows of a dataset config (``conf/dataset/<name>.yaml``) come
from, named by its ``source:`` (``store`` when absent)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bncbench.core.registry import Registered, Registry

if TYPE_CHECKING:
    import pandas as pd

    from bncbench.data.digest import DataDigest

SOURCES = Registry("dataset source")
#: The keys of every dataset config; a source adds its own (``DatasetSource.keys``).
COMMON_KEYS = ("name", "source", "drop", "store_format")


def written_format(spec: Mapping) -> str:
    """The format (``bncbench.data.store.STORE_FORMATS``) a dataset absent from the store is written in when its
    source fetches or draws it: its config's ``store_format``, csv when absent. A file already in the store is read
    in its own format (``bncbench data convert`` changes it)."""
    return spec.get("store_format") or "csv"


class DatasetSource(Registered):
    """A source of datasets. A subclass that sets ``name`` is registered under it (``SOURCES``), unless defined
    with ``register=False`` (then ``with registered(Mine): ...``); its defaults read a file of the store.

    Attributes
    ----------
    name : str
        What a dataset config's ``source:`` says.
    keys : tuple of str
        The keys of a dataset config it reads besides ``COMMON_KEYS``.
    knows_truth : bool
        Its datasets know their true ``P(y | x)`` (``true_posterior``), which the ``TRUTH`` metrics need.
    drawn : bool
        A dataset absent from the store is made on this machine (``provide``), not fetched over the network.
    """

    registry = SOURCES
    keys: tuple[str, ...] = ()
    knows_truth: bool = False
    drawn: bool = False

    def check(self, spec: Mapping, where: str) -> None:
        """Refuse a malformed value of one of its ``keys`` (``where``: the config, for the message)."""

    def store_name(self, spec: Mapping) -> str | None:
        """The dataset's name in the store; None: it has no file there."""
        return spec["name"]

    def provide(self, spec: Mapping, store: Path) -> str | None:
        """The dataset's name in ``store``, drawn or fetched into it if absent; None: it has no file."""
        return self.store_name(spec)

    def read(self, spec: Mapping, store: Path) -> tuple[pd.DataFrame, list[str], str]:
        """Its rows: the frame (class column included), its numeric columns and the class column's name."""
        from bncbench.data.store import read_store_table

        return read_store_table(store, self.provide(spec, store))

    def digest(self, spec: Mapping, store: Path) -> DataDigest | None:
        """What identifies its data (``bncbench.data.digest``); None: not in the store yet."""
        from bncbench.data.digest import store_digest

        return store_digest(spec["name"], store, self.store_name(spec), self.name)

    def true_posterior(self, spec: Mapping):
        """Rows of ``X`` -> their true ``P(y | x)``, of a source that ``knows_truth``; None otherwise."""
        return None

    def declared_size(self, spec: Mapping) -> tuple[int, int, float, int] | None:
        """Rows, attributes, mean values per attribute and classes, known without the file (a cost estimate
        reads them before a dataset is drawn); None: read them from the store."""
        return None
