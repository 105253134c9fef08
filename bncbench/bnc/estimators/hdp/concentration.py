"""The concentration update of the HDP sampler (HDP paper Sect. 4.4.2), a numba kernel: for each
sampled concentration, ``q_j ~ Beta(alpha, n_j)`` for its tied nodes, then ``alpha`` from its Gamma
posterior."""

import math

from numba import njit

from bncbench.bnc.estimators.hdp.random import beta, gamma

#: Floor of the Beta draw in the concentration update (as in the authors' Concentration.java).
Q_FLOOR = 1e-75
#: Tied nodes with at most this total count share their Beta draws (``sum_log_inverse_beta``).
SMALL_TOTAL = 16


@njit(cache=True, error_model="numpy")
def sum_log_inverse_beta(alpha, nodes, n_total, stream, spare, histogram):
    """A draw of ``sum_j log 1/q_j`` over ``nodes`` with ``n_total[j] > 0``, ``q_j ~ Beta(alpha, n_j)``
    independent (Sect. 4.4.2), each ``q_j`` floored at ``Q_FLOOR`` as the authors' code does.

    ``Beta(alpha, n)`` is the product of independent ``Beta(alpha + i, 1)``, i < n, and
    ``log 1 / Beta(a, 1)`` is an Exp(1) variable over ``a``; so the nodes with ``n_j <= SMALL_TOTAL``
    together add ``sum_i G_i / (alpha + i)`` with ``G_i ~ Gamma(c_i, 1)``, ``c_i`` the number of them with
    ``n_j > i``: at most ``SMALL_TOTAL`` draws for any number of nodes. That sum skips the floor, which
    binds with probability below ``exp(-172 alpha)`` per node: it is used only for ``alpha >= 1``.
    ``histogram`` (``SMALL_TOTAL + 1`` integers) is scratch.
    """
    small = SMALL_TOTAL if alpha >= 1.0 else 0
    histogram[:] = 0
    total = 0.0
    for node in nodes:
        n = n_total[node]
        if n > small:
            total -= math.log(max(beta(alpha, float(n), stream, spare), Q_FLOOR))
        else:
            histogram[n] += 1
    above = 0  # nodes with n_j > i
    for i in range(small - 1, -1, -1):
        above += histogram[i + 1]
        if above > 0:
            total += gamma(float(above), stream, spare) / (alpha + i)
    return total


@njit(cache=True, error_model="numpy")
def sample_concentrations(first_slot, last_slot, ties, state, prior, stream, spare, histogram):
    """Each sampled concentration: ``q_j ~ Beta(alpha, n_j)`` for its tied nodes j, then
    ``alpha ~ Gamma(prior_shape + sum t_j, prior_rate + sum log 1/q_j)``, capped (Sect. 4.4.2)."""
    slot_nodes_ptr, slot_nodes, sampled = ties
    _, _, n_total, t_total, alpha = state
    prior_shape, prior_rate, cap = prior
    for s in range(first_slot, last_slot):
        if not sampled[s]:
            continue
        nodes = slot_nodes[slot_nodes_ptr[s] : slot_nodes_ptr[s + 1]]
        shape = prior_shape
        for node in nodes:
            shape += t_total[node]
        rate = prior_rate + sum_log_inverse_beta(alpha[s], nodes, n_total, stream, spare, histogram)
        alpha[s] = min(cap, gamma(shape, stream, spare) / rate)
