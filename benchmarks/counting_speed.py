"""Rows per second and peak memory of counting models (NB, kDB-1, kDB-5, SkDB k_max=5; m-estimates), fit and
predict separately, beside the C++ Petal (the Selective kDB paper's code) when it is given.

Two cases:

* in process: the half of adult of ``structure_speed.py`` (stratified 2-fold split, MDL-discretised on the
  training half); fit on it, predict the other half, in this process after a warm-up;
* out of core: a synthetic file of ``--rows`` training rows and ``--test-rows`` test rows (20 nominal
  attributes of 2-8 values and a 3-valued class, drawn from a chain-shaped network), written once as CSV
  under ``--folder``; each model runs in a fresh process: ``fit_file`` reads the training CSV in chunks
  (its passes after the first read the value ids it kept, ``fit_file``'s ``cache_bytes``), then
  ``predict_proba_file`` reads and predicts the test CSV in chunks. Its import time, fit and predict
  times, CPU time and peak resident memory are reported, and the passes over the data and reads of the file.

Both read the same kind of input: text CSV with nominal values (ours with a header line, Petal's ``.pdata``
without one, plus its ``.pmeta`` listing the values). Petal smooths with a fixed m = 1; ours is given
``m: 1`` too, so that both do the same work (ours by default also chooses m on a holdout).

    python benchmarks/counting_speed.py [--rows 1000000] [--test-rows 200000] [--repeats 2] [--petal PATH]

``--petal`` names Petal's ``gigal`` binary, built by hand outside the repository::

    git clone https://github.com/anamf/SKDB /work/petal && cd /work/petal
    g++ -o gigal $(sed -n 's/^SOURCE *= *//p' makefile) -O3 -DNDEBUG -fpermissive

Each model then runs ours and Petal's in turns (``--repeats`` rounds, the median kept), so that a change of
the machine's load weighs on both alike. Petal's fit is its whole process with a one-row test file; its
predict time is the whole process with the test file minus that. Ratios are Petal's time over ours: above
1, ours is faster; out of core they are given in wall time and in CPU time (user + system of every thread,
ours from the worker's ``time.process_time``), the steadier of the two on a busy machine. Processes are measured with GNU time (``/usr/bin/time``), which must be installed.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

MODELS = {
    "NB": dict(structure="nb"),
    "kDB-1": dict(structure="kdb", k=1),
    "kDB-5": dict(structure="kdb", k=5),
    "SkDB k_max=5": dict(structure="skdb", k=5),
}
#: Petal's options for each model; SkDB with ``-selectiveK``, which selects k up to 5 as ours does (without it, Petal's
#: selective kDB selects attributes alone and keeps k = 5).
PETAL = {"NB": ["-lnb"], "kDB-1": ["-lkdb", "-k1"], "kDB-5": ["-lkdb", "-k5"],
         "SkDB k_max=5": ["-lkdb-selective", "-selectiveK", "-k5"]}
ESTIMATOR = dict(estimator="m_estimate", estimator_params={"m": 1.0}, random_state=0)  # Petal's m = 1
CARDINALITIES = [2, 3, 4, 5, 6, 7, 8, 3, 4, 5, 2, 3, 4, 5, 6, 7, 8, 3, 4, 5]


def write_synthetic(folder: Path, rows: int, test_rows: int, seed: int = 0) -> dict:
    """Write the training and test CSVs (ours) and the same rows as Petal's files, once; return the paths."""
    paths = {name: folder / name for name in ("train.csv", "test.csv", "data.pmeta", "train.pdata", "test.pdata", "one.pdata")}
    if all(path.exists() for path in paths.values()):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, n in (("train", rows), ("test", test_rows)):
        y = rng.integers(0, 3, n)
        columns, previous = {}, y
        for i, r in enumerate(CARDINALITIES):
            value = np.where(rng.random(n) < 0.6, (previous + y + i) % r, rng.integers(0, r, n))
            columns[f"x{i}"] = np.array([f"v{j}" for j in range(r)])[value]
            previous = value
        columns["class"] = np.array(["a", "b", "c"])[y]
        frame = pd.DataFrame(columns)
        frame.to_csv(paths[f"{name}.csv"], index=False)
        frame.to_csv(paths[f"{name}.pdata"], index=False, header=False)
        if name == "test":
            frame.iloc[:1].to_csv(paths["one.pdata"], index=False, header=False)
    with open(paths["data.pmeta"], "w") as f:
        for i, r in enumerate(CARDINALITIES):
            f.write(f"x{i}: " + ",".join(f"v{j}" for j in range(r)) + "\n")
        f.write("class: a,b,c\n")
    return paths


def run_measured(command: list) -> dict:
    """Run ``command`` under GNU time: its wall time, CPU time (user + system) and peak resident memory (MiB).
    GNU time, a small process, forks it: measured with ``os.wait4`` from here, the peak would include this
    process's memory (Linux carries the forked copy's high-water mark across ``exec``)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as usage:
        start = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", usage.name, *map(str, command)], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(f"{' '.join(map(str, command[:3]))} failed: {done.stderr.strip()[-500:]}")
        user, system, peak_kib = usage.read().split()[-3:]
    return dict(wall=wall, cpu=float(user) + float(system), peak_mib=int(peak_kib) / 1024, stdout=done.stdout)


_WORKER = """
import json, sys, time
started = time.perf_counter()
cpu_started = time.process_time()
import numpy as np
from bncbench import BNClassifier
from bncbench.bnc.out_of_core import fit_file, predict_proba_file
imported, cpu_imported = time.perf_counter(), time.process_time()
model, train, test, chunk_rows = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
classifier, data = fit_file(BNClassifier(**model), train, chunk_rows=chunk_rows, discretise=False, numeric=[])
fitted, cpu_fitted = time.perf_counter(), time.process_time()
correct = rows = 0
for proba, chunk in predict_proba_file(classifier, data, test):
    predicted = classifier.classes_[proba.argmax(axis=1)]
    correct += int((predicted == chunk.column("class").to_numpy(zero_copy_only=False)).sum())
    rows += len(chunk)
done, cpu_done = time.perf_counter(), time.process_time()
print(json.dumps(dict(imports=imported - started, fit=fitted - imported, predict=done - fitted, accuracy=correct / rows,
                      fit_cpu=cpu_fitted - cpu_imported, predict_cpu=cpu_done - cpu_fitted,
                      reads=data.reads, passes=data.passes)))
"""


def out_of_core(paths: dict, rows: int, test_rows: int, repeats: int, chunk_rows: int, petal: str | None,
                models: list) -> None:
    print(f"\nout of core: {rows} training rows, {test_rows} test rows, 20 nominal attributes, CSV, chunks of {chunk_rows}")
    for name in models:
        model = MODELS[name]
        ours, theirs = [], []
        for _ in range(repeats):
            command = [sys.executable, "-c", _WORKER, json.dumps(dict(model, **ESTIMATOR)),
                       str(paths["train.csv"]), str(paths["test.csv"]), str(chunk_rows)]
            result = run_measured(command)
            ours.append(dict(result, **json.loads(result["stdout"].strip().splitlines()[-1])))
            if petal:
                fit = run_measured([petal, str(paths["data.pmeta"]), str(paths["train.pdata"]), f"-t{paths['one.pdata']}", *PETAL[name]])
                whole = run_measured([petal, str(paths["data.pmeta"]), str(paths["train.pdata"]), f"-t{paths['test.pdata']}", *PETAL[name]])
                theirs.append(dict(fit=fit["wall"], predict=max(whole["wall"] - fit["wall"], 1e-3), wall=whole["wall"],
                                   cpu=whole["cpu"], peak_mib=whole["peak_mib"], fit_cpu=fit["cpu"],
                                   predict_cpu=max(whole["cpu"] - fit["cpu"], 1e-3)))
        report(name, ours, theirs, rows, test_rows)


def report(name: str, ours: list, theirs: list, rows: int, test_rows: int) -> None:
    med = lambda runs, key: statistics.median(run[key] for run in runs)  # noqa: E731
    line = (f"{name:<13} ours: fit {rows / med(ours, 'fit'):>9.0f} rows/s  predict {test_rows / med(ours, 'predict'):>9.0f} rows/s  "
            f"imports {med(ours, 'imports'):.2f} s  process {med(ours, 'wall'):6.2f} s wall {med(ours, 'cpu'):6.2f} s CPU  "
            f"peak {med(ours, 'peak_mib'):5.0f} MiB")
    if "accuracy" in ours[0]:
        line += f"  accuracy {ours[0]['accuracy']:.4f}  {ours[0]['passes']} passes, {ours[0]['reads']} read(s) of the file"
    print(line)
    if theirs:
        print(f"{'':<13} Petal: fit {rows / med(theirs, 'fit'):>8.0f} rows/s  predict {test_rows / med(theirs, 'predict'):>9.0f} rows/s  "
              f"{'':>12}  process {med(theirs, 'wall'):6.2f} s wall {med(theirs, 'cpu'):6.2f} s CPU  peak {med(theirs, 'peak_mib'):5.0f} MiB")
        print(f"{'':<13} Petal/ours: fit {med(theirs, 'fit') / med(ours, 'fit'):5.2f}  predict "
              f"{med(theirs, 'predict') / med(ours, 'predict'):5.2f}  whole process {med(theirs, 'wall') / med(ours, 'wall'):5.2f}")
        if "fit_cpu" in ours[0]:  # CPU seconds: steadier than wall time on a busy machine
            print(f"{'':<13} Petal/ours in CPU time: fit {med(theirs, 'fit_cpu') / med(ours, 'fit_cpu'):5.2f}  predict "
                  f"{med(theirs, 'predict_cpu') / med(ours, 'predict_cpu'):5.2f}  whole process "
                  f"{med(theirs, 'cpu') / med(ours, 'cpu'):5.2f}")


def in_process(data_dir, repeats: int, petal: str | None) -> None:
    """The half of adult, fitted and predicted in this process; Petal (whole processes) beside it."""
    from sklearn.model_selection import StratifiedKFold

    from bncbench import BNClassifier
    from bncbench.data import MDLDiscretizer, load_dataset
    from structure_speed import write_petal

    adult = load_dataset(dict(source="store", name="adult", openml_id=None, openml_target=None, drop=[]), data_dir)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=0).split(adult.X, adult.y))
    discretiser = MDLDiscretizer().fit(adult.X.iloc[train], adult.y.iloc[train])
    X_train, X_test = discretiser.transform(adult.X.iloc[train]), discretiser.transform(adult.X.iloc[test])
    y_train, y_test = adult.y.iloc[train], adult.y.iloc[test]
    print(f"\nin process: half of adult, fit on {len(X_train)} rows, predict {len(X_test)} rows")
    with tempfile.TemporaryDirectory() as folder:
        files = write_petal(folder, X_train, y_train, X_test, y_test) if petal else None
        if petal:
            one = os.path.join(folder, "one.pdata")
            with open(files[2][2:]) as test_file, open(one, "w") as f:
                f.write(test_file.readline())
        for name, model in MODELS.items():
            fitted = BNClassifier(**model, **ESTIMATOR).fit(X_train, y_train)
            fitted.predict_proba(X_test)  # warm-up (numba's cache)
            ours, theirs = [], []
            for _ in range(repeats):
                cpu, start = time.process_time(), time.perf_counter()
                BNClassifier(**model, **ESTIMATOR).fit(X_train, y_train)
                middle = time.perf_counter()
                fitted.predict_proba(X_test)
                end = time.perf_counter()
                ours.append(dict(fit=middle - start, predict=end - middle, wall=end - start, cpu=time.process_time() - cpu,
                                 imports=0.0, peak_mib=_peak_mib()))
                if petal:
                    fit = run_measured([petal, files[0], files[1], f"-t{one}", *PETAL[name]])
                    whole = run_measured([petal, *files, *PETAL[name]])
                    theirs.append(dict(fit=fit["wall"], predict=max(whole["wall"] - fit["wall"], 1e-3), wall=whole["wall"],
                                       cpu=whole["cpu"], peak_mib=whole["peak_mib"]))
            report(name, ours, theirs, len(X_train), len(X_test))


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="training rows of the synthetic file")
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--folder", default="/tmp/bncbench-counting", help="where the synthetic files are written once")
    parser.add_argument("--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)")
    parser.add_argument("--petal", default=None, help="Petal's gigal binary: run it beside ours")
    parser.add_argument("--skip-in-process", action="store_true")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS), help="out of core: these alone")
    args = parser.parse_args()

    print(f"{cpu_model()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if not args.skip_in_process:
        in_process(args.data_dir, args.repeats, args.petal)
    paths = write_synthetic(Path(args.folder) / f"{args.rows}-{args.test_rows}", args.rows, args.test_rows)
    out_of_core(paths, args.rows, args.test_rows, args.repeats, args.chunk_rows, args.petal, args.models)


if __name__ == "__main__":
    main()
