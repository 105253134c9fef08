"""The small datasets bundled inside the scikit-learn package (no download, no file in the store), named by
the scikit-learn version and their name."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from bncbench.core.errors import DatasetError
from bncbench.data.sources.base import DatasetSource

#: The datasets and the name of their loader in ``sklearn.datasets``.
SKLEARN_LOADERS = {
    "sklearn-iris": "load_iris",
    "sklearn-wine": "load_wine",
    "sklearn-breast-cancer": "load_breast_cancer",
}


class SklearnSource(DatasetSource):
    name = "sklearn"

    def store_name(self, spec: Mapping) -> None:
        return None

    def read(self, spec: Mapping, store: Path) -> tuple[pd.DataFrame, list[str], str]:
        return read_sklearn_table(spec["name"])

    def digest(self, spec: Mapping, store: Path):
        import sklearn

        from bncbench.data.digest import DIGEST_LENGTH, DataDigest

        text = f"scikit-learn=={sklearn.__version__}:{spec['name']}".encode()
        return DataDigest(str(spec["name"]), hashlib.sha256(text).hexdigest()[:DIGEST_LENGTH], self.name,
                          {"sklearn_version": sklearn.__version__})


def read_sklearn_table(name: str) -> tuple[pd.DataFrame, list[str], str]:
    """The bundled scikit-learn dataset ``name`` (a key of ``SKLEARN_LOADERS``): its frame (the float64
    attributes and a last column ``class`` holding the target names), its attributes (all numeric) and ``"class"``.
    """
    if name not in SKLEARN_LOADERS:
        raise DatasetError(
            f"'{name}' is not a dataset bundled with scikit-learn; use one of "
            f"{sorted(SKLEARN_LOADERS)} or source: store."
        )
    from sklearn import datasets  # here: scikit-learn's datasets are slow to import

    bunch = getattr(datasets, SKLEARN_LOADERS[name])()
    numeric = [str(feature) for feature in bunch.feature_names]
    frame = pd.DataFrame(bunch.data.astype("float64"), columns=numeric)
    frame["class"] = pd.Series(bunch.target_names[bunch.target], dtype="str")
    return frame, numeric, "class"
