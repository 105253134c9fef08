"""Datasets: the local store, scikit-learn's bundled data, OpenML, and MDL discretisation."""

from bncbench.data.dataset import Dataset, load_dataset
from bncbench.data.discretize import MDLDiscretizer
from bncbench.data.store import resolve_data_dir

__all__ = ["Dataset", "MDLDiscretizer", "load_dataset", "resolve_data_dir"]
