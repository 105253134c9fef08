"""Synthetic datasets, drawn into the store from the network their config declares
(``bncbench.data.synthetic``), whose true ``P(y | x)`` is known."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bncbench.data.sources.base import DatasetSource


class SyntheticSource(DatasetSource):
    name = "synthetic"
    keys = ("synthetic",)
    knows_truth = True
    drawn = True

    def check(self, spec: Mapping, where: str) -> None:
        _declaration(spec)

    def store_name(self, spec: Mapping) -> str:
        return _declaration(spec).store_name(spec["name"])

    def provide(self, spec: Mapping, store: Path) -> str:
        from bncbench.data.synthetic import write_synthetic

        return write_synthetic(store, spec)

    def true_posterior(self, spec: Mapping):
        from bncbench.data.synthetic import true_posterior

        return functools.partial(true_posterior, dict(spec))

    def declared_size(self, spec: Mapping) -> tuple[int, int, float, int]:
        declaration = _declaration(spec)
        return declaration.rows, declaration.attributes, float(np.mean(declaration.values)), declaration.classes


def _declaration(spec: Mapping):
    """The checked declaration of ``spec`` (``bncbench.data.synthetic``, imported here: it loads numba)."""
    from bncbench.data.synthetic import Declaration

    return Declaration.of(spec)
