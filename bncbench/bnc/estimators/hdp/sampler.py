"""numba kernels of the HDP collapsed Gibbs sampler (HDP paper Sect. 4.4-4.5) over flat arrays.

All the context trees of a network are packed into one forest (``bncbench.bnc.estimators.hdp`` builds
it): nodes are numbered tree by tree and, within a tree, level by level; ``levels[tree_levels[i] + L]``
is the first node of level ``L`` of tree ``i``. Node ``g`` has ``parent[g]`` (-1 at a root), the cells
``cell[g] .. cell[g] + values[tree] - 1`` (one per value of the child variable) and a concentration
slot ``slot[g]``. Per cell the state is the count ``n`` (the data at a leaf, the sum of the children's
pseudo-counts elsewhere, Eq. 10) and the pseudo-count ``t``; per node the totals ``n_total``,
``t_total``. Each tree's chain runs on one thread (``prange`` over trees) and draws its random numbers
by position (a counter-based generator keyed by iteration and cell), so the numbers for a seed do not
depend on the number of threads.

The pseudo-count ``t`` of a value at a non-root node is resampled among ``lo..hi``, the candidates within
``t +- window`` (Sect. 4.4.1) that keep ``1 <= t <= n`` and the parent's ``t_p <= n_p``, from the
conditional of Eq. 11 (as ``setTk`` of the authors' ProbabilityNode.java computes it). From candidate
``u`` to ``u + 1`` that probability changes by the factor

    alpha * S(n, u + 1) / S(n, u) * S(m + 1, t_p) / S(m, t_p) / (alpha_p + N_p)

where ``m``, ``t_p``, ``N_p`` are the parent's count of the value, pseudo-count and total count at
candidate ``u``, and ``alpha``, ``alpha_p`` the node's and the parent's concentrations. The weight of
``lo`` is 1 and each next weight is the previous times its factor: no logarithms or exponentials, only
the Stirling ratios that ``bncbench.bnc.estimators.hdp.stirling`` stores. A factor lies within about 1e-19..1e9
(counts up to 5e4, concentrations up to the cap), so over the 2 * 10 steps of a window the weights
neither overflow nor drop a candidate that matters.

Two kernels sample the windows. ``_sweep_reference`` is the plain one: per window it fills the factors
from ``stirling``'s lookups, then accumulates the weights, then picks the candidate. ``_sweep_fast``
walks the Stirling table directly and does all of it in one loop (a call in that loop would cost
reference counting on every window, separate loops a mispredicted exit each); windows whose counts
exceed the table go through the reference path. A window of at most ``SHORT_STEPS`` steps (most windows
of sparse trees have 2-5 candidates), or else of at most ``MEDIUM_STEPS`` (a leaf whose ``t`` is 1 has
``window`` of them), or else of at most ``LONG_STEPS`` (a whole window of the default width, 2 x 10
steps: 462 of the 1058 windows an iteration of ``benchmarks/hdp_speed.py``'s tree) runs exactly that
many: its factors come ``LANES`` at a time from ``bncbench.bnc.estimators.hdp.simd`` (one vector
division for four), a factor past the window is 0, so its weight adds exactly nothing to the total
and, its cumulative weight being the total, never wins the choice, which counts the cumulative
weights below the target four at a time. So its loops,
unrolled, have no data-dependent exit for the CPU to mispredict (the same loop with a variable count
loses most of the gain). Both kernels evaluate the same expressions in the same order (``_step``, the
division, the running products and sums), so they give identical results.

The module is longer than the project's 400 lines on purpose: the two kernels stand side by side with
the helpers they share, so that a reader checks the fast one against the reference line by line.
"""

import math

import numpy as np
from numba import njit, prange

from bncbench.bnc.estimators.hdp.concentration import SMALL_TOTAL, sample_concentrations
from bncbench.bnc.estimators.hdp.estimates import level_means, record_probabilities, record_static
from bncbench.bnc.estimators.hdp.random import CONCENTRATION_STREAM, mix, uniform_at
from bncbench.bnc.estimators.hdp.simd import LANES, count_below, window_factors
from bncbench.bnc.estimators.hdp.stirling import (
    column_index, digamma, log_stirling_large, stirling_inverse_ratio, stirling_ratio,
)

#: Values of ``log S(n, .)`` cached per cell whose count exceeds the Stirling table.
ROW_CACHE = 64
#: Windows of at most these many steps run a fixed number of them (multiples of ``LANES``), the extra
#: ones masked.
SHORT_STEPS = 4
MEDIUM_STEPS = 12
LONG_STEPS = 20

# ---------------------------------------------------------------------------------------------
# One window of candidate pseudo-counts (Sect. 4.4.1).


@njit(cache=True, error_model="numpy", inline="always")
def _window_bounds(n, t, parent_n, parent_t, window):
    """Candidates ``lo..hi``: within the window, 1 <= t <= n, and the parent keeps n_p >= t_p."""
    return max(1, t - window, t - (parent_n - parent_t)), min(t + window, n)


@njit(cache=True, error_model="numpy", inline="always")
def _step(ratio_n_u, inverse_ratio_m, m, shift, alpha, parent_base):
    """The factor ``P(u + 1) / P(u)`` as (numerator, denominator):
    ``R(n, u) * (m + Q(m, t_p - 1)) * alpha / (alpha_p + N_p(u))``, where ``m = n_p(u)``,
    ``S(m + 1, t_p) / S(m, t_p) = m + Q(m, t_p - 1)``, ``parent_base = alpha_p + N_p(t)`` and
    ``shift = u - t``; ``m`` and ``shift`` are whole numbers held as floats."""
    return ratio_n_u * ((m + inverse_ratio_m) * alpha), parent_base + shift


@njit(cache=True, error_model="numpy")
def _fill_steps(n, t, lo, hi, parent_n, parent_t, alpha, parent_base, ratio, inverse_ratio, rows, row,
                row_key, row_first, row_log, numerators, denominators):  # fmt: skip
    """``_step`` for every ``u`` in ``lo..hi - 1``, from ``stirling``'s lookups (any n).

    A cell whose own count can exceed the table has a ``row`` (else -1) in a cache of ``log S(n, v)``
    for ``ROW_CACHE`` values of v, kept while n stays the same (at a leaf, for good) and the window
    within them; the values are those ``stirling`` would compute, so the cache changes no result.
    """
    if n > rows and row >= 0:
        if row_key[row] != n or lo < row_first[row] or hi >= row_first[row] + ROW_CACHE:
            first = max(1, min(lo - (ROW_CACHE - 1 - (hi - lo)) // 2, n + 1 - ROW_CACHE))
            row_key[row], row_first[row] = n, first
            for v in range(first, min(n, first + ROW_CACHE - 1) + 1):
                row_log[row, v - first] = log_stirling_large(n, v)
        for u in range(lo, hi):
            v = u - row_first[row]
            numerators[u - lo] = math.exp(row_log[row, v + 1] - row_log[row, v])  # R(n, u)
    else:
        for u in range(lo, hi):
            numerators[u - lo] = stirling_ratio(ratio, rows, n, u)
    for u in range(lo, hi):
        m = parent_n + u - t
        numerators[u - lo], denominators[u - lo] = _step(
            numerators[u - lo], stirling_inverse_ratio(inverse_ratio, rows, m, parent_t - 1),
            float(m), float(u - t), alpha, parent_base,
        )  # fmt: skip


@njit(cache=True, error_model="numpy", inline="always")
def _choose(lo, hi, target, cumulative):
    """The first candidate whose cumulative weight reaches ``target``."""
    chosen = lo
    for i in range(hi - lo + 1):
        chosen += cumulative[i] < target
    return chosen


@njit(cache=True, error_model="numpy", inline="always")
def _draw(lo, hi, uniform, numerators, denominators, cumulative):
    """The new pseudo-count of one window, from its step factors."""
    for i in range(hi - lo):
        numerators[i] /= denominators[i]
    weight = 1.0
    total = 1.0
    cumulative[0] = total
    for i in range(hi - lo):
        weight *= numerators[i]
        total += weight
        cumulative[i + 1] = total
    return _choose(lo, hi, uniform * total, cumulative)


@njit(cache=True, error_model="numpy", inline="always")
def _fixed_window(width, steps, ratio, inverse_ratio, row, column, has_q, m_float, shift, alpha,
                  parent_base, uniform, factors, cumulative):  # fmt: skip
    """The offset of the chosen candidate from ``lo``, over ``width`` steps (a multiple of ``LANES``):
    the factors past ``steps`` are 0, so their weights (the last valid one times 0: weights never
    overflow) add exactly nothing and never win."""
    for chunk in range(0, width, LANES):
        j = np.uint64(chunk)
        window_factors(ratio, row + j, inverse_ratio, column + j, has_q, m_float + chunk, shift + chunk,
                       alpha, parent_base, steps - chunk, factors, j)  # fmt: skip
    weight = 1.0
    total = 1.0
    cumulative[0] = total
    for step in range(width):
        weight *= factors[step]
        total += weight
        cumulative[step + 1] = total
    for step in range(width + 1, width + LANES):
        cumulative[step] = np.inf
    target = uniform * total
    chosen = 0
    for chunk in range(0, width + 1, LANES):
        chosen += count_below(cumulative, np.uint64(chunk), target)
    return chosen


@njit(cache=True, error_model="numpy", inline="always")
def _apply(node, parent, cell, parent_cell, new_t, n_cell, t_cell, n_total, t_total):
    change = new_t - t_cell[cell]
    t_cell[cell] = new_t
    t_total[node] += change
    n_cell[parent_cell] += change  # Eq. 10
    n_total[parent] += change


@njit(cache=True, error_model="numpy")
def _sweep_reference(first, last, key, iteration, window, forest, state, stirling, scratch):
    """Resample the pseudo-counts of the active cells ``first..last - 1`` (one level), plainly."""
    active_cell, active_node, active_parent_cell, parent, _, slot = forest
    n_cell, t_cell, n_total, t_total, alpha = state
    ratio, inverse_ratio, rows, row_of, row_key, row_first, row_log = stirling
    numerators, denominators, cumulative = scratch
    counter = iteration * n_cell.shape[0]
    for i in range(first, last):
        c, node, pc = active_cell[i], active_node[i], active_parent_cell[i]
        up = parent[node]
        n, t, parent_n, parent_t = n_cell[c], t_cell[c], n_cell[pc], t_cell[pc]
        lo, hi = _window_bounds(n, t, parent_n, parent_t, window)
        if hi <= lo:  # t is forced: the parent allows no move, or n = 1
            continue
        a, base = alpha[slot[node]], alpha[slot[up]] + n_total[up]
        _fill_steps(n, t, lo, hi, parent_n, parent_t, a, base, ratio, inverse_ratio, rows, row_of[i],
                    row_key, row_first, row_log, numerators, denominators)  # fmt: skip
        new_t = _draw(lo, hi, uniform_at(key, counter + c), numerators, denominators, cumulative)
        _apply(node, up, c, pc, new_t, n_cell, t_cell, n_total, t_total)


@njit(cache=True, error_model="numpy")
def _sweep_fast(first, last, key, iteration, window, forest, state, stirling, scratch):
    """The same sweep, one loop per window over the table (see the module docstring)."""
    active_cell, active_node, active_parent_cell, parent, _, slot = forest
    n_cell, t_cell, n_total, t_total, alpha = state
    ratio, inverse_ratio, rows, row_of, row_key, row_first, row_log = stirling
    numerators, denominators, cumulative = scratch
    counter = iteration * n_cell.shape[0]
    longest = np.uint64(LONG_STEPS)
    for i in range(first, last):
        # unsigned indices: numba checks signed ones for negative values (wrap-around) on every access
        c, pc = np.uint64(active_cell[i]), np.uint64(active_parent_cell[i])
        node = np.uint64(active_node[i])
        up = np.uint64(parent[node])
        n, t, parent_n, parent_t = n_cell[c], t_cell[c], n_cell[pc], t_cell[pc]
        lo, hi = _window_bounds(n, t, parent_n, parent_t, window)
        if hi <= lo:
            continue
        a, base = alpha[slot[node]], alpha[slot[up]] + n_total[up]
        uniform = uniform_at(key, counter + active_cell[i])
        if n <= rows and parent_n + hi - t <= rows:
            row = np.uint64(n * (n - 1) // 2 - 1 + lo)  # R(n, lo + j) = ratio[row + j]
            m = parent_n + lo - t
            column = np.uint64(column_index(m, parent_t - 1, rows) if parent_t > 1 else 0)  # Q(m + j, t_p - 1)
            m_float, shift = float(m), float(lo - t)
            steps = hi - lo
            has_q = parent_t > 1
            # a fixed window reads up to LONG_STEPS entries of each table from row and column
            in_table = row + longest <= ratio.shape[0] and column + longest <= inverse_ratio.shape[0]
            if steps <= SHORT_STEPS and in_table:
                new_t = lo + _fixed_window(SHORT_STEPS, steps, ratio, inverse_ratio, row, column, has_q,
                                           m_float, shift, a, base, uniform, numerators, cumulative)  # fmt: skip
            elif steps <= MEDIUM_STEPS and in_table:
                new_t = lo + _fixed_window(MEDIUM_STEPS, steps, ratio, inverse_ratio, row, column, has_q,
                                           m_float, shift, a, base, uniform, numerators, cumulative)  # fmt: skip
            elif steps <= LONG_STEPS and in_table:
                new_t = lo + _fixed_window(LONG_STEPS, steps, ratio, inverse_ratio, row, column, has_q,
                                           m_float, shift, a, base, uniform, numerators, cumulative)  # fmt: skip
            else:
                weight = 1.0
                total = 1.0
                cumulative[0] = total
                for step in range(hi - lo):
                    j = np.uint64(step)
                    q = inverse_ratio[column + j] if parent_t > 1 else 0.0
                    numerator, denominator = _step(ratio[row + j], q, m_float, shift, a, base)
                    weight *= numerator / denominator
                    total += weight
                    cumulative[j + np.uint64(1)] = total
                    m_float += 1.0
                    shift += 1.0
                new_t = _choose(lo, hi, uniform * total, cumulative)
        else:
            _fill_steps(n, t, lo, hi, parent_n, parent_t, a, base, ratio, inverse_ratio, rows, row_of[i],
                        row_key, row_first, row_log, numerators, denominators)  # fmt: skip
            new_t = _draw(lo, hi, uniform, numerators, denominators, cumulative)
        _apply(node, up, c, pc, new_t, n_cell, t_cell, n_total, t_total)


# ---------------------------------------------------------------------------------------------
# Initialisation (Eq. 15), concentrations (Sect. 4.4.2), estimates (Eqs. 12-14), one tree's chain.


#: How ``_initialise`` sets the pseudo-counts below the root (``HDPEstimator(initial_tables=...)``): Eq. 15
#: (the paper's and the authors' code), one table per value seen (``min(n, 1)``), or one per customer (``n``).
INITIAL_TABLES = ("eq15", "one", "all")


@njit(cache=True, error_model="numpy")
def _initialise(levels, n_values, forest, state, rule):
    """Pseudo-counts leaves up, by ``INITIAL_TABLES[rule]``; a root keeps ``t = min(n, 1)``.

    Counts of internal nodes must be zero on entry: they are summed from the children here.
    """
    _, _, _, parent, cell, slot = forest
    n_cell, t_cell, n_total, t_total, alpha = state
    for level in range(levels.shape[0] - 2, -1, -1):
        for node in range(levels[level], levels[level + 1]):
            a = alpha[slot[node]]
            for k in range(n_values):
                c = cell[node] + k
                n = n_cell[c]
                if level == 0 or rule == 1:
                    t = min(n, 1)
                elif n <= 1 or rule == 2:
                    t = n
                else:
                    t = max(1, math.floor(a * (digamma(a + n) - digamma(a))))
                t_cell[c] = t
                n_total[node] += n
                t_total[node] += t
                if level > 0:
                    n_cell[cell[parent[node]] + k] += t


@njit(cache=True, error_model="numpy")
def _run_tree(tree, fast, layout, forest, state, stirling, schedule, prior, seed, current, estimates, trace, start,
              stop):  # fmt: skip
    """One tree's chain, as the authors' ProbabilityTree.smooth: per iteration the pseudo-counts from the
    leaves up, the concentrations at every ``every``-th iteration, then the estimates after burn-in
    (the static nodes' when their concentration changes or the chain ends, ``record_static``)."""
    tree_levels, levels, active_levels, tree_values, tree_slots, ties, recording = layout
    recorded_ptr, recorded_nodes, static_ptr, static_nodes = recording
    iterations, burn_in, window, every, trace_stride, initial_tables = schedule
    first_level = tree_levels[tree]
    tree_level_ptr = levels[first_level : tree_levels[tree + 1]]
    n_values = tree_values[tree]
    recorded = recorded_nodes[recorded_ptr[tree] : recorded_ptr[tree + 1]]
    static = static_nodes[static_ptr[tree] : static_ptr[tree + 1]]
    first_leaf = tree_level_ptr[tree_level_ptr.shape[0] - 2]
    key = mix(np.uint64(seed))
    concentration_key = mix(np.uint64(seed) ^ CONCENTRATION_STREAM)
    stream, spare = np.zeros(1, dtype=np.uint64), np.zeros(2)
    histogram = np.zeros(SMALL_TOTAL + 1, dtype=np.int64)
    steps = max(2 * window, LONG_STEPS + LANES)  # _fixed_window pads the cumulative weights
    scratch = (np.ones(steps), np.ones(steps), np.zeros(steps + 1))
    if start == 0:
        _initialise(tree_level_ptr, n_values, forest, state, initial_tables)
    accumulated, summed = estimates
    step = (start + every // 2 - 1) // every - (every // 2 - 1) // every  # updates before `start`
    # recorded iterations since the last update before `start`, whose leaves are not yet added
    last_update = start - 1 - (start - 1 + every // 2) % every
    pending = max(0, start - max(burn_in, last_update))
    for iteration in range(start, stop):
        for level in range(tree_level_ptr.shape[0] - 2, 0, -1):
            first, last = active_levels[first_level + level], active_levels[first_level + level + 1]
            if fast:
                _sweep_fast(first, last, key, iteration, window, forest, state, stirling, scratch)
            else:
                _sweep_reference(first, last, key, iteration, window, forest, state, stirling, scratch)
        if (iteration + every // 2) % every == 0:
            record_static(static, first_leaf, recorded, n_values, forest, state, pending, summed, accumulated)
            pending = 0
            stream[0] = mix(concentration_key + np.uint64(iteration * (tree_levels.shape[0] - 1) + tree))
            spare[0] = 0.0
            sample_concentrations(tree_slots[tree], tree_slots[tree + 1], ties, state, prior, stream, spare, histogram)
            if step % trace_stride == 0:
                level_means(tree_level_ptr, forest[5], state[4], trace[tree, step // trace_stride])
            step += 1
        if iteration >= burn_in:
            record_probabilities(recorded, n_values, forest, state, current, summed)
            pending += 1
    if stop == iterations:
        record_static(static, first_leaf, recorded, n_values, forest, state, pending, summed, accumulated)


@njit(cache=True, parallel=True, error_model="numpy")
def run_chains(fast, layout, forest, state, stirling, schedule, prior, seed, estimates, trace, start, stop):
    """Run the chain of every tree of a packed forest, in parallel over trees.

    Parameters
    ----------
    fast : bool
        ``_sweep_fast`` or ``_sweep_reference``.
    layout : tuple
        ``(tree_levels, levels, active_levels, tree_values, tree_slots, (slot_nodes_ptr, slot_nodes,
        sampled), (recorded_ptr, recorded, static_ptr, static), tree_order)``: where each tree's
        levels start among the nodes and among the active cells (those whose data count is at least 2,
        the only ones whose pseudo-count can move), each tree's number of values and concentration
        slots, the nodes tied to each slot, each tree's nodes whose counts move (``recorded``, in level
        order) and the others (``static``, see ``record_static``), and the order in which to hand the
        trees to the threads (largest first).
    forest : tuple
        ``(active_cell, active_node, active_parent_cell, parent, cell, slot)``: each active cell,
        its node and its parent's cell of the same value; each node's parent, first cell and slot.
    state : tuple
        ``(n_cell, t_cell, n_total, t_total, alpha)``, updated in place: ``n_cell`` holds the data
        counts at the leaves and zeros elsewhere on entry, the last iteration's state on exit.
    stirling : tuple
        ``(ratio, inverse_ratio, rows)`` of a ``LogStirlingTable``, then the cache of the rows beyond
        it (``_fill_steps``): ``row_of`` (per active cell, its row of the cache or -1), ``row_key``,
        ``row_first`` (the n and the first value of each cached row, updated) and ``row_log``
        (``(n_rows, ROW_CACHE)``, updated).
    schedule : tuple
        ``(iterations, burn_in, window, every, trace_stride, initial_tables)``: the trace keeps every
        ``trace_stride``-th concentration update, the first included; ``initial_tables`` is the index in
        ``INITIAL_TABLES`` of how the pseudo-counts start.
    prior : tuple
        ``(prior_shape, prior_rate, cap)`` of the concentrations.
    seed : int
    estimates : tuple
        ``(accumulated, summed)``, per cell, zeros before the first call: the sum of its estimates
        over the iterations after burn-in (the output, complete after the call that stops at
        ``iterations``), and the sums since the last concentration update (``record_static``), kept
        between calls.
    trace : ndarray
        ``(n_trees, n_kept, max_depth + 1)``: each level's mean concentration after the kept updates.
    start, stop : int
        The iterations ``start..stop - 1`` of the ``iterations``: ``start`` 0 initialises the
        pseudo-counts (Eq. 15); a later one goes on from the state a call that stopped there left, so
        that a chain run in chunks gives the numbers of one run (each iteration draws its random numbers
        by position, and the static nodes' estimates are added at the same iterations).
    """
    # a prange body cannot take tuples of arrays from outside: unpack here, pack again inside
    tree_levels, levels, active_levels, tree_values, tree_slots, ties, recording, tree_order = layout
    slot_nodes_ptr, slot_nodes, sampled = ties
    recorded_ptr, recorded_nodes, static_ptr, static_nodes = recording
    active_cell, active_node, active_parent_cell, parent, cell, slot = forest
    n_cell, t_cell, n_total, t_total, alpha = state
    ratio, inverse_ratio, rows, row_of, row_key, row_first, row_log = stirling
    accumulated, summed = estimates
    # each iteration's probabilities, written top-down before they are read (record_probabilities); not
    # np.zeros: numba makes that a parallel loop, which under parallel_chunksize(1) is handed out one
    # element at a time, 0.2 CPU-s a call on a large forest
    current = np.empty(accumulated.shape[0])
    for j in prange(tree_order.shape[0]):
        _run_tree(
            tree_order[j], fast,
            (tree_levels, levels, active_levels, tree_values, tree_slots, (slot_nodes_ptr, slot_nodes, sampled),
             (recorded_ptr, recorded_nodes, static_ptr, static_nodes)),
            (active_cell, active_node, active_parent_cell, parent, cell, slot),
            (n_cell, t_cell, n_total, t_total, alpha),
            (ratio, inverse_ratio, rows, row_of, row_key, row_first, row_log),
            schedule, prior, seed, current, (accumulated, summed), trace, start, stop,
        )  # fmt: skip
