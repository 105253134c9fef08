"""The small datasets bundled inside the scikit-learn package (no download)."""

from __future__ import annotations

import pandas as pd
from sklearn import datasets

from bncbench.core.errors import DatasetError

SKLEARN_LOADERS = {
    "sklearn-iris": datasets.load_iris,
    "sklearn-wine": datasets.load_wine,
    "sklearn-breast-cancer": datasets.load_breast_cancer,
}


def read_sklearn_table(name: str) -> tuple[pd.DataFrame, list[str], str]:
    """Read a bundled scikit-learn dataset.

    Parameters
    ----------
    name : str
        One of ``sklearn-iris``, ``sklearn-wine``, ``sklearn-breast-cancer``.

    Returns
    -------
    frame : DataFrame
        The float64 attributes and a last column ``class`` holding the target names.
    numeric : list of str
        Names of the attributes (all numeric).
    class_name : str
        ``"class"``.
    """
    if name not in SKLEARN_LOADERS:
        raise DatasetError(
            f"'{name}' is not a dataset bundled with scikit-learn; use one of "
            f"{sorted(SKLEARN_LOADERS)} or source: store."
        )
    bunch = SKLEARN_LOADERS[name]()
    numeric = [str(feature) for feature in bunch.feature_names]
    frame = pd.DataFrame(bunch.data.astype("float64"), columns=numeric)
    frame["class"] = pd.Series(bunch.target_names[bunch.target], dtype="str")
    return frame, numeric, "class"
