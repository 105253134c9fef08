"""scikit-learn's estimator checks, run over every (structure, estimator) pair the estimator is defined on."""

import itertools

from sklearn.utils.estimator_checks import parametrize_with_checks

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES

K = 2


@parametrize_with_checks(
    [
        BNClassifier(structure=structure, k=K, estimator=estimator, random_state=0)
        for structure, estimator in itertools.product(sorted(STRUCTURES), sorted(ESTIMATORS))
        if ESTIMATORS[estimator].valid_structure(structure, K)  # e.g. MANB: naive Bayes only
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
