"""Fit and predict time of counting models (NB, kDB-1, kDB-5, SkDB k_max=5; m-estimates with m = 1), per core:
ours against the C++ Petal (anamf/SKDB, the Selective kDB paper's code), in CPU time and wall time, one thread.

Data: a synthetic file of ``--rows`` training rows and ``--test-rows`` test rows (20 nominal attributes of 2-8
values and a 3-valued class, drawn from a chain-shaped network), written once under ``--folder`` (a temporary
directory; never the datasets' store nor the repository) as CSV with a header (ours) and as Petal's ``.pdata`` (the
same lines without the header) with its ``.pmeta`` (each column's values). With ``--adult``, the half of adult of
``structure_speed.py`` too (MDL-discretised on the training half; fit on it, predict the other half), in memory only.

Each model is measured ``--repeats`` times in rounds, each round making its measurements back to back (so that a
change of the machine's load weighs on all alike); a time is given as the median and the range over the rounds, a
ratio as the median and range of the per-round ratios:

* ours in memory: ``BNClassifier.fit`` on a DataFrame of categorical columns (``pd.read_csv(dtype="category")``
  beforehand, not timed; fit encodes them), then ``predict_proba`` of the test rows;
* ours out of core: ``fit_file`` reading the training CSV in chunks, then ``predict_proba_file`` reading the test
  CSV in chunks (the out-of-core predict is also given against the in-memory one); with ``--file-format parquet``
  the same rows written as parquet (string columns, row groups of 65,536 rows as the data directory's parquet
  files have: ``bncbench.data.store.ROW_GROUP_ROWS``) instead;
* Petal: ``gigal`` trained on the training file and tested on the test file, in a child process; its training and
  testing times are its own, from the ``PETAL_TIMES`` line of ``petal_timers.patch`` (``std::clock``: CPU time;
  ``std::chrono::steady_clock``: wall time, around ``learner::train`` and around the test loop). Petal streams its
  files: its training parses the training text on every pass, its testing parses the test text, as ours out of
  core does; ours in memory reads no text.

Ours are timed in this process, with ``time.process_time`` (CPU time of all its threads) and ``time.perf_counter``
around fit and around predict; each model is first fitted and predicted once on 10,000 rows, in memory and out of
core (the warm-up), so that loading numba's cached kernels is not counted. One thread: ``NUMBA_NUM_THREADS=1`` (set
before numba is imported) and ``numba.set_num_threads(1)``; pyarrow, which reads the CSV out of core, gets one
thread too (``pyarrow.set_cpu_count(1)``, ``pyarrow.set_io_thread_count(1)``); Petal has one. No process is pinned to
a core. Petal fixes m = 1 at compile time (its ``smoothing.h``); ours is given ``m: 1``, so that both do the same
work (by default ours chooses m on a holdout). Petal's SkDB is ``-lkdb-selective -selectiveK -k5``, which selects the
attributes and k <= 5 as ours does (without ``-selectiveK`` it keeps k = 5).

    python benchmarks/counting_speed.py --petal PATH [--rows 1000000] [--test-rows 200000] [--repeats 3]

Petal's ``gigal``, built by hand outside the repository from anamf/SKDB at
0d32fb4ec9821a98eb8f026d3e9157200762c2e6 (its files end their lines with CR LF, as does the patch)::

    git clone https://github.com/anamf/SKDB petal && cd petal && git checkout 0d32fb4ec9821a98eb8f026d3e9157200762c2e6
    patch -p1 < .../benchmarks/petal_timers.patch
    make gigal CFLAGS="-O3 -DNDEBUG -fpermissive"   # g++ 12 refuses its templates without -fpermissive

Without ``--petal`` ours alone are measured.

Found: ``reports/counting_speed/README.md`` (the last runs, CSV and parquet, on one machine, with the ratios).
"""

import argparse
import os
import re
import statistics
import subprocess
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
WARM_UP_ROWS = 10_000
#: The line of ``petal_timers.patch``: seconds of training and testing, CPU and wall.
PETAL_TIMES = re.compile(r"^PETAL_TIMES train_cpu=(\S+) train_wall=(\S+) test_cpu=(\S+) test_wall=(\S+)", re.M)
PETAL_LOSS = re.compile(r"^0-1 loss = (\S+)", re.M)


def write_synthetic(folder: Path, rows: int, test_rows: int, seed: int = 0) -> dict:
    """Write the training and test CSVs (ours), the warm-up CSV (the first test rows) and the same rows as Petal's
    files, once; return the paths."""
    names = ("train.csv", "test.csv", "warm_up.csv", "train.parquet", "test.parquet", "warm_up.parquet", "data.pmeta",
             "train.pdata", "test.pdata")
    paths = {name: folder / name for name in names}
    if all(path.exists() for path in paths.values()):
        return paths
    from bncbench.data.store import ROW_GROUP_ROWS  # here: importing bncbench loads numba, after its thread count

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
        # string columns (parquet stores them dictionary-encoded), in the row groups of the store's parquet files
        frame.to_parquet(paths[f"{name}.parquet"], row_group_size=ROW_GROUP_ROWS)
        frame.to_csv(paths[f"{name}.pdata"], index=False, header=False)
        if name == "test":
            frame.iloc[:WARM_UP_ROWS].to_csv(paths["warm_up.csv"], index=False)
            frame.iloc[:WARM_UP_ROWS].to_parquet(paths["warm_up.parquet"])
    with open(paths["data.pmeta"], "w") as f:
        for i, r in enumerate(CARDINALITIES):
            f.write(f"x{i}: " + ",".join(f"v{j}" for j in range(r)) + "\n")
        f.write("class: a,b,c\n")
    return paths


def _timed(call):
    """``call()``, its CPU time (every thread of this process) and its wall time."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = call()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def in_memory(model: dict, X_train, y_train, X_test, y_test) -> dict:
    """Ours fitted and predicting in memory: fit and predict times, and the test accuracy (not timed)."""
    from bncbench import BNClassifier

    classifier, fit_cpu, fit_wall = _timed(lambda: BNClassifier(**model, **ESTIMATOR).fit(X_train, y_train))
    proba, predict_cpu, predict_wall = _timed(lambda: classifier.predict_proba(X_test))
    accuracy = float((classifier.classes_[proba.argmax(axis=1)] == np.asarray(y_test)).mean())
    return dict(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_cpu=predict_cpu, predict_wall=predict_wall, accuracy=accuracy)


def out_of_core(model: dict, train: Path, test: Path, chunk_rows: int | None) -> dict:
    """Ours fitted from the training file and predicting the test file, each read in chunks: times, the test accuracy
    (counted after the predict time, as in memory), the passes over the training data and the reads of its file."""
    from bncbench import BNClassifier
    from bncbench.bnc.out_of_core import fit_file, predict_proba_file

    (classifier, data), fit_cpu, fit_wall = _timed(lambda: fit_file(
        BNClassifier(**model, **ESTIMATOR), train, chunk_rows=chunk_rows, discretise=False, numeric=[]))

    def predict():
        return [(proba, chunk.column("class")) for proba, chunk in predict_proba_file(classifier, data, test)]

    chunks, predict_cpu, predict_wall = _timed(predict)
    predicted = classifier.classes_[np.concatenate([proba.argmax(axis=1) for proba, _ in chunks])]
    accuracy = float((predicted == np.concatenate([truth.to_numpy(zero_copy_only=False) for _, truth in chunks])).mean())
    return dict(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_cpu=predict_cpu, predict_wall=predict_wall,
                accuracy=accuracy, passes=data.passes, reads=data.reads)


def run_petal(petal: str, meta, train, test, options: list) -> dict:
    """Petal trained on ``train`` and tested on ``test``: its own training and testing times (``PETAL_TIMES``) and
    its test accuracy."""
    done = subprocess.run([petal, str(meta), str(train), f"-t{test}", *options], capture_output=True, text=True)
    times = PETAL_TIMES.search(done.stdout)
    if done.returncode or not times:
        raise RuntimeError(
            f"{petal} {' '.join(options)} failed (exit {done.returncode}) or printed no PETAL_TIMES line (build it "
            f"with benchmarks/petal_timers.patch): {(done.stdout + done.stderr).strip()[-500:]}")
    fit_cpu, fit_wall, predict_cpu, predict_wall = map(float, times.groups())
    return dict(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_cpu=predict_cpu, predict_wall=predict_wall,
                accuracy=1 - float(PETAL_LOSS.search(done.stdout).group(1)))


def measure(name: str, rows: int, repeats: int, ours_in_memory, petal=None, ours_out_of_core=None) -> dict:
    """``repeats`` rounds of each measurement given (callables returning a dict of times), back to back; the
    1-minute load average before and after, and numba's threads."""
    import numba

    runs = dict(ours=[], petal=[], ooc=[])
    load_start = os.getloadavg()[0]
    for _ in range(repeats):
        runs["ours"].append(ours_in_memory())
        if petal:
            runs["petal"].append(petal())
        if ours_out_of_core:
            runs["ooc"].append(ours_out_of_core())
    return dict(name=name, rows=rows, load=(load_start, os.getloadavg()[0]), threads=numba.get_num_threads(), **runs)


def _spread(values: list, digits: int = 2) -> str:
    """Median and range: ``4.21 (4.10-4.50)``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def _times(runs: list, key: str) -> str:
    return _spread([run[key] for run in runs]) if runs else "-"


def _ratios(numerators: list, denominators: list, key: str, denominator_key: str | None = None) -> str:
    """The per-round ratios of ``key`` (median and range)."""
    if not numerators or not denominators:
        return "-"
    return _spread([a[key] / b[denominator_key or key] for a, b in zip(numerators, denominators)])


COMPARISON_HEADER = (
    "| model | rows | fit CPU ours | fit CPU Petal | Petal/ours | fit wall ours | fit wall Petal | predict CPU ours "
    "| predict CPU Petal | Petal/ours | predict wall ours | predict wall Petal | threads | load start, end |\n"
    + "|" + " --- |" * 14)
OUT_OF_CORE_HEADER = (
    "| model | rows | fit CPU | fit wall | predict CPU | predict wall | predict CPU ooc/in memory "
    "| predict wall ooc/in memory | Petal/ours ooc fit CPU | Petal/ours ooc predict CPU | passes, reads | accuracy |\n"
    + "|" + " --- |" * 12)


def comparison_row(r: dict) -> str:
    """A model's line of the comparison with Petal."""
    ours, petal = r["ours"], r["petal"]
    return (f"| {r['name']} | {r['rows']:,} | {_times(ours, 'fit_cpu')} | {_times(petal, 'fit_cpu')} "
            f"| {_ratios(petal, ours, 'fit_cpu')} | {_times(ours, 'fit_wall')} | {_times(petal, 'fit_wall')} "
            f"| {_times(ours, 'predict_cpu')} | {_times(petal, 'predict_cpu')} | {_ratios(petal, ours, 'predict_cpu')} "
            f"| {_times(ours, 'predict_wall')} | {_times(petal, 'predict_wall')} | {r['threads']} "
            f"| {r['load'][0]:.1f}, {r['load'][1]:.1f} |")


def out_of_core_row(r: dict) -> str:
    """A model's line of ours out of core against ours in memory and against Petal."""
    ours, petal, ooc = r["ours"], r["petal"], r["ooc"]
    accuracy = " / ".join(f"{runs[0]['accuracy']:.4f}" for runs in (ours, ooc, petal) if runs)
    return (f"| {r['name']} | {r['rows']:,} | {_times(ooc, 'fit_cpu')} | {_times(ooc, 'fit_wall')} "
            f"| {_times(ooc, 'predict_cpu')} | {_times(ooc, 'predict_wall')} | {_ratios(ooc, ours, 'predict_cpu')} "
            f"| {_ratios(ooc, ours, 'predict_wall')} | {_ratios(petal, ooc, 'fit_cpu')} "
            f"| {_ratios(petal, ooc, 'predict_cpu')} | {ooc[0]['passes']}, {ooc[0]['reads']} | {accuracy} |")


def print_tables(results: list) -> None:
    """The comparison with Petal (Markdown), then ours out of core against ours in memory and against Petal."""
    print("\nSeconds, median (min-max) over the rounds; Petal/ours: the per-round ratio of Petal's time to ours (above"
          " 1: ours is faster).\n")
    print(COMPARISON_HEADER)
    for r in results:
        print(comparison_row(r))
    with_ooc = [r for r in results if r["ooc"]]
    if with_ooc:
        print("\nOurs out of core (reading its files in chunks: CSV, or parquet with --file-format parquet) against ours "
              "in memory and against Petal; accuracy on the test rows of ours in memory, out of core, and Petal.\n")
        print(OUT_OF_CORE_HEADER)
        for r in with_ooc:
            print(out_of_core_row(r))


def synthetic(paths: dict, rows: int, args) -> list:
    """Each model on the synthetic files: ours in memory, Petal, ours out of core, in rounds."""
    read = lambda path: pd.read_csv(path, dtype="category")  # noqa: E731
    train, test, warm_up = read(paths["train.csv"]), read(paths["test.csv"]), read(paths["warm_up.csv"])
    X_train, y_train, X_test, y_test = train.drop(columns="class"), train["class"], test.drop(columns="class"), test["class"]
    results = []
    for name in args.models:
        model = MODELS[name]
        in_memory(model, warm_up.drop(columns="class"), warm_up["class"], warm_up.drop(columns="class"), warm_up["class"])
        warm_up_file = paths[f"warm_up.{args.file_format}"]
        out_of_core(model, warm_up_file, warm_up_file, args.chunk_rows)
        petal = args.petal and (lambda: run_petal(args.petal, paths["data.pmeta"], paths["train.pdata"],
                                                   paths["test.pdata"], PETAL[name]))
        results.append(measure(
            name, rows, args.repeats, lambda: in_memory(model, X_train, y_train, X_test, y_test), petal,
            lambda: out_of_core(model, paths[f"train.{args.file_format}"], paths[f"test.{args.file_format}"],
                                args.chunk_rows)))
        print(comparison_row(results[-1]), out_of_core_row(results[-1]), sep="\n", flush=True)  # progress
    return results


def adult(args) -> list:
    """Each model on the half of adult, in memory, beside Petal on the same discretised rows."""
    from sklearn.model_selection import StratifiedKFold

    from bncbench.data import MDLDiscretizer, load_dataset
    from structure_speed import write_petal

    data = load_dataset(dict(source="store", name="adult", openml_id=None, openml_target=None, drop=[]), args.data_dir)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=0).split(data.X, data.y))
    discretiser = MDLDiscretizer().fit(data.X.iloc[train], data.y.iloc[train])
    X_train, X_test = discretiser.transform(data.X.iloc[train]), discretiser.transform(data.X.iloc[test])
    y_train, y_test = data.y.iloc[train], data.y.iloc[test]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        meta, train_file, test_option = write_petal(folder, X_train, y_train, X_test, y_test)
        for name in args.models:
            model = MODELS[name]
            in_memory(model, X_train, y_train, X_test, y_test)  # warm-up
            petal = args.petal and (lambda: run_petal(args.petal, meta, train_file, test_option[2:], PETAL[name]))
            results.append(measure(f"{name} (adult)", len(X_train), args.repeats,
                                   lambda: in_memory(model, X_train, y_train, X_test, y_test), petal))
    return results


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000], help="training rows of the synthetic files")
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="out of core: rows read at a time (default: fit_file's, CHUNK_VALUES values' worth)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--file-format", choices=["csv", "parquet"], default="csv",
                        help="out of core: the files ours reads (the same rows; Petal reads its own)")
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "bncbench-counting"),
                        help="where the synthetic files are written once (a temporary directory)")
    parser.add_argument("--petal", default=None, help="Petal's gigal binary, built with benchmarks/petal_timers.patch")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--adult", action="store_true", help="the half of adult too (in memory)")
    parser.add_argument("--data-dir", default=None, help="dataset store for --adult (default: $BNCBENCH_DATA_DIR)")
    args = parser.parse_args()

    os.environ["NUMBA_NUM_THREADS"] = "1"  # before numba is imported (by bncbench)
    import numba
    import pyarrow

    numba.set_num_threads(1)
    pyarrow.set_cpu_count(1)
    pyarrow.set_io_thread_count(1)
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; numba threads {numba.get_num_threads()}, pyarrow threads "
          f"{pyarrow.cpu_count()} (+{pyarrow.io_thread_count()} I/O); load average {os.getloadavg()[0]:.1f}; "
          f"Petal: {args.petal or 'not given'}; ours out of core reads {args.file_format}", flush=True)
    results = adult(args) if args.adult else []
    for rows in args.rows:
        paths = write_synthetic(Path(args.folder) / f"{rows}-{args.test_rows}", rows, args.test_rows)
        results += synthetic(paths, rows, args)
    print_tables(results)
    print(f"\nload average at the end: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
