"""Adding a dataset source is one class: defined here, with nothing else edited, a dataset config naming it
(``source: xor``, with a key of its own) runs through an experiment (config check, digest, sweep, MLflow runs,
report), its rows made in memory."""

import hashlib
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from bncbench.app.cli import main
from bncbench.core.errors import ConfigError
from bncbench.data import load_dataset
from bncbench.data.digest import DataDigest
from bncbench.data.sources import DatasetSource, registered


class Xor(DatasetSource, register=False):
    """The class is the XOR of two binary attributes, flipped in 10% of ``rows`` rows drawn with seed 0."""

    name = "xor"
    keys = ("rows",)

    def check(self, spec, where):
        rows = spec.get("rows")
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 10:
            raise ConfigError(f"{where} has rows {rows!r}; it must be an integer of at least 10.")

    def store_name(self, spec):
        return None

    def read(self, spec, store):
        rng = np.random.default_rng(0)
        a, b = rng.integers(0, 2, (2, spec["rows"]))
        y = a ^ b ^ (rng.random(spec["rows"]) < 0.1)
        frame = pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "class": np.where(y, "odd", "even")})
        return frame, [], "class"

    def digest(self, spec, store):
        text = json.dumps({"source": self.name, "rows": spec["rows"]}).encode()
        return DataDigest(spec["name"], hashlib.sha256(text).hexdigest()[:32], self.name, {"rows": str(spec["rows"])})


@pytest.fixture
def conf(tmp_path):
    """A config folder for ``hydra.searchpath`` with the dataset config ``xor``."""
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "xor.yaml").write_text("name: xor\nsource: xor\nrows: 400\n")
    return tmp_path / "conf"


def test_a_new_dataset_source_runs_through_an_experiment(tmp_path, conf, new_store, shared_data_dir):
    uri = new_store(tmp_path / "store")
    with registered(Xor):
        data = load_dataset({"name": "xor", "source": "xor", "rows": 400})
        assert data.X.shape == (400, 2) and set(data.y) == {"odd", "even"}
        status = main([
            "run", f"hydra.searchpath=[file://{conf}]", "experiment.datasets=[xor]",
            "experiment.models=[nb_laplace,kdb1_laplace]", "experiment.comparisons=[{a: kdb1_laplace, b: nb_laplace}]",
            f"tracking_uri={uri}", f"data_dir={shared_data_dir}", f"report_dir={tmp_path / 'reports'}",
            "executor.n_jobs=1",
        ])
    assert status == 0
    with sqlite3.connect(tmp_path / "store" / "mlflow.db") as db:
        finished = db.execute("select count(*) from runs where status = 'FINISHED'").fetchone()[0]
        digests = db.execute("select distinct value from tags where key = 'data_digest'").fetchall()
        losses = dict(db.execute("select r.name, m.value from runs r join latest_metrics m on m.run_uuid = r.run_uuid "
                                 "where m.key = 'zero_one_loss'").fetchall())
    assert finished == 2 and len(digests) == 1
    assert losses["xor/kdb1_laplace"] < 0.15 < losses["xor/nb_laplace"]  # XOR needs the other attribute as parent
    assert "| kdb1_laplace vs nb_laplace |" in (tmp_path / "reports" / "smoke" / "wdl.md").read_text()


def test_a_dataset_config_of_a_source_is_checked_by_it(conf):
    with registered(Xor):
        with pytest.raises(ConfigError, match=r"conf/dataset/xor.yaml has rows 3; it must be an integer of at least 10"):
            load_dataset({"name": "xor", "source": "xor", "rows": 3})
    with pytest.raises(ConfigError, match=r"has source 'xor'; use one of \['sklearn', 'store', 'synthetic'\]"):
        load_dataset({"name": "xor", "source": "xor"})
