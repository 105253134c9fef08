"""Datasets: the local store, scikit-learn's bundled data, OpenML, and MDL discretisation."""

from bncbench.data.dataset import Dataset, load_dataset
from bncbench.data.store import resolve_data_dir

__all__ = ["Dataset", "load_dataset", "resolve_data_dir"]
