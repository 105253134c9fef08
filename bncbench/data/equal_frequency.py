"""Equal-frequency discretisation fitted on a seeded sample of the training rows: the SkDB paper's
"5-bin equal frequency discretization ... only a random sample of 100K points is used to define the
bins" (Martinez et al. 2016, Sect. 3 and Appendix B, EF5).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.data.discretize import CutPointDiscretizer, _as_float, _check_frame, bin_codes


def equal_frequency_cut_points(values: np.ndarray, bins: int) -> np.ndarray:
    """Ascending cut points splitting ``values`` into at most ``bins`` bins of equal frequency.

    The candidates are ``numpy.quantile(values, [1/bins, ..., (bins-1)/bins])`` (linear
    interpolation between order statistics, NaN ignored). Ties can make candidates equal, or leave a
    bin with no value: equal candidates are one cut, and a candidate is dropped when it is not above
    the minimum or when the bin it opens (``cut <= value < next cut``, as :func:`bin_codes` assigns
    a value equal to a cut to the bin above) holds no value. So every bin holds a value of
    ``values``, and a tied attribute gets fewer bins (a 0/1 attribute two, a constant one).
    """
    present = values[~np.isnan(values)]
    if present.size == 0:
        return np.empty(0)
    candidates = np.unique(np.quantile(present, np.arange(1, bins) / bins, method="linear"))
    candidates = candidates[candidates > present.min()]
    occupied = np.bincount(bin_codes(present, candidates), minlength=candidates.size + 1) > 0
    return candidates[occupied[1:]]


class EqualFrequencyDiscretizer(CutPointDiscretizer):
    """Discretise the numeric columns of a DataFrame into ``bins`` equal-frequency bins.

    The cut points (:func:`equal_frequency_cut_points`) of every numeric column come from one sample
    of at most ``sample_rows`` training rows, drawn without replacement by
    ``numpy.random.default_rng(random_state)`` (all rows when there are no more); other columns pass
    through. Codes as :class:`bncbench.data.MDLDiscretizer`'s: bins ``0..B-1``, values outside the
    sample's range in the end bins, missing ``B`` (NaN with ``missing="keep"``).

    Parameters
    ----------
    missing : {"bin", "keep"}, default "bin"
        What a missing value becomes, as for :class:`bncbench.data.MDLDiscretizer`.

    References
    ----------
    Martinez, Webb, Chen and Zaidi (2016). Scalable learning of Bayesian network classifiers. JMLR 17,
    Sect. 3 ("5-bin equal frequency discretization ... a random sample of 100K points") and Appendix B.
    """

    def __init__(self, bins: int = 5, sample_rows: int = 100_000, random_state=None, missing: str = "bin"):
        self.bins = bins
        self.sample_rows = sample_rows
        self.random_state = random_state
        self.missing = missing

    def fit(self, X: pd.DataFrame, y=None) -> EqualFrequencyDiscretizer:
        """Find the cut points of every numeric column of ``X`` on the sample of its rows."""
        _check_frame(X)
        self._check_missing()
        for name, value, minimum in (("bins", self.bins, 2), ("sample_rows", self.sample_rows, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
                raise ConfigError(f"cv.{name} must be an integer >= {minimum}, got {value!r}.")
        self.sample_ = np.arange(len(X))
        if len(X) > self.sample_rows:
            rng = np.random.default_rng(self.random_state)
            self.sample_ = np.sort(rng.choice(len(X), size=self.sample_rows, replace=False))
        sample = X.iloc[self.sample_]
        return self._fit_columns(X, lambda column: equal_frequency_cut_points(_as_float(sample[column]), self.bins))
