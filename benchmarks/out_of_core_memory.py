"""Peak memory of an out-of-core fit and predict above a process whose kernels are already loaded (issue 44's aim:
within 64 MiB, plus the model's own tables, whatever the rows).

Data: the synthetic CSVs (or, ``--file-format parquet``, parquet files) of ``counting_speed.py`` (20 nominal attributes, a 3-valued class; ``--rows`` training rows,
``--test-rows`` test rows, written once under ``--folder``). Each model (m-estimate, m = 1) is measured in a fresh
process, which first gives freed memory back as a cell's does (``--allocation cell``, the default:
``give_back_freed_memory``, pyarrow's jemalloc pool; ``default``: the allocators' own defaults); a fit and predict
of the warm-up file (10,000 rows) loads numba's kernels; the resident size then is the
baseline; the kernel's high-water mark is reset (``5`` into ``/proc/self/clear_refs``, Linux only); ``fit_file`` on
the training CSV, then ``predict_proba_file`` of the test CSV a chunk at a time; the high-water mark after each, less
the baseline, is printed beside the size of the fitted trees' arrays (counts, children, parents) and the passes.

    python benchmarks/out_of_core_memory.py [--rows 2000000] [--cache-bytes N] [--chunk-rows 100000] [--file-format parquet] \\
        [--allocation default]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from counting_speed import ESTIMATOR, MODELS, write_synthetic

_MEASURE = """
import json, re, sys
from bncbench import BNClassifier
from bncbench.bnc.out_of_core import fit_file, predict_proba_file
from bncbench.core.allocation import give_back_freed_memory

if sys.argv[6] == "cell":
    give_back_freed_memory()

def status(key):
    return int(re.search(key + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024

model, paths, options = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
classifier, kind = dict(model, **json.loads(sys.argv[4])), sys.argv[5]
clf, data = fit_file(BNClassifier(**classifier), paths[f"warm_up.{kind}"], **options)
for _ in predict_proba_file(clf, data, paths[f"warm_up.{kind}"]):
    pass
del clf, data
baseline = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
clf, data = fit_file(BNClassifier(**classifier), paths[f"train.{kind}"], **options)
fit_peak = status("VmHWM")
for _ in predict_proba_file(clf, data, paths[f"test.{kind}"]):
    pass
trees = sum(a.nbytes for t in clf.network_.trees for arrays in (t.counts, t.children, t.parent) for a in arrays)
print(json.dumps({"baseline": baseline, "fit": fit_peak - baseline, "fit_predict": status("VmHWM") - baseline,
                  "trees": trees / 2**20, "passes": data.passes, "reads": data.reads}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2_000_000], help="training rows of the synthetic files")
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument("--chunk-rows", type=int, default=None, help="fit_file's chunk_rows (default: its own)")
    parser.add_argument("--cache-bytes", type=int, default=None, help="fit_file's cache_bytes (default: its own)")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/bncbench-counting"), help="where the files go")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--file-format", choices=["csv", "parquet"], default="csv", help="the files read")
    parser.add_argument("--allocation", choices=["cell", "default"], default="cell",
                        help="cell: freed memory given back as a cell's process does (give_back_freed_memory, first "
                             "of all: malloc's mmap threshold fixed, pyarrow's jemalloc pool); default: malloc's and "
                             "pyarrow's defaults (mimalloc)")
    args = parser.parse_args()
    options = {k: v for k, v in (("chunk_rows", args.chunk_rows), ("cache_bytes", args.cache_bytes)) if v is not None}
    print(f"fit_file options: {options or 'its defaults'}; {args.file_format} files; allocation: {args.allocation}; "
          "MiB above the baseline of a process with its kernels loaded")
    print("| model | rows | baseline MiB | fit peak | fit and predict peak | trees' arrays | passes, reads |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for rows in args.rows:
        paths = write_synthetic(args.folder / f"{rows}-{args.test_rows}", rows, args.test_rows)
        for name in args.models:
            out = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(MODELS[name]),
                                  json.dumps({k: str(v) for k, v in paths.items()}), json.dumps(options),
                                  json.dumps(ESTIMATOR), args.file_format, args.allocation], capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {name} | {rows:,} | {r['baseline']:.0f} | {r['fit']:.0f} | {r['fit_predict']:.0f} | "
                  f"{r['trees']:.1f} | {r['passes']}, {r['reads']} |", flush=True)


if __name__ == "__main__":
    main()
