"""What ``BNClassifier`` accepts as training data, class labels and a given structure, checked before
it fits: each refusal names the problem and its fix, each warning the columns it is about.
"""

import warnings

import numpy as np
import pandas as pd
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from bncbench.bnc.encoding import value_kinds
from bncbench.core.errors import ConfigError, ContinuousColumnWarning, DatasetError

#: A column looks continuous (``ContinuousColumnWarning``) when its values are numbers (or strings that
#: all read as numbers), some of them not integers, with at least ``CONTINUOUS_MIN_VALUES`` distinct
#: values and at least ``CONTINUOUS_FRACTION`` of the training rows (at most 20 rows per value on
#: average). On the 68 datasets of the HDP paper that flags 345 of the 421 numeric columns holding
#: non-integers (374 on every other row, a training half); the others have few values for their rows,
#: e.g. 4 values in 12546 rows, which a table estimates well. After MDL discretisation
#: (``MDLDiscretizer``, as in the runner) every column is integer codes and none is flagged.
CONTINUOUS_MIN_VALUES = 20
CONTINUOUS_FRACTION = 0.05



#: The start of scikit-learn's warning of a class with more distinct labels than half the rows.
MANY_CLASSES = "The number of unique classes is greater than 50% of the number of samples"


def one_dimensional(y):
    """The class labels as given when they are a Series whose dtype holds one kind of value (numbers,
    booleans or strings: no mix to refuse, and nothing to infer); else an object array, since numpy
    would turn ``[1, "1"]`` into ``["1", "1"]``."""
    if isinstance(y, pd.Series) and (
        pd.api.types.is_numeric_dtype(y.dtype) or pd.api.types.is_bool_dtype(y.dtype) or isinstance(y.dtype, pd.StringDtype)
    ):
        return y
    return column_or_1d(np.asarray(y, dtype=object))


def check_one_value_per_cell(X: pd.DataFrame) -> None:
    """Refuse a cell of ``X`` that holds a container (a list, dict, set, array: what pandas cannot
    hash, so cannot count), naming its column and row."""
    for column, values in X.items():
        if values.dtype != object:
            continue
        held = values.map(lambda value: isinstance(value, (list, dict, set, tuple, np.ndarray)))
        if held.any():
            row = held.idxmax()
            raise DatasetError(
                f"column {column!r} holds a {type(values[row]).__name__} in row {row!r} ({values[row]!r:.60}): a "
                "cell must be one value (a number or a string); split it into columns or join it into a string."
            )


def class_labels(y, index) -> pd.Series:
    """The class labels ``y`` (``one_dimensional``'s) as a Series on ``index``, numbers as numbers
    (``1`` and ``1.0`` are one class) and strings as strings (``"1"`` and ``"1.0"`` are two, as in
    scikit-learn); a mix of the two is refused, since it would make ``1`` and ``"1"`` two classes."""
    if isinstance(y, pd.Series):
        labels = pd.Series(y.array, index=index)
    else:
        labels = pd.Series(y, index=index).infer_objects()
    if labels.isna().any():
        raise DatasetError("the class has missing values; drop those rows before fitting.")
    distinct = pd.unique(labels)
    kinds = value_kinds(distinct)
    if len(kinds) > 1:
        examples = {kind: next(v for v in labels if value_kinds([v]) == {kind}) for kind in sorted(kinds)}
        raise DatasetError(
            f"the class mixes {' and '.join(sorted(kinds))} (e.g. {', '.join(map(repr, examples.values()))}), "
            "which would be different classes even where they print alike (1 and '1'). Give the labels one "
            "kind, e.g. y.map(str) or pd.to_numeric(y)."
        )
    # on the distinct labels, which have the same type of target as the labels (scikit-learn's
    # type_of_target sorts every label of an object array: half of a naive Bayes fit on half of adult);
    # its warning of more classes than half the rows would count the distinct labels as the rows
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MANY_CLASSES, category=UserWarning)
        check_classification_targets(np.asarray(distinct))
    if len(labels) > 20 and len(distinct) > round(0.5 * len(labels)):
        warnings.warn(
            f"{MANY_CLASSES} ({len(distinct)} classes in {len(labels)} rows). `y` could represent a regression "
            "problem, not a classification problem.",
            UserWarning,
            stacklevel=3,
        )
    return labels


def warn_continuous(encoder, n_rows) -> None:
    """Warn about the columns that look continuous (see ``CONTINUOUS_FRACTION``), numbers written as
    strings included (e.g. a CSV read with ``dtype=str``), which ``MDLDiscretizer`` leaves as they are."""
    found, as_strings = {}, []
    for column, values, kinds in zip(encoder.columns_, encoder.categories_, encoder.kinds_):
        if kinds not in ({"numbers"}, {"strings"}):
            continue
        known = values[~pd.isna(values)]
        if len(known) < max(CONTINUOUS_MIN_VALUES, CONTINUOUS_FRACTION * n_rows):
            continue
        numbers = pd.to_numeric(pd.Series(known), errors="coerce").to_numpy(dtype=float)
        if not np.isnan(numbers).any() and np.any(numbers % 1 != 0):
            found[column] = len(known)
            if kinds == {"strings"}:
                as_strings.append(column)
    if found:
        described = ", ".join(f"{column!r} ({count} distinct values)" for column, count in found.items())
        convert = (
            f" The columns {as_strings} hold numbers written as strings: convert them to numbers first, e.g. "
            f"X[{as_strings[0]!r}] = pd.to_numeric(X[{as_strings[0]!r}])."
            if as_strings
            else ""
        )
        warnings.warn(
            ContinuousColumnWarning(
                f"columns {described} look continuous: non-integer numbers with many distinct values for "
                f"{n_rows} rows. Each distinct value is a category of its own, so most "
                "values at prediction will be unseen and carry no evidence (predictions near the class "
                "prior). Discretise them first: make_pipeline(MDLDiscretizer(), BNClassifier(...)) "
                f"(from sklearn.pipeline import make_pipeline; from bncbench.data import MDLDiscretizer).{convert}"
            ),
            stacklevel=3,
        )


def parents_message(name, parents) -> str:
    """Why ``parents`` is not a list of attribute names, and how to write one."""
    message = f"the parents of {name!r} in the structure must be a list of attribute names, got {parents!r}"
    if isinstance(parents, str):
        message += f": write [{parents!r}] for one parent named {parents!r}"
        if len(parents) > 1:
            message += f", or {list(parents)!r} for the {len(parents)} parents {', '.join(map(repr, parents))}"
    return message + "."


def check_acyclic(parents, columns):
    state = [0] * len(parents)  # 0 new, 1 on the stack, 2 done

    def visit(i, path):
        if state[i] == 1:
            raise ConfigError(f"the structure has a cycle: {' -> '.join(map(str, path + [columns[i]]))}.")
        if state[i] == 0:
            state[i] = 1
            for p in parents[i]:
                visit(p, path + [columns[i]])
            state[i] = 2

    for i in range(len(parents)):
        visit(i, [])
