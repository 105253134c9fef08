"""scikit-learn's estimator checks over a covering set of (structure, estimator) pairs: every structure
with the default estimator, and every estimator with naive Bayes (no attribute parents) and with kDB-2
(attribute parents), where the estimator is defined on them.

The checks are about the estimator's contract (parameters, shapes, classes, dtypes, determinism,
pickling), which the structure and the estimator reach through separate code paths; every pair fits
and predicts a distribution on real data in ``test_refusals.py``. HDP runs a few Gibbs iterations: the
chain itself is tested in ``test_hdp.py``."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from bncbench import BNClassifier
from bncbench.bnc.estimators import ESTIMATORS
from bncbench.bnc.structures import STRUCTURES

K = 2
DEFAULT_ESTIMATOR = "m_estimate"
#: The structures every estimator is checked with: no attribute parents, and up to K of them.
ESTIMATOR_STRUCTURES = ("nb", "kdb")
#: Parameters of the estimators whose defaults would make the battery slow.
QUICK = {"hdp": {"iterations": 20}}

PAIRS = [
    (structure, estimator)
    for structure, estimator in sorted(
        {(structure, DEFAULT_ESTIMATOR) for structure in STRUCTURES}
        | {(structure, estimator) for structure in ESTIMATOR_STRUCTURES for estimator in ESTIMATORS}
    )
    if ESTIMATORS[estimator].valid_structure(structure, K)  # e.g. MANB: naive Bayes only
]


@parametrize_with_checks(
    [
        BNClassifier(structure=structure, k=K, estimator=estimator, estimator_params=QUICK.get(estimator), random_state=0)
        for structure, estimator in PAIRS
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_the_pairs_cover_every_structure_and_estimator():
    assert {s for s, _ in PAIRS} == set(STRUCTURES)
    assert {e for _, e in PAIRS} == set(ESTIMATORS)
