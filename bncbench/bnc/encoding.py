"""Integer coding of discrete data: each column's training values become codes 0..r-1.

A missing value (NaN/None) is a value of its own. At prediction time a value not seen in training gets
the code ``UNSEEN``; the classifier then treats it as carrying no evidence (see ``inference``).
"""

import numpy as np
import pandas as pd

UNSEEN = -1


def _column_values(column: pd.Series) -> np.ndarray:
    """Sorted distinct values of a column, missing last (as NaN) when present."""
    values = pd.unique(column.dropna())
    try:
        values = np.sort(values)
    except TypeError:  # mixed types that do not order: keep a stable, printable order
        values = np.array(sorted(values, key=repr), dtype=object)
    if column.isna().any():
        values = np.append(np.asarray(values, dtype=object), np.nan)
    return np.asarray(values, dtype=object)


class CategoryEncoder:
    """Maps each column of a DataFrame to integer codes learned from the training data.

    Attributes
    ----------
    categories_ : list of ndarray
        The values of each column in code order; a missing value, when seen, is the last one (NaN).
    """

    def fit(self, X: pd.DataFrame) -> "CategoryEncoder":
        self.columns_ = list(X.columns)
        self.categories_ = [_column_values(X[c]) for c in self.columns_]
        return self

    @classmethod
    def from_values(cls, columns, values, has_missing) -> "CategoryEncoder":
        """The encoder ``fit`` would give on data with these distinct values (sets, without missing) and
        missing values or not, per column: for data read in chunks."""
        encoder = cls()
        encoder.columns_ = list(columns)
        encoder.categories_ = [
            _column_values(pd.Series(sorted(v, key=repr) + ([np.nan] if m else []), dtype=object))
            for v, m in zip(values, has_missing)
        ]
        return encoder

    @property
    def cardinalities_(self) -> np.ndarray:
        return np.array([len(v) for v in self.categories_], dtype=np.int64)

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """Codes as an (n_rows, n_columns) int64 array; unseen values are ``UNSEEN``."""
        codes = np.empty((len(X), len(self.columns_)), dtype=np.int64)
        for j, (column, values) in enumerate(zip(self.columns_, self.categories_)):
            series = X[column]
            has_missing = len(values) > 0 and pd.isna(values[-1])
            known = values[:-1] if has_missing else values
            local_codes, uniques = pd.factorize(series)
            to_training_code = np.append(pd.Index(known).get_indexer(uniques), len(values) - 1 if has_missing else UNSEEN)
            codes[:, j] = to_training_code[local_codes]  # local code -1 (missing) picks the last entry
        return codes
