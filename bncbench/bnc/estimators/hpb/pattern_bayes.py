"""Hierarchical Pattern Bayes (Jambeiro and Wainer 2007, Sect. 2) for one distribution ``P(C | W)``.

In the paper's terms, ``C`` is the predicted variable (the class; the child of a CPT), a pattern ``W``
is a set of ``attribute = value`` pairs (Def. 1), its level is its number of attributes (Def. 4), a
pattern family is the set of attributes a pattern defines (Sect. 2.3), and ``g(W)`` is the set of the
level(W) sub-patterns of ``W`` with one attribute less (Def. 6). With ``N_w`` the number of training
rows satisfying ``W`` and ``N_wc`` those of them in class ``c``, for a pattern of level ``L >= 1`` of
family ``F``::

    P(c | W)     = (N_wc + S_F P(c | G(W))) / (N_w + S_F)                        (Eq. 4)
    P'(c | g(W)) ∝ P(c) prod_{V in g(W)} P(c | V) / P(c)                          (Eqs. 5 and 7)
    P(c | G(W))  = (P'(c | g(W)) + B P(c)) / (1 + B),   B = b (L - 1)              (Eq. 6, Sect. 2.3)

so ``P(c | W)`` is computed from every sub-pattern of ``W``, recursively, down to the empty pattern,
whose estimate is ``P(c)``. Of an unseen pattern (``N_w = 0``) the estimate is its prior
``P(c | G(W))``, from its seen (or again unseen) sub-patterns.

``S_F`` is chosen per family by leave-one-out over the training rows (Sect. 2.3), greedily from the
most general family to the most specific: with the S of every family below ``F`` fixed, each row is
held out of every count its estimate uses (its own pattern, all its sub-patterns and ``P(c)``). This is
exact and costs no refitting: the held-out estimates of a row's pattern and sub-patterns depend only on
that pattern and the row's class, so they are computed once per (pattern, class) pair and carried from
one level to the next. The loss is that of the held-out row's true class, over all training rows.

Departure from the paper: the paper estimates ``P(c)`` by ``N_c / N`` and defines ``P(c | W) = 0`` for
a class with ``N_c = 0``. Here the empty pattern is a family like the others: Eq. 4 with the uniform
prior ``1 / |C|`` and its own S chosen by leave-one-out (a small S is the paper's estimate). Every
estimate is then positive: Eq. 7 never divides by zero, a value seen once does not get probability 0
when its row is held out, and a CPT's child value never zeroes a joint probability.

Patterns are keyed per family by compact integers: the key of a row's pattern in ``F`` combines its
index in ``F`` less its last attribute with the value of that attribute, so keys never overflow
whatever the cardinalities.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from bncbench.core.metrics import PROBABILITY_FLOOR

SELECTION_LOSSES = ("log_loss", "rmse")


def _family_masks(n_attributes: int) -> list[int]:
    """Every pattern family as a bit mask (bit ``j``: attribute ``j`` defined), most general first:
    by level, then by mask."""
    return sorted(range(1 << n_attributes), key=lambda mask: (mask.bit_count(), mask))


def _last_attribute(mask: int) -> int:
    """The family's last attribute: its pattern keys extend those of the family without it."""
    return mask.bit_length() - 1


def _sub_families(mask: int) -> list[int]:
    """The families of ``g(W)``: the family less one of its attributes, for each of them."""
    return [mask & ~(1 << j) for j in range(mask.bit_length()) if mask >> j & 1]


def _sweep(n_attributes: int, empty):
    """Yield each non-empty family mask, most general first, with a dict of what was kept for the
    level below: at first the empty family's ``empty``; what the caller stores for a family is kept
    until the level after the family's is done."""
    kept, level = {0: empty}, 1
    for mask in _family_masks(n_attributes)[1:]:
        if mask.bit_count() > level:
            level = mask.bit_count()
            kept = {k: v for k, v in kept.items() if k.bit_count() == level - 1}
        yield mask, kept


def _log_prior(log_sub_estimates: list, log_root: np.ndarray, level: int, b: float) -> np.ndarray:
    """``log P(c | G(W))`` of patterns of level ``L >= 1``, from the ``log P(c | V)`` of their ``g(W)``.

    Eqs. 5 and 7 give ``P'(c | g(W)) ∝ P(c)^(1 - L) prod_V P(c | V)`` (the ``P(V)`` of Eq. 7 are the
    same for every class and cancel in the normalisation); Eq. 6 calibrates it with ``B = b (L - 1)``.

    Parameters
    ----------
    log_sub_estimates : list of ndarray
        For each pattern family of ``g(W)``, the (n, n_values) ``log P(c | V)`` of the n patterns'
        sub-patterns V in it.
    log_root : ndarray
        ``log P(c)``, (n_values,) or (n, n_values).
    level : int
        ``level(W)``.
    b : float
        The paper's calibration constant.
    """
    log_joint = (1 - level) * log_root + sum(log_sub_estimates)
    log_joint -= log_joint.max(axis=-1, keepdims=True)
    log_naive = log_joint - np.log(np.exp(log_joint).sum(axis=-1, keepdims=True))
    calibration = b * (level - 1)
    if calibration == 0:
        return log_naive
    return np.logaddexp(log_naive, np.log(calibration) + log_root) - np.log1p(calibration)


def _log_posterior_mean(counts, totals, s: float, log_prior: np.ndarray) -> np.ndarray:
    """``log`` of Eq. 4, ``(N_wc + S q) / (N_w + S)``, for (n, n_values) counts and (n,) totals: exactly
    ``log q`` where ``N_w = 0``."""
    totals = totals[:, None]
    with np.errstate(divide="ignore"):
        log_counts = np.log(counts)
    return np.where(totals > 0, np.logaddexp(log_counts, np.log(s) + log_prior) - np.log(totals + s), log_prior)


def _loo_losses(p_true: np.ndarray, weights: np.ndarray, loss: str) -> np.ndarray:
    """The log loss or RMSE of ``bncbench.core.metrics`` over held-out rows, one per column of ``p_true``:
    its rows are true-class probabilities, each shared by ``weights`` held-out rows."""
    if loss == "log_loss":
        return -(weights @ np.log(np.clip(p_true, PROBABILITY_FLOOR, 1.0))) / weights.sum()
    return np.sqrt(weights @ (1.0 - p_true) ** 2 / weights.sum())


class _Pairs(NamedTuple):
    """The (pattern, class) pairs of the training rows: a held-out row's estimates depend on these only."""

    rows: np.ndarray  # (N,) each row's pair
    first: np.ndarray  # (n_pairs,) a row of each pair
    groups: np.ndarray  # (n_pairs,) its pattern
    classes: np.ndarray  # (n_pairs,) its class
    weights: np.ndarray  # (n_pairs,) its number of rows


def _compact(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of ``key`` (in ``0..size-1``), sorted; a row of each; and each row's index
    among them, as ``np.unique`` gives them, by a table of ``size`` flags when that is not much larger
    than ``key`` (no sort)."""
    if size > 8 * key.size:
        return np.unique(key, return_index=True, return_inverse=True)
    present = np.zeros(size, dtype=bool)
    present[key] = True
    rows = (np.cumsum(present) - 1)[key]
    first = np.empty(int(present.sum()), dtype=np.int64)
    first[rows] = np.arange(key.size)
    return np.flatnonzero(present), first, rows


def _pairs(row_groups: np.ndarray, n_patterns: int, target: np.ndarray, n_values: int) -> _Pairs:
    """The pairs of the rows' patterns (``row_groups``, of ``n_patterns``) and classes (``target``)."""
    pair_keys, first, rows = _compact(row_groups * n_values + target, n_patterns * n_values)
    return _Pairs(rows, first, pair_keys // n_values, pair_keys % n_values, np.bincount(rows).astype(float))


class _Fitted(NamedTuple):
    groups: np.ndarray  # (N,) index of each training row's pattern in the family
    log_estimates: np.ndarray  # (n_patterns, n_values) log P(c | W), Eq. 4
    pairs: np.ndarray  # (N,) index of each training row's (pattern, class) pair
    log_held_out: np.ndarray  # (n_pairs, n_values) log P(c | W) with one row of the pair held out
    s: float
    loss: float


def _fit_family(row_groups, n_patterns, target, pairs, log_pattern_prior, log_held_out_prior, s_grid, loss):
    """Eq. 4 for the patterns of one family, with the S of the grid whose leave-one-out loss is the
    lowest (ties to the larger S); the priors are per pattern and per pair of ``pairs``."""
    n_values = log_pattern_prior.shape[-1]
    counts = np.bincount(row_groups * n_values + target, minlength=n_patterns * n_values)
    counts = counts.reshape(n_patterns, n_values).astype(float)
    totals = counts.sum(axis=1)
    each = np.arange(pairs.groups.size)
    held_counts = counts[pairs.groups]
    held_counts[each, pairs.classes] -= 1.0
    held_totals = totals[pairs.groups] - 1.0
    held_true = held_counts[each, pairs.classes, None]
    prior_true = np.exp(log_held_out_prior[each, pairs.classes, None])
    grid = np.asarray(s_grid)
    p_true = np.where(
        held_totals[:, None] > 0, (held_true + grid * prior_true) / (held_totals[:, None] + grid), prior_true
    )
    losses = _loo_losses(p_true, pairs.weights, loss)
    best = grid.size - 1 - int(np.argmin(losses[::-1]))
    s = float(grid[best])
    return _Fitted(row_groups, _log_posterior_mean(counts, totals, s, log_pattern_prior), pairs.rows,
                   _log_posterior_mean(held_counts, held_totals, s, log_held_out_prior), s, float(losses[best]))


class _Answered(NamedTuple):
    groups: np.ndarray  # (n,) index of each row's pattern in the family, -1 if unseen
    log_values: np.ndarray  # (n, n_values) its log P(c | W)


@dataclass
class PatternFamily:
    """The patterns of one family seen in training, and their estimates.

    ``keys`` are the sorted keys of its patterns (see the module docstring); ``log_estimates`` the
    (n_patterns, n_values) ``log P(c | W)`` of Eq. 4 in that order; ``s`` the chosen S and ``loss`` its
    leave-one-out loss.
    """

    mask: int
    keys: np.ndarray
    log_estimates: np.ndarray
    s: float
    loss: float


@dataclass
class PatternHierarchy:
    """HPB's estimates of ``P(C | W)`` for every pattern seen in training; ``fit`` builds it and
    ``log_distribution`` answers any pattern.

    Attributes
    ----------
    n_values : int
        Number of values of C.
    cards : ndarray
        Number of values of each attribute.
    b : float
        Calibration constant of Eq. 6.
    families : dict of int to PatternFamily
        Every family by mask, most general first (``_family_masks``); the empty family is mask 0.
    """

    n_values: int
    cards: np.ndarray
    b: float
    families: dict = field(default_factory=dict)

    @property
    def most_specific(self) -> PatternFamily:
        """The family of every attribute, whose estimates the whole contexts read."""
        return self.families[(1 << len(self.cards)) - 1]

    @classmethod
    def fit(cls, attributes, target, cards, n_values, b, s_grid, loss) -> "PatternHierarchy":
        """Estimate every pattern seen in training, choosing each family's S by leave-one-out.

        Parameters
        ----------
        attributes : ndarray
            (N, m) integer codes of the attributes, each in ``0..cards[j] - 1``.
        target : ndarray
            (N,) integer codes of C, in ``0..n_values - 1``.
        cards : sequence of int
            Number of values of each attribute.
        n_values : int
            Number of values of C.
        b : float
            Calibration constant of Eq. 6.
        s_grid : sequence of float
            Candidates for S, all > 0, increasing.
        loss : {"log_loss", "rmse"}
            Leave-one-out loss of the held-out row's true class (``bncbench.core.metrics``). Ties go to the
            larger S: a family whose patterns all occur once, where leave-one-out cannot tell, leans
            on its prior.
        """
        n_rows, n_attributes = attributes.shape
        hierarchy = cls(int(n_values), np.asarray(cards, dtype=np.int64), float(b))
        no_pattern = np.zeros(n_rows, dtype=np.int64)
        root_pairs = _pairs(no_pattern, 1, target, n_values)
        uniform = np.full((root_pairs.groups.size, n_values), -np.log(n_values))
        root = _fit_family(no_pattern, 1, target, root_pairs, uniform[:1], uniform, s_grid, loss)
        hierarchy.families[0] = PatternFamily(0, np.zeros(1, dtype=np.int64), root.log_estimates, root.s, root.loss)
        for mask, kept in _sweep(n_attributes, root):
            last, subs, level = _last_attribute(mask), _sub_families(mask), mask.bit_count()
            rest = kept[mask & ~(1 << last)]  # the family less its last attribute
            key = hierarchy._key(mask, rest.groups, attributes[:, last])
            keys, first, row_groups = _compact(key, rest.log_estimates.shape[0] * hierarchy.cards[last])
            pairs = _pairs(row_groups, keys.size, target, n_values)
            log_pattern_prior = _log_prior([kept[v].log_estimates[kept[v].groups[first]] for v in subs],
                                           root.log_estimates, level, b)
            log_held_out_prior = _log_prior([kept[v].log_held_out[kept[v].pairs[pairs.first]] for v in subs],
                                            root.log_held_out[root.pairs[pairs.first]], level, b)
            fitted = _fit_family(row_groups, keys.size, target, pairs, log_pattern_prior, log_held_out_prior, s_grid,
                                 loss)
            hierarchy.families[mask] = PatternFamily(mask, keys, fitted.log_estimates, fitted.s, fitted.loss)
            kept[mask] = fitted
        return hierarchy

    def _key(self, mask: int, rest_groups: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Keys in family ``mask`` of the patterns that extend patterns of the family less its last
        attribute (their indices ``rest_groups``) with the ``values`` of that attribute."""
        return rest_groups * self.cards[_last_attribute(mask)] + values

    def find(self, mask: int, rest_groups: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Index in family ``mask`` of the patterns made as in ``_key``, -1 for those unseen in training
        (extending an unseen pattern, index -1, or with an unseen value, a negative code)."""
        keys = self.families[mask].keys
        key = self._key(mask, rest_groups, values)
        position = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        return np.where((rest_groups >= 0) & (values >= 0) & (keys[position] == key), position, -1)

    def log_distribution(self, attributes: np.ndarray) -> np.ndarray:
        """``log P(c | W)`` for the pattern W of each row, seen in training or not.

        A pattern of every attribute seen in training is found along the prefix families; the others
        are estimated from their sub-patterns, family by family (``_log_sweep``).

        Parameters
        ----------
        attributes : ndarray
            (n, m) int64 codes; a negative code (a value unseen in training) leaves the attribute out
            of the row's pattern (undefined, Def. 1).

        Returns
        -------
        ndarray
            (n, n_values) log-probabilities.
        """
        n_rows, n_attributes = attributes.shape
        groups = np.zeros(n_rows, dtype=np.int64)
        for j in range(n_attributes):
            groups = self.find((2 << j) - 1, groups, attributes[:, j])
        seen = groups >= 0
        out = np.empty((n_rows, self.n_values))
        out[seen] = self.most_specific.log_estimates[groups[seen]]
        if not seen.all():
            out[~seen] = self._log_sweep(attributes[~seen])
        return out

    def _log_sweep(self, attributes: np.ndarray) -> np.ndarray:
        """``log P(c | W)`` of any patterns, from the most general family to the most specific."""
        n_rows, n_attributes = attributes.shape
        effective = ((attributes >= 0).astype(np.int64) << np.arange(n_attributes)).sum(axis=1)
        log_root = self.families[0].log_estimates[0]
        out = np.empty((n_rows, self.n_values))
        out[effective == 0] = log_root
        empty = _Answered(np.zeros(n_rows, dtype=np.int64), np.broadcast_to(log_root, out.shape))
        for mask, kept in _sweep(n_attributes, empty):
            rows = np.flatnonzero((effective & mask) == mask)  # rows whose pattern has one in the family
            if rows.size == 0:
                continue
            last = _last_attribute(mask)
            found = self.find(mask, kept[mask & ~(1 << last)].groups[rows], attributes[rows, last])
            seen = found >= 0
            log_values = np.empty((rows.size, self.n_values))
            log_values[seen] = self.families[mask].log_estimates[found[seen]]
            unseen = rows[~seen]
            if unseen.size:
                subs = [kept[v].log_values[unseen] for v in _sub_families(mask)]
                log_values[~seen] = _log_prior(subs, log_root, mask.bit_count(), self.b)
            groups = np.full(n_rows, -1, dtype=np.int64)
            groups[rows] = found
            values = np.empty_like(out)
            values[rows] = log_values
            kept[mask] = _Answered(groups, values)
            complete = effective[rows] == mask
            out[rows[complete]] = log_values[complete]
        return out
