"""Random forest with the papers' Weka defaults (HDP paper Sect. 6.1)."""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.preprocessing import OrdinalEncoder


def nominal_columns(X: pd.DataFrame) -> list:
    """Columns that are not numbers (strings, objects, categories, booleans)."""
    return [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c])]


class ProbabilisticClassifier(ClassifierMixin, BaseEstimator):
    """A baseline's ``predict``: the most probable class of its ``predict_proba``, ties to the first."""

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class RandomForestBaseline(ProbabilisticClassifier):
    """scikit-learn's random forest set up as Weka's default: 100 trees, ``int(log2(d)) + 1`` attributes
    tried per split, no minimum leaf size (fully grown trees).

    Numeric columns (including the bin codes of discretised attributes, which are ordered) are used as
    numbers; nominal columns are coded as ordinals in sorted order, so a split groups values by that
    order (Weka splits nominal attributes by value instead). Missing values go to scikit-learn's native
    missing-value handling; a value unseen in training is treated as missing.

    Parameters
    ----------
    n_estimators : int, default 100
    min_samples_leaf : int, default 1
    n_jobs : int, default 1
        Threads for one forest; experiments run cells in parallel, so 1 avoids oversubscription.
    random_state : int, optional
    """

    def __init__(self, n_estimators=100, min_samples_leaf=1, n_jobs=1, random_state=None):
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X: pd.DataFrame, y):
        encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan, encoded_missing_value=np.nan)
        self.encoder_ = ColumnTransformer([("nominal", encoder, nominal_columns(X))], remainder="passthrough")
        features = self.encoder_.fit_transform(X.astype({c: str for c in nominal_columns(X)}).where(X.notna(), None))
        self.forest_ = RandomForestClassifier(
            n_estimators=self.n_estimators,
            max_features=int(np.log2(X.shape[1])) + 1,
            min_samples_leaf=self.min_samples_leaf,
            n_jobs=self.n_jobs,
            random_state=self.random_state,
        ).fit(features, np.asarray(y))
        self.classes_ = self.forest_.classes_
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        nominal = nominal_columns(X)
        return self.forest_.predict_proba(self.encoder_.transform(X.astype({c: str for c in nominal}).where(X.notna(), None)))
