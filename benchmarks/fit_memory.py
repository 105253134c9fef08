"""Peak memory of an in-memory fit and predict: bncbench's classifiers against scikit-learn's CategoricalNB
on the same frame (issue 44).

Each case runs in a process of its own: it draws ``--rows`` rows of ``--attributes`` attributes of 4 values
and 3 classes as an int64 DataFrame, fits and predicts once on 1,000 rows (kernels compiled, libraries
loaded), then resets the process's peak resident memory (``/proc/self/clear_refs``) and reports how far
above the resident memory of that moment the fit, then the predict of the same rows, peaked, with the CPU
time of each. Linux only.

    python benchmarks/fit_memory.py [--rows 1000000] [--attributes 20] [--models nb kdb1 kdb5 categorical_nb]

Measured with the code before and after the change (cd3010e and its successor, one run, a loaded 2-core AMD
EPYC, one numba thread), fit peak above the baseline on 1M rows x 20 attributes: NB 649 -> 183 MiB (CPU 1.84
-> 0.69 s), kDB-1 663 -> 198 MiB, kDB-5 1305 -> 192 MiB (CPU 3.48 -> 1.81 s); CategoricalNB 62 MiB. Before, the
codes were made twice (the attributes', then stacked with the class), transposed once more for counting, and
every tree kept each level's parents as a view of an array as long as the rows. What was left was the code
matrix itself (int64, 8 bytes a value: 160 MiB here), which CategoricalNB does not copy from an int64 frame.

Then (2026-11-29, same machine loaded by other jobs, one run each) with the codes in the narrowest integer type
that holds them (int8 here) and counted in that type: fit NB 50 MiB (0.82 CPU-s), kDB-1 60 MiB (1.45 s), kDB-5
52 MiB (1.79 s) against CategoricalNB's 62 MiB (0.81 s). The predict peaks (NB 171, kDB-5 172 MiB against 148)
are the int64 codes of the rows to predict and the per-class log-likelihoods.
"""

import argparse
import json
import subprocess
import sys
import time

CASE = """
import json, sys, time
import numpy as np, pandas as pd
from sklearn.naive_bayes import CategoricalNB
from bncbench import BNClassifier

def status(key):
    with open("/proc/self/status") as found:
        return next(int(line.split()[1]) / 1024 for line in found if line.startswith(key))

def make(model):
    if model == "categorical_nb":
        return CategoricalNB(alpha=1.0)
    structure, k = ("nb", None) if model == "nb" else ("kdb", int(model[3:]))
    return BNClassifier(structure=structure, k=k, estimator="laplace")

def peak(work):
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak (VmHWM) starts again from the resident memory now
    base, cpu = status("VmRSS"), time.process_time()
    result = work()
    return result, status("VmHWM") - base, time.process_time() - cpu

model, rows, attributes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X = pd.DataFrame(rng.integers(0, 4, size=(rows, attributes)), columns=[f"a{i}" for i in range(attributes)])
y = pd.Series(rng.integers(0, 3, size=rows), name="class")
make(model).fit(X.iloc[:1000], y.iloc[:1000]).predict_proba(X.iloc[:1000])
fitted, fit_mib, fit_cpu = peak(lambda: make(model).fit(X, y))
_, predict_mib, predict_cpu = peak(lambda: fitted.predict_proba(X))
print(json.dumps({"frame_mib": X.memory_usage().sum() / 2**20, "fit_mib": fit_mib, "fit_cpu": fit_cpu,
                  "predict_mib": predict_mib, "predict_cpu": predict_cpu}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--attributes", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["nb", "kdb1", "kdb5", "categorical_nb"])
    args = parser.parse_args()
    print(f"{args.rows:,} rows x {args.attributes} attributes of 4 values, 3 classes, int64 DataFrame; "
          "peak resident memory above the process's baseline (MiB) and CPU seconds, one thread")
    for model in args.models:
        began = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CASE, model, str(args.rows), str(args.attributes)],
                             capture_output=True, text=True, check=True)
        found = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{model:15} frame {found['frame_mib']:6.0f}  fit {found['fit_mib']:6.0f} MiB {found['fit_cpu']:6.2f} s"
              f"  predict {found['predict_mib']:6.0f} MiB {found['predict_cpu']:6.2f} s"
              f"  ({time.perf_counter() - began:.0f} s in all)", flush=True)


if __name__ == "__main__":
    main()
