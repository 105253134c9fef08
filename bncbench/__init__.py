"""bncbench: a benchmark suite for parameter estimation in Bayesian network classifiers.

``BNClassifier`` is imported on first use (PEP 562), so that a command that does not fit a classifier
(``bncbench --help``, ``bncbench list``) does not load scikit-learn and numba's kernels.
"""

__all__ = ["BNClassifier"]


def __getattr__(name: str):
    if name == "BNClassifier":
        from bncbench.bnc.classifier import BNClassifier

        return BNClassifier
    raise AttributeError(f"module 'bncbench' has no attribute {name!r}")
