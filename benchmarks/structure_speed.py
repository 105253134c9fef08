"""Fit and predict times of NB, kDB-1, kDB-5 and selective kDB (k_max 5) with m-estimates.

Cases: connect-4 (67,557 rows, 42 attributes; fit on all rows, predict all rows) and half of adult
(one fold of a stratified 2-fold split, MDL-discretised on the training half; fit on it, predict the
other half). Each time is the median of ``--repeats`` runs after a warm-up; numba's compilation is
measured separately, in a fresh process with an empty cache.

    python benchmarks/structure_speed.py [--data-dir ../shared/datasets] [--repeats 5] [--petal PATH]

``--petal`` names the ``gigal`` binary of the C++ Petal (github.com/anamf/SKDB; this g++ builds it
with ``g++ -o gigal <the makefile's SOURCE> -O3 -DNDEBUG -fpermissive``): the half of adult, with the
same discretisation, is written in its format and each model's Petal counterpart (``nb``, ``kdb -k1``,
``kdb -k5``, ``kdb-selective -k5``) is timed as a whole process (reading both files, training,
testing), the median of ``--repeats`` runs, beside ours. Petal smooths with a fixed m = 1
(``smoothing.h``), where our m-estimate by default chooses m on a holdout (HDP paper Sect. 6.1): the
fit with ``m: 1``, Petal's work, is timed too, and both totals are compared with Petal's.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.data import MDLDiscretizer, load_dataset

#: Each model's Petal learner and its arguments.
PETAL = {"NB": ["-lnb"], "kDB-1": ["-lkdb", "-k1"], "kDB-5": ["-lkdb", "-k5"], "SkDB k_max=5": ["-lkdb-selective", "-k5"]}

#: Petal's smoothing: m-estimates with m = 1 (its ``smoothing.h``), no choice of m.
PETAL_M = {"m": 1.0}

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


def timed(*functions, repeats: int) -> list[float]:
    """The median time of each function over ``repeats`` rounds after a warm-up, the functions taking
    turns in each round (so that a change of the machine's load weighs on them alike)."""
    for function in functions:
        function()  # warm-up
    times = [[] for _ in functions]
    for _ in range(repeats):
        for function, taken in zip(functions, times):
            start = time.perf_counter()
            function()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in times]


def measure(case, X_train, y_train, X_test, repeats, petal=None):
    """Print each model's fit and predict times; with ``petal`` (the files ``write_petal`` wrote and the
    binary), its Petal counterpart's time beside them."""
    for name, model in MODELS.items():
        fitted = BNClassifier(**model).fit(X_train, y_train)
        functions = [lambda: BNClassifier(**model).fit(X_train, y_train), lambda: fitted.predict_proba(X_test)]
        if petal is not None:
            binary, files = petal
            functions.append(lambda: BNClassifier(**model, estimator_params=PETAL_M).fit(X_train, y_train))
            functions.append(lambda: subprocess.run([binary, *files, *PETAL[name]], capture_output=True, check=True))
        fit, predict, *others = timed(*functions, repeats=repeats)
        line = (f"{name:<13} {case:<14} rows {len(X_train):>6}/{len(X_test):<6} fit {fit:6.3f} s  "
                f"predict {predict:6.3f} s  total {fit + predict:6.3f} s")
        if others:
            fit_m1, petal_seconds = others
            line += (f"  ours/Petal {(fit + predict) / petal_seconds:5.2f} | m = 1: fit {fit_m1:6.3f} s  total "
                     f"{fit_m1 + predict:6.3f} s  ours/Petal {(fit_m1 + predict) / petal_seconds:5.2f} | "
                     f"Petal {petal_seconds:6.3f} s")
        print(line)


def write_petal(folder, X_train, y_train, X_test, y_test) -> list[str]:
    """The metadata, training and test files of Petal for a discretised split, as its arguments: each
    value ``v<code>`` over the values of both halves, the class last. A missing value is ``?``, which
    Petal only reads as one more value of a nominal attribute (ours gives it no evidence)."""
    X = pd.concat([X_train, X_test]).astype(str).where(pd.concat([X_train, X_test]).notna())
    codes = {column: pd.Categorical(X[column].dropna()).categories for column in X}
    classes = pd.Categorical(pd.concat([y_train, y_test])).categories
    meta, train, test = (os.path.join(folder, name) for name in ("adult.pmeta", "train.pdata", "test.pdata"))
    with open(meta, "w") as f:
        for i, column in enumerate(X):
            missing = ["?"] if X[column].isna().any() else []
            f.write(f"a{i}: " + ",".join([f"v{j}" for j in range(len(codes[column]))] + missing) + "\n")
        f.write("class: " + ",".join(f"c{j}" for j in range(len(classes))) + "\n")
    for path, rows, y in ((train, X.iloc[: len(X_train)], y_train), (test, X.iloc[len(X_train) :], y_test)):
        tokens = pd.DataFrame(
            {c: pd.Categorical(rows[c], categories=codes[c]).codes for c in rows}, index=rows.index
        )
        text = tokens.apply(lambda col: np.where(col >= 0, "v" + col.astype(str), "?"))
        text["class"] = "c" + pd.Series(pd.Categorical(y, categories=classes).codes, index=rows.index).astype(str)
        text.to_csv(path, header=False, index=False)
    return [meta, train, f"-t{test}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--petal", default=None, help="Petal's gigal binary: time it on the half of adult too")
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
    with tempfile.TemporaryDirectory() as folder:
        petal = None
        if args.petal:
            petal = (args.petal, write_petal(folder, X_train, adult.y.iloc[train], X_test, adult.y.iloc[test]))
        measure("half of adult", X_train, adult.y.iloc[train], X_test, args.repeats, petal)
    print(f"numba threads: {__import__('numba').get_num_threads()}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
