"""XGBoost with the HDP paper's settings and native categorical support."""

import numpy as np
import pandas as pd
from xgboost import XGBClassifier

from bncbench.baselines.random_forest import ProbabilisticClassifier, nominal_columns


class XGBoostBaseline(ProbabilisticClassifier):
    """Gradient-boosted trees (XGBoost, ``hist`` method): depth 6, 50 rounds as in the HDP paper.

    Nominal columns become pandas categories with the training values as categories (a value unseen in
    training is missing) and are split natively (``enable_categorical``); numeric columns, including
    discretised bin codes, are numbers; missing values use XGBoost's default direction.

    Parameters
    ----------
    max_depth : int, default 6
    n_estimators : int, default 50
        Boosting rounds.
    n_jobs : int, default 1
        Threads for one model; experiments run cells in parallel.
    random_state : int, optional
    """

    def __init__(self, max_depth=6, n_estimators=50, n_jobs=1, random_state=None):
        self.max_depth = max_depth
        self.n_estimators = n_estimators
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _frame(self, X: pd.DataFrame) -> pd.DataFrame:
        """The columns XGBoost is given: nominal ones as categories, the others as floats (a nominal
        column with no value in training is all missing), named by position (XGBoost refuses names
        holding ``[``, ``]`` or ``<``, such as spambase's ``char_freq_[``)."""
        columns = {c: pd.Categorical(X[c].astype(object).where(X[c].isin(self.categories_[c]), None),
                                     categories=self.categories_[c])
                   for c in self.categories_ if self.categories_[c]}  # missing or unseen: no category
        empty = {c: np.nan for c in self.categories_ if not self.categories_[c]}
        frame = X.assign(**columns, **empty).astype({c: float for c in X.columns if c not in columns})
        return frame.set_axis([f"x{i}" for i in range(frame.shape[1])], axis=1)

    def fit(self, X: pd.DataFrame, y):
        self.categories_ = {c: sorted(X[c].dropna().astype(object).unique(), key=str) for c in nominal_columns(X)}
        self.classes_, y_codes = np.unique(np.asarray(y), return_inverse=True)
        self.booster_ = XGBClassifier(
            max_depth=self.max_depth,
            n_estimators=self.n_estimators,
            tree_method="hist",
            enable_categorical=True,
            n_jobs=self.n_jobs,
            random_state=self.random_state,
            objective="multi:softprob" if len(self.classes_) > 2 else "binary:logistic",
        ).fit(self._frame(X), y_codes)
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        proba = self.booster_.predict_proba(self._frame(X))
        return proba if proba.shape[1] == len(self.classes_) else np.column_stack([1 - proba[:, 0], proba[:, 0]])
