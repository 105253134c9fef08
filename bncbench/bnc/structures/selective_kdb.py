"""Selective kDB (Martinez et al. 2016, SkDB paper Sect. 2.1, Algorithm 4).

kDB is learned with ``k = k_max``; one more pass over the training data then scores, by incremental
leave-one-out cross-validation, every model made of the top-``l`` attributes in mutual-information
order (``l = 0..d``) in which each attribute keeps its first ``k'`` parents (``k' = 0..k_max``;
``k' = 0`` is naive Bayes). Each held-out row is classified by m-estimates with back-off (SkDB paper
Appendix B) computed from the counts with that row taken out, so nothing is refitted: one walk down
each tree per row and class gives the estimates for every ``k'`` at once, and the class scores of the
top-``l`` models are running sums over the attributes. Time O(N * k_max * d * c).
"""

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit, prange

from bncbench.bnc.estimators.m_estimate import MEstimate, context_totals
from bncbench.bnc.inference import PackedNetwork
from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.parameters import check_choice, check_integer, check_number
from bncbench.bnc.structures.base import Structure, counted
from bncbench.bnc.structures.kdb import KDependenceStructure
from bncbench.core.errors import ConfigError

LOSS_CODES = {"rmse": 0, "zero_one_loss": 1, "log_loss": 2}
_FLOOR = 1e-15
_ROWS_PER_BLOCK = 512


@njit(cache=True, inline="always")
def _row_loss(scores, b, k, true_class, loss_code):
    """Loss of row ``b`` of the model with ``k`` parents, given its log class scores ``scores[b, k]``
    (unnormalised; all -inf means uniform)."""
    n_classes = scores.shape[2]
    best = 0
    top = scores[b, k, 0]
    for c in range(1, n_classes):
        if scores[b, k, c] > top:
            best = c
            top = scores[b, k, c]
    if loss_code == 1:  # all -inf: uniform, and the first class is predicted
        return 0.0 if best == true_class else 1.0
    if top == -np.inf:
        p_true = 1.0 / n_classes
    else:
        total = 1.0  # the top class's exp(0)
        e_true = 1.0
        for c in range(n_classes):
            if c != best:
                e = np.exp(scores[b, k, c] - top)
                total += e
                if c == true_class:
                    e_true = e
        p_true = e_true / total
    if loss_code == 0:
        return (1.0 - p_true) ** 2
    return -np.log(max(p_true, _FLOOR))


@njit(cache=True, inline="always")
def _add_leave_one_out_log_estimates(codes, i, tree, scores, b, k_max, class_column, roots, depths, variables,
                                     child_columns, level_first_node, level_child_start, level_width, children,
                                     table_first, n_values, counts, totals, log_tables, log_removed, values,
                                     node, alive, estimate):
    """Add to ``scores[b, k', c]`` the log m-estimates of ``P(x_i | c, first k' parents)``, k' = 0..k_max,
    for every class c, row i taken out.

    Row i is in the root's counts, and below it on the walked path only under its own class: for any
    other class the estimates are those of all the data (``log_tables``). A context left without rows
    backs off to its parent; a value without count in a context below the class level takes the
    parent's estimate. ``log_removed`` holds each cell's log m-estimate with one row taken out. The
    classes' paths are walked level by level together, so that their memory reads overlap; a node's
    children and table are found from its number (``PackedNetwork``).
    """
    n_classes, depth, root = scores.shape[2], depths[tree], roots[tree]
    y, x = codes[i, class_column], codes[i, child_columns[tree]]
    for level in range(1, depth):
        values[level] = codes[i, variables[tree, level]]
    for c in range(n_classes):
        node[c] = root
        alive[c] = True
        estimate[c] = log_removed[table_first[tree] + x]
    for level in range(1, depth + 1):
        first_node, first_child = level_first_node[tree, level - 1], level_child_start[tree, level - 1]
        width = level_width[tree, level - 1]
        for c in range(n_classes):
            if alive[c]:
                value = c if level == 1 else values[level - 1]  # the class is the first level
                child = children[first_child + (node[c] - first_node) * width + value]
                own_class = c == y
                if child < 0 or (own_class and totals[child] <= 1.0):  # other classes: totals >= 1
                    alive[c] = False
                else:
                    node[c] = child
                    cell = table_first[tree] + (child - root) * n_values[tree] + x
                    if not own_class:
                        estimate[c] = log_tables[cell]
                    elif level == 1 or counts[cell] > 1.0:
                        estimate[c] = log_removed[cell]
            scores[b, level - 1, c] += estimate[c]
    for k in range(depth, k_max + 1):
        for c in range(n_classes):
            scores[b, k, c] += estimate[c]


@njit(cache=True, parallel=True)
def _loocv_sums(codes, block_size, order, k_max, m, loss_code, n_classes, class_column, roots, depths, variables,
                child_columns, level_first_node, level_child_start, level_width, children, table_first, n_values,
                counts, totals, log_tables, log_removed, n_rows):
    """Sums of the row losses of every (k', l) model, per block of rows: (n_blocks, k_max + 1, d + 1).

    Blocks run in parallel; within a block the rows are taken attribute by attribute, so that one
    tree at a time is in the cache, and summed in row order, so the result does not depend on the
    number of threads.
    """
    n, d = codes.shape[0], order.shape[0]
    n_blocks = (n + block_size - 1) // block_size
    sums = np.zeros((n_blocks, k_max + 1, d + 1))
    for block in prange(n_blocks):
        first = block * block_size
        n_block = min(block_size, n - first)
        scores = np.empty((n_block, k_max + 1, n_classes))
        values = np.empty(k_max + 1, dtype=np.int64)
        node = np.empty(n_classes, dtype=np.int64)
        alive = np.empty(n_classes, dtype=np.bool_)
        estimate = np.empty(n_classes)
        for b in range(n_block):
            y = codes[first + b, class_column]
            for c in range(n_classes):
                count = counts[table_first[0] + c] - (1.0 if c == y else 0.0)
                scores[b, :, c] = np.log((count + m / n_classes) / (n_rows - 1.0 + m))
            prior_loss = _row_loss(scores, b, 0, y, loss_code)
            for k in range(k_max + 1):
                sums[block, k, 0] += prior_loss
        distinct_k = 0  # the models with k' >= distinct_k have the same scores: no attribute so far has more parents
        for position in range(d):
            tree = order[position]
            distinct_k = min(max(distinct_k, depths[tree] - 1), k_max)
            for b in range(n_block):
                i = first + b
                _add_leave_one_out_log_estimates(codes, i, tree, scores, b, k_max, class_column, roots, depths,
                                                 variables, child_columns, level_first_node, level_child_start,
                                                 level_width, children, table_first, n_values, counts, totals,
                                                 log_tables, log_removed, values, node, alive, estimate)
                y = codes[i, class_column]
                loss = 0.0
                for k in range(distinct_k + 1):
                    loss = _row_loss(scores, b, k, y, loss_code)
                    sums[block, k, position + 1] += loss
                for k in range(distinct_k + 1, k_max + 1):
                    sums[block, k, position + 1] += loss
    return sums


def leave_one_out_losses(network, data, order, k_max, m=1.0, loss="rmse") -> np.ndarray:
    """(k_max + 1, d + 1) grid of leave-one-out losses: rows k' = 0..k_max, columns l = 0..d.

    ``network`` is kDB-``k_max`` counted on the training data ``data`` (``training_data``; one pass
    over its chunks here); ``order`` lists the attributes in decreasing mutual information with the
    class. RMSE is the root of the mean squared error on the true class (SkDB paper Eq. 1); the other
    losses are means.
    """
    if any(tree.variables[:1] != (network.class_column,) for tree in network.trees[1:]):
        raise ValueError("leave_one_out_losses needs the class as every attribute's first parent (kDB).")
    row_totals = context_totals(network)
    tables = MEstimate(m=m, backoff="value").tables_for(network, m, row_totals)
    packed = PackedNetwork(network, tables)
    counts = np.concatenate([c.ravel() for tree in network.trees for c in tree.counts])
    totals = np.concatenate([t.ravel() for tree_totals in row_totals for t in tree_totals])  # by node
    with np.errstate(divide="ignore", invalid="ignore"):  # cells without the row are never read
        log_removed = np.concatenate([
            np.log((np.maximum(c - 1.0, 0.0) + m / tree.n_values) / (t - 1.0 + m)).ravel()
            for tree, tree_totals in zip(network.trees, row_totals) for c, t in zip(tree.counts, tree_totals)
        ])  # fmt: skip
    tree_of = {a: 1 + position for position, a in enumerate(network.attributes)}
    tree_order = np.array([tree_of[a] for a in order], dtype=np.int64)
    model = (_ROWS_PER_BLOCK, tree_order, k_max, float(m), LOSS_CODES[loss], network.n_classes, network.class_column,
             *packed.walk_arrays(), counts, totals, packed.log_tables, log_removed, network.n_rows)
    total = data.accumulate(_LossSums((k_max + 1, len(order) + 1)), functools.partial(_add_losses, model)).sums
    mean = total / network.n_rows
    return np.sqrt(mean) if loss == "rmse" else mean


class _LossSums:
    """The sums of the row losses of every (k', l) model, added chunk by chunk (``training_data``)."""

    def __init__(self, shape):
        self.sums = np.zeros(shape)

    def empty_copy(self) -> "_LossSums":
        return _LossSums(self.sums.shape)

    def merge(self, other: "_LossSums") -> "_LossSums":
        self.sums += other.sums
        return self


def _add_losses(model: tuple, total: _LossSums, chunk: np.ndarray) -> None:
    """Add to ``total`` the losses of a chunk's rows; ``model``: the arguments of ``_loocv_sums`` after the codes.
    A chunk's blocks are summed in a fixed order, and the chunks in theirs (also on a cluster, where each chunk is
    one partial total): the same sums on any number of threads or workers."""
    total.sums += _loocv_sums(np.ascontiguousarray(chunk), *model).sum(axis=0)


@dataclass
class Selection:
    """The model chosen by leave-one-out: the top ``n_attributes`` attributes with ``k`` parents."""

    n_attributes: int
    k: int
    losses: pd.DataFrame  # index k' = 0..k_max, columns l = 0..d
    attributes: list = field(default_factory=list)  # the chosen attributes, in mutual-information order


def select(network, data, order, k_max, m=1.0, loss="rmse", select_k=True, min_k=0, min_attributes=0) -> Selection:
    """Best (l, k') by leave-one-out, among ``l >= min_attributes`` and ``k' >= min_k``; ties go to fewer
    attributes, then to smaller k (Sect. 2.1).

    ``select_k=False`` is the SkDB paper's SKDB_k (Sect. 3.1): k' stays ``k_max`` and only the number
    of attributes is chosen. Algorithm 4 searches from k' = 1 and l = 1 (``min_k=1, min_attributes=1``); 0
    admits naive Bayes and the class prior alone."""
    grid = leave_one_out_losses(network, data, order, k_max, m, loss)
    candidate_k = range(min(min_k, k_max), grid.shape[0]) if select_k else [k_max]
    candidate_l = range(min(min_attributes, grid.shape[1] - 1), grid.shape[1])
    best_l, best_k = candidate_l[0], candidate_k[0]
    for l in candidate_l:
        for k in candidate_k:
            if grid[k, l] < grid[best_k, best_l]:
                best_l, best_k = l, k
    frame = pd.DataFrame(grid, index=pd.Index(range(k_max + 1), name="k"), columns=pd.Index(range(grid.shape[1]), name="n_attributes"))
    return Selection(best_l, best_k, frame, [int(a) for a in order[:best_l]])


class SelectiveKDependenceStructure(Structure):
    """Selective kDB: kDB-``k``, then the top-l attributes and the k' <= k with the lowest leave-one-out
    loss (``select``).

    Parameters
    ----------
    k : int, default 5
        k_max, the kDB learned before the selection: k' <= k is chosen (SkDB with k_max = k).
    loss : {"rmse", "zero_one_loss", "log_loss"}, default "rmse"
        The leave-one-out loss minimised; RMSE on the true class as in the paper (Eq. 1).
    m : float, default 1.0
        The m-estimate's m used for the selection (Appendix B).
    select_k : bool, default True
        False: k' stays ``k`` and only the attributes are selected, the paper's SKDB_k (Sect. 3.1).
    min_k, min_attributes : int, default 0
        The smallest k' and number of attributes the selection considers: Algorithm 4's loops start at 1; 0
        also admits naive Bayes and the class prior alone (bounded by ``k`` and the attributes there are).

    References
    ----------
    Martínez, A. M., Webb, G. I., Chen, S. and Zaidi, N. A. (2016). Scalable learning of Bayesian network
    classifiers. JMLR 17(44), 1-35 (the SkDB paper), Sect. 2.1, Algorithm 4.
    """

    name = "skdb"
    presets = {
        "skdb": {"k": 5},  # SkDB with k_max = 5; skdb1..skdb4 have k_max = 1..4 (Tables 2-3, row SKDB)
        **{f"skdb{k}": {"k": k} for k in range(1, 5)},
        **{f"skdb_fixed{k}": {"k": k, "structure_params": {"select_k": False}} for k in range(1, 6)},  # SKDB_k
    }

    def __init__(self, k: int = 5, loss: str = "rmse", m: float = 1.0, select_k: bool = True, min_k: int = 0,
                 min_attributes: int = 0):
        self.k = check_integer("k", k, minimum=0)
        self.loss = check_choice("skdb loss", loss, sorted(LOSS_CODES))
        self.m = check_number("m", m)
        if not isinstance(select_k, bool):
            raise ConfigError(f"skdb select_k must be true or false, got {select_k!r}.")
        self.select_k = select_k
        self.min_k = check_integer("min_k", min_k, minimum=0)
        self.min_attributes = check_integer("min_attributes", min_attributes, minimum=0)

    def learn(self, data, cards, n_classes, memory_limit=None):
        parents, order = KDependenceStructure(self.k).parents_and_order(data, cards, n_classes, memory_limit)
        network = counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data)
        selection = select(network, data, order, self.k, self.m, self.loss, self.select_k, self.min_k,
                           self.min_attributes)
        return network.restricted(selection.attributes, selection.k), {"selection": selection}

    def naive_bayes_shaped(self) -> bool:
        return self.k == 0
