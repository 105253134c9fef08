"""What MLflow's store takes whole: the names it accepts for params, tags and metrics, and the lengths it keeps
(``mlflow.utils.validation``). A bundle is checked against them before its first run is written
(``bncbench.bundles.verify``), so that an import never stops half-way and no value is cut."""

from mlflow.exceptions import MlflowException
from mlflow.utils import validation

#: The longest value of a param and of a tag MLflow keeps whole.
MAX_LENGTH = {"params": validation.MAX_PARAM_VAL_LENGTH, "tags": validation.MAX_TAG_VAL_LENGTH}
_NAME_RULES = {"params": validation._validate_param_name, "tags": validation._validate_tag_name,
               "metrics": validation._validate_metric_name}


def refused_name(kind: str, key: str) -> str:
    """Why MLflow's store would not take ``key`` as the name of one of its ``kind`` (``params``, ``tags`` or
    ``metrics``); ``""`` if it would."""
    if len(key) > validation.MAX_ENTITY_KEY_LENGTH:
        return f"name {key[:40]!r}... is {len(key)} characters long, over the {validation.MAX_ENTITY_KEY_LENGTH} MLflow takes"
    try:
        _NAME_RULES[kind](key)
    except MlflowException as err:
        return f"name {key!r} is not one MLflow takes ({err.message.split(':', 1)[-1].strip()})"
    return ""
