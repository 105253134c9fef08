"""What a cell computes, as data: its semantic config and the ``cfg_hash`` that identifies it.

A finished cell is skipped on resume, and the report reads a cell's run, by this hash: two configs
that build the same classifier on the same data under the same protocol must hash the same. So the
hash is taken over ``canonical_model``'s form of the model: without its name (renaming or regrouping
models never invalidates a finished cell), without ``k`` where the structure ignores it, and with the
estimator's defaults filled in (``estimator_params: {}`` and the defaults written out are one model).
"""

import hashlib
import json
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from bncbench.bnc.estimators import ESTIMATORS, estimator_defaults
from bncbench.bnc.structures import STRUCTURES, structure_uses_k

#: Top-level config keys whose values define what a cell computes; paths, the tracking store and
#: launcher settings are left out, so changing them does not make a finished cell run again.
SEMANTIC_KEYS = ("dataset", "model", "cv")


def semantic_config(cfg: DictConfig) -> dict:
    """The part of a cell's config that determines its results (see ``SEMANTIC_KEYS``), resolved."""
    return {key: OmegaConf.to_container(cfg[key], resolve=True) for key in SEMANTIC_KEYS}


def cfg_hash(cfg: DictConfig) -> str:
    """Hash of a cell's semantic config: equal configs, in any key order, give equal hashes."""
    return semantic_hash(semantic_config(cfg))


def semantic_hash(semantic: Mapping) -> str:
    """``cfg_hash`` of a semantic config already resolved (``semantic_config``)."""
    canonical = {**semantic, "model": canonical_model(semantic["model"])}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def canonical_model(model: Mapping) -> dict:
    """A resolved model config in the form two configs of the same classifier share (see the module)."""
    canonical = {key: value for key, value in model.items() if key != "name"}
    structure = canonical.get("structure")
    if isinstance(structure, str) and structure in STRUCTURES and not structure_uses_k(structure):
        canonical["k"] = None
    if canonical.get("estimator") in ESTIMATORS:  # an unknown one fails its cell, whatever its hash
        canonical["estimator_params"] = {
            **estimator_defaults(canonical["estimator"]), **(canonical.get("estimator_params") or {})
        }
    return canonical

