"""How much the RMSE's definition moves a comparison: the true class only (SkDB paper Eq. 1, bncbench's ``rmse``)
against Weka's, over all classes (``sqrt(mean over rows and classes of (p(c) - [c = y])^2)``), which the HDP paper's
group computes (``reports/authors_hdp``) and the HDP paper does not define. On two classes they are equal; on more,
the all-class RMSE divides each row's squared error by the number of classes and adds the other classes' mass.

For each multi-class dataset of the 68 (or ``--datasets``) and each structure, the cells of two m-estimate readings
(``*_m_class_kept`` and ``*_m_estimate``, counting models: fast) under the ``hdp_vs_m`` protocol (5x2 CV,
``cv.seed=1``, MDL per training fold), both RMSEs from the same predictions; prints each structure's W-D-L of the
first against the second under each definition and the datasets whose winner changes. Each dataset's cell means
are appended to ``--out`` as it finishes, and a dataset already there is not run again. Nothing is timed.

With ``--bundles``, HDP cells instead, as their runs logged both (runs since issue 41): the means of each pair of
``--pairs`` (``a:b``) on the multi-class datasets of the bundles' experiment, e.g. kDB-5-HDP against kDB-3-HDP on
``hdp_ablations``' small datasets (refits nothing).

    python benchmarks/rmse_definitions.py [--data-dir ../shared/datasets] [--structures nb kdb1 kdb5] \
        [--out reports/hdp_vs_m/rmse_definitions.csv]
    python benchmarks/rmse_definitions.py --bundles reports/hdp_ablations/bundles [--experiment hdp_ablations] \
        [--pairs kdb5_hdp:kdb3_hdp kdb5_hdp_single:kdb3_hdp_single]
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench.bundles import bundle_runs
from bncbench.data import load_dataset
from bncbench.protocol.cross_validation import cross_validate
from bncbench.protocol.models import model_spec
from bncbench.report.win_draw_loss import win_draw_loss

#: The two readings compared, by the suffix hdp_vs_m names them with, and their back-off.
READINGS = {"m_class_kept": "value", "m_estimate": "value_to_root"}


def cell_means(dataset, model: dict) -> dict:
    """The cell's mean over its folds of both RMSEs (``rmse`` and ``rmse_all_classes``, logged by every run)."""
    result = cross_validate(dataset, model, seed=1)
    return {name: float(result.metrics[name].mean()) for name in ("rmse", "rmse_all_classes")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/datasets")
    parser.add_argument("--datasets", nargs="*", help="default: the multi-class datasets of the 68, smallest first")
    parser.add_argument("--structures", nargs="+", default=["nb", "tan", "kdb1", "kdb3", "kdb5"])
    parser.add_argument("--out", default="reports/hdp_vs_m/rmse_definitions.csv")
    parser.add_argument("--bundles", nargs="+", help="the HDP cells of these bundles instead (refits nothing)")
    parser.add_argument("--experiment", default="hdp_ablations", help="with --bundles: the experiment read")
    parser.add_argument("--pairs", nargs="+", default=["kdb5_hdp:kdb3_hdp", "kdb5_hdp_single:kdb3_hdp_single"],
                        help="with --bundles: the cells compared, a:b")
    args = parser.parse_args(argv)
    out = Path(args.out)
    manifest = pd.read_csv(Path(args.data_dir) / "manifest.csv").sort_values("rows")
    datasets = args.datasets or list(manifest[manifest.n_classes > 2].slug)
    if args.bundles:
        results = logged_means(args.bundles, args.experiment, set(datasets))
        for pair in args.pairs:
            summarise(results, *pair.split(":"))
        return
    done = set(pd.read_csv(out).dataset) if out.exists() else set()
    for name in [d for d in datasets if d not in done]:
        rows = []
        dataset = load_dataset(name, args.data_dir)
        for structure in args.structures:
            for reading, backoff in READINGS.items():
                model = model_spec(f"{structure}_m_estimate", estimator_settings={"m_estimate": {"backoff": backoff}})
                rows.append({"dataset": name, "model": f"{structure}_{reading}", **cell_means(dataset, model)})
        pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(f"{name}: done", flush=True)
    results = pd.read_csv(out)
    results = results[results.dataset.isin(datasets)]
    for structure in args.structures:
        summarise(results, *(f"{structure}_{reading}" for reading in READINGS))


def logged_means(folders: list[str], experiment: str, multi_class: set[str]) -> pd.DataFrame:
    """Both RMSEs' means of the cells of ``experiment`` in the bundles ``folders``, on the datasets ``multi_class``,
    where the run logged both."""
    rows = [
        {"dataset": record.key[0], "model": record.key[1], "rmse": record.metrics["rmse"],
         "rmse_all_classes": record.metrics["rmse_all_classes"]}
        for record in bundle_runs(folders, experiment).records
        if record.key[0] in multi_class and "rmse_all_classes" in record.metrics
    ]
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame, a: str, b: str) -> None:
    """Print ``a`` against ``b`` under each RMSE, on the datasets with both, and those whose winner changes."""
    both = set(results.dataset[results.model == a]) & set(results.dataset[results.model == b])
    results = results[results.dataset.isin(both) & results.model.isin([a, b])]
    records = {m: win_draw_loss(results, a, b, m) for m in ("rmse", "rmse_all_classes")}
    means = results.pivot_table(index="dataset", columns="model", values=["rmse", "rmse_all_classes"])
    true_winner = np.sign(means["rmse"][a] - means["rmse"][b])
    weka_winner = np.sign(means["rmse_all_classes"][a] - means["rmse_all_classes"][b])
    flipped = sorted(means.index[true_winner != weka_winner])
    print(f"{a} vs {b}: true class {records['rmse'].wins}-{records['rmse'].draws}-{records['rmse'].losses}, "
          f"all classes {records['rmse_all_classes'].wins}-{records['rmse_all_classes'].draws}-"
          f"{records['rmse_all_classes'].losses}; winner changes on {len(flipped)} of {len(means)}: "
          f"{', '.join(flipped) or 'none'}")


if __name__ == "__main__":
    main()
