"""Models of an experiment from their configs (``conf/model``): a BNC or a baseline."""

from collections.abc import Mapping

from bncbench.baselines import baseline_tags, make_baseline
from bncbench.bnc.classifier import BNClassifier

#: Arguments of ``BNClassifier`` read from a BNC's model config.
MODEL_ARGS = ("structure", "k", "structure_params", "estimator", "estimator_params")


def make_model(model: Mapping, random_state=None):
    """The unfitted classifier of a model config: ``baseline: <name>`` with ``baseline_params``, or the
    ``BNClassifier`` arguments."""
    if "baseline" in model:
        return make_baseline(model["baseline"], dict(model.get("baseline_params") or {}), random_state)
    return BNClassifier(**{key: model[key] for key in MODEL_ARGS}, random_state=random_state)


def discretises(model: Mapping) -> bool:
    """Whether the model sees MDL-discretised folds (BNCs always; baselines by default, the papers'
    protocol, or raw numeric data with ``discretise: false``)."""
    return "baseline" not in model or bool(model.get("discretise", True))


def model_tags(model: Mapping) -> dict:
    """The ``structure`` and ``estimator`` tags of a model's runs (a baseline's name, and "baseline"),
    with those of what a baseline runs outside Python (``version.weka``)."""
    if "baseline" in model:
        params = dict(model.get("baseline_params") or {})
        return {"structure": str(model["baseline"]), "estimator": "baseline", **baseline_tags(model["baseline"], params)}
    structure = model["structure"]
    return {"structure": structure if isinstance(structure, str) else "custom", "estimator": str(model["estimator"])}
