"""scikit-learn's estimator checks, run over every (structure, estimator) pair."""

import itertools

from sklearn.utils.estimator_checks import parametrize_with_checks

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES


@parametrize_with_checks(
    [
        BNClassifier(structure=structure, k=2, estimator=estimator, random_state=0)
        for structure, estimator in itertools.product(sorted(STRUCTURES), sorted(ESTIMATORS))
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
