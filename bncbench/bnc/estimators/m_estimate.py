"""m-estimates with back-off (HDP paper Eq. 16 and the paragraph after it; SkDB paper Appendix B).

``p(x | ctx) = (n(x, ctx) + m / r) / (n(ctx) + m)``. In a context tree (``context_tree``) level 0 is the
root, ``p(x)`` with no context; level 1 branches on the class, level L on the class and the first L - 1
attribute parents. ``backoff`` says what a zero count does:

- ``"value"`` (the SkDB paper's rule, Appendix B, in a tree whose root holds the counts of
  ``(x, y)``): a value with zero count in a context below the class level takes the estimate of the
  nearest ancestor context where it was counted: if ``n(x4, x0, x3) = 0`` then ``p(x4 | x0)`` is used
  instead of ``p(x4 | x0, x3)``. The class is never dropped from the context: at the class level the
  m-estimate is used as it is, so with m = 0 a value never seen with a class gives that class
  probability 0.
- ``"value_to_root"`` (the default; one reading of the HDP paper's Sect. 6.1, "we back off as many levels in the
  tree as necessary to find at least one count", in a tree whose root is the unconditioned ``phi_X``, Sect.
  4.1, which ``docs/m_estimate_readings.md`` weighs against the others): as ``"value"``, but a value with zero
  count at the class level backs off too, to the root's
  estimate ``p(x)``; from deeper levels the back-off goes on through the class level to the root as
  far as needed. A value seen in training has a count at the root, so with any m no class seen in
  training gets probability 0. That is why it is the default: an estimate that says a class seen in
  training is impossible, from the absence of one value, cannot be undone by any other evidence.
- ``"context"``: only unseen contexts back off (at prediction, to their deepest seen ancestor), as the
  authors' m-estimate on the HDP tree does (fpetitjean/HDP, ``ProbabilityNode.convertCountToProbsBackOff``,
  2018): a row is never mixed from two levels.

A per-value back-off mixes levels within a row, so the row no longer sums to one (with m = 0, a value
counted in its context keeps its frequency there while an uncounted one adds its parent's estimate). Neither
paper says to normalise; ``normalise=True`` divides each backed-off row by its sum, level by level (a
level backs off to its parent's normalised row), so that every row is a distribution.

In the class's own tree (the class prior, or ``P(y | class parents)`` where the class has parents) level
1 is the class's first parent; both value rules treat its levels by number as above.

``m`` is fixed or chosen from ``m_grid`` on a holdout of ``min(N / 10, holdout_max)`` training rows, the
tables for each candidate being estimated from the remaining rows; the final tables use all rows. The
class prior is the m-estimate ``(n(y) + m / c) / (N + m)``. ``selection`` says how the holdout chooses:

- ``"largest_tied"`` (the default): the lowest ``selection_loss``, ties going to the largest tied m
  (``largest_tied``).
- ``"authors_java"``: as the Java code of the HDP paper's authors chooses (``authors_java_rmse``,
  ``first_strictly_best``): the RMSE over all classes of the held-out rows that some class gives a
  non-zero probability, the first m of the grid whose RMSE is strictly below that of every m before it.

Why ties go to the largest m by default: the HDP paper (Sect. 6.1) is silent on ties, and a holdout of
a few rows often cannot tell the candidates apart (e.g. every m makes the same errors). The first m of
the paper's grid, 0, is the maximum-likelihood estimate: with ``backoff="value"`` it gives probability
0 to a class never seen with a value, a zero that no other evidence can undo. When the holdout cannot
tell, the most smoothing is the choice that never gives a zero (the Java rule keeps m = 0 there). m = 0
can still win outright on a holdout too small to hold a row it gets wrong (7 rows of a 75-row iris
fold); the runner's ``zero_probability_rows`` counts the test rows where that shows.
"""

import math
from types import MappingProxyType

import numpy as np

from bncbench.bnc.estimators.base import Estimator
from bncbench.bnc.estimators.dirichlet import smoothed
from bncbench.bnc.inference import PackedNetwork, grouped_sums, posterior
from bncbench.bnc.parameters import check_choice, check_integer, check_number, check_numbers
from bncbench.core.errors import ConfigError
from bncbench.core.metrics import LOSSES

DEFAULT_GRID = (0.0, 0.05, 0.2, 1.0, 5.0, 20.0)
#: The shallowest level whose zero counts back off to the parent context, by ``backoff`` (None: none do).
BACKS_OFF_FROM_LEVEL = {"value": 2, "value_to_root": 1, "context": None}
BACKOFFS = tuple(BACKS_OFF_FROM_LEVEL)
SELECTIONS = ("largest_tied", "authors_java")
#: Holdout losses within this relative distance are tied. Losses of different m are means over the same
#: rows, so rounding alone makes them differ by about 1e-16 per row summed (under 1e-12 for the 5000
#: rows of the largest holdout); a real difference between two m is many orders larger.
TIE_RTOL = 1e-9
#: Bytes an entry (row, class, table) of the holdout's arrays takes at their peak: its cell and node (int64), the
#: mask of those read, their counts, totals and numbers of values, and for one m the estimates, their logs and the
#: temporaries of ``np.where`` (float64): about a dozen 8-byte arrays at once.
_HOLDOUT_BYTES_PER_ENTRY = 96


class MEstimate(Estimator):
    """m-estimate with back-off.

    Parameters
    ----------
    m : float or None, default None
        Fixed m, or None to choose it on a holdout.
    m_grid : sequence of float
        Candidates for m (HDP paper Sect. 6.1: 0, 0.05, 0.2, 1, 5, 20).
    holdout_fraction, holdout_max : float, int
        The holdout has ``min(floor(N * holdout_fraction), holdout_max)`` rows (default N/10 and 5000).
        When it would be empty, m = 1 is used.
    selection_loss : {"rmse", "log_loss", "zero_one_loss"}
        Loss on the holdout for ``selection="largest_tied"``; ties (to a relative ``TIE_RTOL``) go to the
        largest m, see ``largest_tied``. ``"authors_java"`` has its own loss (``authors_java_rmse``) and
        takes only the default here.
    backoff : {"value", "value_to_root", "context"}
        See the module docstring. Its default was ``"value"`` until issue 26 (``earlier_defaults``).
    selection : {"largest_tied", "authors_java"}
        How the holdout chooses m; see the module docstring. Added after runs were logged: at
        ``"largest_tied"`` it is left out of a cell's hash (``added_later``).
    normalise : bool, default False
        Divide each row of a backed-off table by its sum (see the module docstring); added after runs were
        logged, left out of a cell's hash at False.
    """

    name = "m_estimate"
    count_based = True
    settings = ("backoff", "m")  # m_estimate.m=1 fixes m; m_estimate.backoff=value keeps the class
    added_later = MappingProxyType({"selection": "largest_tied", "normalise": False})
    earlier_defaults = MappingProxyType({"backoff": "value"})

    def __init__(self, m=None, m_grid=DEFAULT_GRID, holdout_fraction=0.1, holdout_max=5000,
                 selection_loss="rmse", backoff="value_to_root", selection="largest_tied", normalise=False):
        self.selection_loss = check_choice("selection_loss", selection_loss, sorted(LOSSES))
        self.backoff = check_choice("backoff", backoff, BACKOFFS)
        self.selection = check_choice("selection", selection, SELECTIONS)
        if selection == "authors_java" and selection_loss != "rmse":
            raise ConfigError(
                f"selection='authors_java' scores the holdout by the Java code's RMSE over all classes "
                f"(authors_java_rmse), not by selection_loss={selection_loss!r}: leave selection_loss at 'rmse'."
            )
        self.m = check_number("m", m, none="chosen on a holdout")
        self.m_grid = check_numbers("m_grid", m_grid)
        self.holdout_fraction = check_number("holdout_fraction", holdout_fraction, 0.0, 1.0, high_open=True)
        self.holdout_max = check_integer("holdout_max", holdout_max, 0)
        if not isinstance(normalise, (bool, np.bool_)):
            raise ConfigError(f"normalise must be true or false, got {normalise!r}.")
        self.normalise = bool(normalise)

    def tables(self, network, data, rng):
        self.selected_m_ = float(self.m) if self.m is not None else self._select_m(network, data, rng)
        return self.tables_for(network, self.selected_m_)

    def diagnostics(self, column_names) -> dict:
        """The m used: the one given, or the one chosen on the holdout."""
        return {"selected_m": self.selected_m_}

    def tables_for(self, network, m: float, row_totals=None):
        """Tables of every tree of ``network`` for a given m; ``row_totals`` (``context_totals``) saves
        summing the counts again for each m."""
        row_totals = row_totals or context_totals(network)
        return [self._tree_tables(tree, m, totals) for tree, totals in zip(network.trees, row_totals)]

    def _tree_tables(self, tree, m, row_totals):
        from_level = BACKS_OFF_FROM_LEVEL[self.backoff]
        tables = []
        for level, counts in enumerate(tree.counts):
            estimate = smoothed(counts, m / tree.n_values, row_totals[level])
            if from_level is not None and level >= from_level:
                estimate = np.where(counts > 0, estimate, tables[level - 1][tree.parent[level]])
                if self.normalise:
                    sums = estimate.sum(axis=1, keepdims=True)
                    estimate = np.divide(estimate, sums, out=np.zeros_like(estimate), where=sums > 0)
            tables.append(estimate)
        return tables

    def _select_m(self, network, data, rng) -> float:
        """The holdout's rows are drawn among all the training rows (``data.rows_at``), in memory or read in
        chunks alike, so that both choose the same m."""
        n_rows = int(network.n_rows)
        n_holdout = min(int(n_rows * self.holdout_fraction), self.holdout_max)
        if n_holdout < 1:
            return 1.0
        held_codes = data.rows_at(np.sort(rng.choice(n_rows, size=n_holdout, replace=False)))
        rest = network.copy().remove(held_codes)
        held_y = held_codes[:, -1]
        if self.selection == "authors_java":
            score, choose = authors_java_rmse, first_strictly_best
        else:
            loss = LOSSES[self.selection_loss]
            score, choose = (lambda log_joint, y: loss(posterior(log_joint), y)), largest_tied
        self.holdout_losses_ = {
            m: score(rest.combine(log_joint, held_codes), held_y)
            for m, log_joint in zip(self.m_grid, self._holdout_log_joints(rest, held_codes))
        }
        return choose(self.m_grid, [self.holdout_losses_[m] for m in self.m_grid])

    def _holdout_log_joints(self, rest, held_codes):
        """For each m of the grid, the grouped log joint of the held-out rows, as ``PackedNetwork(rest,
        self.tables_for(rest, m))`` gives it, to the last bit: the same estimates and sums, computed
        at the cells the rows read or, when the tables have fewer cells than that, at every cell, but
        with no table built (kDB-5 on adult has 529,312 cells, naive Bayes 458). A normalised row needs
        every value of it: then the tables are built, for each m."""
        if self.normalise:
            for m in self.m_grid:
                yield PackedNetwork(rest, self.tables_for(rest, m)).grouped_log_joint(held_codes)
            return
        packed = PackedNetwork(rest)
        if rest.memory_limit is not None:
            rest.memory_limit.check_row_class_arrays(
                "the m-estimate's choice of m", len(held_codes), rest.n_classes, len(rest.trees),
                _HOLDOUT_BYTES_PER_ENTRY, "fix m (estimator_params={'m': 1.0}) or hold out fewer rows (holdout_max)")
        cells, nodes = packed.cells(held_codes)  # (n, classes, trees)
        read = cells >= 0
        cells, nodes = np.where(read, cells, 0), np.where(read, nodes, 0)  # cell 0 is node 0's
        counts = np.concatenate([c.ravel() for tree in rest.trees for c in tree.counts])
        from_level = BACKS_OFF_FROM_LEVEL[self.backoff]
        if from_level is not None:  # a value unseen in its context takes its parent context's estimate
            back = read & (packed.node_level[nodes] >= from_level) & (counts[cells] == 0)
            while back.any():
                parents = packed.node_parent[nodes[back]]
                cells[back] += packed.table_start[parents] - packed.table_start[nodes[back]]
                nodes[back] = parents
                back[back] = (packed.node_level[parents] >= from_level) & (counts[cells[back]] == 0)
        node_totals = np.concatenate([totals.ravel() for tree_totals in context_totals(rest) for totals in tree_totals])
        node_values = np.diff(np.append(packed.table_start, counts.size))
        at_reads = cells.size < counts.size
        if not at_reads:
            nodes = np.repeat(np.arange(node_values.size), node_values)  # every cell's node
        cell_counts = counts[cells] if at_reads else counts
        cell_totals, n_values = node_totals[nodes], node_values[nodes]
        for m in self.m_grid:
            pseudo = m / n_values  # as ``_tree_tables`` gives it to ``smoothed``
            totals = cell_totals + n_values * pseudo
            with np.errstate(invalid="ignore", divide="ignore"):
                log_estimates = np.log(np.where(totals > 0, (cell_counts + pseudo) / totals, 0.0))
            log_p = np.where(read, log_estimates if at_reads else log_estimates[cells], 0.0)
            yield grouped_sums(log_p, packed.tree_groups)


def context_totals(network) -> list:
    """Per tree and level, each context's total count (``smoothed``'s row totals)."""
    return [[counts.sum(axis=1, keepdims=True) for counts in tree.counts] for tree in network.trees]


def largest_tied(m_grid, losses) -> float:
    """The largest m whose loss ties the lowest, to a relative ``TIE_RTOL``.

    Parameters
    ----------
    m_grid : sequence of float
        Candidates for m, in any order.
    losses : sequence of float
        The holdout loss of each candidate.

    Returns
    -------
    float
        The chosen m: of the candidates the holdout cannot tell apart, the one that smooths most (see
        the module docstring; HDP paper Sect. 6.1 does not say how ties are broken).
    """
    losses = np.asarray(losses, dtype=float)
    tied = np.isclose(losses, losses.min(), rtol=TIE_RTOL, atol=0.0)
    return float(np.asarray(m_grid, dtype=float)[tied].max())


def authors_java_rmse(log_joint, y_codes) -> float:
    """The holdout loss of the HDP paper's authors' Java code (see ``first_strictly_best`` for where):
    ``sqrt(S / n)``, S summing ``(1[c = y] - p(c | x))^2`` over every class c of the n rows kept, row by
    row and class by class as the Java loop adds them.

    A row where every class has probability 0 is not kept: Java's normalisation in log space
    (``SUtils.normalizeInLogDomain``) turns its ``-inf`` log joints into NaN probabilities, and the loop
    skips a row with a NaN. Unlike ``bncbench.core.metrics.rmse`` (SkDB paper Eq. 1, the true class
    only), the other classes enter, and S is not divided by the number of classes.

    Parameters
    ----------
    log_joint : ndarray
        (n, classes) ``log P(y, x)`` of the held-out rows.
    y_codes : ndarray
        Their classes.

    Returns
    -------
    float
        NaN when no row is kept (Java's ``0.0 / 0``).
    """
    kept = ~np.isneginf(log_joint).all(axis=1)
    errors = posterior(log_joint[kept])
    errors[np.arange(errors.shape[0]), y_codes[kept]] -= 1.0
    squared = (errors**2).ravel()
    if not squared.size:
        return math.nan
    return math.sqrt(np.cumsum(squared)[-1] / errors.shape[0])


def first_strictly_best(m_grid, losses) -> float:
    """The m the HDP paper's authors' Java code keeps: the candidates in grid order, each replacing the
    best so far only when its loss is strictly lower (``if (rmse < bestRMSE)``), from a best m of 1.0 and
    a best loss of ``Double.MAX_VALUE``. So of tied candidates the first stays (m = 0 in the paper's
    grid), a NaN loss never wins, and m = 1 is kept when no loss is a number.

    The Java code: ``src/weka/classifiers/mmall/Online/Bayes/wdBayesParametersTree.java``, method
    ``optimizeSmoothingParameter``, and the same loop in ``wdBayesOnlinePYP_Penny.java``, method
    ``buildClassifier`` (branch ``M_estimation``, ``optimizeM``), of the Monash wdBayes code ("written by
    Francois Petitjean, Nayyar Zaidi") as kept in github.com/icesky0125/DecisionTreeSmoothing (commit
    fdc2c71). github.com/fpetitjean/HDP holds the HDP estimator and the m-estimate of a tree
    (``ProbabilityNode.convertCountToProbsBackOff``), not the choice of m.

    Parameters
    ----------
    m_grid : sequence of float
        Candidates for m, in the order they are tried.
    losses : sequence of float
        The holdout loss of each (``authors_java_rmse``).

    Returns
    -------
    float
    """
    best_m, best_loss = 1.0, np.finfo(float).max
    for m, loss in zip(m_grid, losses):
        if loss < best_loss:
            best_m, best_loss = float(m), loss
    return best_m
