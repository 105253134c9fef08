"""The HDP sampler's CPU time beside competing busy processes against a quiet run (issue 44).

kDB-5 with HDP estimates on the first training half of adult (stratified 2-fold split, MDL fitted on that
half), as ``benchmarks/hdp_speed.py`` fits it; after a warm-up fit (numba compiled and cached), the same fit
twice in each of two conditions, alternated: quiet, and with ``--competitors`` busy processes (pure Python
loops, one per core by default) running beside it. For each: the process's CPU time, the wall time, and the
number of ranges the sampler's iterations ran in (``bncbench.bnc.progress.iteration_chunks``, one kernel
call each). The fit's CPU time should not depend on the load: the ranges are sized by CPU time, and a call's
fixed cost is about a millisecond. Aim: loaded within 10% of quiet in CPU time.

    python benchmarks/hdp_under_load.py [--iterations 5000] [--threads 1] [--competitors N]

"Quiet" is only as quiet as the machine: stop other jobs first for a true reference.
"""

import argparse
import multiprocessing
import os
import platform
import time

import numba
from sklearn.model_selection import StratifiedKFold

from bncbench import BNClassifier
from bncbench.bnc import progress
from bncbench.bnc.estimators.hdp import estimator as hdp_estimator
from bncbench.data import MDLDiscretizer, load_dataset


def busy() -> None:
    while True:
        pass


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def fit_once(X, y, iterations: int) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and ranges of one fit."""
    ranges = []

    def counted(total, label):
        for first, last in progress.iteration_chunks(total, label):
            ranges.append(last - first)
            yield first, last

    hdp_estimator.iteration_chunks = counted
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        BNClassifier(structure="kdb", k=5, estimator="hdp", estimator_params={"iterations": iterations, "seed": 1}).fit(X, y)
        return time.process_time() - cpu, time.perf_counter() - wall, len(ranges)
    finally:
        hdp_estimator.iteration_chunks = progress.iteration_chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("BNCBENCH_DATA_DIR", "../shared/datasets"))
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=1, help="numba threads of the fit")
    parser.add_argument("--competitors", type=int, default=os.cpu_count(), help="busy processes beside it")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    adult = load_dataset({"name": "adult", "source": "store"}, args.data_dir)
    train, _ = next(StratifiedKFold(2, shuffle=True, random_state=0).split(adult.X, adult.y))
    X = MDLDiscretizer().fit(adult.X.iloc[train], adult.y.iloc[train]).transform(adult.X.iloc[train])
    y = adult.y.iloc[train]
    fit_once(X, y, 10)  # warm-up: compiled kernels, the Stirling table
    print(f"{cpu_model()}, {os.cpu_count()} cores; kDB-5 HDP on adult's training half ({len(X)} rows), "
          f"{args.iterations} iterations, {args.threads} numba thread(s), {args.competitors} busy processes when loaded")
    results = {"quiet": [], "loaded": []}
    for _ in range(args.repeat):
        for condition in results:
            competitors = [multiprocessing.Process(target=busy, daemon=True)
                           for _ in range(args.competitors if condition == "loaded" else 0)]
            for process in competitors:
                process.start()
            try:
                results[condition].append(fit_once(X, y, args.iterations))
            finally:
                for process in competitors:
                    process.terminate()
                    process.join()
            cpu, wall, ranges = results[condition][-1]
            print(f"{condition:6}: CPU {cpu:7.2f} s, wall {wall:7.2f} s, {ranges} ranges", flush=True)
    quiet, loaded = (min(cpu for cpu, _, _ in results[condition]) for condition in ("quiet", "loaded"))
    print(f"CPU time loaded / quiet (best of {args.repeat} each): {loaded / quiet:.3f}")


if __name__ == "__main__":
    main()
