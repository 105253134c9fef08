"""What an in-memory cross-validated cell really holds, against what the out-of-core threshold assumes
(``bncbench.protocol.out_of_core.BYTES_PER_VALUE`` bytes a value; issue 44).

For each model, in a process of its own: the dataset's config (``conf/dataset/<name>.yaml``) is loaded as a
cell loads it (``load_dataset``, into a pandas frame), then cross-validated in memory as a cell is
(``cross_validate``, one repetition of 2 folds: each fold's training and test parts, their discretised
copies, the codes, the predictions of one repetition). The process's peak resident memory above its baseline
before the load is divided by the dataset's values (rows x (attributes + 1)).

    python benchmarks/cell_memory.py --data-dir /tmp/bncbench-data [--dataset synthetic-kdb2-1e6] [--models nb kdb5]

A synthetic dataset is drawn into ``--data-dir`` when absent there (about a minute for 1M rows): give a
folder of your own, not the shared store.
"""

import argparse
import json
import subprocess
import sys

CASE = """
import json, sys, time
from bncbench.data import load_dataset
from bncbench.protocol.cross_validation import cross_validate
from bncbench.protocol.models import model_spec
from bncbench.protocol.out_of_core import BYTES_PER_VALUE

def status(key):
    with open("/proc/self/status") as found:
        return next(int(line.split()[1]) / 1024 for line in found if line.startswith(key))

dataset_name, model_name, data_dir = sys.argv[1:4]
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
base, cpu = status("VmRSS"), time.process_time()
dataset = load_dataset(dataset_name, data_dir)
loaded = status("VmHWM") - base
cross_validate(dataset, model_spec(model_name), repetitions=1, folds=2)
values = len(dataset.X) * (dataset.X.shape[1] + 1)
print(json.dumps({"rows": len(dataset.X), "values": values, "loaded_mib": loaded,
                  "peak_mib": status("VmHWM") - base, "assumed": BYTES_PER_VALUE, "cpu": time.process_time() - cpu}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="a store of your own (synthetic datasets are drawn into it)")
    parser.add_argument("--dataset", default="synthetic-kdb2-1e6")
    parser.add_argument("--models", nargs="+", default=["nb_m_estimate", "kdb5_m_estimate"])
    args = parser.parse_args()
    for model in args.models:
        out = subprocess.run([sys.executable, "-c", CASE, args.dataset, model, args.data_dir],
                             capture_output=True, text=True, check=True)
        found = json.loads(out.stdout.strip().splitlines()[-1])
        per_value = found["peak_mib"] * 2**20 / found["values"]
        print(f"{args.dataset} ({found['rows']:,} rows, {found['values']:,} values) {model}: frame loaded "
              f"{found['loaded_mib']:.0f} MiB, cell peak {found['peak_mib']:.0f} MiB above the baseline = "
              f"{per_value:.0f} bytes a value (the threshold assumes {found['assumed']}); CPU {found['cpu']:.0f} s",
              flush=True)


if __name__ == "__main__":
    main()
