"""Training data as the structure learners and estimators see it: passes over chunks of codes.

A learner makes one pass per kind of statistic (SkDB paper Sect. 2.1: structure, counts, then SkDB's
leave-one-out), so the same code learns from an in-memory matrix (one chunk) or from a file read in
chunks (``bncbench.bnc.out_of_core``). A counting pass is ``accumulate(total, add)``: ``add(total, chunk)`` for
every chunk, in order. Counts are sums, so a source may instead add each chunk to an empty copy of the total
where the chunk is read (``total.empty_copy()``, a dask worker's: ``bncbench.bnc.distributed``) and merge the
partial totals into it in the chunks' order (``total.merge(partial)``), with the same result.
"""

from collections.abc import Iterator

import numpy as np


class InMemoryCodes:
    """All the training rows at once, an (n, d + 1) integer code matrix with the class last
    (column-major, in the narrowest type that holds the codes: ``BNClassifier._training_codes``).

    ``sample`` is what an estimator may hold in memory beyond the counts: all rows; ``rows_at`` gives those at
    given positions (e.g. the m-estimate's holdout).
    """

    def __init__(self, codes: np.ndarray):
        self.codes = codes
        self.sample = codes

    def chunks(self) -> Iterator[np.ndarray]:
        yield self.codes

    def accumulate(self, total, add):
        """``total`` after ``add(total, codes)`` (module docstring)."""
        add(total, self.codes)
        return total

    def rows_at(self, positions: np.ndarray) -> np.ndarray:
        """The codes of the rows at ``positions`` (increasing)."""
        return self.codes[positions]
