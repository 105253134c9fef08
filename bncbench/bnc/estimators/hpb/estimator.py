"""Hierarchical Pattern Bayes estimates (Jambeiro and Wainer 2007) of every table of a network.

For a table ``P(X | y, p_1, .., p_k)``, HPB's class is X and its attributes are the context
``(y, p_1, .., p_k)``; its patterns are all the subsets of the context, not only the prefixes that the
context tree stores. They are counted from the code matrix and estimated by
``bncbench.bnc.estimators.hpb.pattern_bayes`` (Eqs. 4-7, S chosen per pattern family by leave-one-out). Every node of
the context tree gets the HPB estimate of its context, a prefix pattern (``tables``; what ``cpt`` shows).

Prediction (``predictor``) reads, for each table, HPB's estimate of the row's whole context: for a
context unseen in training that is its prior from all its sub-patterns (Eqs. 5-7), where the other
estimators back off to the deepest seen prefix, dropping the later parents. A value unseen in training
leaves its attribute out of the pattern (Def. 1); in the child of a table it carries no evidence, as
for every estimator.

``structure="direct"`` makes this the paper's own classifier: one table, the class given all the
attributes. In the other structures the class prior (a tree without context) is the estimate of the
empty pattern: Eq. 4 with a uniform prior and its S chosen by leave-one-out (``pattern_bayes``).

A table with m conditioning variables has 2^m pattern families, each estimated in a pass over the N
training rows: time and memory grow with the ``N * 2^m`` sub-patterns of the training rows. A table
with more than ``max_patterns`` of them is refused (``NotApplicableError``) before any work.
"""

import numpy as np
import pandas as pd

from bncbench.bnc.estimators.base import Estimator, table_name
from bncbench.bnc.estimators.hpb.pattern_bayes import SELECTION_LOSSES, PatternHierarchy
from bncbench.bnc.inference import grouped_sums, posterior
from bncbench.bnc.parameters import check_choice, check_integer, check_number, check_numbers
from bncbench.core.errors import NotApplicableError

#: Candidates for S: equivalent sample sizes of the prior, from 0.01 to 100 in steps of about x3.
DEFAULT_S_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
#: Candidates for b when it is chosen: the paper's 0.5 .. 3.0 (Sect. 3), and weaker calibrations.
DEFAULT_B_GRID = (0.0, 0.125, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)


class HierarchicalPatternBayes(Estimator):
    """HPB estimates of every table, with a prediction path that uses them for unseen contexts.

    Parameters
    ----------
    b : float or None, default 2.0
        Calibration constant: ``B = b (level(W) - 1)`` in Eq. 6 (Sect. 2.3). 2.0 is the best of the
        paper's 5-fold cross-validation over 0.5 .. 3.0 on its data; None chooses it per table from
        ``b_grid`` by the leave-one-out loss of the table's most specific family (which is, for the
        direct structure, the classifier's leave-one-out loss), at the cost of one fit per candidate.
    b_grid : sequence of float
        Candidates for b when ``b`` is None, all >= 0.
    s_grid : sequence of float
        Candidates for each pattern family's S (Eq. 4), all > 0; the paper does not give its grid.
    selection_loss : {"log_loss", "rmse"}
        Leave-one-out loss by which S is chosen, of the held-out row's true class. The paper maximises
        the area under its hit curve, a ranking measure for its two-class problem; the log loss is a
        strictly proper score of the probability ``P(c | W)`` that S tunes, for any number of classes,
        and is the paper's other measure (mean cross entropy). ``"rmse"`` (SkDB paper Eq. 1) is the
        criterion of the m-estimate and SkDB here.
    max_patterns : int, default 10_000_000
        Largest number of sub-patterns (training rows x pattern families) of one table. Fitting time
        grows with it (times ``len(b_grid)`` when b is None), and so does memory, at worst (every pattern
        unique), by about ``8 * (1 + n_values)`` bytes per sub-pattern.

    Attributes
    ----------
    hierarchies_ : list of PatternHierarchy
        The fitted estimates of each tree of the network, with its b and each family's S and loss.
    tree_variables_ : list of (int, tuple)
        Each tree's child and context columns.
    """

    name = "hpb"

    def __init__(
        self, b=2.0, b_grid=DEFAULT_B_GRID, s_grid=DEFAULT_S_GRID, selection_loss="log_loss", max_patterns=10_000_000
    ):
        self.b = check_number("b", b, none="chosen by leave-one-out")
        self.b_grid = check_numbers("b_grid", b_grid)
        self.s_grid = tuple(sorted(check_numbers("s_grid", s_grid, low_open=True)))
        self.selection_loss = check_choice("selection_loss", selection_loss, SELECTION_LOSSES)
        self.max_patterns = check_integer("max_patterns", max_patterns)

    def tables(self, network, data, rng):
        """Fit every tree's pattern hierarchy on ``data.sample`` (the rows the network was counted on) and
        return, for each tree and level, the estimates of the nodes' contexts."""
        codes = data.sample
        if codes.shape[0] != network.n_rows:
            raise NotApplicableError(
                f"HPB counts every sub-pattern from the training rows, but was given {codes.shape[0]} of "
                f"the {network.n_rows:.0f} rows (a sample of data read in chunks); fit in memory."
            )
        self._check_size(network, codes.shape[0])
        self.tree_variables_ = [(tree.child, tree.variables) for tree in network.trees]
        self.hierarchies_ = [self._fit_tree(tree, codes) for tree in network.trees]
        return [_node_tables(tree, hierarchy) for tree, hierarchy in zip(network.trees, self.hierarchies_)]

    def _fit_tree(self, tree, codes):
        """The tree's pattern hierarchy, for b or (b None) the candidate of ``b_grid`` whose most
        specific family has the lowest leave-one-out loss (ties to the earlier)."""
        candidates = self.b_grid if self.b is None else (self.b,)
        if tree.depth < 2:  # B = b (L - 1) is 0 below level 2: b makes no difference
            candidates = candidates[:1]
        data = (codes[:, list(tree.variables)], codes[:, tree.child], tree.cards, tree.n_values)
        fitted = (PatternHierarchy.fit(*data, b, self.s_grid, self.selection_loss) for b in candidates)
        return min(fitted, key=lambda hierarchy: hierarchy.most_specific.loss)

    def predictor(self, network, tables):
        """What ``BNClassifier`` predicts with: HPB's estimate of each row's whole context."""
        return PatternPredictor(network, self.hierarchies_)

    def _check_size(self, network, n_rows):
        tree = max(network.trees, key=lambda t: t.depth)
        n_patterns = n_rows * 2**tree.depth
        if n_patterns > self.max_patterns:
            child = "the class" if tree.child == network.class_column else f"column {tree.child}"
            raise NotApplicableError(
                f"HPB refuses this data: the table of {child} given {tree.depth} variables has "
                f"{n_rows} training rows x {2**tree.depth} pattern families = {n_patterns} sub-patterns, "
                f"more than max_patterns={self.max_patterns}; use a structure with fewer parents per "
                "table, or raise estimator_params.max_patterns."
            )

    def diagnostics(self, column_names) -> dict:
        """The b of each table and the S of each pattern family, for ``BNClassifier.diagnostics``.

        ``column_names`` as in :meth:`Estimator.diagnostics`. Returns a dict:
            ``hpb_s``: a DataFrame indexed by table (``child | context``) and pattern family (its
            attributes, ``{}`` for the empty pattern), with columns ``level``, ``b`` (the table's;
            without effect on a table of fewer than two variables), ``s`` and ``loo_loss``.
        """
        rows = []
        for (child, variables), hierarchy in zip(self.tree_variables_, self.hierarchies_):
            names, table = [column_names[v] for v in variables], table_name(column_names, child, variables)
            for mask, family in hierarchy.families.items():
                defined = [name for j, name in enumerate(names) if mask >> j & 1]
                family_name = "{" + ", ".join(defined) + "}"
                rows.append((table, family_name, mask.bit_count(), hierarchy.b, family.s, family.loss))
        frame = pd.DataFrame(rows, columns=["table", "pattern_family", "level", "b", "s", "loo_loss"])
        return {"hpb_s": frame.set_index(["table", "pattern_family"])}


def _node_tables(tree, hierarchy) -> list:
    """For each level of ``tree``, the (n_nodes, n_values) estimates of the nodes' contexts.

    A node's context is a pattern of the tree's prefix family of its level, found from its parent's;
    a context whose rows were all removed (zero counts: never read at prediction) gets its parent's.
    """
    tables = [np.exp(hierarchy.families[0].log_estimates)]
    groups = np.zeros(1, dtype=np.int64)  # each node's pattern in the prefix family of its level
    for level in range(1, tree.depth + 1):
        children = tree.children[level - 1]
        parent, value = np.nonzero(children >= 0)
        prefix = (1 << level) - 1
        level_groups = np.full(tree.parent[level].shape[0], -1, dtype=np.int64)
        level_groups[children[parent, value]] = hierarchy.find(prefix, groups[parent], value)
        table = tables[-1][tree.parent[level]]
        seen = level_groups >= 0
        table[seen] = np.exp(hierarchy.families[prefix].log_estimates[level_groups[seen]])
        tables.append(table)
        groups = level_groups
    return tables


class PatternPredictor:
    """Class posteriors from HPB's estimate of every table at each row's whole context.

    Parameters
    ----------
    network : CountedNetwork
        Its trees (child and context variables), groups of trees and ``combine``.
    hierarchies : list of PatternHierarchy
        The fitted estimates of each tree.
    """

    def __init__(self, network, hierarchies):
        self.network = network
        self.hierarchies = hierarchies

    def log_joint(self, codes: np.ndarray) -> np.ndarray:
        """(n, n_classes) ``log P(y, x)``, the tables summed per group of trees as in
        ``bncbench.bnc.inference`` (group -1 belongs to every group), then the network's ``combine``."""
        with_class = np.column_stack([codes, np.zeros(codes.shape[0], dtype=np.int64)])  # set per class below
        log_p = np.stack([self._tree_log_probability(tree, hierarchy, with_class)
                          for tree, hierarchy in zip(self.network.trees, self.hierarchies)], axis=2)
        return self.network.combine(grouped_sums(log_p, self.network.tree_groups), codes)

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        return posterior(self.log_joint(codes))

    def _tree_log_probability(self, tree, hierarchy, codes) -> np.ndarray:
        """(n, n_classes) ``log P(x_child | context)`` of each row under each class; ``codes`` has a
        class column, whose values are ignored."""
        n, n_classes = codes.shape[0], self.network.n_classes
        context = codes[:, list(tree.variables)]
        if tree.child == self.network.class_column:
            return hierarchy.log_distribution(context)
        per_class = np.repeat(context[:, None, :], n_classes, axis=1)
        per_class[:, :, tree.variables.index(self.network.class_column)] = np.arange(n_classes)
        log_distribution = hierarchy.log_distribution(per_class.reshape(n * n_classes, -1))
        child = codes[:, tree.child]
        log_child = log_distribution.reshape(n, n_classes, -1)[np.arange(n), :, np.maximum(child, 0)]
        return np.where(child[:, None] >= 0, log_child, 0.0)  # an unseen value carries no evidence
