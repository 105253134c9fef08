"""A bound on the count arrays of one fit, checked from counts before they are allocated.

Two kinds of arrays grow with the attributes' numbers of values rather than with the rows:

* the counts of ``(X_i, X_j, Y)`` for every pair of attributes, from which TAN, kDB and SkDB compute
  ``I(X_i; X_j | Y)`` (``information.StructureStatistics``): ``r_i r_j c`` numbers per pair;
* the levels of the context trees (``context_tree``): a level of ``n`` contexts holds an
  ``(n, r(X))`` count matrix and an ``(n, r(next variable))`` child index, so below an ID-like
  attribute (about one context per training row) a level costs rows x values.

A third kind grows with the rows and the classes: the estimators that score training or held-out rows
under every class (the m-estimate's choice of m, WANBIA's weights) hold ``(rows, classes, tables)``
arrays, which a class of many values (an ID taken as the class) makes larger than any machine.

The first size follows from the cardinalities; the second from the number of contexts that counting
finds, level by level, before the level's arrays are made; the third from the rows, classes and tables. A fit whose arrays would exceed the limit is
refused with a ``NotApplicableError`` that states the size, the table or pair of attributes that
causes it, and the fixes. Storing the trees sparsely instead would change every estimator and kernel,
all of which read dense ``(contexts x values)`` tables; on ordinary data these arrays are small (at
most 76 MB for kDB-5 on the datasets of ``../shared/datasets``, splice with its ID column).

Fitting needs a few times the size of these arrays at its peak: the estimators' tables and copies
(measured: about 2 times for HPB, up to about 6 times for m-estimates, which copy the counts for their
holdout and pack a table per candidate m).
"""

import numpy as np

from bncbench.core.errors import ConfigError, NotApplicableError

GIB = 2**30
#: Default bound of ``BNClassifier(memory_limit_gib=...)``, in GiB.
DEFAULT_MEMORY_LIMIT_GIB = 1.0
_BYTES_PER_NUMBER = 8  # float64 counts and int64 indices


class MemoryLimit:
    """Largest total size of a fit's count arrays, with the column names its refusals use.

    Parameters
    ----------
    gib : float or None
        The bound in GiB (> 0), or None for no bound.
    names : sequence of str
        Name of each column of the code matrix (the attributes, then the class).
    """

    def __init__(self, gib, names):
        if gib is not None and (isinstance(gib, bool) or not isinstance(gib, (int, float)) or not gib > 0):
            raise ConfigError(f"memory_limit_gib must be a number > 0 (GiB) or None for no limit, got {gib!r}.")
        self.gib = gib
        self.max_bytes = np.inf if gib is None else float(gib) * GIB
        self.names = [str(name) for name in names]

    def check_pair_counts(self, cards, n_classes: int) -> None:
        """Refuse the pairwise counts of ``(X_i, X_j, Y)`` if they would exceed the bound."""
        pair_bytes = np.triu(np.outer(cards, cards).astype(float), k=1) * n_classes * _BYTES_PER_NUMBER
        total = pair_bytes.sum()
        if total <= self.max_bytes:
            return
        i, j = np.unravel_index(np.argmax(pair_bytes), pair_bytes.shape)
        raise NotApplicableError(
            f"structure learning needs {_gib(total)} for the counts of (X_i, X_j, class) of every pair of "
            f"attributes, more than memory_limit_gib={self.gib}; the largest pair is {self.names[i]!r} x "
            f"{self.names[j]!r} ({cards[i]} x {cards[j]} values x {n_classes} classes: {_gib(pair_bytes[i, j])}). "
            f"{_fixes(self.names, [i, j], cards, 'use a structure without attribute parents (nb, aode)')}"
        )

    def check_row_class_arrays(self, what: str, rows: int, n_classes: int, tables: int, entry_bytes: int,
                               other_fix: str) -> None:
        """Refuse ``what`` if its ``(rows, classes, tables)`` arrays, ``entry_bytes`` an entry in all, would
        exceed the bound."""
        total = float(rows) * n_classes * tables * entry_bytes
        if total <= self.max_bytes:
            return
        raise NotApplicableError(
            f"{what} needs about {_gib(total)} for {rows:,} rows x {n_classes:,} classes x {tables} tables "
            f"({entry_bytes} bytes an entry), more than memory_limit_gib={self.gib}. A class of this many values "
            f"is rarely a classifier's target (is it an ID column?): group its rare values, {other_fix}, or raise "
            "the limit (BNClassifier(memory_limit_gib=...), None for none)."
        )

    def budget(self, used_bytes: float) -> "CountingBudget":
        """The room left for one counting pass over trees that already hold ``used_bytes``."""
        return CountingBudget(self, used_bytes)

class CountingBudget:
    """What the context trees of a network may still allocate during one counting pass."""

    def __init__(self, limit: MemoryLimit, used_bytes: float):
        self.limit = limit
        self.used_bytes = float(used_bytes)

    def take(self, tree, level: int, n_nodes: int, n_new: int) -> None:
        """Account for ``n_new`` contexts added to ``level`` of ``tree`` (``n_nodes`` there in all), or
        refuse them, before their arrays are allocated."""
        needed = n_new * tree.node_bytes(level)
        if self.used_bytes + needed <= self.limit.max_bytes:
            self.used_bytes += needed
            return
        names, cards = self.limit.names, dict(zip(tree.variables, tree.cards))
        cards[tree.child] = tree.n_values
        context = ", ".join(names[v] for v in tree.variables)
        level_context = ", ".join(names[v] for v in tree.variables[:level])
        attributes = [v for v in (tree.child, *tree.variables) if v < len(names) - 1]  # not the class
        index = f" and a child index over {tree.cards[level]} values" if level < tree.depth else ""
        raise NotApplicableError(
            f"the table P({names[tree.child]} | {context}) needs {_gib(n_nodes * tree.node_bytes(level))} at "
            f"level {level}: {n_nodes} contexts of ({level_context}) seen in training, each with counts of "
            f"{tree.n_values} values{index}; the model's count arrays would take {_gib(self.used_bytes + needed)} "
            f"or more, above memory_limit_gib={self.limit.gib}. "
            f"{_fixes(names, attributes, cards, 'use fewer parents per table (a lower k, or another structure)')}"
        )


def _fixes(names, attributes, cards, other_fix: str) -> str:
    """The advice of a refusal, naming the attributes with the most values (at most three)."""
    largest = sorted(attributes, key=lambda a: -cards[a])[:3]
    listed = ", ".join(f"{names[a]!r}: {cards[a]} values" for a in largest)
    return (
        f"Discretise or drop ID-like columns ({listed}), {other_fix}, or raise the limit "
        "(BNClassifier(memory_limit_gib=...), None for none); fitting needs a few times this memory."
    )


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:.3g} GiB"
