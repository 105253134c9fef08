"""Data the selective kDB tests share."""

import numpy as np
import pytest


@pytest.fixture(scope="session")
def dependent_codes():
    """``(n, seed, noise_columns=0) -> (codes, cards)``: 4 attributes that depend on the class and on each
    other, then ``noise_columns`` of noise, the class last; and the attributes' cardinalities."""

    def make(n, seed, noise_columns=0):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 3, n)
        a = (y + (rng.random(n) < 0.3)) % 3
        b = np.where(rng.random(n) < 0.7, a % 2, rng.integers(0, 2, n))
        c = rng.integers(0, 4, n)
        d = (b + c + y) % 2
        noise = [rng.integers(0, 3, n) for _ in range(noise_columns)]
        codes = np.column_stack([a, b, c, d, *noise, y]).astype(np.int64)
        return codes, np.array([3, 2, 4, 2, *[3] * noise_columns])

    return make
