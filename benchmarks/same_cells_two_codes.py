"""The same cells (same ``cfg_hash``) in two sets of bundles made by two versions of the code: how far apart
their per-fold scores are, and whether a comparison between two models turns.

Written for the HDP chains: commit ``0583302`` (2026-11-25, "HDP forest: each level's nodes ordered by
their parents'") changed the order in which a Gibbs sweep visits a level's nodes, for speed. The sampler's
law is unchanged, its draws are not, and ``cfg_hash`` (the settings, not the code) is the same, so a
kDB-HDP cell run before that commit and after it gives other numbers. This script says by how much, and
whether the cell's comparison against ``--against`` keeps its sign:

    python benchmarks/same_cells_two_codes.py --model kdb2_hdp --against kdb2_m_estimate \\
        --before reports/estimators/bundles/estimators-8416e31334874f35 --after reports/estimators/rerun/*

(the estimators bundles of commit ``bcbe319``: the first at ``c73857e``, before the change, the others at
``da6a70c``, after). The ``--against`` model's cells are read from ``--before``.
"""

import argparse

import numpy as np
import pandas as pd

from bncbench.bundles import read_bundle


def fold_scores(folders: list[str], models: set[str]) -> dict[tuple[str, str], pd.DataFrame]:
    """(dataset, model) -> its per-fold metrics (rows: folds, columns: ``fold/<metric>``)."""
    scores = {}
    for folder in folders:
        bundle = read_bundle(folder)
        tags = bundle.runs.set_index("run_id")["tags"]
        folds = bundle.metrics[bundle.metrics.key.str.startswith("fold/")]
        for run_id, values in folds.groupby("run_id"):
            cell = (tags[run_id]["dataset"], tags[run_id]["model"])
            if cell[1] in models:
                scores[cell] = values.pivot_table(index="step", columns="key", values="value")
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--against", required=True)
    parser.add_argument("--before", nargs="+", required=True, help="bundle folders of the earlier code")
    parser.add_argument("--after", nargs="+", required=True, help="bundle folders of the later code")
    parser.add_argument("--metrics", nargs="+", default=["rmse", "zero_one_loss"])
    args = parser.parse_args()
    before = fold_scores(args.before, {args.model, args.against})
    after = fold_scores(args.after, {args.model})
    rows = []
    for (dataset, _), scores in sorted(after.items()):
        if (dataset, args.model) not in before or (dataset, args.against) not in before:
            continue
        for metric in args.metrics:
            old, new = before[dataset, args.model][f"fold/{metric}"], scores[f"fold/{metric}"]
            other = before[dataset, args.against][f"fold/{metric}"].mean()
            rows.append({"dataset": dataset, "metric": metric, "before": old.mean(), "after": new.mean(),
                         "relative": new.mean() / old.mean() - 1, "largest fold change": (new - old).abs().max(),
                         args.against: other, "sign before": np.sign(other - old.mean()),
                         "sign after": np.sign(other - new.mean())})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.6g}"))
    turned = table[table["sign before"] != table["sign after"]]
    print(f"\n{len(table) // len(args.metrics)} datasets; largest relative change of a mean: "
          f"{table.relative.abs().max():.2%}; comparisons against {args.against} that turn: {len(turned)}")


if __name__ == "__main__":
    main()
