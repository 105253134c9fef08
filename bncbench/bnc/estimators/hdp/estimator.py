"""Hierarchical Dirichlet process estimates (Petitjean, Buntine, Webb and Zaidi 2018, Sect. 4).

Each CPT ``P(X | y, parents)`` is its context tree: root, then the class, then the parents in the order
the structure lists them, which is Sect. 3.3's (TAN: the class, then the other parent; kDB: parents by
decreasing ``I(X; parent | Y)``; a dict structure: the order given). Every node's distribution is
drawn from a Dirichlet centred on its parent's (Sect. 4.1); the root's base is uniform. A collapsed
Gibbs sampler keeps, per node and value, the count ``n`` and the pseudo-count ``t`` passed to the
parent (Eqs. 7-11), resamples every ``t`` in a window around its value (Sect. 4.4.1) and the
concentrations by the Beta/Gamma augmentation (Sect. 4.4.2); each node's estimate is the mean, over
the iterations after burn-in, of Eqs. 12-14 computed top-down. The kernels are in
``bncbench.bnc.estimators.hdp.sampler``, the Stirling numbers in ``bncbench.bnc.estimators.hdp.stirling``.

Where the paper and the authors' Java implementation (github.com/fpetitjean/HDP: ProbabilityTree,
ProbabilityNode, Concentration), which produced the paper's results, differ, the defaults follow the
Java code:

* the root's pseudo-counts are ``t = min(n, 1)`` and its concentration stays at 2 (the paper instead
  integrates the root's Dirichlet out, Sect. 4.4.1, base case);
* concentrations have a Gamma(shape 2, rate 1) prior (the journal text: nu0 = mu0 = 0; the arXiv text:
  Gamma(1, 2) and a start at 2 |X|), start at 2, are capped at 4000 and are resampled every 5th
  iteration, at iterations 3, 8, 13, ..., each from ``q_j ~ Beta(alpha, n_j)`` floored at 1e-75;
* pseudo-counts start at Eq. 15 and are swept from the leaves up; a candidate is valid if it keeps
  ``1 <= t <= n`` at the node and ``t_p <= n_p`` at its parent;
* burn-in is ``min(1000, iterations // 10)`` and the estimate is the running mean of the probabilities
  over every later iteration (ProbabilityNode.addRecordedProbabilities).

The random numbers differ (a counter-based SplitMix64 here, a Mersenne Twister there), and the Beta
draws of the tied nodes with small counts are pooled (``concentration.sum_log_inverse_beta``), so the
chains are the same in law, not in their draws.

The class prior ``P(y)`` is the same model on a tree that is only a root holding the class counts: by
Eq. 12, ``(n(y) + alpha_0 / |Y|) / (N + alpha_0)`` with ``alpha_0 = initial_concentration`` (2: an
m-estimate with m = 2), or its posterior mean over the chain when ``sample_root_concentration``; the
paper does not say how its classifier estimated ``P(y)``, so ``class_prior`` can also count it or smooth
it by Laplace.
"""


from types import MappingProxyType

import numpy as np
import pandas as pd
from numba import parallel_chunksize

from bncbench.bnc.estimators.base import Estimator, table_name
from bncbench.bnc.estimators.hdp.forest import Forest
from bncbench.bnc.estimators.hdp.sampler import INITIAL_TABLES, run_chains
from bncbench.bnc.estimators.hdp.stirling import shared_table
from bncbench.bnc.parameters import check_choice, check_integer, check_number
from bncbench.core.errors import ConfigError
from bncbench.bnc.progress import iteration_chunks

TYINGS = ("none", "single", "level", "same_parent")
CLASS_PRIORS = ("root", "counted", "laplace")
#: Concentration updates kept in ``concentration_trace_`` (evenly spaced, the first included) and
#: in the trace that ``diagnostics`` reports.
TRACE_KEPT = 1000
TRACE_POINTS = 50
KERNELS = ("fast", "reference")
#: The largest seed: the sampler keys its generator with a signed 64-bit integer.
MAX_SEED = 2**63 - 1


class HDPEstimator(Estimator):
    """HDP estimates of every table, by a collapsed Gibbs sampler per context tree.

    Parameters
    ----------
    iterations : int, default 5000
        Gibbs iterations (the paper's protocol uses 50000).
    burn_in : int or None
        Iterations discarded before averaging; None: ``min(1000, iterations // 10)``.
    window : int, default 10
        Pseudo-counts are resampled among ``t - window .. t + window``.
    tying : {"level", "single", "same_parent", "none"}
        Which nodes share a concentration (Sect. 4.4.2): all nodes of a level, all non-root nodes, the
        children of one node, or none.
    concentration_every : int, default 5
        Concentrations are resampled at iterations ``i`` with
        ``(i + concentration_every // 2) % concentration_every == 0``.
    initial_concentration : float, default 2.0
        Starting value of every concentration, and the fixed concentration of each root.
    prior_shape, prior_rate : float, default 2.0 and 1.0
        Gamma prior of the concentrations.
    max_concentration : float, default 4000
        Cap on a sampled concentration.
    sample_root_concentration : bool, default False
        Also sample each root's concentration (alone), instead of keeping it fixed.
    seed : int or None
        Seed of the sampler, 0..2**63 - 1; None draws one from the classifier's ``random_state``.
    initial_tables : {"eq15", "one", "all"}
        How the pseudo-counts below the root start: Eq. 15 (the paper's and the authors' code), ``min(n, 1)``
        (one table per value seen) or ``n`` (a table per customer).
    class_prior : {"root", "counted", "laplace"}
        ``P(y)``: the HDP root (see the module), ``n(y) / N``, or ``(n(y) + 1) / (N + |Y|)``.
    kernel : {"fast", "reference"}
        Window sampler (``bncbench.bnc.estimators.hdp.sampler``): the fused one, or the plain one kept to check it.
        Both give identical results.

    Attributes
    ----------
    concentrations_ : list of ndarray
        Per tree, the mean concentration of each level (root first) at the last iteration.
    concentration_trace_ : ndarray
        ``(n_trees, n_kept, max_depth + 1)``: the level means after concentration updates, at most
        ``TRACE_KEPT`` of them evenly spaced (NaN beyond a tree's depth).
    trace_iterations_ : ndarray
        The iteration of each kept update.
    seed_ : int
        The seed used.
    """

    name = "hdp"
    count_based = True
    settings = ("iterations",)  # hdp.iterations=50000: the paper's protocol
    #: The sampler's kernels run as at 50000 iterations: burn-in, averaging and concentration updates included.
    warm_up_params = MappingProxyType({"iterations": 20, "burn_in": 10})
    added_later = MappingProxyType({"initial_tables": "eq15", "class_prior": "root"})

    def __init__(self, iterations=5000, burn_in=None, window=10, tying="level", concentration_every=5,
                 initial_concentration=2.0, prior_shape=2.0, prior_rate=1.0, max_concentration=4000.0,
                 sample_root_concentration=False, seed=None, kernel="fast", initial_tables="eq15", class_prior="root"):
        self.iterations = check_integer("iterations", iterations)
        self.window = check_integer("window", window)
        self.concentration_every = check_integer("concentration_every", concentration_every)
        if burn_in is not None and check_integer("burn_in", burn_in, 0) >= iterations:
            raise ConfigError(
                f"burn_in ({burn_in}) must be smaller than iterations ({iterations}), "
                "or null for min(1000, iterations // 10)."
            )
        self.burn_in = min(1000, self.iterations // 10) if burn_in is None else int(burn_in)
        self.tying = check_choice("tying", tying, TYINGS)
        self.kernel = check_choice("kernel", kernel, KERNELS)
        self.initial_tables = check_choice("initial_tables", initial_tables, INITIAL_TABLES)
        self.class_prior = check_choice("class_prior", class_prior, CLASS_PRIORS)
        self.initial_concentration = check_number("initial_concentration", initial_concentration, low_open=True)
        self.prior_shape = check_number("prior_shape", prior_shape, low_open=True)
        self.prior_rate = check_number("prior_rate", prior_rate, low_open=True)
        self.max_concentration = check_number("max_concentration", max_concentration, low_open=True)
        if seed is not None:
            check_integer("seed", seed, 0, MAX_SEED)
        self.sample_root_concentration = bool(sample_root_concentration)
        self.seed = seed

    def tables(self, network, data, rng):
        self.seed_ = int(self.seed) if self.seed is not None else int(rng.integers(MAX_SEED))
        forest = Forest(network.trees, self.tying, self.initial_concentration, self.sample_root_concentration)
        table = shared_table.ensure(forest.max_count)
        every = self.concentration_every
        updates = np.flatnonzero((np.arange(self.iterations) + every // 2) % every == 0)
        stride = max(1, -(-len(updates) // TRACE_KEPT))
        self.trace_iterations_ = updates[::stride]
        trace = np.full((len(network.trees), len(self.trace_iterations_), forest.max_depth + 1), np.nan)
        estimates = (np.zeros(forest.n_cells), np.zeros(forest.n_cells))
        row_cache = forest.row_cache(table.bound)
        # chunks of half a second, between which Python answers Ctrl-C (and a terminal shows the progress)
        with parallel_chunksize(1):  # trees differ in size: hand them out one at a time
            for start, stop in iteration_chunks(self.iterations, "HDP sampler"):
                run_chains(
                    self.kernel == "fast", forest.layout, forest.forest, forest.state,
                    (table.ratio, table.inverse_ratio, table.rows, *row_cache),
                    (self.iterations, self.burn_in, self.window, self.concentration_every, stride,
                     INITIAL_TABLES.index(self.initial_tables)),
                    (self.prior_shape, self.prior_rate, self.max_concentration),
                    self.seed_, estimates, trace, start, stop,
                )  # fmt: skip
        self.concentration_trace_ = trace
        self.concentrations_ = forest.level_concentrations()
        self.tree_variables_ = [(tree.child, tree.variables) for tree in network.trees]
        tables = forest.tables(estimates[0] / (self.iterations - self.burn_in))
        if self.class_prior != "root":
            tables[0] = self._class_prior_tables(network.trees[0])
        return tables

    def _class_prior_tables(self, class_tree):
        """The class's tree read as ``class_prior`` says, from its counts: at every level (the class may
        have parents, in ``structure="direct"``), each context's counts, normalised after adding 1 each
        for ``"laplace"``; a context of no count (``"counted"``) is uniform."""
        tables = []
        for counts in class_tree.counts:
            counts = counts + (1.0 if self.class_prior == "laplace" else 0.0)
            totals = counts.sum(axis=1, keepdims=True)
            tables.append(np.divide(counts, totals, out=np.full(counts.shape, 1.0 / counts.shape[1]),
                                    where=totals > 0))
        return tables

    def diagnostics(self, column_names) -> dict:
        """The concentrations of the fit, for ``BNClassifier.diagnostics``.

        ``column_names`` as in :meth:`Estimator.diagnostics`. Returns a dict:
            ``hdp_concentration_level<L>``: the mean over the attribute trees of level L's final
            concentration (none for ``"direct"``, which has only the class's tree);
            ``hdp_concentrations``: trees (named ``child | parents``) by levels;
            ``hdp_concentration_trace``: (tree, level) by the iteration of a concentration update,
            ``TRACE_POINTS`` of the kept updates evenly spaced (no column when the chain ended before
            the first update).
        """
        labels = [table_name(column_names, child, variables) for child, variables in self.tree_variables_]
        width = self.concentration_trace_.shape[2]
        final = pd.DataFrame([np.pad(c, (0, width - len(c)), constant_values=np.nan) for c in self.concentrations_],
                             index=pd.Index(labels, name="tree")).rename_axis(columns="level")
        attribute_trees = final.iloc[1:]
        found = {
            f"hdp_concentration_level{level}": float(attribute_trees.iloc[:, level].mean())
            for level in range(1, final.shape[1])
            if len(attribute_trees)  # "direct" has only the class's tree
        }
        kept = len(self.trace_iterations_)  # 0 when the chain ends before the first update
        updates = np.unique(np.linspace(0, kept - 1, min(kept, TRACE_POINTS)).astype(int))
        trace = self.concentration_trace_[:, updates, :].transpose(0, 2, 1)
        found["hdp_concentrations"] = final
        found["hdp_concentration_trace"] = pd.DataFrame(
            trace.reshape(trace.shape[0] * trace.shape[1], trace.shape[2]),
            index=pd.MultiIndex.from_product([labels, range(trace.shape[1])], names=["tree", "level"]),
            columns=pd.Index(self.trace_iterations_[updates], name="iteration"),
        ).dropna(how="all")
        return found
