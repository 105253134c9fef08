"""The digest of a dataset: its store file and schema entry, or scikit-learn's version and name."""

import gzip
import json
import shutil

import sklearn

from bncbench.data.digest import DIGEST_LENGTH, dataset_digest

IRIS = {"name": "iris", "source": "store", "openml_id": 61, "openml_target": None, "drop": []}


def copy_store(shared_data_dir, directory, names=("iris",)):
    """A store in ``directory`` holding copies of some shared datasets and their schema entries."""
    directory.mkdir()
    schema = json.loads((shared_data_dir / "schema.json").read_text())
    for name in names:
        shutil.copyfile(shared_data_dir / f"{name}.csv.gz", directory / f"{name}.csv.gz")
    (directory / "schema.json").write_text(json.dumps({name: schema[name] for name in names}))
    return directory


def test_a_store_digest_follows_the_content_of_the_file_and_its_schema_entry(shared_data_dir, tmp_path):
    shared = dataset_digest(IRIS, shared_data_dir)
    assert len(shared.digest) == DIGEST_LENGTH and shared.source == "store"
    assert shared.details == {"path": str(shared_data_dir / "iris.csv.gz")}
    assert shared.columns[-1] == ("class", "nominal") and ("sepal-length-in-cm", "numeric") in shared.columns

    store = copy_store(shared_data_dir, tmp_path / "copy")
    assert dataset_digest(IRIS, store).digest == shared.digest  # the same data elsewhere

    rows = gzip.decompress((store / "iris.csv.gz").read_bytes()).splitlines(keepends=True)
    (store / "iris.csv.gz").write_bytes(gzip.compress(b"".join(rows[:-1]), mtime=0))
    changed_file = dataset_digest(IRIS, store).digest
    assert changed_file != shared.digest

    schema = json.loads((store / "schema.json").read_text())
    schema["iris"]["class"]["values"].append("Iris-unseen")
    (store / "schema.json").write_text(json.dumps(schema))
    assert dataset_digest(IRIS, store).digest not in (changed_file, shared.digest)


def test_a_dataset_not_in_the_store_yet_has_no_digest(tmp_path):
    assert dataset_digest(IRIS, tmp_path) is None


def test_a_bundled_dataset_is_named_by_the_scikit_learn_version():
    iris = dataset_digest({"name": "sklearn-iris", "source": "sklearn"}, None)
    wine = dataset_digest({"name": "sklearn-wine", "source": "sklearn"}, None)
    assert iris.source == "sklearn" and iris.details == {"sklearn_version": sklearn.__version__}
    assert len(iris.digest) == DIGEST_LENGTH and iris.digest != wine.digest
