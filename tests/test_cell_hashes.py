"""The ``cfg_hash`` of every experiment's cells stays what it was when models were written one file
per model (``tests/golden/cell_hashes.json``, recorded with the semantic hash, ``bncbench.protocol.cell``,
over the one-file-per-model configs, before issue 12 made models compositions of a structure and an
estimator): declaring a model another way must not make a finished cell run again.

Making the hash semantic (commit 35cab15: the model's name left out, ``k`` dropped where the structure
ignores it, estimator defaults filled in) changed every cell's hash once: runs logged before it carry
the old hashes, so a resume runs their cells again and a report leaves them out.

Each experiment's hashes are pinned for every model (on the experiment's first dataset) and for every
dataset (with the experiment's first model); the hash of a cell is one function of its dataset, model
and CV parts, so that pins every cell. ``python tests/test_cell_hashes.py`` records the file anew:
only do so for a change of hashes that the commit explains.
"""

import json
import sys
from pathlib import Path

import pytest

from bncbench.app.config import compose, config_dir

GOLDEN = Path(__file__).parent / "golden" / "cell_hashes.json"
EXPERIMENTS = sorted(path.stem for path in (config_dir() / "experiment").glob("*.yaml"))


def pinned_hashes(experiment: str) -> dict[str, str]:
    """``{"<dataset>/<model>": cfg_hash}`` for each model on the first dataset and each dataset with
    the first model."""
    overrides = [f"experiment={experiment}"]
    plan = compose(overrides).plan
    datasets, models = list(plan.datasets), list(plan.models)
    cells = plan.by_key()
    pinned = [(datasets[0], m) for m in models] + [(d, models[0]) for d in datasets]
    return {f"{d}/{m}": cells[(d, m)].cfg_hash for d, m in pinned}


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_cell_hashes_are_those_recorded(experiment):
    golden = json.loads(GOLDEN.read_text())
    assert experiment in golden, f"no recorded hashes for experiment {experiment!r}: record them"
    assert pinned_hashes(experiment) == golden[experiment]


if __name__ == "__main__":
    recorded = {experiment: pinned_hashes(experiment) for experiment in EXPERIMENTS}
    GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    sys.exit(0)
