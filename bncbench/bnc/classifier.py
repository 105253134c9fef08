"""``BNClassifier``: a Bayesian network classifier in scikit-learn style over discrete data."""

import warnings
from collections.abc import Hashable

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from bncbench.bnc.encoding import MISSING_MODES, UNSEEN, CategoryEncoder, CodesOverflow
from bncbench.bnc.estimators import make_estimator
from bncbench.bnc.inference import MissingSummedOut
from bncbench.bnc.inputs import (
    check_acyclic,
    check_one_value_per_cell,
    class_labels,
    one_dimensional,
    parents_message,
    warn_continuous,
)
from bncbench.bnc.memory import DEFAULT_MEMORY_LIMIT_GIB, MemoryLimit
from bncbench.bnc.parameters import check_choice
from bncbench.bnc.structures import GivenStructure, make_structure
from bncbench.bnc.training_data import InMemoryCodes
from bncbench.core.errors import BncbenchError, ConfigError, DatasetError, UnseenValuesWarning

#: Most bytes of the ``(rows, classes, tables)`` sums of one block of rows in prediction.
PREDICT_BLOCK_BYTES = 64 * 2**20


class BNClassifier(ClassifierMixin, BaseEstimator):
    """Bayesian network classifier: a structure over the attributes plus a parameter estimator.

    Parameters
    ----------
    structure : {"nb", "tan", "kdb", "skdb", "aode", "direct", "tan_hc", "tan_hcsp"} or dict
        Structure learner (see ``bncbench.bnc.structures``), or a dict mapping every attribute name to the
        ordered list of its attribute parents (the class is always a parent). ``"direct"`` is the class
        given all the attributes (one table, no attribute tables: ``parents_`` is empty).
    k : int, optional
        Maximum number of attribute parents: for ``"kdb"`` (default 1) and for ``"skdb"`` (its k_max,
        default 5); the other structures do not read it.
    structure_params : dict
        The structure's other parameters (``structure_defaults(structure)``), e.g. ``{"score": "aic"}``.
    estimator : {"mle", "laplace", "m_estimate", "hdp", "awnb", "manb", "wanbia"}
        Parameter estimator (see ``bncbench.bnc.estimators``).
    estimator_params : dict
        Arguments of the estimator, e.g. ``{"alpha": 0.5}`` or ``{"m": 1}``.
    random_state : int, optional
        Seed of everything random in fitting (e.g. the m-estimate's holdout).
    memory_limit_gib : float or None, default 1.0
        Bound, in GiB, on the count arrays that grow with the attributes' numbers of values (pairwise
        counts of structure learning, context trees), checked before they are allocated: a fit above
        it (e.g. ID-like columns as parents) is refused with the estimated size and the fixes
        (``bncbench.bnc.memory``). Fitting's peak memory is a few times these arrays. None: no bound.
    missing : {"value", "ignore"}, default "value"
        A missing value (NaN/None) is a value of its own; or, with ``"ignore"``, no value (bnclassify's
        methods vignette): tables and structure learning count the available cases (a row missing X
        counts in no table involving X, in the others as usual; Eq. incp_params), and prediction sums
        the missing attributes out of the joint exactly (``inference.MissingSummedOut``, whose cost it
        documents). ``"ignore"`` takes the structures nb, tan, kdb or a dict, and the estimators mle
        and laplace; the others are refused.

    Attributes
    ----------
    classes_ : ndarray
        Class labels, in the order of ``predict_proba``'s columns.
    parents_ : dict
        Attribute name -> ordered list of its attribute parents, for the attributes in the model (all,
        except after selective kDB's attribute selection).
    structure_info_ : dict
        What the structure learner found besides the parents, e.g. ``"selection"`` for ``"skdb"``
        (chosen number of attributes, k and the leave-one-out loss grid) or ``"super_parents"`` for
        ``"aode"`` (whose ``parents_`` and ``cpt`` are those of its naive Bayes fallback).
    estimator_ : Estimator
        The fitted parameter estimator (``bncbench.bnc.estimators.Estimator``; e.g.
        ``estimator_.selected_m_`` for m-estimates).
    feature_weights_, arc_posteriors_ : dict
        Attribute name -> weight ("awnb", "wanbia") or posterior probability of its arc from the class
        ("manb"): the estimator's ``attribute_values()`` by attribute name.

    Notes
    -----
    ``X`` holds discrete values of any type; a missing value (NaN/None) is a value of its own. At
    prediction, a value not seen in training carries no evidence, and an unseen combination of parent
    values backs off to the deepest context seen in training.

    What it refuses or warns about: a column that looks continuous warns at fit
    (``ContinuousColumnWarning``, see ``bncbench.bnc.inputs.CONTINUOUS_FRACTION``: discretise it first); a column given
    another kind of values at prediction than in training (numbers vs strings: ``1`` vs ``"1"``) is
    refused; a column none of whose values at prediction was seen in training warns
    (``UnseenValuesWarning``). Class labels are numbers (``1`` and ``1.0`` are one class) or strings
    (``"1"`` and ``"1.0"`` are two), not both.
    """

    def __init__(self, structure="nb", k=None, structure_params=None, estimator="m_estimate",
                 estimator_params=None, random_state=None, memory_limit_gib=DEFAULT_MEMORY_LIMIT_GIB,
                 missing="value"):
        self.structure = structure
        self.k = k
        self.structure_params = structure_params
        self.estimator = estimator
        self.estimator_params = estimator_params
        self.random_state = random_state
        self.memory_limit_gib = memory_limit_gib
        self.missing = missing

    def fit(self, X, y):
        X = self._validated(X, y, reset=True)
        y = one_dimensional(y)
        if len(y) != len(X):
            raise DatasetError(f"X has {len(X)} rows but y has {len(y)} values; give one class value per row.")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 0):
            raise ConfigError(f"k must be an integer >= 0 or None (the structure's default), got {self.k!r}.")
        y = class_labels(y, X.index)
        estimator = make_estimator(self.estimator, dict(self.estimator_params or {}))
        self._check_missing(estimator)
        codes = self._training_codes(X, y)
        warn_continuous(self.encoder_, len(X))
        self.classes_ = np.asarray(list(self.class_encoder_.categories_[0]))
        return self._fit_data(InMemoryCodes(codes), estimator)

    def _training_codes(self, X, y):
        """The codes of the training rows: one column-major matrix, the class last (counting reads it column by
        column without a copy), in the narrowest integer type that holds every column's codes (int8 for up to 127
        values: an eighth of int64's memory; a wider type only when a column needs it)."""
        for dtype in (np.int8, np.int16, np.int32, np.int64):
            codes = np.empty((len(X), X.shape[1] + 1), dtype=dtype, order="F")
            self.encoder_, self.class_encoder_ = CategoryEncoder(self.missing), CategoryEncoder()
            try:
                self.encoder_.fit_transform(X, out=codes[:, :-1])
                self.class_encoder_.fit_transform(y.to_frame("class"), out=codes[:, -1:])
                return codes
            except CodesOverflow:
                continue

    def _fit_data(self, data, estimator):
        """Structure, counts and tables from the training data (``training_data``), once encoded."""
        cards = self.encoder_.cardinalities_
        columns = self.encoder_.columns_
        memory_limit = MemoryLimit(self.memory_limit_gib, [*columns, "class"])
        self.network_, self.structure_info_ = self._learn_structure(data, cards, memory_limit)
        if "super_parents" in self.structure_info_:
            self.structure_info_["super_parents"] = [columns[a] for a in self.structure_info_["super_parents"]]
        if "selection" in self.structure_info_:
            selection = self.structure_info_["selection"]
            selection.attributes = [columns[a] for a in selection.attributes]
        self.parents_ = {columns[a]: [columns[p] for p in self.network_.parents[a]] for a in self.network_.attributes}
        rng = np.random.default_rng(self.random_state)
        self.tables_ = estimator.tables(self.network_, data, rng)
        self.estimator_ = estimator
        self.packed_ = estimator.predictor(self.network_, self.tables_)
        if self.missing == "ignore":
            self.packed_ = MissingSummedOut(self.packed_, self.network_)
        return self

    def _check_missing(self, estimator):
        """Refuse a ``missing`` that is not a mode, or ``"ignore"`` with a structure or estimator that
        does not read missing values as none."""
        if check_choice("missing", self.missing, MISSING_MODES) == "value":
            return
        structure = make_structure(self.structure, self.k, self.structure_params)
        refused = [
            f"{kind} {name!r}" for kind, name, handles in (
                ("structure", "a dict" if isinstance(self.structure, dict) else self.structure, structure.handles_missing),
                ("estimator", self.estimator, estimator.handles_missing),
            ) if not handles
        ]
        if refused:
            raise ConfigError(
                f"missing='ignore' (available-case counts, missing attributes summed out) is not supported by "
                f"{' and '.join(refused)}; it takes the structures nb, tan, kdb or a dict and the estimators "
                "mle and laplace. Use one of those, or missing='value' (a missing value is a value of its own)."
            )

    def _learn_structure(self, data, cards, memory_limit):
        if isinstance(self.structure, dict):
            structure = GivenStructure(dict(enumerate(self._given_structure(list(self.encoder_.columns_)))))
        else:
            structure = make_structure(self.structure, self.k, self.structure_params)
        structure.attribute_names = list(self.encoder_.columns_)
        return structure.learn(data, cards, len(self.classes_), memory_limit)

    def _given_structure(self, columns):
        for name, parents in self.structure.items():
            if not isinstance(parents, (list, tuple)) or not all(isinstance(p, Hashable) for p in parents):
                raise ConfigError(parents_message(name, parents))
        position = {name: i for i, name in enumerate(columns)}
        named = set(self.structure) | {p for ps in self.structure.values() for p in ps}
        unknown = named - set(position)
        if unknown:
            raise ConfigError(
                f"the structure names attributes that are not columns of X: {sorted(map(str, unknown))}; "
                f"the columns are {columns} (the class is not listed: it is a parent of every attribute)."
            )
        parents = [[position[p] for p in self.structure.get(name, [])] for name in columns]
        for i, ps in enumerate(parents):
            if i in ps or len(set(ps)) != len(ps):
                raise ConfigError(f"attribute {columns[i]!r} lists itself or a parent twice: {self.structure[columns[i]]}.")
        check_acyclic(parents, columns)
        return parents

    def _validated(self, X, y="no_validation", reset=False) -> pd.DataFrame:
        """``X`` checked in scikit-learn's way (with ``y``, when given, for its shape and values), and
        for no columns and for infinite numbers in a DataFrame as in an array; a DataFrame keeps its
        column types, anything else becomes one, with the fitted columns at prediction."""
        is_frame = isinstance(X, pd.DataFrame)
        validated = validate_data(
            self, X, y, reset=reset, dtype=None, ensure_all_finite="allow-nan", skip_check_array=is_frame
        )
        if not is_frame:
            # columns without names are matched by position, as in scikit-learn
            values = validated if isinstance(y, str) else validated[0]
            X = pd.DataFrame(values, columns=None if reset else self.encoder_.columns_)
        if len(X) == 0:
            raise DatasetError("cannot fit on zero rows." if reset else "cannot predict zero rows.")
        if reset and X.shape[1] == 0:
            raise DatasetError("X has no columns: give at least one attribute.")
        infinite = [
            c for c, column in X.items() if pd.api.types.is_numeric_dtype(column.dtype) and np.isinf(column).any()
        ]
        if infinite:
            raise DatasetError(
                f"columns {infinite} hold infinity, which is not a category: discretise the raw numbers (e.g. "
                "with MDLDiscretizer) or replace the infinite values."
            )
        check_one_value_per_cell(X)
        return X

    def _codes(self, X):
        check_is_fitted(self)
        X = self._validated(X)
        missing = [c for c in self.encoder_.columns_ if c not in X.columns]
        if missing:
            raise DatasetError(
                f"X lacks the columns {missing} that the classifier was fitted on (a classifier fitted on an "
                "array has the columns 0..n-1: give an array, whose columns are matched by position)."
            )
        codes = self.encoder_.transform(X if list(X.columns) == self.encoder_.columns_ else X[self.encoder_.columns_])
        unseen = [c for c, none_seen in zip(self.encoder_.columns_, (codes == UNSEEN).all(axis=0)) if none_seen]
        if unseen:
            warnings.warn(
                UnseenValuesWarning(
                    f"no value of the columns {unseen} was seen in training, so they carry no evidence for "
                    f"these {len(X)} rows. Check that they are written as in training (e.g. '1' vs '1.0', 'yes' "
                    "vs 'Yes') and discretised as in training (by the MDLDiscretizer fitted on the training data)."
                ),
                stacklevel=3,
            )
        return codes

    def predict_proba(self, X) -> np.ndarray:
        """Posterior ``P(y | x)`` for each row; columns follow ``classes_``.

        Raises
        ------
        BncbenchError
            If a probability is NaN (never with valid parameters: a NaN is refused, not returned).
        """
        return self._proba(self._codes(X))

    def _proba(self, codes: np.ndarray) -> np.ndarray:
        """``predict_proba`` of rows coded by ``_codes`` (or as the training rows were, out of core), a block of
        rows at a time: the kernels' ``(rows, classes, tables)`` sums stay within ``PREDICT_BLOCK_BYTES`` whatever
        the rows and classes; the answer itself, ``(rows, classes)``, is refused above ``memory_limit_gib``."""
        n_classes, n_tables = len(self.classes_), max(1, len(self.network_.trees))
        MemoryLimit(self.memory_limit_gib, []).check_row_class_arrays(
            "predict_proba's answer", len(codes), n_classes, 1, 8, "predict fewer rows at a time")
        block = max(1, PREDICT_BLOCK_BYTES // (8 * n_classes * n_tables))
        proba = np.empty((len(codes), n_classes))
        for start in range(0, len(codes), block):
            proba[start : start + block] = self.packed_.predict_proba(codes[start : start + block])
        if np.isnan(proba).any():
            invalid = np.isnan(proba).any(axis=1)
            raise BncbenchError(
                f"estimator {self.estimator!r} with estimator_params {self.estimator_params or {}} gave NaN "
                f"probabilities for {int(invalid.sum())} of {len(proba)} rows. This is a bug of bncbench: "
                "please report it with the data and the classifier's parameters."
            )
        return proba

    def diagnostics(self) -> dict:
        """What a fit found beyond its tables, for logging: numbers, and DataFrames (tables; a table
        with ``attrs["grid"]`` set is a loss grid, e.g. selective kDB's leave-one-out losses)."""
        check_is_fitted(self)
        found = {}
        selection = self.structure_info_.get("selection")
        if selection is not None:
            grid = selection.losses.copy()
            grid.attrs["grid"] = True
            found.update(skdb_attributes=selection.n_attributes, skdb_k=selection.k, skdb_loocv_losses=grid)
        found.update(self.estimator_.diagnostics([*map(str, self.encoder_.columns_), "class"]))
        return found

    @property
    def feature_weights_(self) -> dict:
        """Attribute name -> exponent of its tables, for estimators that weight attributes
        ("awnb", "wanbia")."""
        return self._per_attribute("feature_weights_")

    @property
    def arc_posteriors_(self) -> dict:
        """Attribute name -> posterior probability of the arc from the class ("manb")."""
        return self._per_attribute("arc_posteriors_")

    def _per_attribute(self, name: str) -> dict:
        check_is_fitted(self)
        values = self.estimator_.attribute_values()
        if name not in values:
            raise AttributeError(f"estimator {self.estimator!r} has no {name}.")
        return {self.encoder_.columns_[a]: value for a, value in values[name].items()}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing value is a value of its own
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def cpt(self, attribute) -> pd.DataFrame:
        """Estimated table ``P(attribute | class, parents)`` over the parent contexts seen in training.

        Rows are indexed by the class then the parents in order (a MultiIndex when there are parents);
        columns are the attribute's values.
        """
        check_is_fitted(self)
        if attribute not in self.parents_:
            raise KeyError(f"{attribute!r} is not an attribute of the model; attributes: {list(self.parents_)}.")
        i = self.encoder_.columns_.index(attribute)
        tree = self.network_.tree_of(i)
        names = ["class", *self.parents_[attribute]]
        values = [self.classes_, *(self.encoder_.categories_[p] for p in tree.variables[1:])]
        keys = np.zeros((tree.parent[-1].shape[0], tree.depth), dtype=np.int64)
        nodes = np.arange(tree.parent[-1].shape[0])
        for level in range(tree.depth, 0, -1):
            parent = tree.parent[level][nodes]
            keys[:, level - 1] = np.argmax(tree.children[level - 1][parent] == nodes[:, None], axis=1)
            nodes = parent
        labels = [values[j][keys[:, j]] for j in range(tree.depth)]
        index = pd.MultiIndex.from_arrays(labels, names=names) if tree.depth > 1 else pd.Index(labels[0], name="class")
        tables = self.tables_[self.network_.trees.index(tree)]
        table = pd.DataFrame(tables[-1], index=index, columns=self.encoder_.categories_[i])
        table.columns.name = attribute
        return table.sort_index()
