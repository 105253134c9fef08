"""Fit and predict times of NB, kDB-1, kDB-5 and selective kDB (k_max 5) with m-estimates.

Cases: connect-4 (67,557 rows, 42 attributes; fit on all rows, predict all rows) and half of adult
(one fold of a stratified 2-fold split, MDL-discretised on the training half; fit on it, predict the
other half). Each time is the median of ``--repeats`` runs after a warm-up; numba's compilation is
measured separately, in a fresh process with an empty cache.

    python benchmarks/structure_speed.py [--data-dir ../shared/datasets] [--repeats 5]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.data import MDLDiscretizer, load_dataset

MODELS = {
    "NB": dict(structure="nb", estimator="m_estimate", random_state=0),
    "kDB-1": dict(structure="kdb", k=1, estimator="m_estimate", random_state=0),
    "kDB-5": dict(structure="kdb", k=5, estimator="m_estimate", random_state=0),
    "SkDB k_max=5": dict(structure="skdb", k=5, estimator="m_estimate", random_state=0),
}

_COMPILE_SNIPPET = """
import time, numpy as np, pandas as pd
from bncbench import BNClassifier
X = pd.DataFrame(np.random.default_rng(0).integers(0, 3, (50, 6)).astype(str))
y = np.arange(50) % 2
start = time.perf_counter()
BNClassifier(structure="kdb", k=2, estimator="m_estimate", random_state=0).fit(X, y).predict_proba(X)
print(time.perf_counter() - start)
"""


def first_call_seconds(cache_dir: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", _COMPILE_SNIPPET], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def timed(function, repeats: int) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(case, X_train, y_train, X_test, repeats):
    for name, model in MODELS.items():
        fitted = BNClassifier(**model).fit(X_train, y_train)
        fit = timed(lambda: BNClassifier(**model).fit(X_train, y_train), repeats)
        predict = timed(lambda: fitted.predict_proba(X_test), repeats)
        print(f"{name:<13} {case:<14} rows {len(X_train):>6}/{len(X_test):<6} fit {fit:6.3f} s  "
              f"predict {predict:6.3f} s  total {fit + predict:6.3f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        compile_seconds = first_call_seconds(cache)
        cached_seconds = first_call_seconds(cache)
    print(f"numba: first call with an empty cache {compile_seconds:.1f} s, with the cache filled {cached_seconds:.2f} s")

    spec = dict(source="store", openml_id=None, openml_target=None, drop=[])
    connect4 = load_dataset(dict(spec, name="connect-4"), args.data_dir)
    measure("connect-4", connect4.X, connect4.y, connect4.X, args.repeats)

    adult = load_dataset(dict(spec, name="adult"), args.data_dir)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=0).split(adult.X, adult.y))
    discretiser = MDLDiscretizer().fit(adult.X.iloc[train], adult.y.iloc[train])
    X_train, X_test = discretiser.transform(adult.X.iloc[train]), discretiser.transform(adult.X.iloc[test])
    measure("half of adult", X_train, adult.y.iloc[train], X_test, args.repeats)
    print(f"numba threads: {__import__('numba').get_num_threads()}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
