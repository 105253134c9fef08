"""The m-estimate's holdout choice reads the estimates only at the cells the held-out rows reach; the
losses must equal, bit for bit, those of whole tables built for each m and read by the prediction
kernel (the definition)."""

import numpy as np
import pytest

from bncbench import BNClassifier
from bncbench.bnc.estimators.m_estimate import MEstimate
from bncbench.bnc.inference import PackedNetwork
from bncbench.data import MDLDiscretizer, load_dataset
from bncbench.core.metrics import LOSSES


def _by_whole_tables(estimator, network, codes, rng):
    """``_select_m``'s holdout losses computed from whole tables (the same rows held out)."""
    holdout = np.zeros(codes.shape[0], dtype=bool)
    holdout[rng.choice(codes.shape[0], size=min(int(network.n_rows * 0.1), 5000), replace=False)] = True
    rest = network.copy().remove(codes[holdout])
    loss = LOSSES[estimator.selection_loss]
    return {
        m: loss(PackedNetwork(rest, estimator.tables_for(rest, m)).predict_proba(codes[holdout]), codes[holdout, -1])
        for m in estimator.m_grid
    }


@pytest.mark.parametrize("dataset", ["vowel", "anneal", "hepatitis"])
@pytest.mark.parametrize(
    "structure,k", [("nb", None), ("tan", None), ("kdb", 1), ("kdb", 5), ("aode", None), ("direct", None)]
)
@pytest.mark.parametrize(
    "backoff,selection_loss",
    [("value", "rmse"), ("context", "log_loss"), ("value", "zero_one_loss"), ("value_to_root", "log_loss")],
)
def test_holdout_losses_equal_those_of_whole_tables(shared_data_dir, dataset, structure, k, backoff, selection_loss):
    data = load_dataset(dict(name=dataset, source="store", openml_id=None, openml_target=None, drop=[]), shared_data_dir)
    X = MDLDiscretizer().fit(data.X, data.y).transform(data.X)
    params = {"backoff": backoff, "selection_loss": selection_loss}
    clf = BNClassifier(structure=structure, k=k, estimator="m_estimate", estimator_params=params, random_state=3)
    clf.fit(X, data.y)
    codes = np.column_stack([clf.encoder_.transform(X), clf.class_encoder_.transform(data.y.to_frame("class"))])
    expected = _by_whole_tables(MEstimate(**params), clf.network_, codes, np.random.default_rng(3))
    assert clf.estimator_.holdout_losses_ == expected
