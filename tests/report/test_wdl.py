"""Win-draw-loss counts and sign-test p-values against hand computation."""

from math import comb

import pytest

from bncbench.core.errors import ConfigError
from bncbench.report.win_draw_loss import win_draw_loss


def sign_test(k: int, n: int) -> float:
    """Two-tailed exact sign test by hand: 2 * P(X <= min(k, n - k)), X ~ Binomial(n, 1/2)."""
    return min(1.0, 2 * sum(comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n)


def pair(a, b, metric="rmse"):
    """Means of models a and b on datasets d0, d1, ..."""
    return {"a": {metric: a}, "b": {metric: b}}


def test_sign_test_hand_computation():
    assert sign_test(8, 10) == 0.109375 == 2 * (1 + 10 + 45) / 1024


def test_wins_are_lower_losses(make_results):
    results = make_results(pair([0.1] * 8 + [0.5] * 2, [0.2] * 10))
    w = win_draw_loss(results, "a", "b", "rmse")
    assert (w.wins, w.draws, w.losses, w.n) == (8, 0, 2, 10)
    assert w.p_value == pytest.approx(0.109375, rel=1e-12)
    assert not w.significant
    assert w.missing == ()
    reverse = win_draw_loss(results, "b", "a", "rmse")
    assert (reverse.wins, reverse.draws, reverse.losses) == (2, 0, 8)
    assert reverse.p_value == pytest.approx(w.p_value, rel=1e-12)


def test_significance_is_p_at_most_alpha(make_results):
    results = make_results(pair([0.1] * 9 + [0.5], [0.2] * 10))
    w = win_draw_loss(results, "a", "b", "rmse")
    assert w.p_value == pytest.approx(sign_test(9, 10)) == pytest.approx(22 / 1024)
    assert w.significant
    assert win_draw_loss(results, "a", "b", "rmse", alpha=w.p_value).significant
    assert not win_draw_loss(results, "a", "b", "rmse", alpha=w.p_value * 0.999).significant


@pytest.mark.parametrize(
    ("n_draws", "draws", "k", "n"),
    [
        (3, "exclude", 8, 10),
        (3, "split", 9, 12),  # one draw to each side, the odd one dropped
        (4, "exclude", 8, 10),
        (4, "split", 10, 14),
    ],
)
def test_draws_exclude_or_split(make_results, n_draws, draws, k, n):
    a = [0.1] * 8 + [0.5] * 2 + [0.3] * n_draws
    results = make_results(pair(a, [0.2] * 10 + [0.3] * n_draws))
    w = win_draw_loss(results, "a", "b", "rmse", draws=draws)
    assert (w.wins, w.draws, w.losses, w.n) == (8, n_draws, 2, n)
    assert w.p_value == pytest.approx(sign_test(k, n), rel=1e-12)


def test_split_p_value_by_hand(make_results):
    results = make_results(pair([0.1] * 8 + [0.5] * 2 + [0.3] * 3, [0.2] * 10 + [0.3] * 3))
    w = win_draw_loss(results, "a", "b", "rmse", draws="split")
    assert w.p_value == pytest.approx(2 * (1 + 12 + 66 + 220) / 4096, rel=1e-12)


@pytest.mark.parametrize(
    ("decimals", "expected"),
    [(None, (0, 0, 1)), (4, (0, 0, 1)), (3, (0, 1, 0))],
)
def test_rounding_decides_draws(make_results, decimals, expected):
    results = make_results(pair([0.12346], [0.12344]))
    w = win_draw_loss(results, "a", "b", "rmse", round=decimals)
    assert (w.wins, w.draws, w.losses) == expected


def test_equal_means_up_to_summation_order_draw(make_results):
    assert sum([0.3, 0.5] * 5) / 10 != sum([0.5, 0.3] * 5) / 10
    results = make_results(pair([sum([0.3, 0.5] * 5) / 10], [sum([0.5, 0.3] * 5) / 10]))
    w = win_draw_loss(results, "a", "b", "rmse")
    assert (w.wins, w.draws, w.losses, w.n, w.p_value) == (0, 1, 0, 0, 1.0)


def test_missing_datasets_reported(make_results):
    results = make_results(
        {
            "a": {"rmse": [0.1, 0.1, 0.1, 0.1, 0.1]},
            "b": {"rmse": [0.2, 0.2, None, 0.05, None]},  # d2 NaN, d4 no row
            "c": {"rmse": [0.3, 0.3, 0.3, 0.3, 0.3, 0.3]},  # d5 only for c
        }
    )
    w = win_draw_loss(results, "a", "b", "rmse")
    assert (w.wins, w.draws, w.losses) == (2, 0, 1)
    assert w.missing == ("d2", "d4", "d5")
    w = win_draw_loss(results, "a", "b", "rmse", datasets=["d0", "d3", "d4", "d9"])
    assert (w.wins, w.draws, w.losses) == (1, 0, 1)
    assert w.missing == ("d4", "d9")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"draws": "half"}, "report.draws must be one of exclude, split"),
        ({"round": -1}, "report.round"),
        ({"round": 1.5}, "report.round"),
        ({"round": True}, "report.round"),
        ({"alpha": 0}, "report.alpha"),
        ({"metric": "auc"}, "no metric 'auc' in the results; logged metrics: rmse"),
    ],
)
def test_invalid_options(make_results, options, match):
    results = make_results(pair([0.1], [0.2]))
    metric = options.pop("metric", "rmse")
    with pytest.raises(ConfigError, match=match):
        win_draw_loss(results, "a", "b", metric, **options)
