"""How much of a learning curve's plateau is the learned structure's: kDB-k learned from rows of a declared
network (``conf/dataset/synthetic-kdb<k>-1e6.yaml``, the networks of the ``learning_curves`` experiment) beside the
same estimator on the network's own structure.

For each network and number of training rows (the first rows of its sample), it fits kDB-k (k of the network) and
the true structure (``BNClassifier(structure=<the network's parents>)``), both with m-estimates (m chosen on a
holdout, as the experiment's ``*_m_estimate`` models), and gives

* the network's attribute-to-attribute edges that the learned kDB-k has, has reversed, or misses;
* each model's mean ``KL(P(y | x) || Q(y | x))`` (``kl_to_truth``, nats) on ``--test-rows`` other rows of the sample.

A gap that stays as the rows grow is the structure's bias, not the estimator's. Nothing is timed.

    python benchmarks/structure_recovery.py [--rows 10000 100000 300000] [--test-rows 20000]
"""

import argparse

import numpy as np
import pandas as pd

from bncbench import BNClassifier
from bncbench.core.metrics import kl_to_truth
from bncbench.data.dataset import dataset_config
from bncbench.data.synthetic import Declaration, SyntheticNetwork, attribute_names


def frame(codes: np.ndarray, names: list) -> tuple[pd.DataFrame, np.ndarray]:
    """Attributes as strings, as the dataset files hold them; the class codes (column 0) apart."""
    return pd.DataFrame({name: codes[:, 1 + i].astype(str) for i, name in enumerate(names)}), codes[:, 0]


def recovery(network: SyntheticNetwork, names: list, learned: dict) -> dict:
    """The network's attribute edges (parent -> child) found, reversed and missing in ``learned``'s parents."""
    true = {(names[p - 1], names[v - 1]) for v in range(1, len(network.parents))
            for p in network.parents[v, 1 : network.n_parents[v]]}
    found = {(p, child) for child, parents in learned.items() for p in parents}
    reversed_ = {(p, c) for p, c in true - found if (c, p) in found}
    return {"edges": len(true), "found": len(true & found), "reversed": len(reversed_),
            "missing": len(true - found - reversed_)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["synthetic-kdb2-1e6", "synthetic-kdb4-1e6"])
    parser.add_argument("--rows", nargs="+", type=int, default=[10_000, 100_000, 300_000])
    parser.add_argument("--test-rows", type=int, default=20_000)
    args = parser.parse_args(argv)
    lines = []
    for name in args.networks:
        declaration = Declaration.of(dataset_config(name))
        network = SyntheticNetwork.of(declaration)
        names = attribute_names(declaration)
        true_parents = {names[v - 1]: [names[p - 1] for p in network.parents[v, 1 : network.n_parents[v]]]
                        for v in range(1, len(network.parents))}
        test_X, _ = frame(network.sample(declaration.sample_seed, max(args.rows), args.test_rows), names)
        truth = network.posterior(test_X.to_numpy().astype(np.int64))
        for n in args.rows:
            X, y = frame(network.sample(declaration.sample_seed, 0, n), names)
            row = {"network": name.removesuffix("-1e6"), "k": declaration.k, "training rows": n}
            for label, structure in (("learned kDB", "kdb"), ("true structure", true_parents)):
                model = BNClassifier(structure=structure, k=declaration.k, estimator="m_estimate", random_state=0)
                model.fit(X, y)
                assert list(model.classes_) == list(range(declaration.classes)), "a class missing from the rows"
                row[f"KL, {label}"] = round(kl_to_truth(model.predict_proba(test_X), truth), 4)
                if structure == "kdb":
                    row.update(recovery(network, names, model.parents_))
            lines.append(row)
            print(row, flush=True)
    print(pd.DataFrame(lines).to_string(index=False))


if __name__ == "__main__":
    main()
