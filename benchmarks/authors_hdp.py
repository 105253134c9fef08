"""kDB-k with HDP estimates, fitted by bncbench and by the authors' own HDP library on the same folds.

The HDP paper's Fig. 6b says that HDP estimates "nicely control for overfitting" as k grows; here kDB-5-HDP
loses to kDB-3-HDP on the small datasets (``../shared/notes/hdp-deep-trees.md``). This driver asks whether
the authors' library (github.com/fpetitjean/HDP, built by you: it is not part of bncbench and nothing of it
is committed) does otherwise on exactly the same data: for each dataset and k, the 5x2 folds of the
``hdp_vs_m`` protocol (``cv.seed=1``, stratified, MDL fitted on each training half), the kDB-k structure that
bncbench learns on the fold (the class, then the parents by decreasing ``I(X; parent | Y)``: the order of the
paper's Sect. 3.3), and then

* ``bncbench``: the cell as ``bncbench run`` computes it (``cross_validate`` of ``kdb<k>_hdp`` with the given
  iterations and tying);
* ``authors-<label>``: every attribute's tree fitted and queried by the authors' library through
  ``benchmarks/AuthorsHdpDriver.java`` (which says how the paper's classifier built the trees), with the class
  prior of bncbench's HDP (``(n(y) + 1) / (N + 2)`` on two classes), so that the two differ only in the trees.

Each fold's losses (``bncbench.core.metrics``, plus Weka's all-class RMSE) go to ``--out``, a CSV appended
fold by fold and read back on the next start: a (dataset, k, implementation, iterations, tying) whose ten
folds are there is not run again, so a stopped run resumes. ``--report`` writes the comparison's tables.

    python benchmarks/authors_hdp.py --authors 2017=<classpath> head=<classpath> \\
        --datasets promoters vote ... --k 3 5 --iterations 5000 --out reports/authors_hdp/folds.csv
    python benchmarks/authors_hdp.py --report reports/authors_hdp/folds.csv

``<classpath>`` holds the library's compiled classes and the Apache Commons Math jar it ships with (its own
``lib/``); the driver is compiled against it into a temporary directory. The Java fits one tree at a time on
one thread and reports its CPU seconds; bncbench's ``fit_seconds`` is wall time with numba's threads.
"""

import argparse
import glob
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bncbench import BNClassifier
from bncbench.data import load_dataset
from bncbench.protocol.cross_validation import FoldFit, class_codes, cross_validate, discretiser, repeated_folds
from bncbench.protocol.models import model_spec
from bncbench.report.win_draw_loss import win_draw_loss

DRIVER = Path(__file__).with_name("AuthorsHdpDriver.java")
TYING_CODES = {"none": 0, "same_parent": 1, "level": 2, "single": 3}  # ProbabilityTree.setConcentrationTyingStrategy
KEYS = ["dataset", "k", "implementation", "iterations", "tying"]
FOLDS = 10


def compiled_driver(classpath: str, directory: Path) -> str:
    """The classpath that runs the driver compiled against ``classpath`` into ``directory``."""
    subprocess.run(["javac", "-nowarn", "-d", str(directory), "-cp", classpath, str(DRIVER)], check=True)
    return f"{directory}:{classpath}"


def authors_fold(classpath: str, dataset, k: int, iterations: int, tying: str, in_test, rep_seed, scratch):
    """One fold fitted by the authors' library: ``repeated_folds``'s ``fit_predict``."""
    train, test = np.flatnonzero(~in_test), np.flatnonzero(in_test)
    X_train, X_test = dataset.X.iloc[train], dataset.X.iloc[test]
    y_train = dataset.y.iloc[train]
    mdl = discretiser("mdl", rep_seed).set_params(missing="bin").fit(X_train, y_train)
    X_train, X_test = mdl.transform(X_train), mdl.transform(X_test)
    structure = BNClassifier(structure="kdb", k=k, estimator="mle", random_state=rep_seed).fit(X_train, y_train)
    codes = np.column_stack([structure.encoder_.transform(X_train),
                             structure.class_encoder_.transform(y_train.to_frame("class"))])
    test_codes = structure._codes(X_test)
    cards = structure.encoder_.cardinalities_
    n_classes = len(structure.classes_)
    parents = structure.network_.parents
    problem, answer = scratch / "problem.txt", scratch / "answer.txt"
    with open(problem, "w") as out:
        out.write(f"{len(cards)} {n_classes} {iterations} {TYING_CODES[tying]}\n")
        out.write(" ".join(map(str, cards)) + "\n")
        for attribute_parents in parents:
            out.write(" ".join(map(str, [len(attribute_parents), *attribute_parents])) + "\n")
        for rows in (codes, np.column_stack([test_codes, np.zeros(len(test_codes), dtype=np.int64)])):
            out.write(f"{len(rows)}\n")
            np.savetxt(out, rows, fmt="%d")
    fitted = subprocess.run(["java", "-cp", classpath, "AuthorsHdpDriver", str(problem), str(answer)],
                            capture_output=True, text=True)  # the 2017 library prints each table of Stirling numbers
    if fitted.returncode:
        raise RuntimeError(f"the authors' library failed on {dataset.name}, kDB-{k}:\n{fitted.stderr}")
    lines = answer.read_text().splitlines()
    seconds = float(lines[-1].split()[1])
    class_counts = np.bincount(codes[:, -1], minlength=n_classes)
    log_prior = np.log((class_counts + 2.0 / n_classes) / (len(codes) + 2.0))  # HDPEstimator's class prior
    log_joint = np.loadtxt(lines[:-1], ndmin=2) + log_prior
    fold_proba = np.exp(log_joint - log_joint.max(axis=1, keepdims=True))
    fold_proba /= fold_proba.sum(axis=1, keepdims=True)
    return FoldFit(None, structure.classes_, seconds, [(fold_proba, None, 0.0)])


def fold_rows(result, key: dict) -> list[dict]:
    """The CSV rows of one cell's ``CrossValidation``: its losses per fold, the all-class RMSE among them."""
    return [{**key, "fold": fold, **{m: metrics[m] for m in ("zero_one_loss", "rmse", "log_loss", "rmse_all_classes")},
             "fit_seconds": metrics["fit_seconds"]} for fold, metrics in result.metrics.iterrows()]


def run(args) -> None:
    out = Path(args.out)
    done = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=[*KEYS, "fold"])
    finished = {tuple(key) for key, folds in done.groupby(KEYS) if len(folds) == FOLDS}
    implementations = {"bncbench": None} if "bncbench" in args.implementations else {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for pair in args.authors:
            label, classpath = pair.split("=", 1)
            (scratch / label).mkdir()
            implementations[f"authors-{label}"] = compiled_driver(classpath, scratch / label)
        for name in args.datasets:
            dataset = load_dataset(name, args.data_dir)
            classes, y_codes = class_codes(dataset.y)
            for k in args.k:
                model = model_spec(f"kdb{k}_hdp", estimator_settings={
                    "hdp": {"iterations": args.iterations, "tying": args.tying}})
                for implementation, classpath in implementations.items():
                    key = {"dataset": name, "k": k, "implementation": implementation,
                           "iterations": args.iterations, "tying": args.tying}
                    if tuple(key.values()) in finished:
                        continue
                    if classpath is None:
                        result = cross_validate(dataset, model, seed=1)
                    else:
                        def fit_predict(test_rows, rep_seed, warm_up, classpath=classpath):
                            return authors_fold(classpath, dataset, k, args.iterations, args.tying,
                                                test_rows[:], rep_seed, scratch)
                        result = repeated_folds(name, model, classes, y_codes, 5, 2, 1, fit_predict)
                    rows = pd.DataFrame(fold_rows(result, key))
                    rows.to_csv(out, mode="a", header=not out.exists(), index=False)
                    print(f"{name} kDB-{k} {implementation}: rmse {rows.rmse.mean():.4f}, "
                          f"0-1 {rows.zero_one_loss.mean():.4f}, fit {rows.fit_seconds.sum():.1f} s", flush=True)


# ---------------------------------------------------------------------------------------------------------
# The report: reports/authors_hdp/README.md from the folds' CSVs.

METRICS = {"rmse": "RMSE", "zero_one_loss": "0-1 loss", "rmse_all_classes": "RMSE, all classes"}


def committed_folds(bundles: str) -> pd.DataFrame:
    """The fold losses of the ``kdb3_hdp`` and ``kdb5_hdp`` cells of the committed bundles under ``bundles``
    (``dataset, k, iterations, fold`` and the ``METRICS`` there are), read from the bundles' tables without MLflow."""
    found = []
    for folder in sorted(glob.glob(f"{bundles}/*/")):
        runs, metrics = pd.read_parquet(f"{folder}runs.parquet"), pd.read_parquet(f"{folder}metrics.parquet")
        for run in runs.itertuples():
            tags, params = json.loads(run.tags), json.loads(run.params)
            if tags.get("model") in ("kdb3_hdp", "kdb5_hdp"):
                folds = metrics[(metrics.run_id == run.run_id) & metrics.key.isin([f"fold/{m}" for m in METRICS])]
                key = {"dataset": tags["dataset"], "k": int(tags["model"][3]),
                       "iterations": int(params["model.estimator_params.iterations"])}
                found.append(folds.pivot_table(index="step", columns="key", values="value")
                             .rename(columns=lambda m: m.removeprefix("fold/")).rename_axis("fold").reset_index()
                             .assign(**key))
    return pd.concat(found, ignore_index=True)


def comparison_report(folds: pd.DataFrame, committed: pd.DataFrame, rows: dict) -> str:
    """The Markdown of the comparison: kDB-5 against kDB-3 for each implementation, each dataset's means, the
    implementations' agreement fold by fold, bncbench's refit against its committed cells, and what follows."""
    folds = folds.copy()
    folds["model"] = "kdb" + folds.k.astype(str) + "/" + folds.implementation
    means = folds.groupby(["dataset", "model", "implementation", "k"], as_index=False)[list(METRICS)].mean()
    implementations = [i for i in ("bncbench", "authors-2017", "authors-head") if i in set(folds.implementation)]
    cells = folds.groupby(["dataset", "implementation", "k"]).size()
    whole = cells[cells == FOLDS].reset_index()  # a (dataset, implementation, k) with its ten folds
    covered = {i: sorted({d for d, found in whole[whole.implementation == i].groupby("dataset") if len(found) == 2},
                         key=lambda d: (rows[d], d)) for i in implementations}  # kDB-3 and kDB-5, ten folds each
    datasets = sorted(set().union(*covered.values()), key=lambda d: (rows[d], d))
    iterations, tying = folds.iterations.iloc[0], folds.tying.iloc[0]
    lines = [
        "# kDB-k with HDP: bncbench against the authors' library on the same folds",
        "",
        f"Generated by `python benchmarks/authors_hdp.py --report` from the folds in this folder; see that script for",
        f"how each implementation is run. {len(datasets)} datasets of at most 1,000 rows (those where kDB-5-HDP loses",
        "most to kDB-3-HDP in `hdp_vs_m`), the 5x2 folds of the `hdp_vs_m` protocol (`cv.seed=1`, MDL fitted on each",
        f"training half), kDB-3 and kDB-5 learned by bncbench on each fold, HDP at {iterations} iterations with {tying}",
        "tying. `bncbench` is the cell as `bncbench run` computes it; `authors-2017` and `authors-head` are every",
        "attribute's tree fitted and queried by github.com/fpetitjean/HDP at `ede2ae3` (2017-08-30, the code of the",
        "paper's submission: its averaging of the samples weights the first ones most) and at `57eb2ec` (2026-04-22,",
        "the head: the plain running mean since July 2018, log c taken from the capped concentration since 2026), built",
        "as the paper's classifier built them",
        "(`benchmarks/AuthorsHdpDriver.java`), with bncbench's class prior: the implementations differ only in the",
        "sampler of the trees.",
        "",
        "## kDB-5 against kDB-3",
        "",
        "| implementation | datasets | " + " | ".join(f"{label} W-D-L (p)" for label in METRICS.values()) + " |",
        "| --- | ---: | " + " | ".join("---" for _ in METRICS) + " |",
    ]
    outcomes = {}
    for implementation in implementations:
        cells = []
        for metric in METRICS:
            result = win_draw_loss(means, f"kdb5/{implementation}", f"kdb3/{implementation}", metric,
                                   datasets=covered[implementation])
            outcomes[implementation, metric] = result
            cells.append(f"{result.wins}-{result.draws}-{result.losses} ({result.p_value:.2g})")
        lines.append(f"| {implementation} | {len(covered[implementation])} | " + " | ".join(cells) + " |")
    lines += ["", "A win is kDB-5's lower mean loss over the 10 folds; two-tailed sign test, draws left out.", ""]
    lines += ["## Each dataset", "", "Mean RMSE over the 10 folds (the true class), kDB-3 then kDB-5.", "",
              "| dataset | rows | " + " | ".join(f"kDB-3 {i}" for i in implementations) + " | "
              + " | ".join(f"kDB-5 {i}" for i in implementations) + " |",
              "| --- | ---: | " + " | ".join("---:" for _ in range(2 * len(implementations))) + " |"]
    rmse = means.pivot_table(index="dataset", columns="model", values="rmse")
    for dataset in datasets:
        values = [rmse.at[dataset, f"kdb{k}/{i}"] if dataset in covered[i] else None for k in (3, 5) for i in implementations]
        lines.append(f"| {dataset} | {rows[dataset]} | " + " | ".join("—" if v is None else f"{v:.4f}" for v in values) + " |")
    lines += ["", "## The implementations fold by fold", "",
              "bncbench against each build of the authors' library on the same folds: W-D-L of the datasets' mean RMSE",
              "(bncbench's win is its lower RMSE), the mean and largest difference of the datasets' mean RMSEs, and the",
              "correlation of the fold RMSEs, on the datasets both have.", "",
              "| k | against | RMSE W-D-L (p) | mean difference | largest \\|difference\\| | correlation of folds |",
              "| --- | --- | --- | ---: | ---: | ---: |"]
    by_fold = folds[folds.dataset.isin(datasets)].pivot_table(index=["dataset", "k", "fold"], columns="implementation",
                                                               values="rmse")
    for k in (3, 5):
        for other in implementations[1:]:
            shared = [d for d in covered["bncbench"] if d in covered[other]]
            result = win_draw_loss(means, f"kdb{k}/bncbench", f"kdb{k}/{other}", "rmse", datasets=shared)
            difference = (rmse[f"kdb{k}/bncbench"] - rmse[f"kdb{k}/{other}"])[shared]
            of_k = by_fold.xs(k, level="k").loc[shared, ["bncbench", other]]
            lines.append(f"| {k} | {other} | {result.wins}-{result.draws}-{result.losses} ({result.p_value:.2g}) | "
                         f"{difference.mean():+.4f} | {difference.abs().max():.4f} | "
                         f"{of_k['bncbench'].corr(of_k[other]):.3f} |")
    lines += committed_section(folds[folds.dataset.isin(datasets)], committed, datasets)
    lines += ["", "## What follows", "", conclusion(outcomes, implementations), "", HARNESS]
    return "\n".join(lines) + "\n"


#: What is known of how the paper's experiments scored the classifiers, outside the HDP library.
HARNESS = (
    "Outside the library, the evaluation code of the authors' group that calls the same classifier "
    "(`TwoFoldXValOOCWdBayesPYPHDD`, kept in github.com/icesky0125/DecisionTreeSmoothing with the paper's "
    "`wdBayesOnlinePYP` classifier; not the paper's own scripts, which are not public) splits each repetition "
    "into two halves by a Mersenne Twister seeded 3071980 + the repetition, not stratified, and scores "
    "RMSE over all classes pooled over the 10 folds: sqrt of the sum over test rows and classes of (p(c) - "
    "[c = y])^2 / |Y|, divided by all test rows. On two classes that is the true-class RMSE; the column "
    "\"RMSE, all classes\" above is that definition per fold, and pooling over folds was ruled out before "
    "(`../shared/notes/hdp-deep-trees.md`). The same classifier builds each tree as the driver does: the class, "
    "then the parents in the structure's order, `ProbabilityTree(|X|, {|Y|, |parents|...}, iterations, tying)`, "
    "rows added one at a time, a query walking down to the deepest node with data."
)


def committed_section(folds: pd.DataFrame, committed: pd.DataFrame, datasets: list) -> list[str]:
    """The committed ``hdp_vs_m`` cells of the same datasets: kDB-5 against kDB-3 at each of their iterations, and
    how far this run's ``bncbench`` folds are from them at its own."""
    committed = committed[committed.dataset.isin(datasets)]
    lines = ["", "## The committed cells", "",
             "kDB-5-HDP against kDB-3-HDP in the committed `hdp_vs_m` cells of the same datasets (`reports/hdp_vs_m/bundles`):",
             "", "| iterations | " + " | ".join(f"{label} W-D-L (p)" for label in METRICS.values()) + " |",
             "| --- | " + " | ".join("---" for _ in METRICS) + " |"]
    for iterations, cells in committed.groupby("iterations"):
        means = cells.groupby(["dataset", "k"], as_index=False).mean(numeric_only=True)
        means["model"] = "kdb" + means.k.astype(str)
        results = [win_draw_loss(means, "kdb5", "kdb3", m) if m in means else None for m in METRICS]
        lines.append(f"| {iterations} | " + " | ".join(
            f"{r.wins}-{r.draws}-{r.losses} ({r.p_value:.2g})" if r else "not logged" for r in results) + " |")
    ours = folds[folds.implementation == "bncbench"]
    checked = ours.merge(committed, on=["dataset", "k", "iterations", "fold"], suffixes=("", "_committed"))
    if len(checked):
        difference = (checked.rmse - checked.rmse_committed).abs()
        lines += ["", f"This run's `bncbench` folds against the committed cells at {ours.iterations.iloc[0]} iterations "
                  f"({len(checked)} folds): fold RMSEs differ by {difference.mean():.4f} on average and "
                  f"{difference.max():.4f} at most, {int((difference == 0).sum())} identical. Those cells were computed by "
                  "an earlier bncbench (their `mlflow.source.git.commit`), whose chains are not draw for draw today's "
                  "(the tables' nodes have been renumbered since, and each node's random numbers follow its number): "
                  "they agree in law, as the table above shows, not to the last bit."]
    return lines


def conclusion(outcomes: dict, implementations: list) -> str:
    """Whether the authors' library keeps kDB-5 from losing to kDB-3 where bncbench's sampler does not, in words."""
    def losing(implementation, metric="rmse"):
        result = outcomes[implementation, metric]
        return result.losses > result.wins

    said = []
    for implementation in implementations:
        result = outcomes[implementation, "rmse"]
        said.append(f"{implementation} {result.wins}-{result.draws}-{result.losses} on its "
                    f"{result.wins + result.draws + result.losses} datasets")
    record = "; ".join(said)
    authors = [i for i in implementations if i != "bncbench"]
    if losing("bncbench") and all(losing(i) for i in authors):
        return (f"Both overfit alike. On RMSE, kDB-5-HDP against kDB-3-HDP is {record}: the "
                f"authors' own library ({', '.join(authors)}) loses with kDB-5 where bncbench's "
                "sampler does, on the same data, structures and class prior. The paper's Fig. 6b (HDP estimates "
                "\"nicely control for overfitting\" as k grows) is not reproduced by its own code under this protocol; "
                "what remains to explain it lies outside the library (the paper's data, folds or discretisation, or "
                "how its figure was computed), not in how bncbench samples the trees.")
    if losing("bncbench"):
        return (f"The authors' library does otherwise: on RMSE, kDB-5-HDP against kDB-3-HDP is {record}. A difference "
                "between the samplers is the cause; it must be found, fixed and tested, and the HDP cells recomputed.")
    return f"kDB-5-HDP does not lose to kDB-3-HDP here ({record})."


def report(args) -> None:
    folds = pd.concat([pd.read_csv(path) for path in args.report], ignore_index=True)
    folds = folds[(folds.iterations == args.iterations) & (folds.tying == args.tying)]
    manifest = pd.read_csv(Path(args.data_dir or "../shared/datasets") / "manifest.csv")
    rows = dict(zip(manifest.slug, manifest.rows))
    text = comparison_report(folds, committed_folds(args.bundles), rows)
    Path(args.readme).write_text(text)
    print(text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", nargs="*", default=[], metavar="LABEL=CLASSPATH",
                        help="a build of the authors' library, e.g. 2017=/path/classes:/path/commons-math3-3.6.1.jar")
    parser.add_argument("--implementations", nargs="*", default=["bncbench"],
                        help="'bncbench' to fit bncbench's cells too (default), nothing to run only the authors'")
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--k", nargs="+", type=int, default=[3, 5])
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--tying", default="level", choices=sorted(TYING_CODES))
    parser.add_argument("--data-dir", default=None, help="the datasets' store (default: BNCBENCH_DATA_DIR)")
    parser.add_argument("--out", default="reports/authors_hdp/folds.csv")
    parser.add_argument("--report", nargs="*", metavar="CSV",
                        help="write the comparison of these folds' CSVs (at --iterations and --tying) instead of running")
    parser.add_argument("--readme", default="reports/authors_hdp/README.md")
    parser.add_argument("--bundles", default="reports/hdp_vs_m/bundles",
                        help="committed bundles whose kdb3_hdp and kdb5_hdp cells the bncbench folds are checked against")
    args = parser.parse_args(argv)
    report(args) if args.report else run(args)


if __name__ == "__main__":
    main()
