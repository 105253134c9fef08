"""Structure learners: which attributes each attribute depends on, besides the class.

A structure is one class in one module (with its kernels beside it) subclassing the contract
``base.Structure``; setting its ``name`` registers it in ``STRUCTURES``. Importing this package imports
every module under it (``Registry.discover``), so every structure is registered, with no list to edit here.
"""

from bncbench.core.registry import registered
from bncbench.bnc.structures.base import (
    STRUCTURES,
    GivenStructure,
    Structure,
    make_structure,
    structure_class,
    structure_defaults,
    structure_presets,
    structure_uses_k,
)

STRUCTURES.discover(__name__)

__all__ = [
    "STRUCTURES", "GivenStructure", "Structure", "make_structure", "registered", "structure_class",
    "structure_defaults", "structure_presets", "structure_uses_k",
]
