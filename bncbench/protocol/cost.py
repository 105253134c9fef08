"""What a cell will cost: the CPU seconds of its folds' fits and predictions, known before it runs.

A cell's cost is what its run logs: the sum over its folds of ``fit_seconds + predict_seconds``
(``bncbench.protocol.cross_validation``; discretisation, the warm-up fit and MLflow's logging are in
neither). It is predicted from the cell's :class:`CellFeatures`: its model (structure, k, estimator,
HDP's tying and Gibbs iterations) and its dataset's size, which :func:`dataset_features` reads from
the dataset store's ``manifest.csv`` and ``schema.json`` without reading a data row.

The law, per fit, of a cell of group ``g`` (its family, structure, k, estimator and tying) timed
under condition ``m`` (a machine and a version of the code)::

    log(seconds / folds) = x . beta_g + log(1 + iterations / c) + shift_m + noise
    x = (1, log rows, log attributes, log values, log classes, log max(1, rows / 3000))

with the logs centred on the fitted cells' means. ``exp(x . beta_g)`` is the cost of a fit without
iterations (counting, structure learning, prediction); an iterative estimator (HDP's Gibbs sampler)
adds ``iterations / c`` times as much, so that the cost is linear in the iterations, ``c`` being the
iterations that cost as much as the rest of a fit (one ``c`` for all iterative cells). The last term
of ``x`` lets the cost of large datasets grow faster than the small ones' slope says (SkDB selects
more parents there, numeric attributes get more bins): a knot at ``ROWS_KNOT`` rows predicted the
logged cells best, left out one dataset at a time (knots from 1000 to 10000 rows did within 0.01).
The slopes are kept non-negative, so that more rows, attributes, values, classes or iterations never
predict less.

Each group's coefficients are shrunk towards its parent group's (family > structure > k > estimator
> tying; the root pools every cell) by a ridge penalty, so that a group of few cells borrows from its
parent, and a cell of a group with no cell is predicted by its nearest fitted parent group: every
cell gets a finite cost, and :meth:`CostModel.describe` says which fit it comes from.

Timings taken on other machines or with other code (the ``condition`` column of the observed cells)
get a shift each, and predictions are for the ``reference_condition``; a family with no cell timed
under the reference condition keeps its timings as they are, since nothing tells its shift apart from
its cost. Predictions are means (Duan's smearing of the log residuals), so that they add up to totals.
"""

import heapq
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib import resources

import numpy as np
import pandas as pd

from bncbench.protocol.cost_problem import Problem
from bncbench.protocol.cost_features import BASELINE, FEATURE_COLUMNS, features_frame

#: The dataset features whose logs are ``x``'s slopes (then the log of the rows past ``ROWS_KNOT``).
SIZE_COLUMNS = ("rows", "attributes", "values", "classes")
#: The rows past which a dataset's cost may grow faster (see the module).
ROWS_KNOT = 3000
#: The families of cells: the first level of the groups, besides ``BASELINE``.
ITERATIVE, NON_ITERATIVE = "iterative", "non_iterative"
#: ``c`` of a model fitted without iterative cells: a guess, of the order of the fitted ones.
UNFITTED_ITERATION_SCALE = 500.0
#: The candidates for ``c``, log-spaced: the fit keeps the one of least squared error (slopes unbounded).
ITERATION_SCALES = tuple(float(c) for c in np.geomspace(10, 100_000, 25))
DEFAULT_FILE = "cost_default.json"
FORMAT = "bncbench-cost-model"
FORMAT_VERSION = 1
_GROUP_LEVELS = ("family", "structure", "k", "estimator", "tying")


def wall_seconds(seconds: Iterable[float], workers: int) -> float:
    """The wall time of cells taking ``seconds`` each (``CostModel.predict``), run in this order by ``workers``
    processes that each take the next cell as soon as they are free (as the joblib launcher's workers do)."""
    free_at = [0.0] * max(1, int(workers))
    for cell in seconds:
        heapq.heappush(free_at, heapq.heappop(free_at) + float(cell))
    return max(free_at)


class CostModel:
    """The CPU seconds of a cell, fitted to logged cells (see the module for the law).

    Parameters
    ----------
    shrinkage : float
        Ridge penalty of a group's coefficients towards its parent's: about the cells a group needs
        before its own fit counts as much as its parent's.
    condition_shrinkage : float
        Ridge penalty of each condition's shift towards 0.
    reference_condition : str or None
        The condition (``condition`` column of the observed cells) predictions are for; None: the
        conditions are not told apart.

    Attributes
    ----------
    feature_means_ : ndarray
        Means of the logs of ``x`` over the fitted cells.
    iteration_scale_ : float
        ``c``: the iterations that cost as much as the rest of a fit.
    coefficients_ : dict of tuple to ndarray
        Each fitted group's ``beta`` (intercept, then the slopes), keyed by its levels (``()`` the
        root, ``("iterative", "kdb", 5, "hdp", "level")`` a leaf).
    cells_ : dict of tuple to int
        The cells of each fitted group.
    condition_shifts_ : dict of tuple to float
        ``(family, condition)`` -> the shift of log seconds under that condition.
    families_ : dict of str to dict
        Per family: its ``cells``, ``smearing`` (the mean of exp(residual)), ``median_error`` and
        ``p90_error`` (of |log residual| over its cells).
    """

    def __init__(self, shrinkage=4.0, condition_shrinkage=4.0, reference_condition=None):
        self.shrinkage = shrinkage
        self.condition_shrinkage = condition_shrinkage
        self.reference_condition = reference_condition

    def fit(self, observed: pd.DataFrame) -> "CostModel":
        """Fit the law to logged cells; returns ``self``.

        Parameters
        ----------
        observed : pandas.DataFrame
            One row per cell: ``FEATURE_COLUMNS``, ``seconds`` (the sum over its folds of fit and
            predict seconds) and, when ``reference_condition`` is set, ``condition``. Rows whose
            seconds are not a positive number are left out.
        """
        needed = [*FEATURE_COLUMNS, "seconds", *(["condition"] if self.reference_condition is not None else [])]
        missing = sorted(set(needed) - set(observed.columns))
        if missing:
            raise ValueError(f"the observed cells lack the columns {missing}.")
        seconds = pd.to_numeric(observed["seconds"], errors="coerce").to_numpy(dtype=float)
        cells = observed[(seconds > 0) & np.isfinite(seconds)]
        if cells.empty:
            raise ValueError("no observed cell has a positive number of seconds to fit.")
        keys = _group_keys(cells)
        logs = _log_sizes(cells)
        self.feature_means_ = logs.mean(axis=0)
        design = np.column_stack([np.ones(len(cells)), logs - self.feature_means_])
        target = np.log(cells["seconds"].to_numpy(dtype=float) / cells["folds"].to_numpy(dtype=float))
        iterations = _iterations(cells)
        problem = Problem(keys, design, self._conditions(cells, keys), self.shrinkage, self.condition_shrinkage)
        scales = ITERATION_SCALES if np.isfinite(iterations).any() else (UNFITTED_ITERATION_SCALE,)
        self.iteration_scale_ = min(
            scales,
            key=lambda c: np.sum(problem.solve(target - _iteration_offset(iterations, c), bounded=False)[1] ** 2),
        )
        solution, residuals = problem.solve(target - _iteration_offset(iterations, self.iteration_scale_))
        self.coefficients_ = problem.coefficients(solution)
        self.condition_shifts_ = problem.shifts(solution)
        self.cells_ = dict(Counter(key[:depth] for key in keys for depth in range(len(key) + 1)))
        families = np.array([key[0] for key in keys])
        self.families_ = {str(f): _residual_summary(residuals[families == f]) for f in sorted(set(families))}
        return self

    def _conditions(self, cells: pd.DataFrame, keys: list[tuple]) -> list:
        """Each cell's ``(family, condition)`` whose shift is fitted, or None: none under the reference
        condition, none without a reference, none in a family with no cell under the reference."""
        if self.reference_condition is None:
            return [None] * len(keys)
        labels = cells["condition"].astype(str).to_numpy()
        if self.reference_condition not in set(labels):
            raise ValueError(f"no observed cell is under the reference condition {self.reference_condition!r}.")
        anchored = {key[0] for key, label in zip(keys, labels) if label == self.reference_condition}
        return [
            (key[0], label) if key[0] in anchored and label != self.reference_condition else None
            for key, label in zip(keys, labels)
        ]

    def predict(self, features, condition: str | None = None) -> np.ndarray:
        """The expected CPU seconds of each cell, finite and positive: the sum over its folds of fit and predict
        seconds.

        Parameters
        ----------
        features : CellFeatures, sequence of CellFeatures or pandas.DataFrame
            The cells (a frame with ``FEATURE_COLUMNS``).
        condition : str or None
            Predict under this fitted condition; None, or a condition not fitted: under the
            reference condition.
        """
        frame = features_frame(features)
        design = np.column_stack([np.ones(len(frame)), _log_sizes(frame) - self.feature_means_])
        keys = _group_keys(frame)
        beta = np.array([self.coefficients_[self._fitted_group(key)] for key in keys]).reshape(design.shape)
        log_seconds = (
            np.sum(design * beta, axis=1)
            + _iteration_offset(_iterations(frame), self.iteration_scale_)
            + np.array([self.condition_shifts_.get((key[0], condition), 0.0) for key in keys])
            + np.log([self._family(key[0])["smearing"] for key in keys])
        )
        return np.exp(log_seconds) * frame["folds"].to_numpy(dtype=float)

    def describe(self, features) -> list[str]:
        """For each cell, the fit its prediction comes from and how far that fit's cells lie from it."""
        lines = []
        for key in _group_keys(features_frame(features)):
            group = self._fitted_group(key)
            family = self._family(key[0])
            fit = f"the fit of {self.cells_[group]} cells of {_label(group)}"
            if group != key:
                fit = f"no cell of {_label(key)}: a guess, {fit}"
            lines.append(f"{fit}; the fitted cells of its family lie within x{math.exp(family['median_error']):.2f} "
                         f"of their fit for half of them, x{math.exp(family['p90_error']):.2f} for 90%")
        return lines

    def _fitted_group(self, key: tuple) -> tuple:
        """The deepest fitted group among ``key`` and its parents."""
        for depth in range(len(key), -1, -1):
            if key[:depth] in self.coefficients_:
                return key[:depth]
        raise ValueError("the cost model is not fitted: fit it, or load one with from_dict or default.")

    def _family(self, family: str) -> dict:
        """A family's residual summary; for a family with no cell, the pooled one of all cells."""
        if family in self.families_:
            return self.families_[family]
        summaries = list(self.families_.values())
        weights = [summary["cells"] for summary in summaries]
        return {
            name: float(np.average([summary[name] for summary in summaries], weights=weights))
            for name in ("smearing", "median_error", "p90_error")
        }

    def to_dict(self) -> dict:
        """The fitted model as JSON-able data (``from_dict`` reads it back)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "shrinkage": self.shrinkage,
            "condition_shrinkage": self.condition_shrinkage,
            "reference_condition": self.reference_condition,
            "feature_means": self.feature_means_.tolist(),
            "iteration_scale": self.iteration_scale_,
            "groups": [
                {"key": list(group), "cells": self.cells_[group], "coefficients": beta.tolist()}
                for group, beta in self.coefficients_.items()
            ],
            "condition_shifts": [
                {"family": family, "condition": condition, "shift": shift}
                for (family, condition), shift in self.condition_shifts_.items()
            ],
            "families": self.families_,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "CostModel":
        """A fitted model from ``to_dict``'s data."""
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"not a cost model of format {FORMAT!r} version {FORMAT_VERSION}: "
                             f"{data.get('format')!r} version {data.get('format_version')!r}.")
        model = cls(data["shrinkage"], data["condition_shrinkage"], data["reference_condition"])
        model.feature_means_ = np.array(data["feature_means"], dtype=float)
        model.iteration_scale_ = float(data["iteration_scale"])
        model.coefficients_ = {tuple(g["key"]): np.array(g["coefficients"], dtype=float) for g in data["groups"]}
        model.cells_ = {tuple(g["key"]): int(g["cells"]) for g in data["groups"]}
        model.condition_shifts_ = {(s["family"], s["condition"]): float(s["shift"]) for s in data["condition_shifts"]}
        model.families_ = {family: dict(summary) for family, summary in data["families"].items()}
        return model

    @classmethod
    def default(cls) -> "CostModel":
        """The model shipped with bncbench (``bncbench/protocol/cost_default.json``, written by
        ``benchmarks/cost_model.py --write`` from the runs of the committed bundles)."""
        text = resources.files("bncbench.protocol").joinpath(DEFAULT_FILE).read_text(encoding="utf-8")
        return cls.from_dict(json.loads(text))


def _residual_summary(residuals: np.ndarray) -> dict:
    """A family's cells, smearing factor, and median and 90th percentile of |log residual|."""
    return {
        "cells": len(residuals),
        "smearing": float(np.mean(np.exp(residuals))),
        "median_error": float(np.median(np.abs(residuals))),
        "p90_error": float(np.quantile(np.abs(residuals), 0.9)),
    }


def _group_keys(frame: pd.DataFrame) -> list[tuple]:
    """``(family, structure, k, estimator, tying)`` of each cell of a frame of ``FEATURE_COLUMNS``."""
    return [
        (
            ITERATIVE if pd.notna(cell.iterations) else BASELINE if cell.estimator == BASELINE else NON_ITERATIVE,
            str(cell.structure), None if pd.isna(cell.k) else int(cell.k), str(cell.estimator),
            None if pd.isna(cell.tying) else cell.tying,
        )
        for cell in frame[list(FEATURE_COLUMNS)].itertuples(index=False)
    ]


def _log_sizes(frame: pd.DataFrame) -> np.ndarray:
    """``log rows, attributes, values, classes`` and ``log max(1, rows / ROWS_KNOT)`` of each cell."""
    sizes = frame[list(SIZE_COLUMNS)].to_numpy(dtype=float)
    if not np.all(np.isfinite(sizes) & (sizes >= 1)):
        raise ValueError(f"a cell's {', '.join(SIZE_COLUMNS)} must be numbers of at least 1.")
    logs = np.log(sizes)
    return np.column_stack([logs, np.maximum(0.0, logs[:, 0] - math.log(ROWS_KNOT))])


def _iterations(frame: pd.DataFrame) -> np.ndarray:
    """Each cell's iterations, NaN for a cell without."""
    iterations = pd.to_numeric(frame["iterations"], errors="coerce").to_numpy(dtype=float)
    if np.any(iterations < 0):
        raise ValueError("a cell's iterations must not be negative.")
    return iterations


def _iteration_offset(iterations: np.ndarray, scale: float) -> np.ndarray:
    """``log(1 + iterations / c)``, 0 for a cell without iterations."""
    return np.where(np.isnan(iterations), 0.0, np.log1p(np.nan_to_num(iterations) / scale))


def _label(group: tuple) -> str:
    """``family iterative, structure kdb, k 5``: a group by its levels."""
    named = [f"{level} {value}" for level, value in zip(_GROUP_LEVELS, group) if value is not None]
    return ", ".join(named) if named else "every family"
