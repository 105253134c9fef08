"""The structure presets declared in code are the YAML files of conf/structure/, key for key: the guard
for the day those files go."""

from pathlib import Path

import yaml

from bncbench.bnc.structures import structure_presets

STRUCTURE_DIR = Path(__file__).resolve().parents[1] / "conf" / "structure"


def test_the_presets_are_the_structure_configs():
    configs = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(STRUCTURE_DIR.glob("*.yaml"))}
    assert configs  # the files are where this test looks
    assert structure_presets() == configs
