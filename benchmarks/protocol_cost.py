"""CPU cost of the HDP side of an experiment's protocol (issue 13), extrapolated from short fits.

Every HDP model of the experiment (default ``hdp_vs_m``: NB, TAN, kDB-1..5 and SkDB with HDP
estimates) is fitted on one training half of each dataset, as ``bncbench.protocol.cross_validation`` does (the first
repetition's stratified 2-fold split, MDL fitted on that half, ``random_state`` the repetition's seed),
at two iteration counts. The process CPU time of a fit is linear in the iterations, ``a + b * I``
(``a``: counting, structure learning, the sampler's set-up; ``b``: one Gibbs iteration), so the two fits
give the cost of one fold at the protocol's iterations; times the protocol's folds, the CPU-hours of
the whole experiment, printed per dataset, per structure and per cell.

The burn-in of a short fit is scaled to the same share of the iterations as the protocol's
(``min(1000, I // 10)`` at ``--target``: 2 % at 50,000), so that the recording of the estimates, done
only after burn-in, is extrapolated at its true share.

Models and datasets come from the experiment's composed config (``bncbench.app.config.compose``). Each
model is first fitted on a few rows, untimed, so that numba's compilation is not counted; and the
process's table of Stirling numbers is grown for each dataset's counts before its fits, untimed (a
one-time cost of a process, which a first fit would add to its low count only, understating that
cell's slope). Kernels run
on ``--threads`` numba threads (default 1: the CPU time of one thread has no idle spinning in it).

With ``--against REV`` the same cells are measured first with the code of another git revision (its
own copy of this script, run from a temporary worktree of this repository), then with this code, and
the per-cell slopes and the totals are printed side by side: a speed-up as a ratio measured in one run,
on one machine.

    python benchmarks/protocol_cost.py                      # everything: a few minutes at 100/300
    python benchmarks/protocol_cost.py --datasets letter splice --structures kdb3 kdb5 skdb \
        --iterations 250 750
    python benchmarks/protocol_cost.py --datasets letter musk2 --structures kdb5 skdb --against a0dc515
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from bncbench.app.config import compose
from bncbench.bnc.estimators.hdp.stirling import shared_table
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.protocol.models import make_model
from bncbench.protocol.cross_validation import repetition_seeds

HOUR = 3600.0


def hdp_models(experiment):
    """The experiment's HDP models as resolved configs, keyed by structure name (``kdb5_hdp`` -> ``kdb5``),
    and its dataset specs keyed by name, and the composed experiment config."""
    composed = compose([f"experiment={experiment}"])
    models, datasets = {}, {}
    for cell in composed.plan.cells:
        model = cell.semantic()["model"]
        if model.get("estimator") == "hdp":
            models[cell.model.removesuffix("_hdp")] = model
        datasets[cell.dataset] = cell.semantic()["dataset"]
    return models, datasets, composed.settings


def training_half(spec, data_dir, seed):
    """The first training half of the protocol's first repetition, MDL-discretised on itself."""
    dataset = load_dataset(spec, data_dir)
    splitter = StratifiedKFold(n_splits=2, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # a class rarer than the folds is part of the protocol (as in the runner)
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        train, _ = next(splitter.split(np.zeros(len(dataset.y)), dataset.y.to_numpy(dtype=object)))
    X, y = dataset.X.iloc[train], dataset.y.iloc[train]
    return MDLDiscretizer().fit(X, y).transform(X), y


def with_iterations(model, iterations, target):
    """The model config at ``iterations``, its burn-in the protocol's share of them."""
    burn_in = round(iterations * min(1000, target // 10) / target)
    params = {**model["estimator_params"], "iterations": iterations, "burn_in": burn_in}
    return {**model, "estimator_params": params}


def fit_seconds(model, X, y, seed):
    """Process CPU and wall seconds of one fit."""
    classifier = make_model(model, seed)
    cpu, wall = time.process_time(), time.perf_counter()
    classifier.fit(X, y)
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(models, datasets, data_dir, seed, iteration_counts, target):
    """One row per (dataset, structure): the CPU seconds at both counts and their linear fit."""
    low, high = iteration_counts
    rows, warm = [], set()
    for name, spec in datasets.items():
        X, y = training_half(spec, data_dir, seed)
        shared_table.ensure(len(X))  # no count of a fit exceeds its rows
        for structure, model in models.items():
            if structure not in warm:  # compile (or load) the kernels outside the timings
                rows_per_class = y.groupby(y, observed=True).cumcount().to_numpy() < 20
                make_model(with_iterations(model, 20, target), seed).fit(X[rows_per_class], y[rows_per_class])
                warm.add(structure)
            (cpu_low, wall_low), (cpu_high, wall_high) = (
                fit_seconds(with_iterations(model, count, target), X, y, seed) for count in (low, high)
            )
            per_iteration = max(0.0, (cpu_high - cpu_low) / (high - low))
            fixed = max(0.0, cpu_low - per_iteration * low)
            rows.append(
                {
                    "dataset": name,
                    "structure": structure,
                    "rows": len(X),
                    f"cpu_{low}": cpu_low,
                    f"cpu_{high}": cpu_high,
                    f"wall_{high}": wall_high,
                    "fixed_s": fixed,
                    "us_per_iteration": 1e6 * per_iteration,
                    "fold_s": fixed + per_iteration * target,
                }
            )
            print(
                f"  {name:<16} {structure:<5} {len(X):>6} rows: CPU {cpu_low:7.2f} s at {low}, "
                f"{cpu_high:7.2f} s at {high} (wall {wall_high:.2f} s) -> {rows[-1]['fold_s']:8.1f} s "
                f"per fold at {target}",
                flush=True,
            )
    return pd.DataFrame(rows)


def report(cells, folds, target):
    """The tables: CPU-hours of the protocol per dataset, per structure, and per cell."""
    cells = cells.assign(protocol_h=cells["fold_s"] * folds / HOUR)
    total = cells["protocol_h"].sum()

    def share(frame, by):
        grouped = frame.groupby(by, sort=False)[["fold_s", "protocol_h"]].sum()
        grouped["share_%"] = 100 * grouped["protocol_h"] / total
        return grouped.sort_values("protocol_h", ascending=False)

    with pd.option_context("display.width", 200, "display.max_rows", 1000, "display.float_format", "{:.3f}".format):
        print(f"\nPer dataset (fold_s: CPU seconds of one fold at {target} iterations; protocol_h: {folds} folds)")
        print(share(cells, "dataset").to_string())
        print("\nPer structure")
        print(share(cells, "structure").to_string())
        print("\nPer cell (us_per_iteration: the slope; fixed_s: the intercept)")
        columns = ["rows", "fixed_s", "us_per_iteration", "fold_s", "protocol_h"]
        print(cells.set_index(["dataset", "structure"])[columns].to_string())
    print(f"\nTotal: {total:.2f} CPU-hours for {folds} folds at {target} iterations ({len(cells)} cells)")


def measure_revision(revision, arguments, folds):
    """The per-cell table of this benchmark run by the code of git ``revision`` (a detached worktree of
    this repository, removed afterwards), with ``arguments`` (this run's, without ``--against``)."""
    repository = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="protocol_cost-") as scratch:
        tree, table = Path(scratch) / "tree", Path(scratch) / "cells.csv"
        added = subprocess.run(["git", "-C", str(repository), "worktree", "add", "--detach", str(tree), revision],
                               capture_output=True, text=True)  # fmt: skip
        if added.returncode != 0:
            raise SystemExit(f"--against {revision}: git could not check it out: {added.stderr.strip()}")
        try:
            print(f"--- the cells with the code of {revision}:", flush=True)
            subprocess.run(
                [sys.executable, str(tree / "benchmarks" / "protocol_cost.py"), *arguments, "--csv", str(table)],
                cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True,
            )  # fmt: skip
            cells = pd.read_csv(table)
        finally:
            subprocess.run(["git", "-C", str(repository), "worktree", "remove", "--force", str(tree)], check=True)
    return cells.assign(protocol_h=cells["fold_s"] * folds / HOUR)


def compare(reference, cells, revision, folds):
    """This code's cells beside ``revision``'s: the per-iteration slopes and the protocol's CPU-hours."""
    cells = cells.assign(protocol_h=cells["fold_s"] * folds / HOUR)
    keys = ["dataset", "structure"]
    both = reference.set_index(keys)[["us_per_iteration", "protocol_h"]].join(
        cells.set_index(keys)[["us_per_iteration", "protocol_h"]], lsuffix=f"_{revision}", rsuffix="_this"
    )
    both["speed_up"] = both[f"protocol_h_{revision}"] / both["protocol_h_this"]
    with pd.option_context("display.width", 200, "display.max_rows", 1000, "display.float_format", "{:.3f}".format):
        print(f"\nThis code against {revision} (speed_up: {revision}'s CPU-hours over this code's)")
        print(both.to_string())
    before, after = both[f"protocol_h_{revision}"].sum(), both["protocol_h_this"].sum()
    print(f"\nTotal: {before:.2f} CPU-hours with {revision}, {after:.2f} with this code: {before / after:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="hdp_vs_m")
    parser.add_argument("--datasets", nargs="*", help="a subset of the experiment's datasets")
    parser.add_argument(
        "--structures", nargs="*", help="a subset of its HDP models by structure (nb, tan, kdb1, ..., skdb)"
    )
    parser.add_argument("--iterations", nargs=2, type=int, default=[100, 300], metavar=("LOW", "HIGH"))
    parser.add_argument("--target", type=int, default=None, help="iterations of the protocol (default: the experiment's)")
    parser.add_argument("--threads", type=int, default=1, help="numba threads (default 1)")
    parser.add_argument("--data-dir", default=None, help="dataset store (default: $BNCBENCH_DATA_DIR)")
    parser.add_argument("--csv", default=None, help="also write the per-cell table here")
    parser.add_argument("--against", default=None, metavar="REV", help="also measure git revision REV, first")
    args = parser.parse_args()
    low, high = args.iterations
    if not 0 < low < high:
        parser.error(f"--iterations needs 0 < LOW < HIGH, got {low} {high}.")
    models, datasets, cfg = hdp_models(args.experiment)
    for kind, chosen, known in (("structure", args.structures, models), ("dataset", args.datasets, datasets)):
        unknown = sorted(set(chosen or ()) - set(known))
        if unknown:
            parser.error(f"unknown {kind} {unknown}: {args.experiment} has {sorted(known)}.")
    models = {s: m for s, m in models.items() if not args.structures or s in args.structures}
    datasets = {d: s for d, s in datasets.items() if not args.datasets or d in args.datasets}
    target = args.target or int(cfg.hdp.iterations)
    folds = int(cfg.cv.repetitions) * int(cfg.cv.folds)
    seed = repetition_seeds(cfg.cv.seed, cfg.cv.repetitions)[0]
    numba.set_num_threads(args.threads)
    if args.against:
        arguments = ["--experiment", args.experiment, "--iterations", str(low), str(high), "--target", str(target),
                     "--threads", str(args.threads), "--datasets", *datasets, "--structures", *models]  # fmt: skip
        if args.data_dir:
            arguments += ["--data-dir", args.data_dir]
        reference = measure_revision(args.against, arguments, folds)
    print(
        f"{args.experiment}: {len(datasets)} datasets x {len(models)} HDP models, fits at {low} and {high} "
        f"iterations on {args.threads} numba thread(s), extrapolated to {target} iterations x {folds} folds"
    )
    cells = measure(models, datasets, args.data_dir, seed, (low, high), target)
    if args.csv:
        cells.to_csv(args.csv, index=False)
    report(cells, folds, target)
    if args.against:
        compare(reference, cells, args.against, folds)


if __name__ == "__main__":
    main()
