"""Fit the cost model of cells (``bncbench.protocol.cost``) to the committed bundles' runs, write it as the
shipped default, and print how well it predicts.

Every distinct run of ``reports/*/bundles/*/`` is a cell: its features (``bncbench.protocol.cost_features.CellFeatures``,
from its logged model and its dataset's store entry), its seconds (the sum over its folds of
``fold/fit_seconds`` and ``fold/predict_seconds``) and its condition, the CPU and the code's commit it
ran with. Predictions are for the condition of the latest run. The timings come from two machines
(AMD EPYC, Intel Xeon), one cell at a time on one core with the other core often busy, and from
several versions of the HDP sampler: the spread printed below holds all of that.

Accuracy is leave-one-dataset-out: for each dataset, the model fitted to the other datasets' cells
predicts its cells under their own conditions; printed per (structure, estimator), with the total
CPU-hours of each experiment, predicted against logged. Then the default's CPU-hours of whole
experiments at the reference condition.

    BNCBENCH_DATA_DIR=../shared/datasets python benchmarks/cost_model.py          # accuracy only
    BNCBENCH_DATA_DIR=../shared/datasets python benchmarks/cost_model.py --write  # and write the default
    BNCBENCH_DATA_DIR=../shared/datasets python benchmarks/cost_model.py --bins   # the numeric bins' proxy
"""

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from bncbench.app.config import compose
from bncbench.app.cost import plan_features
from bncbench.bundles.format import read_bundle
from bncbench.data.store import resolve_data_dir
from bncbench.protocol.cell import canonical_model
from bncbench.protocol.cost import DEFAULT_FILE, ITERATIVE, CostModel, wall_seconds
from bncbench.protocol.cost_features import cell_features, dataset_features, numeric_bins
from bncbench.tracking import tags as tag

REPO_ROOT = Path(__file__).resolve().parents[1]
HOUR = 3600.0
#: The experiments whose whole cost the default predicts, with their overrides.
EXPERIMENTS = {
    "hdp_vs_m": [],
    "hdp_vs_m at 5000": ["experiment=hdp_vs_m", "hdp.iterations=5000"],
    "bnc_vs_rf": [],
    "tying": [],
    "kdb": [],
    "skdb": [],
    "smoke": [],
    "estimators": [],
    "estimators as committed": ["experiment=estimators", "hdp.iterations=1000", "suite=small"],
    "hdp_quick": [],
}


def logged_cells(bundle_dirs, data_dir: Path) -> pd.DataFrame:
    """One row per distinct run of the bundles: ``run_id``, ``experiment``, ``dataset``, ``model``,
    ``condition``, ``start_time``, ``run_seconds`` (from its start to its end), the cell's
    ``FEATURE_COLUMNS`` and ``seconds``. A run copied into another experiment's bundle
    (``bncbench.reuse``) is counted once, as the run of the experiment that ran it."""
    rows = []
    for folder in bundle_dirs:
        bundle = read_bundle(folder)
        timings = bundle.metrics[bundle.metrics["key"].isin(["fold/fit_seconds", "fold/predict_seconds"])]
        seconds = timings.groupby("run_id")["value"].sum()
        for run in bundle.runs.itertuples():
            params, tags = run.params, run.tags
            dataset = dataset_features(
                data_dir, params["dataset.name"], _logged_value(params.get("dataset.drop", "[]")) or ()
            )
            folds = int(params["cv.repetitions"]) * int(params["cv.folds"])
            cell = cell_features(canonical_model(_logged_model(params)), dataset, folds)
            commit = tags.get("mlflow.source.git.commit", "?")[:7]
            rows.append(
                {
                    "run_id": run.run_id,
                    "copy": tag.COPIED_FROM in tags,
                    "experiment": tags.get(tag.COPIED_FROM, bundle.experiment).split("/")[0],
                    "dataset": tags["dataset"],
                    "model": tags["model"],
                    "condition": f"{tags.get('cpu.model', '?')} @ {commit}",
                    "start_time": run.start_time,
                    "run_seconds": (run.end_time - run.start_time) / 1000,
                    **dataclasses.asdict(cell),
                    "seconds": seconds.get(run.run_id, np.nan),
                }
            )
    cells = pd.DataFrame(rows).sort_values("copy", kind="stable").drop_duplicates("run_id")
    return cells.drop(columns="copy").sort_index().reset_index(drop=True)


def _logged_model(params: dict) -> dict:
    """A run's model config from its logged ``model.*`` params (flattened, values as text)."""
    model = {}
    for key, text in params.items():
        if key.startswith("model.") and key != "model.name":
            *parents, leaf = key.removeprefix("model.").split(".")
            node = model
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = _logged_value(text)
    return model


def _logged_value(text: str):
    """A param's value from MLflow's text of it (``str(value)``)."""
    return None if text == "None" else yaml.safe_load(text)


def _rounded(data):
    """``data`` with its floats to 6 significant digits, far below the model's error, so that the
    shipped file changes only when the fit does (not with the solver's last digits)."""
    if isinstance(data, float):
        return float(f"{data:.6g}")
    if isinstance(data, dict):
        return {key: _rounded(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_rounded(value) for value in data]
    return data


def reference_condition(cells: pd.DataFrame) -> str:
    """The condition of the latest run: the machine and code predictions are for."""
    return str(cells.loc[cells["start_time"].idxmax(), "condition"])


def leave_one_dataset_out(cells: pd.DataFrame, reference: str) -> pd.DataFrame:
    """``cells`` with ``predicted``: each dataset's cells predicted, under their own conditions, by the
    model fitted to the other datasets' cells."""
    predicted = pd.Series(np.nan, index=cells.index)
    for dataset, held_out in cells.groupby("dataset"):
        model = CostModel(reference_condition=reference).fit(cells[cells["dataset"] != dataset])
        for condition, same in held_out.groupby("condition"):
            predicted[same.index] = model.predict(same, condition=condition)
    return cells.assign(predicted=predicted)


def accuracy_table(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per value of ``by`` and for all cells: cells, median and 90th percentile of
    |log(predicted / logged)| and the factors they stand for, CPU-hours predicted and logged."""
    cells = cells.assign(error=np.abs(np.log(cells["predicted"] / cells["seconds"])), all="all")
    table = pd.concat([_accuracy(group) for group in (cells.groupby(by), cells.groupby("all"))])
    table["median x"] = np.exp(table["median |log|"])
    table["p90 x"] = np.exp(table["p90 |log|"])
    return table


def _accuracy(group) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "cells": group.size(),
            "median |log|": group["error"].median(),
            "p90 |log|": group["error"].quantile(0.9),
            "predicted h": group["predicted"].sum() / HOUR,
            "logged h": group["seconds"].sum() / HOUR,
        }
    )


def model_kind(row) -> str:
    """``kdb5 / hdp level``: a cell's structure (with its k) and estimator (with its tying)."""
    structure = row.structure if pd.isna(row.k) or row.structure == "skdb" else f"{row.structure}{int(row.k)}"
    return f"{structure} / {row.estimator}" + ("" if pd.isna(row.tying) else f" {row.tying}")


def experiment_hours(model: CostModel) -> pd.DataFrame:
    """The default's CPU-hours of each experiment of ``EXPERIMENTS`` at the reference condition, split
    into its iterative cells and the others."""
    rows = []
    for name, overrides in EXPERIMENTS.items():
        composed = compose(overrides or [f"experiment={name}"])
        cells = plan_features(composed.plan, resolve_data_dir(composed.settings.data_dir))
        seconds = model.predict(cells)
        iterative = cells["iterations"].notna().to_numpy()
        rows.append(
            {
                "experiment": name,
                "cells": len(cells),
                "CPU-seconds": seconds.sum(),
                "CPU-hours": seconds.sum() / HOUR,
                "iterative": seconds[iterative].sum() / HOUR,
                "other": seconds[~iterative].sum() / HOUR,
                "wall h, 2 workers": wall_seconds(seconds, 2) / HOUR,
                "largest cell s": seconds.max(),
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


def check_bins(data_dir: Path) -> None:
    """Measure the mean MDL bins of each dataset's numeric attributes on a stratified training half (the
    runner's first fold) against ``bncbench.protocol.cost_features.numeric_bins``."""
    from sklearn.model_selection import StratifiedKFold

    from bncbench.data import MDLDiscretizer, load_dataset
    from bncbench.protocol.cross_validation import repetition_seeds

    seed = repetition_seeds(1, 1)[0]
    rows = []
    for spec_file in sorted((REPO_ROOT / "conf" / "dataset").glob("*.yaml")):
        spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
        if spec["source"] != "store":
            continue
        dataset = load_dataset(spec, data_dir)
        numeric = [c for c in dataset.X.columns if pd.api.types.is_numeric_dtype(dataset.X[c])]
        if not numeric:
            continue
        train, _ = next(StratifiedKFold(2, shuffle=True, random_state=seed).split(dataset.X, dataset.y))
        X, y = dataset.X.iloc[train][numeric], dataset.y.iloc[train]
        binned = MDLDiscretizer().fit(X, y).transform(X)
        measured = np.mean([binned[c].nunique(dropna=False) for c in numeric])
        rows.append(
            {
                "dataset": spec["name"],
                "rows": len(dataset.y),
                "numeric": len(numeric),
                "measured": measured,
                "proxy": numeric_bins(len(dataset.y)),
            }
        )
    table = pd.DataFrame(rows).set_index("dataset")
    error = np.abs(np.log(table["proxy"] / table["measured"]))
    slope, intercept = np.polyfit(np.log(table["rows"]), np.log(table["measured"]), 1)
    print(table.round(2).to_string())
    print(
        f"\n{len(table)} datasets: |log(proxy / measured)| median {error.median():.2f}, 90th percentile "
        f"{error.quantile(0.9):.2f}; least squares of log measured on log rows: "
        f"{np.exp(intercept):.3f} * rows ** {slope:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write bncbench/protocol/{DEFAULT_FILE}")
    parser.add_argument("--bins", action="store_true", help="measure the proxy of numeric attributes' bins")
    parser.add_argument("--data-dir", default=None, help="the dataset store (default: $BNCBENCH_DATA_DIR)")
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    if args.bins:
        check_bins(data_dir)
        return
    cells = logged_cells(sorted(REPO_ROOT.glob("reports/*/bundles/*/")), data_dir)
    reference = reference_condition(cells)
    start = time.perf_counter()
    model = CostModel(reference_condition=reference).fit(cells)
    seconds = time.perf_counter() - start
    print(
        f"{len(cells)} cells of {cells['dataset'].nunique()} datasets, fitted in {seconds:.2f} s; predictions "
        f"are for the latest run's condition, {reference}. The iterations that cost as much as the rest of "
        f"a fit: c = {model.iteration_scale_:.0f}. Conditions, and the factor of their iterative cells' "
        "seconds against the reference (a condition of few datasets takes their own deviations from the "
        "law into its factor too):"
    )
    conditions = cells.groupby("condition").agg(cells=("dataset", "size"), datasets=("dataset", "nunique"))
    conditions["iterative x"] = [
        np.exp(model.condition_shifts_.get((ITERATIVE, condition), 0.0)) for condition in conditions.index
    ]
    print(conditions.sort_values("cells", ascending=False).round(2).to_string())
    if args.write:
        path = REPO_ROOT / "bncbench" / "protocol" / DEFAULT_FILE
        path.write_text(json.dumps(_rounded(model.to_dict()), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(REPO_ROOT)}")

    evaluated = leave_one_dataset_out(cells, reference)
    pd.set_option("display.width", 200)
    evaluated["model kind"] = [model_kind(row) for row in evaluated.itertuples()]
    print("\nleave-one-dataset-out, per cell |log(predicted / logged)| (x: the factor it stands for):")
    print(accuracy_table(evaluated, ["model kind"]).round(2).to_string())
    print("\nthe same for the iterative cells, by their iterations:")
    iterative = evaluated[evaluated["iterations"].notna()].astype({"iterations": int})
    print(accuracy_table(iterative, ["iterations"]).round(2).to_string())
    print("\nleave-one-dataset-out CPU-hours by experiment, predicted against logged:")
    totals = evaluated.groupby("experiment")[["predicted", "seconds"]].sum() / HOUR
    print(totals.assign(ratio=totals["predicted"] / totals["seconds"]).round(2).to_string())
    overhead = cells["run_seconds"] - cells["seconds"]
    print(
        "\nnot in the logged seconds, so not predicted: a run's time between its start and end besides its "
        f"fits and predictions (discretisation, warm-up, logging): median {overhead.median():.2f} s, 90th "
        f"percentile {overhead.quantile(0.9):.2f} s, {overhead.sum() / cells['seconds'].sum():.1%} of the "
        "logged seconds; and what a cell's process spends before its run starts"
    )
    print(f"\nthe fitted model's CPU-hours of whole experiments at the reference condition ({reference}):")
    print(experiment_hours(model).round(2).to_string())


if __name__ == "__main__":
    main()
