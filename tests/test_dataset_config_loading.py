"""The experiment's dataset configs: plain files are loaded without composing each one (issue 25), and
every other dataset config is composed by Hydra exactly as before; both give the cells the same
configs, hence the same cfg_hash (golden hashes: test_cell_hashes.py)."""

import pytest

from bncbench.app.config import compose

IRIS = {"name": "iris", "source": "store", "openml_id": 61, "openml_target": None, "drop": ()}
ONE_MODEL = ["experiment.models=[nb_laplace]", "experiment.comparisons=[]"]


def dataset_cells(*overrides: str) -> dict:
    """Dataset name -> its cell of the one-model plan composed with ``overrides``."""
    return {cell.dataset: cell for cell in compose([*ONE_MODEL, *overrides]).plan.cells}


@pytest.fixture
def folder(tmp_path):
    """A hydra.searchpath folder with a ``dataset/`` group; ``folder(name, text)`` writes a dataset file."""

    def write(name: str, text: str):
        (tmp_path / "dataset").mkdir(exist_ok=True)
        (tmp_path / "dataset" / f"{name}.yaml").write_text(text)
        return tmp_path

    return write


def test_a_searchpath_dataset_with_a_defaults_list_is_composed_with_its_defaults(folder):
    root = folder("iris_mine", "defaults:\n  - iris\n  - _self_\ndrop: [sepallength]\n")
    cells = dataset_cells(f"hydra.searchpath=[file://{root}]", "experiment.datasets=[iris_mine,zoo]")
    assert dict(cells["iris_mine"].dataset_spec) == {**IRIS, "drop": ("sepallength",)}
    same = dataset_cells("experiment.datasets=[iris]", "+dataset.drop=[sepallength]")["iris"]
    assert cells["iris_mine"].cfg_hash == same.cfg_hash
    assert cells["zoo"].cfg_hash == dataset_cells("experiment.datasets=[zoo]")["zoo"].cfg_hash


def test_a_searchpath_dataset_with_interpolations_resolves_them_in_the_place_of_dataset(folder):
    root = folder("iris_folds", "name: iris\nsource: store\nopenml_id: ${cv.folds}\n"
                                "openml_target: ${..cv.discretisation}\ndrop: []\n")
    cells = dataset_cells(f"hydra.searchpath=[{root}]", "experiment.datasets=[iris_folds]", "cv.folds=3")
    assert dict(cells["iris_folds"].dataset_spec) == {**IRIS, "openml_id": 3, "openml_target": "mdl"}


def test_a_dataset_key_set_on_the_command_line_is_in_every_dataset_config(folder):
    root = folder("iris_copy", "name: iris\nsource: store\nopenml_id: 61\nopenml_target: null\ndrop: []\n")
    cells = dataset_cells(f"hydra.searchpath=[{root}]", "experiment.datasets=[iris_copy,iris]",
                          "+dataset.drop=[sepallength]")
    assert dict(cells["iris_copy"].dataset_spec) == dict(cells["iris"].dataset_spec) == {**IRIS, "drop": ("sepallength",)}
    in_file = folder("iris_drop", "name: iris\nsource: store\nopenml_id: 61\nopenml_target: null\ndrop: [sepallength]\n")
    assert cells["iris"].cfg_hash == dataset_cells(f"hydra.searchpath=[{in_file}]",
                                                   "experiment.datasets=[iris_drop]")["iris_drop"].cfg_hash


def test_a_package_searchpath_entry_is_read_before_a_later_folder(folder, tmp_path_factory, monkeypatch):
    """Only Hydra finds the files of a ``pkg://`` entry, so with one every dataset config is composed:
    Hydra's order (conf/, then the entries in turn) decides which file a name reads."""
    packages = tmp_path_factory.mktemp("packages")
    (packages / "my_configs" / "dataset").mkdir(parents=True)
    (packages / "my_configs" / "__init__.py").write_text("")
    (packages / "my_configs" / "dataset" / "twin.yaml").write_text(
        "name: iris\nsource: store\nopenml_id: 61\nopenml_target: null\ndrop: [petalwidth]\n"
    )
    monkeypatch.syspath_prepend(str(packages))
    later = folder("twin", "name: iris\nsource: store\nopenml_id: 61\nopenml_target: null\ndrop: [sepallength]\n")
    cells = dataset_cells(f"hydra.searchpath=[pkg://my_configs,file://{later}]", "experiment.datasets=[twin,iris]")
    assert cells["twin"].dataset_spec["drop"] == ("petalwidth",)
    assert cells["iris"].cfg_hash == dataset_cells("experiment.datasets=[iris]")["iris"].cfg_hash
