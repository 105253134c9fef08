"""CPU cost of an experiment's cells as their runs logged it: fit and predict seconds over the folds.

For the runs of an MLflow store (e.g. the committed bundles imported into one), the seconds each
cell's 10 folds spent fitting and predicting, summed by HDP iteration count (models without
iterations apart), and for the datasets run at every iteration count, by dataset and by model with the
ratio between the counts: what a slice of the protocol costs, and what the rest will. The logged
times are wall-clock of one cell at a time on one core (``executor.n_jobs=1``,
``NUMBA_NUM_THREADS=1``) for the committed bundles; other launchers share the cores.

    bncbench import reports/hdp_vs_m/bundles/* tracking_uri=sqlite:///runs/papers.db
    python benchmarks/logged_cost.py --tracking-uri sqlite:///runs/papers.db [--experiment hdp_vs_m]
"""

import argparse

import mlflow
import pandas as pd

ITERATIONS = "params.model.estimator_params.iterations"


def logged_seconds(tracking_uri: str, experiment: str) -> pd.DataFrame:
    """One row per FINISHED run: dataset, model, iterations ("-" without), seconds over its folds."""
    mlflow.set_tracking_uri(tracking_uri)
    runs = mlflow.search_runs(
        experiment_names=[experiment], filter_string="attributes.status = 'FINISHED'", max_results=100_000
    )
    folds = runs["params.cv.repetitions"].astype(int) * runs["params.cv.folds"].astype(int)
    return pd.DataFrame(
        {
            "dataset": runs["tags.dataset"],
            "model": runs["tags.model"],
            "iterations": runs[ITERATIONS].fillna("-") if ITERATIONS in runs else "-",
            "seconds": (runs["metrics.fit_seconds"] + runs["metrics.predict_seconds"]) * folds,
        }
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--experiment", default="hdp_vs_m")
    args = parser.parse_args()
    runs = logged_seconds(args.tracking_uri, args.experiment)
    totals = runs.groupby("iterations")["seconds"].agg(["count", "sum"])
    print("CPU seconds by iterations (runs, seconds):")
    print((totals.assign(hours=totals["sum"] / 3600)).round(2).to_string())
    hdp = runs[runs["iterations"] != "-"]
    by_dataset = hdp.pivot_table(index="dataset", columns="iterations", values="seconds", aggfunc="sum").dropna()
    if by_dataset.shape[1] < 2:
        return
    counts = sorted(by_dataset.columns, key=int)
    low, high = counts[0], counts[-1]
    common = hdp[hdp["dataset"].isin(by_dataset.index)]
    by_model = common.pivot_table(index="model", columns="iterations", values="seconds", aggfunc="sum")
    for name, table in (("dataset", by_dataset), ("model", by_model)):
        table = table[counts].assign(ratio=table[high] / table[low])
        print(f"\nHDP seconds of the {len(by_dataset)} datasets run at every iteration count, by {name}:")
        print(table.round(2).to_string())
    print(f"\nall of them: {by_dataset[high].sum():.0f} s at {high} against {by_dataset[low].sum():.0f} s at "
          f"{low}: ratio {by_dataset[high].sum() / by_dataset[low].sum():.2f}")


if __name__ == "__main__":
    main()
