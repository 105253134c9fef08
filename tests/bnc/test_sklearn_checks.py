"""scikit-learn's estimator checks, run over every (structure, estimator) pair the estimator is defined on."""

import itertools

from sklearn.utils.estimator_checks import parametrize_with_checks

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES

K = 2


def _defined(structure, estimator):
    """An estimator with ``valid_structure`` (e.g. MANB: naive Bayes only) says which structures it takes."""
    valid = getattr(ESTIMATORS[estimator], "valid_structure", None)
    return valid is None or valid(structure, K)


@parametrize_with_checks(
    [
        BNClassifier(structure=structure, k=K, estimator=estimator, random_state=0)
        for structure, estimator in itertools.product(sorted(STRUCTURES), sorted(ESTIMATORS))
        if _defined(structure, estimator)
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
