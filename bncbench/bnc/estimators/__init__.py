"""Parameter estimators: each fills the probability tables of a counted network.

An estimator is one class in one module (with its kernels beside it, or in a subpackage of its own)
subclassing the contract ``base.Estimator``; setting its ``name`` registers it in ``ESTIMATORS``, and
model names (``kdb5_<name>``) refer to that name. Importing this package imports every module under it
(``Registry.discover``), so every estimator is registered, with no list to edit here.
"""

from bncbench.bnc.estimators.base import (
    ESTIMATORS,
    Estimator,
    check_pairing,
    estimator_class,
    estimator_defaults,
    estimator_settings,
    make_estimator,
)
from bncbench.core.registry import registered

ESTIMATORS.discover(__name__)

__all__ = [
    "ESTIMATORS", "Estimator", "check_pairing", "estimator_class", "estimator_defaults", "estimator_settings",
    "make_estimator", "registered",
]
