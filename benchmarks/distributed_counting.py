"""Out-of-core fits counted in process and on a dask LocalCluster of 1 and 2 workers: wall and CPU time.

The file is ``counting_speed.py``'s synthetic CSV (20 nominal attributes of 2-8 values, a 3-valued class, a
chain-shaped network), ``--rows`` training rows drawn once into ``--folder`` (a temporary folder by default).
Each model is fitted by ``fit_file`` (m-estimates with m = 1, chunks of ``--chunk-rows``):

* in process, reading the value ids the first pass kept (``cache_bytes``, the default), and reading the file at
  every pass (``cache_bytes=0``), as a cluster's workers do;
* with ``client=`` a LocalCluster of ``--workers`` processes of one thread each (numba: cores // workers threads
  each), started before and warmed up by a fit of the first 1,000 rows, so that neither start-up nor numba's
  loading is timed. Its counts are checked equal to the in-process fit's.

CPU time is this process's (``time.process_time``) plus, with a cluster, its workers' (``client.run``); the
workers' processes start before the fit, so theirs is the fit's alone. The machine's load average is printed
before each model: on a shared machine, the CPU times are the steadier numbers.

    python benchmarks/distributed_counting.py [--rows 1000000] [--chunk-rows 100000] [--workers 1 2]
"""

import argparse
import logging
import os
import platform
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from counting_speed import ESTIMATOR, write_synthetic

MODELS = {"NB": dict(structure="nb"), "kDB-5": dict(structure="kdb", k=5), "SkDB k_max=5": dict(structure="skdb", k=5)}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def timed_fit(model: dict, path: Path, chunk_rows: int, client=None, cache_bytes=None):
    """The fitted classifier, wall seconds and CPU seconds (this process's, and the workers')."""
    from bncbench import BNClassifier
    from bncbench.bnc.out_of_core import CACHE_BYTES, fit_file

    workers_before = client.run(time.process_time) if client else {}
    wall, cpu = time.perf_counter(), time.process_time()
    classifier, _ = fit_file(BNClassifier(**model, **ESTIMATOR), path, chunk_rows=chunk_rows, discretise=False,
                             numeric=[], cache_bytes=CACHE_BYTES if cache_bytes is None else cache_bytes, client=client)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    workers = sum(client.run(time.process_time)[w] - t for w, t in workers_before.items()) if client else 0.0
    return classifier, wall, cpu + workers


def same_counts(one, other) -> bool:
    return all(np.array_equal(a, b) for tree, twin in zip(one.network_.trees, other.network_.trees)
               for arrays, twins in ((tree.parent, twin.parent), (tree.counts, twin.counts)) for a, b in zip(arrays, twins))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--folder", type=Path, default=None, help="where the file is drawn (default: a temporary one)")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.folder or Path(scratch)
        started = time.perf_counter()
        path = write_synthetic(folder, args.rows, 1000)["train.csv"]
        small = write_synthetic(folder / "small", 1000, 1000)["train.csv"]
        cores = os.cpu_count()
        print(f"{cpu_model()}, {cores} cores, numba {numba.__version__} ({numba.get_num_threads()} threads in process); "
              f"{args.rows:,} rows x 21 columns ({path.stat().st_size / 2**20:.0f} MiB CSV, drawn in "
              f"{time.perf_counter() - started:.0f} s), chunks of {args.chunk_rows:,}")
        clusters = {}
        for n in args.workers:
            env = {"NUMBA_NUM_THREADS": str(max(1, cores // n))}
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None, env=env,
                                   silence_logs=logging.ERROR)
            clusters[n] = cluster, Client(cluster)
        for name in args.models:
            model = MODELS[name]
            timed_fit(model, small, args.chunk_rows)  # numba's kernels loaded
            print(f"\n{name} (load average {os.getloadavg()[0]:.1f}):")
            reference, wall, cpu = timed_fit(model, path, args.chunk_rows)
            print(f"  in process, ids kept       wall {wall:7.1f} s   CPU {cpu:7.1f} s")
            _, wall, cpu = timed_fit(model, path, args.chunk_rows, cache_bytes=0)
            print(f"  in process, file re-read   wall {wall:7.1f} s   CPU {cpu:7.1f} s")
            for n, (_, client) in clusters.items():
                timed_fit(model, small, args.chunk_rows, client)
                fitted, wall, cpu = timed_fit(model, path, args.chunk_rows, client)
                assert same_counts(fitted, reference), f"{name}: the counts of {n} workers differ"
                print(f"  LocalCluster, {n} worker{'s' if n > 1 else ' '}    wall {wall:7.1f} s   CPU {cpu:7.1f} s"
                      f"   (numba threads {max(1, cores // n)} each; counts equal)")
        for cluster, client in clusters.values():
            client.close()
            cluster.close()


if __name__ == "__main__":
    main()
