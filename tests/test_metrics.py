"""The clipping counts, the two RMSEs and the distances to the truth of bncbench.core.metrics, on hand-made
predictions."""

import numpy as np
import pytest

from bncbench.core.metrics import (
    PROBABILITY_FLOOR,
    clipped_log_loss,
    log_loss,
    rmse,
    rmse_all_classes,
    zero_probability_rows,
)

# Four rows: the true class gets 0.8, 0.5, 0 and 1e-16; the last two are below the floor.
PROBA = np.array([[0.8, 0.2], [0.5, 0.5], [1.0, 0.0], [1.0, 1e-16]])
Y = np.array([0, 1, 1, 1])


def test_rows_below_the_floor_are_counted_and_their_part_of_the_log_loss_is_split_off():
    assert zero_probability_rows(PROBA, Y) == 2
    assert clipped_log_loss(PROBA, Y) == pytest.approx(2 * -np.log(PROBABILITY_FLOOR) / 4)
    unclipped = -(np.log(0.8) + np.log(0.5)) / 4
    assert log_loss(PROBA, Y) - clipped_log_loss(PROBA, Y) == pytest.approx(unclipped)


def test_no_clipped_row_no_clipped_part():
    assert zero_probability_rows(PROBA[:2], Y[:2]) == 0
    assert clipped_log_loss(PROBA[:2], Y[:2]) == 0.0


def test_the_distances_to_the_truth_by_hand():
    from bncbench.core.metrics import kl_to_truth, tv_to_truth

    truth = np.array([[0.5, 0.5], [1.0, 0.0]])
    model = np.array([[0.25, 0.75], [0.5, 0.5]])
    # row 1: 0.5 ln(0.5 / 0.25) + 0.5 ln(0.5 / 0.75); row 2: 1 ln(1 / 0.5), the zero of the truth adds nothing
    assert kl_to_truth(model, truth) == pytest.approx((0.5 * np.log(2) + 0.5 * np.log(2 / 3) + np.log(2)) / 2)
    assert tv_to_truth(model, truth) == pytest.approx((0.25 + 0.5) / 2)
    assert kl_to_truth(truth, truth) == 0.0 and tv_to_truth(truth, truth) == 0.0
    # a model giving 0 to a possible class: clipped at the floor, as the log loss, not infinite
    assert kl_to_truth(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]])) == pytest.approx(
        0.5 * np.log(0.5) + 0.5 * (np.log(0.5) - np.log(PROBABILITY_FLOOR)))


def test_a_declared_class_absent_from_the_data_takes_probability_zero_from_the_model():
    import pandas as pd

    from bncbench.core.metrics import tv_to_truth
    from bncbench.protocol.cross_validation import truth_columns

    truth = pd.DataFrame([[0.5, 0.1, 0.4]], columns=["c0", "c1", "c2"])
    model, true = truth_columns(np.array([[0.5, 0.5]]), np.array(["c0", "c2"], dtype=object), truth)
    assert model.tolist() == [[0.5, 0.0, 0.5]]
    assert tv_to_truth(model, true) == pytest.approx(0.5 * (0.0 + 0.1 + 0.1))


def test_the_all_class_rmse_by_hand_and_equal_to_the_true_class_one_on_two_classes():
    three = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    y = np.array([0, 1])
    # row 1: 0.4^2 + 0.3^2 + 0.1^2 = 0.26; row 2: 0.2^2 + 0.8^2 + 0.6^2 = 1.04; over 6 terms
    assert rmse_all_classes(three, y) == pytest.approx(np.sqrt((0.26 + 1.04) / 6))
    assert rmse(three, y) == pytest.approx(np.sqrt((0.4**2 + 0.8**2) / 2))
    assert rmse_all_classes(PROBA, Y) == pytest.approx(rmse(PROBA, Y))  # two classes: one squared error twice


def test_every_logged_number_summed_a_chunk_of_rows_at_a_time_equals_it_on_the_whole_fold():
    """The out-of-core cross-validation sums a fold's metrics over chunks of test rows (RunningMetrics) rather than
    holding the fold's predictions: the same numbers, but for the order of the additions."""
    from bncbench.core.metrics import CLIPPING, COUNTS, LOGGED_LOSSES, TRUTH, RunningMetrics

    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.full(4, 0.3), size=1000)
    proba[:50, 0] = 0.0  # rows whose true class gets probability 0: clipped
    y = rng.integers(0, 4, size=1000)
    y[:50] = 0
    truth = rng.dirichlet(np.ones(4), size=1000)
    by_rows, by_truth = {**LOGGED_LOSSES, **CLIPPING, **COUNTS}, TRUTH
    running, distances = RunningMetrics(by_rows), RunningMetrics(by_truth)
    for rows in np.array_split(np.arange(1000), [1, 37, 500, 999]):
        running.add(proba[rows], y[rows])
        distances.add(proba[rows], truth[rows])
    whole = {name: metric(proba, y) for name, metric in by_rows.items()}
    whole |= {name: metric(proba, truth) for name, metric in by_truth.items()}
    assert running.values() | distances.values() == pytest.approx(whole, rel=1e-12)
    assert running.values()["zero_probability_rows"] == 50 and running.values()["test_rows"] == 1000
