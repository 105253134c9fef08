"""Baselines the papers compare BNCs with, as scikit-learn classifiers over a DataFrame.

Each is registered here by name; a model config with ``baseline: <name>`` and ``baseline_params``
runs it in an experiment like any BNC, on the same (by default discretised) folds.
"""

from bncbench.baselines.gradient_boosting import XGBoostBaseline
from bncbench.baselines.random_forest import RandomForestBaseline
from bncbench.errors import ConfigError

BASELINES = {"random_forest": RandomForestBaseline, "xgboost": XGBoostBaseline}


def make_baseline(name: str, params: dict, random_state=None):
    """Instantiate the baseline registered as ``name``, or say what is valid."""
    if name not in BASELINES:
        raise ConfigError(f"unknown baseline {name!r}; valid baselines: {', '.join(sorted(BASELINES))}.")
    try:
        return BASELINES[name](**params, random_state=random_state)
    except TypeError as err:
        raise ConfigError(f"baseline {name!r}: {err}") from None
