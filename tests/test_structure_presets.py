"""The structure presets models are named after (``kdb5`` in ``kdb5_hdp``), declared in code, are those
the YAML files of ``conf/structure/`` gave, key for key, until they went: the settings, hence the
``cfg_hash``, of every model built from them are unchanged."""

from bncbench.bnc.structures import structure_presets

NO_PARAMS = {"k": None, "structure_params": {}}
WAS_YAML = {
    "aode": {"structure": "aode", "k": None, "structure_params": {"frequency_limit": 1}},
    "direct": {"structure": "direct", **NO_PARAMS},
    "fan_aic": {"structure": "tan", "k": None, "structure_params": {"score": "aic"}},
    "fan_bic": {"structure": "tan", "k": None, "structure_params": {"score": "bic"}},
    **{f"kdb{k}": {"structure": "kdb", "k": k, "structure_params": {}} for k in range(1, 6)},
    "nb": {"structure": "nb", **NO_PARAMS},
    "skdb": {"structure": "skdb", "k": 5, "structure_params": {}},
    "tan": {"structure": "tan", **NO_PARAMS},
}


#: Presets declared since, for the SkDB paper's Tables 2-3: SkDB with k_max = 1..4 and SKDB_k (k fixed).
ADDED = {
    **{f"skdb{k}": {"structure": "skdb", "k": k, "structure_params": {}} for k in range(1, 5)},
    **{f"skdb_fixed{k}": {"structure": "skdb", "k": k, "structure_params": {"select_k": False}} for k in range(1, 6)},
}


def test_the_presets_are_the_structure_configs_they_replace():
    presets = structure_presets()
    assert {name: presets[name] for name in WAS_YAML} == WAS_YAML


def test_presets_added_since_are_new_names():
    """Presets declared after the YAML files went: the SkDB paper's (``ADDED``) and bnclassify's
    ``tan_hc``, ``tan_hcsp``, which name structures of their own."""
    added = {name: preset for name, preset in structure_presets().items() if name not in WAS_YAML}
    assert added == {
        **ADDED,
        "tan_hc": {"structure": "tan_hc", **NO_PARAMS},
        "tan_hcsp": {"structure": "tan_hcsp", **NO_PARAMS},
    }
