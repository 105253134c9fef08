"""SKDB_k (k fixed, SkDB paper Sect. 3.1) and SkDB with k_max = k (Sect. 2.1, Algorithm 4): what each
may select, and the hashes of the models built from them."""

import numpy as np
import pandas as pd
import pytest

from bncbench import BNClassifier
from bncbench.bnc.structures import selective_kdb
from bncbench.core.errors import ConfigError
from bncbench.protocol.cell import canonical_model
from bncbench.protocol.models import model_spec


@pytest.fixture(scope="module")
def problem(dependent_codes):
    codes, _ = dependent_codes(300, 11, noise_columns=1)  # the noise column: a candidate for being dropped
    return pd.DataFrame(codes[:, :-1], columns=list("abcde")).astype(str), codes[:, -1]


def _fit(X, y, k, select_k):
    return BNClassifier(structure="skdb", k=k, structure_params={"select_k": select_k}, estimator="m_estimate",
                        estimator_params={"m": 1.0, "backoff": "value"}).fit(X, y)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_skdb_fixed_k_never_changes_k(problem, k):
    X, y = problem
    selection = _fit(X, y, k, select_k=False).structure_info_["selection"]
    assert selection.k == k
    grid = selection.losses
    assert selection.n_attributes == int(np.argmin(grid.loc[k].to_numpy()))  # first minimum: fewest attributes


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_skdb_with_k_max_never_selects_a_larger_k(problem, k):
    X, y = problem
    clf = _fit(X, y, k, select_k=True)
    selection = clf.structure_info_["selection"]
    assert list(selection.losses.index) == list(range(k + 1))
    assert selection.k <= k
    assert max(len(parents) for parents in clf.parents_.values()) <= k


def test_select_on_a_hand_made_grid(monkeypatch):
    # rows k' = 0..2, columns l = 0..3: the overall minimum is at k' = 0, l = 2; at k' = 2 it is l = 1
    grid = np.array([[0.9, 0.5, 0.1, 0.3], [0.9, 0.4, 0.2, 0.2], [0.9, 0.15, 0.3, 0.15]])
    monkeypatch.setattr(selective_kdb, "leave_one_out_losses", lambda *args: grid)
    order = np.array([2, 0, 1])
    free = selective_kdb.select(None, None, order, 2)
    assert (free.k, free.n_attributes, free.attributes) == (0, 2, [2, 0])
    fixed = selective_kdb.select(None, None, order, 2, select_k=False)
    assert (fixed.k, fixed.n_attributes, fixed.attributes) == (2, 1, [2])  # tie at l = 3 goes to fewer


def test_select_k_must_be_a_boolean():
    with pytest.raises(ConfigError, match="select_k must be true or false"):
        BNClassifier(structure="skdb", structure_params={"select_k": "no"}).fit(
            pd.DataFrame({"a": ["x", "y"] * 5}), ["p", "q"] * 5)


def test_the_skdb_presets_are_the_models_of_tables_2_and_3():
    skdb = canonical_model(model_spec("skdb_m_estimate"))
    assert "select_k" not in skdb["structure_params"]  # its default: the hash logged before the parameter
    for k in range(1, 5):
        assert canonical_model(model_spec(f"skdb{k}_m_estimate")) == {**skdb, "k": k}
    for k in range(1, 6):
        fixed = canonical_model(model_spec(f"skdb_fixed{k}_m_estimate"))
        assert fixed == {**skdb, "k": k, "structure_params": {"select_k": False}}
