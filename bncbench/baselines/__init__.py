"""Baselines the papers compare BNCs with, as scikit-learn classifiers over a DataFrame.

Each is registered here by name; a model config with ``baseline: <name>`` and ``baseline_params``
runs it in an experiment like any BNC, on the same (by default discretised) folds. A baseline's
module (scikit-learn, XGBoost) is imported when the baseline is made, so that naming the baseline models
(``bncbench list models``, composing an experiment) does without them.
"""

import importlib

from bncbench.core.errors import ConfigError

#: Each baseline's class, as ``module:class``.
BASELINES = {
    "random_forest": "bncbench.baselines.random_forest:RandomForestBaseline",
    "weka_random_forest": "bncbench.baselines.weka_forest:WekaRandomForestBaseline",
    "xgboost": "bncbench.baselines.gradient_boosting:XGBoostBaseline",
}


#: The baseline models an experiment can name, with the papers' settings (HDP paper Sect. 6.1): each on
#: the same MDL-discretised folds as the BNCs, and ``<name>_raw`` on the raw data. Random forest: Weka's
#: defaults (100 trees, int(log2(d)) + 1 attributes per split, no minimum leaf size); Weka's own
#: RandomForest (Java; needs Weka's jar), the forest of the HDP paper, taking the bin codes as nominal
#: attributes; XGBoost: max depth 6, 50 rounds, native categorical splits.
BASELINE_MODELS = {
    "random_forest": {"baseline_params": {"n_estimators": 100, "min_samples_leaf": 1, "n_jobs": 1}},
    "weka_random_forest": {"baseline_params": {"n_estimators": 100, "nominal_numbers": True}},
    "xgboost": {"baseline_params": {"max_depth": 6, "n_estimators": 50, "n_jobs": 1}},
}
#: The suffix of a baseline model run on the raw data (numeric attributes not discretised).
RAW_SUFFIX = "_raw"


def baseline_model(name: str) -> dict | None:
    """The model config of the baseline model ``name`` (``BASELINE_MODELS``, or one of them with
    ``RAW_SUFFIX``), or None when ``name`` is none of them."""
    base = name.removesuffix(RAW_SUFFIX)
    if base not in BASELINE_MODELS or (base != name and base == "weka_random_forest"):
        return None
    return {"name": name, "baseline": base, **BASELINE_MODELS[base], "discretise": base == name}


def make_baseline(name: str, params: dict, random_state=None):
    """Instantiate the baseline registered as ``name``, or say what is valid."""
    if name not in BASELINES:
        raise ConfigError(f"unknown baseline {name!r}; valid baselines: {', '.join(sorted(BASELINES))}.")
    try:
        return _baseline_class(name)(**params, random_state=random_state)
    except TypeError as err:
        raise ConfigError(f"baseline {name!r}: {err}") from None


def baseline_tags(name: str, params: dict) -> dict:
    """Tags naming what else a baseline's runs depend on (a program outside Python, such as Weka)."""
    tags = getattr(_baseline_class(name), "provenance_tags", None) if name in BASELINES else None
    return tags(params) if tags else {}


def _baseline_class(name: str) -> type:
    """The class of the baseline registered as ``name``, its module imported."""
    module, cls = BASELINES[name].split(":")
    return getattr(importlib.import_module(module), cls)
