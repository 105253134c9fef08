"""What an out-of-core cell holds as its rows grow (issue 44: "a cell's peak memory must not grow with the rows").

For each dataset and model, in a process of its own: the cross-validation of an out-of-core cell
(``cross_validate_file``, ``--repetitions`` of 2 folds, one by default, the predictions written to a temporary parquet
file, as the runner does), with each fit's id cache bounded at ``--cache-bytes`` (0: none, every pass reads the file). The
process's peak resident memory (``ru_maxrss``) and CPU time are printed, then for each model the growth of the peak
between the datasets in bytes a row of the larger one. Numba's kernels load from their cache in each process
(run a model once before to fill it); one numba thread.

    python benchmarks/out_of_core_cell_memory.py --data-dir /tmp/bncbench-data \\
        [--datasets synthetic-kdb2-1e6 synthetic-kdb2-2e7] [--models nb_m_estimate kdb5_m_estimate] [--cache-bytes 0] \\
        [--repetitions 5]

The synthetic datasets are drawn into ``--data-dir`` when absent there (about two minutes for 20M rows; as parquet,
their configs' ``store_format``): give a folder of your own, not the shared store. Each row names the file read, so
that two runs on two data directories compare the formats (``bncbench data convert``).
"""

import argparse
import json
import os
import subprocess
import sys

CASE = """
import json, resource, sys, tempfile, time
from pathlib import Path
from bncbench.data.dataset import dataset_config, dataset_file
from bncbench.protocol.models import model_spec
from bncbench.protocol.out_of_core import cross_validate_file

name, model, data_dir, cache_bytes, repetitions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
data = dataset_file(dataset_config(name), data_dir)
cpu = time.process_time()
with tempfile.TemporaryDirectory() as folder:
    result = cross_validate_file(data, model_spec(model), repetitions=repetitions, folds=2, seed=1,
                                 predictions_to=Path(folder, "predictions.parquet"), cache_bytes=cache_bytes)
print(json.dumps({"rows": data.shape[0], "file": data.path.name,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "cpu": time.process_time() - cpu, "zero_one_loss": float(result.metrics["zero_one_loss"].mean())}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="a store of your own (synthetic datasets are drawn into it)")
    parser.add_argument("--datasets", nargs="+", default=["synthetic-kdb2-1e6", "synthetic-kdb2-2e7"])
    parser.add_argument("--models", nargs="+", default=["nb_m_estimate", "kdb5_m_estimate"])
    parser.add_argument("--cache-bytes", type=int, default=256 * 2**20, help="each fit's id cache bound (0: none)")
    parser.add_argument("--repetitions", type=int, default=1, help="of 2 folds each (5: a cell's)")
    args = parser.parse_args()
    environment = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    print(f"cache_bytes {args.cache_bytes:,}; {args.repetitions} repetitions of 2 folds; peak resident MiB of the cell's "
          "process")
    print("| model | dataset | file | rows | peak MiB | CPU s | 0-1 loss |\n| --- | --- | --- | --- | --- | --- | --- |")
    for model in args.models:
        found = []
        for dataset in args.datasets:
            out = subprocess.run([sys.executable, "-c", CASE, dataset, model, args.data_dir, str(args.cache_bytes),
                                  str(args.repetitions)],
                                 capture_output=True, text=True, check=True, env=environment)
            found.append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = found[-1]
            print(f"| {model} | {dataset} | {r['file']} | {r['rows']:,} | {r['peak_mib']:.0f} | {r['cpu']:.1f} | "
                  f"{r['zero_one_loss']:.6f} |", flush=True)
        for smaller, larger in zip(found, found[1:]):
            growth = (larger["peak_mib"] - smaller["peak_mib"]) * 2**20 / (larger["rows"] - smaller["rows"])
            print(f"{model}: {growth:.1f} bytes a row from {smaller['rows']:,} to {larger['rows']:,} rows", flush=True)


if __name__ == "__main__":
    main()
