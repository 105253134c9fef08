"""The clipping counts of bncbench.core.metrics, on hand-made predictions."""

import numpy as np
import pytest

from bncbench.core.metrics import PROBABILITY_FLOOR, clipped_log_loss, log_loss, zero_probability_rows

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
