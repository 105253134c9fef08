import itertools

import numpy as np
from sklearn.metrics import mutual_info_score

from bncbench.bnc.information import conditional_mutual_information, mutual_information_with_class


def test_mutual_information_agrees_with_scikit_learn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    codes = np.column_stack([(y + rng.integers(0, 2, 400)) % 4, rng.integers(0, 5, 400)]).astype(np.int64)
    mi = mutual_information_with_class(codes, y, np.array([4, 5]), 3)
    for i in range(2):
        assert np.isclose(mi[i], mutual_info_score(codes[:, i], y))


def test_conditional_mutual_information_is_the_class_weighted_mutual_information():
    rng = np.random.default_rng(1)
    n = 600
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 3, n)
    b = (a + y + rng.integers(0, 2, n)) % 3
    c = rng.integers(0, 4, n)
    codes = np.column_stack([a, b, c]).astype(np.int64)
    cmi = conditional_mutual_information(codes, y, np.array([3, 3, 4]), 2)
    for i, j in itertools.permutations(range(3), 2):
        expected = sum(np.mean(y == v) * mutual_info_score(codes[y == v, i], codes[y == v, j]) for v in (0, 1))
        assert np.isclose(cmi[i, j], expected)
    assert np.all(np.diag(cmi) == 0)
    assert cmi[0, 1] > 10 * cmi[0, 2]
