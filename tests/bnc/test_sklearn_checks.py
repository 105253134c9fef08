"""scikit-learn's estimator checks, run over every (structure, estimator) pair the estimator is defined on.

HDP runs a few Gibbs iterations: the checks are about the estimator's contract (parameters, shapes,
classes, determinism), which does not depend on how long its chain runs; the chain itself is tested in
``test_hdp.py``."""

import itertools

from sklearn.utils.estimator_checks import parametrize_with_checks

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES

K = 2
#: Parameters of the estimators whose defaults would make the battery slow.
QUICK = {"hdp": {"iterations": 20}}


@parametrize_with_checks(
    [
        BNClassifier(structure=structure, k=K, estimator=estimator, estimator_params=QUICK.get(estimator), random_state=0)
        for structure, estimator in itertools.product(sorted(STRUCTURES), sorted(ESTIMATORS))
        if ESTIMATORS[estimator].valid_structure(structure, K)  # e.g. MANB: naive Bayes only
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
