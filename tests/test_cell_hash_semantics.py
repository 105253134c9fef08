"""``cfg_hash`` is semantic: configs that build the same classifier hash the same, others do not."""

import pytest

from bncbench.protocol.cell import canonical_model, semantic_hash

CV = {"repetitions": 5, "folds": 2, "seed": 1}
DATASET = {"name": "iris", "source": "store", "openml_id": 61, "openml_target": None, "drop": []}


def cell_hash(**model) -> str:
    base = {"name": "m", "structure": "kdb", "k": 2, "structure_params": {}, "estimator": "laplace",
            "estimator_params": {}}
    return semantic_hash({"dataset": DATASET, "cv": CV, "model": {**base, **model}})


def test_the_model_name_is_not_part_of_the_hash():
    assert cell_hash(name="kdb2_laplace") == cell_hash(name="my_renamed_model")


@pytest.mark.parametrize("structure", ["nb", "tan", "aode", "direct"])
def test_k_counts_only_for_structures_that_read_it(structure):
    assert cell_hash(structure=structure, k=None) == cell_hash(structure=structure, k=1)
    assert cell_hash(structure="kdb", k=1) != cell_hash(structure="kdb", k=2)
    assert cell_hash(structure="skdb", k=3) != cell_hash(structure="skdb", k=5)


def test_estimator_defaults_written_out_or_left_out_hash_the_same():
    assert cell_hash(estimator_params={}) == cell_hash(estimator_params={"alpha": 1.0})
    assert cell_hash(estimator_params={}) != cell_hash(estimator_params={"alpha": 2.0})
    hdp = {"estimator": "hdp", "estimator_params": {"iterations": 5000}}
    assert cell_hash(**hdp) == cell_hash(estimator="hdp", estimator_params={"tying": "level"})
    assert cell_hash(**hdp) != cell_hash(estimator="hdp", estimator_params={"iterations": 50000})


def test_baselines_and_custom_structures_keep_their_settings():
    forest = {"name": "rf", "baseline": "random_forest", "baseline_params": {"n_estimators": 100}}
    assert canonical_model(forest) == {"baseline": "random_forest", "baseline_params": {"n_estimators": 100}}
    custom = canonical_model({"structure": {"a": ["b"]}, "k": 1, "estimator": "mle", "estimator_params": {}})
    assert custom["k"] == 1 and custom["structure"] == {"a": ["b"]}


def test_structure_defaults_written_out_or_left_out_hash_the_same():
    assert cell_hash(structure="skdb", k=5) == cell_hash(structure="skdb", k=5, structure_params={"loss": "rmse"})
    assert cell_hash(structure="skdb", k=5) == cell_hash(structure="skdb", k=None)  # k_max 5 by default
    assert cell_hash(structure="kdb", k=None) == cell_hash(structure="kdb", k=1)
    assert cell_hash(structure="skdb", k=5) != cell_hash(structure="skdb", k=5, structure_params={"loss": "log_loss"})
    assert cell_hash(structure="tan") == cell_hash(structure="tan", structure_params={"score": "likelihood"})
    assert cell_hash(structure="tan") != cell_hash(structure="tan", structure_params={"score": "aic"})
