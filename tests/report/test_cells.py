"""The cells of a configuration hash as the jobs of its sweep do, at the cost of one Hydra compose."""

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from bncbench import semantic, tracking
from bncbench.config import CONFIG_NAME, compose, config_dir
from bncbench.data.digest import dataset_digest
from bncbench.model_configs import with_model
from bncbench.report.cells import expected_cells

DATASETS = ["iris", "zoo"]


@pytest.mark.parametrize(
    ("models", "settings"),
    [
        (["nb_laplace", "nb_hdp"], ["hdp.iterations=7", "cv.seed=3"]),
        # models of a grid given on the command line, each built as a job builds it
        (
            ["nb_laplace_2", "tan_laplace_2"],
            ["experiment.grids=[{structure: [nb, tan], estimator: laplace, estimator_params: {alpha: [2]}}]"],
        ),
        # a key set inside the dataset node itself: each dataset is composed with it, as a job
        (["nb_laplace"], ["+dataset.drop=[]"]),
    ],
)
def test_each_cell_has_the_cfg_hash_of_its_job(models, settings, shared_data_dir):
    overrides = [
        f"experiment.datasets=[{','.join(DATASETS)}]",
        f"experiment.models=[{','.join(models)}]",
        "experiment.comparisons=[]",
        f"data_dir={shared_data_dir}",
        *settings,
    ]
    cells = expected_cells(compose(overrides), overrides)
    assert list(cells) == [(dataset, model) for dataset in DATASETS for model in models]
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        for (dataset, model), cell in cells.items():
            job = with_model(hydra_compose(CONFIG_NAME, [*overrides, f"dataset={dataset}", f"model={model}"]))
            assert cell.cfg_hash == semantic.cfg_hash(job), (dataset, model)
            assert cell.params == tracking.flatten(semantic.semantic_config(job))
            assert cell.data_digest == dataset_digest({"name": dataset}, shared_data_dir).digest


def test_a_dataset_absent_from_the_data_directory_is_not_checked(tmp_path):
    overrides = [
        "experiment.datasets=[iris]",
        "experiment.models=[nb_laplace]",
        "experiment.comparisons=[]",
        f"data_dir={tmp_path}",
    ]
    (cell,) = expected_cells(compose(overrides), overrides).values()
    assert cell.data_digest is None
