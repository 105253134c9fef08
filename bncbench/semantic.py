"""What a cell computes, as data: its semantic config and the ``cfg_hash`` that identifies it.

A finished cell is skipped on resume, and the report reads a cell's run, by this hash: two configs
that build the same classifier on the same data under the same protocol must hash the same.
"""

import hashlib
import json
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

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
    text = json.dumps(semantic, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
