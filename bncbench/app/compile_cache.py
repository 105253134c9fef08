"""numba's kernels compiled once per machine, in the launching process, before a sweep's workers start.

The kernels are compiled with ``cache=True``: numba keeps them on disk, keyed by the CPU, and a later
process loads them instead of compiling. On a fresh install, though, every worker of a sweep would
compile the same kernels at the same time (about 20 s each on two cores), and concurrent writers of
one cache entry race. ``warm_kernels`` fits and predicts each BNC of the experiment on a small
synthetic dataset first, so that the workers find every kernel in the cache. The codes a BNC's
kernels see are int64 whatever the data, so a few rows call them with the types of a real fold; a
kernel a real dataset still needs is compiled by that cell's own warm-up (``bncbench.app.runner``), never
inside a timed region (``bncbench.core.timing``).
"""

import logging
import time
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from numba.core import event

from bncbench.data.discretize import MDLDiscretizer
from bncbench.protocol.cross_validation import warm_up_model
from bncbench.protocol.models import make_model

log = logging.getLogger(__name__)

#: numba enters this event to compile a kernel, not to load one from its on-disk cache.
COMPILE_EVENT = "numba:compile"


def synthetic_data(rows: int = 90, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """A small dataset with three classes, six nominal attributes (one with missing values) and two
    numeric ones that MDL discretisation cuts, every attribute related to the class."""
    rng = np.random.default_rng(seed)
    y = np.arange(rows) % 3
    noisy = np.where(rng.random((rows, 6)) < 0.7, y[:, None], rng.integers(0, 3, (rows, 6)))
    X = pd.DataFrame({f"a{j}": np.array(["u", "v", "w"], dtype=object)[noisy[:, j]] for j in range(6)})
    X.loc[::7, "a0"] = None
    X["x0"] = y + rng.normal(0.0, 0.3, rows)
    X["x1"] = rng.normal(0.0, 1.0, rows) - y
    return X, pd.Series(np.array(["p", "q", "r"], dtype=object)[y], name="class")


def warm_kernels(models: Iterable[Mapping]) -> tuple[int, float]:
    """Fit and predict each BNC among ``models`` (resolved model configs; baselines are skipped) on
    ``synthetic_data``, discretised as the runner does, at its ``warm_up_model`` settings (a sampler's few
    iterations). A model that cannot fit those rows is left to its cells' own warm-up. Returns how many
    compilations numba made (a kernel's callees count apart; 0 when the cache held every kernel), and the
    seconds it took.
    """
    X, y = synthetic_data()
    start = time.perf_counter()
    with event.install_recorder(COMPILE_EVENT) as recorder:
        X_codes = MDLDiscretizer().fit(X, y).transform(X)
        for model in models:
            if "baseline" in model:
                continue
            try:
                make_model(warm_up_model(model), random_state=0).fit(X_codes, y).predict_proba(X_codes)
            except Exception as err:  # its cells report the model's errors; this only saves their time
                log.debug("kernels of %s not warmed: %s", model.get("name", "model"), err)
    compiled = sum(1 for _, record in recorder.buffer if record.is_start)
    return compiled, time.perf_counter() - start
