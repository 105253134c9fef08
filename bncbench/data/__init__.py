"""Datasets: the local store, scikit-learn's bundled data, OpenML, and MDL discretisation.

Each name is imported on first use (PEP 562), so that ``resolve_data_dir`` (``bncbench list``,
composing a config) does not load pandas, scikit-learn and numba.
"""

import importlib

#: Where each public name is defined.
_MODULES = {
    "Dataset": "bncbench.data.dataset",
    "load_dataset": "bncbench.data.dataset",
    "MDLDiscretizer": "bncbench.data.discretize",
    "resolve_data_dir": "bncbench.data.store",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str):
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name]), name)
    raise AttributeError(f"module 'bncbench.data' has no attribute {name!r}")
