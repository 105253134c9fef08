"""Baselines the papers compare BNCs with, as scikit-learn classifiers over a DataFrame.

Each is registered here by name; a model config with ``baseline: <name>`` and ``baseline_params``
runs it in an experiment like any BNC, on the same (by default discretised) folds.
"""

from bncbench.baselines.gradient_boosting import XGBoostBaseline
from bncbench.baselines.random_forest import RandomForestBaseline
from bncbench.baselines.weka_forest import WekaRandomForestBaseline
from bncbench.core.errors import ConfigError

BASELINES = {
    "random_forest": RandomForestBaseline,
    "weka_random_forest": WekaRandomForestBaseline,
    "xgboost": XGBoostBaseline,
}


def make_baseline(name: str, params: dict, random_state=None):
    """Instantiate the baseline registered as ``name``, or say what is valid."""
    if name not in BASELINES:
        raise ConfigError(f"unknown baseline {name!r}; valid baselines: {', '.join(sorted(BASELINES))}.")
    try:
        return BASELINES[name](**params, random_state=random_state)
    except TypeError as err:
        raise ConfigError(f"baseline {name!r}: {err}") from None


def baseline_tags(name: str, params: dict) -> dict:
    """Tags naming what else a baseline's runs depend on (a program outside Python, such as Weka)."""
    tags = getattr(BASELINES.get(name), "provenance_tags", None)
    return tags(params) if tags else {}
