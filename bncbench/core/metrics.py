"""Loss functions on predicted class distributions, shared by the runner and model selection."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

#: Probabilities are clipped to [PROBABILITY_FLOOR, 1] before taking logarithms, so that a single
#: zero probability on the true class gives a large but finite log loss.
PROBABILITY_FLOOR = 1e-15


def _true_class_probability(proba: np.ndarray, y_codes: np.ndarray) -> np.ndarray:
    return proba[np.arange(len(y_codes)), y_codes]


def _mean(total: float, rows: int) -> float:
    return float(total / rows)


def _root_mean(total: float, rows: int) -> float:
    return float(np.sqrt(total / rows))


def _count(total: float, rows: int) -> int:
    return int(total)


@dataclass(frozen=True)
class RowMetric:
    """A number of a fold's test rows that is a function of the sum over the rows of a term each:
    ``finish(sum(terms(proba, target)), rows)``, where ``target`` is the true classes' codes (a loss or a count)
    or the true ``P(y | x)`` (a distance to the truth). Called on a fold's predictions it is the number; summed a
    chunk of rows at a time (``RunningMetrics``) it is the same number without holding the fold's rows, equal but
    for the order of the additions."""

    terms: Callable[[np.ndarray, np.ndarray], np.ndarray]
    finish: Callable[[float, int], float] = _mean

    def __call__(self, proba: np.ndarray, target: np.ndarray) -> float:
        return self.finish(np.sum(self.terms(proba, target)), len(proba))


class RunningMetrics:
    """The ``RowMetric``s ``metrics`` of a fold, summed over chunks of its rows (``add``) and finished
    (``values``)."""

    def __init__(self, metrics: Mapping[str, RowMetric]):
        self.metrics, self.totals, self.rows = metrics, dict.fromkeys(metrics, 0.0), 0

    def add(self, proba: np.ndarray, target: np.ndarray) -> None:
        for name, metric in self.metrics.items():
            self.totals[name] += np.sum(metric.terms(proba, target))
        self.rows += len(proba)

    def values(self) -> dict[str, float]:
        return {name: metric.finish(self.totals[name], self.rows) for name, metric in self.metrics.items()}


def _wrong(proba: np.ndarray, y_codes: np.ndarray) -> np.ndarray:
    return np.argmax(proba, axis=1) != y_codes


def _log_terms(proba: np.ndarray, y_codes: np.ndarray) -> np.ndarray:
    return -np.log(np.clip(_true_class_probability(proba, y_codes), PROBABILITY_FLOOR, 1.0))


def _all_class_squares(proba: np.ndarray, y_codes: np.ndarray) -> np.ndarray:
    target = np.zeros_like(proba)
    target[np.arange(len(y_codes)), y_codes] = 1.0
    return ((proba - target) ** 2).mean(axis=1)


def _clipped(proba: np.ndarray, y_codes: np.ndarray) -> np.ndarray:
    return _true_class_probability(proba, y_codes) < PROBABILITY_FLOOR


#: Error rate of the arg-max prediction (ties go to the first class in order).
zero_one_loss = RowMetric(_wrong)
#: Number of test rows the arg-max prediction gets wrong: ``zero_one_loss`` times the rows.
errors = RowMetric(_wrong, _count)
#: Number of test rows.
test_rows = RowMetric(lambda proba, y_codes: np.ones(len(y_codes)), _count)
#: Root mean squared error on the true class only, SkDB paper Eq. 1: ``sqrt(mean((1 - p(y_true | x))^2))``; unlike
#: Weka's RMSE the other classes do not enter.
rmse = RowMetric(lambda proba, y_codes: (1.0 - _true_class_probability(proba, y_codes)) ** 2, _root_mean)
#: Mean negative natural log-probability of the true class, clipped at PROBABILITY_FLOOR.
log_loss = RowMetric(_log_terms)
#: Weka's RMSE: ``sqrt(mean over rows and classes of (p(c | x) - [c = y])^2)``, the one the HDP paper's group
#: computes (``reports/authors_hdp``); the paper does not define its RMSE. Equal to ``rmse`` on two classes; on
#: more, each row's squared error is divided by the number of classes and the other classes' mass enters.
rmse_all_classes = RowMetric(_all_class_squares, _root_mean)

#: The losses every finished cell's run has, mean and folds (``tracking.CELL_METRICS``); m-estimates and
#: SkDB select on them.
LOSSES = {"zero_one_loss": zero_one_loss, "rmse": rmse, "log_loss": log_loss}
#: Losses logged beside ``LOSSES`` since they were added (issue 41: the all-class RMSE): a run logged before
#: lacks them and is still finished; where present they are checked as ``LOSSES`` are.
ADDED_LOSSES = {"rmse_all_classes": rmse_all_classes}
#: Every loss a run logs now.
LOGGED_LOSSES = {**LOSSES, **ADDED_LOSSES}

#: Rows whose true class has probability below PROBABILITY_FLOOR: 0, or a probability as small (the posterior is
#: computed in logs, so such a value is the model's, not an underflow): those ``log_loss`` clips.
zero_probability_rows = RowMetric(_clipped, _count)
#: The part of ``log_loss`` that comes from clipped rows: ``-log(PROBABILITY_FLOOR)`` (34.5) times their share of
#: the rows. Where it is most of ``log_loss``, the log loss measures the clip.
clipped_log_loss = RowMetric(lambda proba, y_codes: -np.log(PROBABILITY_FLOOR) * _clipped(proba, y_codes))

#: Per-fold counts that tell how much of ``log_loss`` is the clip: not losses a report compares.
CLIPPING = {"zero_probability_rows": zero_probability_rows, "clipped_log_loss": clipped_log_loss}

#: Per-fold counts of whole rows: the report compares total ``errors`` to tell a draw on 0-1 loss
#: (``bncbench.report.error_counts``), since mean fold rates of equal totals can differ.
COUNTS = {"errors": errors, "test_rows": test_rows}


def _kl_terms(proba: np.ndarray, truth: np.ndarray) -> np.ndarray:
    q = np.clip(proba, PROBABILITY_FLOOR, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(truth > 0, truth * (np.log(truth) - np.log(q)), 0.0).sum(axis=1)


#: Mean over the rows of the Kullback-Leibler divergence ``KL(P(y | x) || Q(y | x))`` of the model's class
#: distribution ``proba`` from the true one ``truth`` (same columns), in nats: ``0 log 0 = 0``, and the model's
#: probabilities clipped at PROBABILITY_FLOOR, as ``log_loss``.
kl_to_truth = RowMetric(_kl_terms)
#: Mean over the rows of the total variation distance ``max_A |P(A | x) - Q(A | x)|`` =
#: ``0.5 sum_y |P(y | x) - Q(y | x)|`` between the true class distribution and the model's, in [0, 1].
tv_to_truth = RowMetric(lambda proba, truth: 0.5 * np.abs(truth - proba).sum(axis=1))

#: Distances of the model's ``P(y | x)`` on the test rows to the true one, of datasets drawn from a known
#: network (``bncbench.data.synthetic``): ``(proba, truth) -> float``, lower is better.
TRUTH = {"kl_to_truth": kl_to_truth, "tv_to_truth": tv_to_truth}


#: The largest ``log_loss`` of a row: that of a true class clipped at PROBABILITY_FLOOR (34.5 nats).
LOG_LOSS_MAX = float(-np.log(PROBABILITY_FLOOR))
#: The closed interval each number the runner logs lies in, per fold and as a mean over the folds: what a
#: bundle's numbers are checked against before an import (``bncbench.bundles.verify``). Estimators' own
#: diagnostics (e.g. the m an m-estimate chose) have no domain here.
DOMAINS = {
    "zero_one_loss": (0.0, 1.0), "rmse": (0.0, 1.0), "rmse_all_classes": (0.0, 1.0), "log_loss": (0.0, LOG_LOSS_MAX),
    "errors": (0.0, np.inf), "test_rows": (1.0, np.inf), "zero_probability_rows": (0.0, np.inf),
    "clipped_log_loss": (0.0, LOG_LOSS_MAX), "kl_to_truth": (0.0, LOG_LOSS_MAX), "tv_to_truth": (0.0, 1.0),
    "fit_seconds": (0.0, np.inf), "predict_seconds": (0.0, np.inf),
    "peak_rss_bytes": (1.0, np.inf), "cpu_seconds": (0.0, np.inf),  # one value a cell (bncbench.core.resources)
}
#: The counts of ``DOMAINS`` whose folds are whole numbers (their means need not be).
WHOLE_COUNTS = ("errors", "test_rows", "zero_probability_rows")

