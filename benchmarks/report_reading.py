"""Time the report's reading of a store: its one search of the runs and the per-fold metrics in bulk.

A SQLite store in a temporary directory gets ``--datasets x --models`` FINISHED cells logged as the
runner logs them (about 40 params, 25 tags, 7 metrics per fold over 10 folds and their means, through
``bncbench.tracking``); then what ``compute_report`` reads is read ``--repeat`` times (the runs, the
results, model params, provenance and left-out runs made of them, the fold scores of 3 metrics) and
the mean time printed.

    python benchmarks/report_reading.py                        # 20 cells
    python benchmarks/report_reading.py --datasets 20 --models 10

Before the one search (commit 2351be4) the report searched the runs once per table (results, model
params, provenance, left-out runs) and read the fold metrics one request per run and metric. The same
store timed with that code, on a loaded 2-core machine: 20 cells 0.24-0.54 s before, 0.05-0.15 s
after; 200 cells 2.7-3.4 s before, 0.75-0.88 s after (3-4.6 times faster). What is left is MLflow's
search itself, which loads every run's params and tags.
"""

import argparse
import random
import tempfile
import time
from pathlib import Path

from bncbench import tracking
from bncbench.tracking.record import CellRecord, fold_history, write_record
from bncbench.report.results import read_runs

METRICS = [
    "zero_one_loss",
    "rmse",
    "log_loss",
    "fit_seconds",
    "predict_seconds",
    "zero_probability_rows",
    "clipped_log_loss",
]
EXPERIMENT = "report_reading"


def make_store(directory: Path, datasets: int, models: int) -> tuple[str, int]:
    """Log ``datasets x models`` FINISHED cells in a new store in ``directory``; return its URI and
    the number of cells."""
    uri = f"sqlite:///{directory / 'mlflow.db'}"
    client = tracking.open_store(uri, check=False)
    experiment_id = tracking.prepare_experiment(client, EXPERIMENT, str(directory))
    rng = random.Random(0)
    cells = 0
    for d in range(datasets):
        for m in range(models):
            cell = (f"d{d}", f"m{m}")
            params = {f"model.p{i}": str(i) for i in range(37)}
            params |= {"cv.repetitions": "5", "cv.folds": "2", "cv.seed": "0"}
            tags = {"dataset": cell[0], "model": cell[1], "cfg_hash": f"h{d}-{m}", "data_digest": "x"}
            run_id = tracking.start_run(
                client, experiment_id, "/".join(cell), {**tags, **{f"t{i}": "v" for i in range(21)}}
            )
            folds = {name: {fold: rng.random() for fold in range(10)} for name in METRICS}
            history = fold_history(folds, 0)
            write_record(client, run_id, CellRecord(run_id, "/".join(cell), "FINISHED", None, None, {}, params,
                                                    history=history))
            cells += 1
    return uri, cells


def read(uri: str) -> int:
    """What ``compute_report`` reads of the store (each cell's latest finished run); the number of fold scores read."""
    runs = read_runs(uri, EXPERIMENT)
    results = runs.results()
    runs.model_params(), runs.provenance(), runs.left_out()
    return len(runs.fold_metrics(results["run_id"], METRICS[:3]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=4)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        uri, cells = make_store(Path(tmp), args.datasets, args.models)
        read(uri)  # SQLAlchemy's first connection and MLflow's imports are not timed
        start = time.perf_counter()
        for _ in range(args.repeat):
            scores = read(uri)
        seconds = (time.perf_counter() - start) / args.repeat
    print(f"{cells} cells, {scores} fold scores: {seconds:.3f} s per report read")


if __name__ == "__main__":
    main()
