"""Speed of the HDP sampler (issue 3): one CPT, and kDB-5 on half of adult.

Cases:

* ``cpt``: one CPT ``P(X | Y, A, B, C)``, 5 values each and 2 classes, from 50,000 generated rows
  (skewed conditionals, so that some contexts never occur), level tying, 50,000 iterations, one
  thread; the fast kernel and the plain reference kernel (identical results, checked).
* ``adult``: kDB-5 with HDP estimates on one fold of a stratified 2-fold split of adult (MDL
  discretisation fitted on that half), at 5,000 and 50,000 iterations, with all threads.

Times are wall-clock after a warm-up fit (numba compiled and cached), with the process's CPU time
beside them (on a busy machine the wall time of the one-thread case grows, its CPU time does not);
the peak resident memory of the process and the size of the shared Stirling table are printed at the
end.

    python benchmarks/hdp_speed.py [cpt] [adult] [--data-dir ../shared/datasets] [--iterations 50000]
"""

import argparse
import resource
import time

import numba
import numpy as np
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.bnc.context_tree import ContextTree
from bncbench.bnc.estimators.hdp import HDPEstimator
from bncbench.bnc.estimators.hdp.stirling import shared_table
from bncbench.data import MDLDiscretizer, load_dataset


class _OneTree:
    """The part of a CountedNetwork the estimator reads: its trees."""

    def __init__(self, tree):
        self.trees = [tree]


def cpt_rows(n_rows=50_000, n_values=5, seed=0) -> np.ndarray:
    """Columns X, A, B, C, Y: each parent depends on the class and the previous parent through
    Dirichlet(0.5) conditionals, X on all four through Dirichlet(1) conditionals."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n_rows) < 0.4).astype(np.int64)
    columns, previous = [], y * n_values
    for _ in range(3):
        table = rng.dirichlet(np.full(n_values, 0.5), size=2 * n_values)
        value = _draw(rng, table[previous])
        columns.append(value)
        previous = y * n_values + value
    context = ((y * n_values + columns[0]) * n_values + columns[1]) * n_values + columns[2]
    x = _draw(rng, rng.dirichlet(np.ones(n_values), size=2 * n_values**3)[context])
    return np.stack([x, *columns, y])


def _draw(rng, probabilities):
    return (rng.random((probabilities.shape[0], 1)) > probabilities.cumsum(axis=1)).sum(axis=1)


def time_cpt(iterations):
    tree = ContextTree(0, 5, (4, 1, 2, 3), (2, 5, 5, 5)).add(cpt_rows())
    print(
        f"cpt: {tree.n_nodes} nodes ({[p.shape[0] for p in tree.parent]} per level), "
        f"{iterations} iterations, level tying, 1 thread"
    )
    numba.set_num_threads(1)
    tables = {}
    for kernel in ("fast", "reference"):
        estimator = HDPEstimator(iterations=iterations, seed=1, kernel=kernel)
        HDPEstimator(iterations=10, seed=1, kernel=kernel).tables(
            _OneTree(tree), None, None
        )  # compile
        start, cpu = time.perf_counter(), time.process_time()
        tables[kernel] = estimator.tables(_OneTree(tree), None, None)
        print(
            f"  {kernel:<9} kernel: {time.perf_counter() - start:6.2f} s "
            f"(CPU {time.process_time() - cpu:.2f} s)"
        )
    same = all(np.array_equal(a, b) for a, b in zip(tables["fast"][0], tables["reference"][0]))
    print(f"  identical tables: {same}")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def time_adult(data_dir, iteration_counts):
    spec = {
        "source": "store",
        "openml_id": None,
        "openml_target": None,
        "drop": [],
        "name": "adult",
    }
    adult = load_dataset(spec, data_dir)
    train, _ = next(StratifiedKFold(2, shuffle=True, random_state=0).split(adult.X, adult.y))
    X = (
        MDLDiscretizer()
        .fit(adult.X.iloc[train], adult.y.iloc[train])
        .transform(adult.X.iloc[train])
    )
    y = adult.y.iloc[train]
    BNClassifier(structure="kdb", k=5, estimator="hdp", estimator_params={"iterations": 10}).fit(
        X, y
    )
    for iterations in iteration_counts:
        model = BNClassifier(
            structure="kdb",
            k=5,
            estimator="hdp",
            random_state=0,
            estimator_params={"iterations": iterations},
        )
        start, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        n_nodes = sum(tree.n_nodes for tree in model.network_.trees)
        print(
            f"adult kDB-5 HDP, {len(X)} rows, {n_nodes} nodes, {iterations} iterations, "
            f"{numba.get_num_threads()} threads: fit {wall:6.2f} s (CPU {cpu:.2f} s)"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=["cpt", "adult"], choices=["cpt", "adult"])
    parser.add_argument(
        "--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)"
    )
    parser.add_argument("--iterations", type=int, default=50_000, help="iterations of the cpt case")
    args = parser.parse_args()
    if "cpt" in args.cases:
        time_cpt(args.iterations)
    if "adult" in args.cases:
        time_adult(args.data_dir, [5_000, 50_000])
    print(
        f"Stirling table: {shared_table.rows} rows, {shared_table.nbytes / 1e6:.1f} MB; "
        f"peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
