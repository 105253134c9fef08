"""TAN-HC and TAN-HCSP: greedy hill-climbing over one-dependence augmented naive Bayes structures,
scored by stratified k-fold cross-validated accuracy (Keogh and Pazzani 2002; bnclassify's methods
vignette, Sect. "TAN HC and TAN HC SP").

Both start from naive Bayes. A step scores every candidate structure by the mean over the folds of the
held-out accuracy of the classifier whose tables are estimated on the other folds with the vignette's
Bayesian estimate, Sect. "Bayesian parameter estimation", Eq. (incp_params),
``theta_ijk = (N_ijk + alpha) / (N_ij. + r_i alpha)`` (a context without training rows: ``1 / r_i``,
that formula's limit). The best candidate replaces the current structure if its accuracy is higher by at
least ``epsilon``; otherwise the search stops.

Scoring needs no refit: the folds' held-out counts of ``(X_i, Y)`` and ``(X_i, X_j, Y)`` are counted
once by the numba kernel of ``information.StructureStatistics``, each training part's counts are the
totals less its fold's, and one numba kernel (``_candidate_hits``) scores every candidate of a step on
a fold in one pass over its held-out rows, reading each candidate's changed tables only. A step of
TAN-HC costs O(N c d^2) (``d^2`` candidates, one changed table each); the tables of every ordered pair
of attributes are held for every fold: ``2 * folds`` times the pairwise counts of TAN.
"""

import abc
import itertools
import warnings

import numpy as np
from numba import njit

from bncbench.bnc.network import CountedNetwork
from bncbench.bnc.parameters import check_integer, check_number
from bncbench.bnc.information import StructureStatistics
from bncbench.bnc.structures.base import Structure, counted

#: Two accuracies closer than this are equal: a mean of fold accuracies, each a ratio of row counts,
#: differs from an equal one by rounding alone (about 1e-16 per fold).
_ACCURACY_TOLERANCE = 1e-12


@njit(cache=True, inline="always")
def _log_term(row, a, p, c, n_classes, cards, log_single, single_start, log_pair, pair_start):
    """``log theta(x_a | c)`` if ``p < 0``, else ``log theta(x_a | c, x_p)``."""
    if p < 0:
        return log_single[single_start[a] + row[a] * n_classes + c]
    return log_pair[pair_start[p, a] + (row[p] * cards[a] + row[a]) * n_classes + c]


@njit(cache=True)
def _candidate_hits(codes, y, parent, changes_start, changed_child, changed_parent, n_classes, cards,
                    log_prior, log_single, single_start, log_pair, pair_start):
    """Held-out rows each candidate classifies right (the first class of the highest score wins).

    Candidate k changes the parent of ``changed_child[changes_start[k]:changes_start[k + 1]]`` (in
    increasing order) to ``changed_parent`` there; every other attribute keeps ``parent``. A row's score
    under a candidate is the current structure's sum of log terms before the first changed attribute
    (a prefix sum) and after the last (a suffix sum), plus the terms in between, so a candidate costs its
    span of changed attributes, not d.
    """
    n, d = codes.shape[0], parent.shape[0]
    n_candidates = changes_start.shape[0] - 1
    hits = np.zeros(n_candidates, dtype=np.int64)
    prefix = np.empty((d + 1, n_classes))
    suffix = np.empty((d + 1, n_classes))
    scores = np.empty(n_classes)
    for i in range(n):
        row = codes[i]
        for c in range(n_classes):
            prefix[0, c] = log_prior[c]
            suffix[d, c] = 0.0
        for a in range(d):
            for c in range(n_classes):
                prefix[a + 1, c] = prefix[a, c] + _log_term(row, a, parent[a], c, n_classes, cards, log_single,
                                                            single_start, log_pair, pair_start)
        for a in range(d - 1, -1, -1):
            for c in range(n_classes):
                suffix[a, c] = suffix[a + 1, c] + _log_term(row, a, parent[a], c, n_classes, cards, log_single,
                                                            single_start, log_pair, pair_start)
        for k in range(n_candidates):
            first, last = changes_start[k], changes_start[k + 1]
            if first == last:
                for c in range(n_classes):
                    scores[c] = prefix[d, c]
            else:
                low, high = changed_child[first], changed_child[last - 1]
                for c in range(n_classes):
                    scores[c] = prefix[low, c] + suffix[high + 1, c]
                j = first
                for a in range(low, high + 1):
                    p = parent[a]
                    if j < last and changed_child[j] == a:
                        p = changed_parent[j]
                        j += 1
                    for c in range(n_classes):
                        scores[c] += _log_term(row, a, p, c, n_classes, cards, log_single, single_start,
                                               log_pair, pair_start)
            best = 0
            for c in range(1, n_classes):
                if scores[c] > scores[best]:
                    best = c
            if best == y[i]:
                hits[k] += 1
    return hits


def log_bayesian_estimates(counts: np.ndarray, axis: int, alpha: float) -> np.ndarray:
    """``log theta`` of the vignette's Eq. (incp_params), the values of the child along ``axis`` of
    ``counts``: ``log((N + alpha) / (N_context + r alpha))``, ``log(1 / r)`` in a context without rows."""
    r = counts.shape[axis]
    totals = counts.sum(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(totals > 0, np.log((counts + alpha) / (totals + r * alpha)), -np.log(r))


class _FoldTables:
    """The held-out rows of one fold and the log tables estimated from the other folds' counts."""

    def __init__(self, codes, y, train_stats, class_counts, alpha):
        self.codes, self.y = codes, y
        cards, c = train_stats.cards, train_stats.n_classes
        d = len(cards)
        self.log_prior = log_bayesian_estimates(class_counts, 0, alpha)
        singles = [log_bayesian_estimates(table, 0, alpha).ravel() for table in train_stats.attribute_class]
        self.single_start = np.cumsum([0, *(t.size for t in singles)])[:-1].astype(np.int64)
        self.log_single = np.concatenate(singles)
        self.pair_start = np.full((d, d), -1, dtype=np.int64)
        pairs, size = [], 0
        for p, child in itertools.permutations(range(d), 2):
            low, high = min(p, child), max(p, child)
            start = train_stats.offsets[low, high]
            joint = train_stats.pair_counts[start : start + cards[low] * cards[high] * c]
            joint = joint.reshape(cards[low], cards[high], c)
            if p > child:
                joint = joint.transpose(1, 0, 2)  # (x_p, x_child, y)
            pairs.append(log_bayesian_estimates(joint, 1, alpha).ravel())
            self.pair_start[p, child] = size
            size += pairs[-1].size
        self.log_pair = np.concatenate(pairs) if pairs else np.zeros(0)

    def hits(self, parent, changes_start, changed_child, changed_parent, cards, n_classes):
        return _candidate_hits(self.codes, self.y, parent, changes_start, changed_child, changed_parent, n_classes,
                               cards, self.log_prior, self.log_single, self.single_start, self.log_pair,
                               self.pair_start)


class CrossValidatedAccuracy:
    """Stratified ``folds``-fold cross-validated accuracy of one-dependence structures on ``codes``.

    Parameters
    ----------
    codes : ndarray of int
        (n, d + 1) training codes, the class last.
    cards : ndarray of int
    n_classes : int
    folds : int
        Folds of ``StratifiedKFold(folds, shuffle=True, random_state=seed)``; a class with fewer rows is
        spread over fewer folds.
    seed : int
    alpha : float
        The vignette's alpha (Eq. incp_params).
    memory_limit : memory.MemoryLimit, optional
    """

    def __init__(self, codes, cards, n_classes, folds, seed, alpha, memory_limit=None):
        from sklearn.model_selection import StratifiedKFold  # here, so that naming the structures does without it

        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        y = codes[:, -1]
        total = StructureStatistics(self.cards, self.n_classes, memory_limit=memory_limit).add(codes)
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        with warnings.catch_warnings():  # a class rarer than the folds is spread over fewer folds
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            splits = list(splitter.split(np.zeros(len(y)), y))
        self.folds = []
        for train, test in splits:
            held_out = StructureStatistics(self.cards, self.n_classes).add(codes[test])
            held_out.attribute_class = [t - h for t, h in zip(total.attribute_class, held_out.attribute_class)]
            held_out.pair_counts = total.pair_counts - held_out.pair_counts
            class_counts = np.bincount(y[train], minlength=self.n_classes).astype(float)
            features = np.ascontiguousarray(codes[test, :-1], dtype=np.int64)
            self.folds.append(_FoldTables(features, np.ascontiguousarray(y[test]), held_out, class_counts, alpha))

    def scores(self, parent: np.ndarray, candidates: list[list[tuple[int, int]]]) -> np.ndarray:
        """Mean over the folds of each candidate's held-out accuracy; a candidate is a list of
        ``(child, new parent)`` changes to ``parent`` (-1: no attribute parent), ``[]`` the structure
        itself."""
        changes = [sorted(candidate) for candidate in candidates]
        changes_start = np.cumsum([0, *map(len, changes)]).astype(np.int64)
        flat = np.array([change for candidate in changes for change in candidate], dtype=np.int64).reshape(-1, 2)
        accuracy = np.zeros(len(candidates))
        for fold in self.folds:
            hits = fold.hits(np.asarray(parent, dtype=np.int64), changes_start, np.ascontiguousarray(flat[:, 0]),
                             np.ascontiguousarray(flat[:, 1]), self.cards, self.n_classes)
            accuracy += hits / len(fold.y)
        return accuracy / len(self.folds)


def ancestors(parent, attribute: int) -> set[int]:
    """The attribute parents of ``attribute``, theirs, and so on (``parent``: -1 for none)."""
    found = set()
    while parent[attribute] >= 0:
        attribute = int(parent[attribute])
        found.add(attribute)
    return found


class _GreedyOneDependence(Structure):
    """The greedy search TAN-HC and TAN-HCSP share (bnclassify's ``greedy_search``): from naive Bayes,
    take the step's best candidate while it improves the cross-validated accuracy by ``epsilon``.

    Candidates of an equal score go to the earlier one, candidates being listed in the attributes'
    alphabetical order (``attribute_names``; column order without names) where the vignette, and
    bnclassify, break ties at random: the search is deterministic given ``seed``.
    """

    def __init__(self, folds: int = 10, epsilon: float = 0.0, alpha: float = 1.0, seed: int = 0):
        self.folds = check_integer("folds", folds, minimum=2)
        self.epsilon = check_number("epsilon", epsilon, 0.0, 1.0)
        self.alpha = check_number("alpha", alpha)
        self.seed = check_integer("seed", seed, minimum=0)

    def learn(self, data, cards, n_classes, memory_limit=None):
        codes = np.concatenate(list(data.chunks())).astype(np.int64)
        parent, found = self.search(codes, cards, n_classes, memory_limit)
        parents = [[int(p)] if p >= 0 else [] for p in parent]
        return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), found

    def search(self, codes, cards, n_classes, memory_limit=None) -> tuple[np.ndarray, dict]:
        """The attribute parent of each attribute (-1: none) and ``{"arcs": [(parent, child), ...] in
        the order added, "cv_accuracy": [naive Bayes', then after each arc]}``."""
        d = len(cards)
        parent = np.full(d, -1, dtype=np.int64)
        found = {"arcs": [], "cv_accuracy": []}
        class_counts = np.bincount(codes[:, -1], minlength=n_classes)
        folds = min(self.folds, int(class_counts.max()))
        if folds < 2:  # too few rows to hold any out: naive Bayes
            return parent, found
        scorer = CrossValidatedAccuracy(codes, cards, n_classes, folds, self.seed, self.alpha, memory_limit)
        current = float(scorer.scores(parent, [[]])[0])
        found["cv_accuracy"].append(current)
        rank = self.alphabetical_rank(d)
        while np.count_nonzero(parent < 0) > 1:  # one orphan left: a tree
            candidates = self.candidates(parent, rank, scorer, self.possible_children(parent, rank))
            scores = scorer.scores(parent, candidates)
            best = int(np.argmax(scores))
            gain = scores[best] - current
            if gain <= _ACCURACY_TOLERANCE or gain < self.epsilon - _ACCURACY_TOLERANCE:
                break
            (child, new_parent), = candidates[best]
            parent[child] = new_parent
            current = float(scores[best])
            found["arcs"].append((new_parent, child))
            found["cv_accuracy"].append(current)
        return parent, found

    def alphabetical_rank(self, d: int) -> np.ndarray:
        """Each attribute's position in the alphabetical order of ``attribute_names`` (as strings)."""
        names = self.attribute_names if self.attribute_names is not None else [f"{a:09d}" for a in range(d)]
        return np.argsort(sorted(range(d), key=lambda a: str(names[a])))  # the inverse of the alphabetical order

    @staticmethod
    def possible_children(parent, rank) -> dict[int, list[int]]:
        """Attribute -> the orphans (attributes without an attribute parent) it may become the parent
        of without a cycle: all but itself and its ancestors; both in alphabetical order."""
        by_rank = sorted(range(len(parent)), key=lambda a: rank[a])
        orphans = [a for a in by_rank if parent[a] < 0]
        return {p: [o for o in orphans if o != p and o not in ancestors(parent, p)] for p in by_rank}

    @abc.abstractmethod
    def candidates(self, parent, rank, scorer, children) -> list[list[tuple[int, int]]]:
        """The step's candidates, each one arc ``[(child, parent)]``, in tie-breaking order, given
        ``possible_children``."""


class TanHillClimbing(_GreedyOneDependence):
    """TAN-HC (Keogh and Pazzani 2002): each step adds the augmenting arc that most improves the
    cross-validated accuracy.

    An arc may go to an attribute without an attribute parent (an orphan) from any attribute but its
    descendants, keeping a forest. Adding ``X_i -> X_j`` or ``X_j -> X_i`` between two orphans gives
    equivalent structures, so only ``X_i -> X_j`` with ``X_i``'s name alphabetically before ``X_j``'s is
    scored (methods vignette, Sect. "TAN HC and TAN HC SP").

    Parameters
    ----------
    folds : int, default 10
        Folds of the cross-validation (bnclassify's ``k``, which has no default; 10 in the overview
        vignette's ``tan_hc('class', car, k = 10, epsilon = 0, smooth = 1)``).
    epsilon : float, default 0.0
        Least improvement of accuracy that takes a step (the overview vignette's 0: any improvement;
        bnclassify's default is 0.01, and at 0 it also steps on an equal accuracy, which Keogh and
        Pazzani, stopping when no arc improves, do not).
    alpha : float, default 1.0
        The Bayesian estimate's alpha of the inner cross-validation, Eq. (incp_params) (bnclassify's
        ``smooth``, 1 in the overview vignette; 0 is maximum likelihood).
    seed : int, default 0
        Seed of the folds.

    References
    ----------
    Keogh, E. and Pazzani, M. (2002). Learning the structure of augmented Bayesian classifiers.
    International Journal on Artificial Intelligence Tools 11(4), 587-601.
    Mihaljević, B., Bielza, C. and Larrañaga, P. bnclassify's methods vignette, Sect. "TAN HC and TAN HC
    SP"; bnclassify's ``tan_hc``, ``greedy_search`` and ``augment_ode``.
    """

    name = "tan_hc"
    presets = {"tan_hc": {}}

    def candidates(self, parent, rank, scorer, children):
        return [
            [(child, p)] for p, takes in children.items() for child in takes
            if parent[p] >= 0 or rank[p] < rank[child]  # of two orphans, from the alphabetically earlier
        ]


class TanHillClimbingSuperParent(_GreedyOneDependence):
    """TAN-HCSP (Keogh and Pazzani 2002): each step first picks the superparent, the attribute that
    raises the cross-validated accuracy most when made the parent of every orphan it can take (every
    orphan but itself and its ancestors), then scores the arcs from it to each of those orphans alone
    and takes the best, as TAN-HC does.

    The candidates of one step share their parent, so no two are equivalent and the vignette's
    alphabetical rule (Sect. "TAN HC and TAN HC SP") has nothing to remove; ties go alphabetically.
    Parameters and references as ``TanHillClimbing``'s; bnclassify's ``tan_hcsp`` and ``augment_ode_sp``.
    """

    name = "tan_hcsp"
    presets = {"tan_hcsp": {}}

    def candidates(self, parent, rank, scorer, children):
        superparents = [sp for sp, takes in children.items() if takes]
        scores = scorer.scores(parent, [[(child, sp) for child in children[sp]] for sp in superparents])
        superparent = superparents[int(np.argmax(scores))]
        return [[(child, superparent)] for child in children[superparent]]
