"""Out-of-core fit on a synthetic 10-million-row dataset: time per model and peak memory.

The data (``--rows`` rows, 12 nominal attributes of 3-6 values and a 3-valued class, drawn from a
kDB-2-like network) is written once as parquet with dictionary-encoded columns to ``--path``; each model
is then fitted by ``bncbench.bnc.out_of_core.fit_file`` in a fresh process, reading ``--chunk-rows``
rows at a time, and reports its fit time, number of passes and the process's peak resident memory.

    python benchmarks/out_of_core.py [--rows 10000000] [--path /tmp/bncbench-10m.parquet]
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MODELS = {
    "NB, m-estimate": dict(structure="nb", estimator="m_estimate"),
    "kDB-2, m-estimate": dict(structure="kdb", k=2, estimator="m_estimate"),
    "SkDB k_max=3, m-estimate": dict(structure="skdb", k=3, estimator="m_estimate"),
    "kDB-2, HDP 500 iterations": dict(structure="kdb", k=2, estimator="hdp", estimator_params={"iterations": 500}),
}


def write_data(path: Path, rows: int, batch: int = 1_000_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    cards = [3, 4, 5, 6, 3, 4, 5, 6, 3, 4, 5, 6]
    writer = None
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        y = rng.integers(0, 3, n)
        columns = {}
        previous = y
        for i, r in enumerate(cards):
            noise = rng.integers(0, r, n)
            value = np.where(rng.random(n) < 0.6, (previous + y + i) % r, noise)
            columns[f"x{i}"] = pa.DictionaryArray.from_arrays(value.astype(np.int32), [f"v{j}" for j in range(r)])
            previous = value
        columns["class"] = pa.DictionaryArray.from_arrays(y.astype(np.int32), ["a", "b", "c"])
        table = pa.table(columns)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


_IMPORTS = """
import resource
from bncbench.bnc import out_of_core
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

_FIT = """
import json, resource, sys, time
from bncbench import BNClassifier
from bncbench.bnc.out_of_core import fit_file
model, path, chunk_rows = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
clf, data = fit_file(BNClassifier(**model, random_state=0), path, chunk_rows=chunk_rows)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "passes": data.passes, "nodes": sum(t.n_nodes for t in clf.network_.trees),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--path", type=Path, default=Path("/tmp/bncbench-10m.parquet"))
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    args = parser.parse_args()
    if not args.path.exists() or pq.ParquetFile(args.path).metadata.num_rows != args.rows:
        start = time.perf_counter()
        write_data(args.path, args.rows)
        print(f"wrote {args.rows:,} rows to {args.path} ({args.path.stat().st_size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - start:.1f} s")
    print(f"an in-memory fit would hold the ({args.rows:,} x 13) int8 code matrix: {args.rows * 13 / 2**20:,.0f} MiB")
    baseline = subprocess.run([sys.executable, "-c", _IMPORTS], capture_output=True, text=True, check=True)
    print(f"peak memory of a process that only imports bncbench: {float(baseline.stdout):.0f} MiB")
    for name, model in MODELS.items():
        out = subprocess.run([sys.executable, "-c", _FIT, json.dumps(model), str(args.path), str(args.chunk_rows)],
                             capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:<28} fit {result['seconds']:7.1f} s  passes {result['passes']}  "
              f"tree nodes {result['nodes']:>7}  peak memory {result['peak_mb']:7.0f} MiB")


if __name__ == "__main__":
    main()
