"""Speed and memory of HPB estimates (issue 5), on one fold of a stratified 2-fold split.

Cases (MDL discretisation fitted on the training half):

* ``direct``: the paper's classifier, the class given all attributes, on nursery (8 attributes) and
  magic (10), with b = 2 and with b chosen by leave-one-out (one fit per candidate of ``b_grid``).
* ``kdb``: kDB-5 with HPB on connect-4 (42 tables of 6 conditioning variables each).
* ``bound``: a generated table of unique patterns at the default bound (10^7 sub-patterns).

Times are wall-clock, one run each; the test losses are printed beside them, and the peak resident
memory of the process at the end.

    python benchmarks/hpb_speed.py [direct] [kdb] [bound] [--data-dir ../shared/datasets]
"""

import argparse
import resource
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.core.metrics import LOSSES


def halves(name, data_dir):
    spec = dict(source="store", openml_id=None, openml_target=None, drop=[], name=name)
    dataset = load_dataset(spec, data_dir)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=0).split(dataset.X, dataset.y))
    discretiser = MDLDiscretizer().fit(dataset.X.iloc[train], dataset.y.iloc[train])
    X_train, X_test = discretiser.transform(dataset.X.iloc[train]), discretiser.transform(dataset.X.iloc[test])
    return X_train, dataset.y.iloc[train], X_test, dataset.y.iloc[test]


def measure(label, model, X_train, y_train, X_test, y_test):
    start = time.perf_counter()
    classifier = BNClassifier(**model, random_state=0).fit(X_train, y_train)
    fitted = time.perf_counter()
    proba = classifier.predict_proba(X_test)
    predicted = time.perf_counter()
    codes = np.searchsorted(classifier.classes_, np.asarray(y_test, dtype=object))
    losses = "  ".join(f"{name} {loss(proba, codes):.4f}" for name, loss in LOSSES.items())
    print(f"{label:<28} rows {len(X_train):>6}/{len(X_test):<6} fit {fitted - start:7.2f} s  "
          f"predict {predicted - fitted:6.2f} s  {losses}", flush=True)


def direct(data_dir):
    for name in ("nursery", "magic"):
        split = halves(name, data_dir)
        for b in (2.0, None):
            model = dict(structure="direct", estimator="hpb", estimator_params={"b": b})
            measure(f"{name} direct b={b}", model, *split)
        measure(f"{name} direct m-estimate", dict(structure="direct", estimator="m_estimate"), *split)


def kdb(data_dir):
    split = halves("connect-4", data_dir)
    for estimator in ("hpb", "m_estimate"):
        measure(f"connect-4 kdb5 {estimator}", dict(structure="kdb", k=5, estimator=estimator), *split)


def bound(_):
    rng = np.random.default_rng(0)
    n_rows, n_attributes = 9765, 10  # 9765 x 2^10 = 9,999,360 sub-patterns
    X = pd.DataFrame(rng.integers(0, 30, (2 * n_rows, n_attributes)))  # unique from level 3 on
    y = rng.integers(0, 2, 2 * n_rows)
    model = dict(structure="direct", estimator="hpb")
    measure("unique patterns at the bound", model, X[:n_rows], y[:n_rows], X[n_rows:], y[n_rows:])


CASES = {"direct": direct, "kdb": kdb, "bound": bound}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)")
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; valid: {', '.join(CASES)}")
    for case in args.cases or CASES:
        CASES[case](args.data_dir)
    print(f"peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
