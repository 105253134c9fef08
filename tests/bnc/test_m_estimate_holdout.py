"""The m-estimate's holdout choice reads the estimates only at the cells the held-out rows reach; the
losses must equal, bit for bit, those of whole tables built for each m and read by the prediction
kernel (the definition), for every back-off and selection rule."""

import numpy as np
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.m_estimate import (
    MEstimate,
    authors_java_rmse,
    first_strictly_best,
    largest_tied,
)
from bncbench.bnc.inference import PackedNetwork, posterior
from bncbench.core.metrics import LOSSES
from bncbench.data import MDLDiscretizer, load_dataset


def _by_whole_tables(estimator, network, codes, rng):
    """``_select_m``'s holdout losses computed from whole tables (the same rows held out)."""
    holdout = np.zeros(codes.shape[0], dtype=bool)
    holdout[rng.choice(codes.shape[0], size=min(int(network.n_rows * 0.1), 5000), replace=False)] = True
    rest = network.copy().remove(codes[holdout])
    held, held_y = codes[holdout], codes[holdout, -1]
    log_joints = {m: PackedNetwork(rest, estimator.tables_for(rest, m)).log_joint(held) for m in estimator.m_grid}
    if estimator.selection == "authors_java":
        return {m: authors_java_rmse(log_joint, held_y) for m, log_joint in log_joints.items()}
    loss = LOSSES[estimator.selection_loss]
    return {m: loss(posterior(log_joint), held_y) for m, log_joint in log_joints.items()}


@pytest.mark.parametrize("dataset", ["vowel", "anneal", "hepatitis"])
@pytest.mark.parametrize(
    "structure,k", [("nb", None), ("tan", None), ("kdb", 1), ("kdb", 5), ("aode", None), ("direct", None)]
)
@pytest.mark.parametrize(
    "backoff,selection_loss,selection",
    [
        ("value", "rmse", "largest_tied"),
        ("context", "log_loss", "largest_tied"),
        ("value", "zero_one_loss", "largest_tied"),
        ("value_to_root", "log_loss", "largest_tied"),
        ("value_to_root", "rmse", "authors_java"),
    ],
)
def test_holdout_losses_equal_those_of_whole_tables(
    shared_data_dir, dataset, structure, k, backoff, selection_loss, selection
):
    data = load_dataset(dict(name=dataset, source="store", openml_id=None, openml_target=None, drop=[]), shared_data_dir)
    X = MDLDiscretizer().fit(data.X, data.y).transform(data.X)
    params = {"backoff": backoff, "selection_loss": selection_loss, "selection": selection}
    clf = BNClassifier(structure=structure, k=k, estimator="m_estimate", estimator_params=params, random_state=3)
    clf.fit(X, data.y)
    codes = np.column_stack([clf.encoder_.transform(X), clf.class_encoder_.transform(data.y.to_frame("class"))])
    expected = _by_whole_tables(MEstimate(**params), clf.network_, codes, np.random.default_rng(3))
    assert clf.estimator_.holdout_losses_ == expected
    choose = first_strictly_best if selection == "authors_java" else largest_tied
    assert clf.estimator_.selected_m_ == choose(clf.estimator_.m_grid, list(expected.values()))
