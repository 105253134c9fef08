"""Win-loss against the number of sampler iterations (HDP paper, journal Figs. 4-5; arXiv 3-4).

Models are told apart by their logged config (``model.*`` run params), not by their names: a
"line" is every parameter but ``iterations``, so ``tan`` with ``level`` tying at 500, 5,000 and
50,000 iterations is one line with three points. Each model is compared with a reference model:

- against the most iterations (Fig. 4): the model of the same line with the largest ``iterations``;
- against a tying (Fig. 5): the model with the same parameters, ``iterations`` included, but the
  reference ``tying`` (``level`` in the paper).
"""

from collections.abc import Iterable

import numpy as np
import pandas as pd

from bncbench.protocol.models import parameter_defaults
from bncbench.report.results import MODEL_PARAM_PREFIX
from bncbench.report.win_draw_loss import win_draw_loss

ESTIMATOR = MODEL_PARAM_PREFIX + "estimator"
ESTIMATOR_PARAMS = MODEL_PARAM_PREFIX + "estimator_params"
ITERATIONS = ESTIMATOR_PARAMS + ".iterations"
TYING = ESTIMATOR_PARAMS + ".tying"
CURVE_COLUMNS = ["line", "model", "reference", "iterations", "wins", "draws", "losses", "p_value"]


def model_specs(params: pd.DataFrame) -> pd.DataFrame:
    """Every model's config with its estimator's defaults filled in: equal configs compare equal.

    Parameters
    ----------
    params : pandas.DataFrame
        Indexed by model, one column per logged ``model.*`` param
        (:meth:`bncbench.report.results.LoggedRuns.model_params`). A config that leaves an estimator
        parameter out gets the default of the registered estimator's constructor, as a string
        like the logged values (an HDP model without ``iterations`` ran 5000).

    Returns
    -------
    pandas.DataFrame
        Same index; string values, ``""`` where a model has no such parameter; columns that are
        empty mappings (``"{}"``) dropped.
    """
    specs = params.replace("{}", np.nan).astype(object)
    for model, estimator in specs.get(ESTIMATOR, pd.Series(dtype=object)).dropna().items():
        for name, default in (parameter_defaults(estimator) or {}).items():
            column = f"{ESTIMATOR_PARAMS}.{name}"
            if column not in specs.columns or pd.isna(specs.at[model, column]):
                specs.loc[model, column] = str(default)
    return specs.dropna(axis=1, how="all").fillna("").sort_index(axis=1)


def win_loss_curves(results: pd.DataFrame, specs: pd.DataFrame, metric: str, *, reference_tying: str | None = None,
                    datasets: Iterable[str] | None = None, **options) -> pd.DataFrame:
    """Win-draw-loss on ``metric`` of each model against its reference, by number of iterations; ``datasets`` and
    ``options`` (``draws``, ``round``, ``alpha``) as in :func:`bncbench.report.win_draw_loss.win_draw_loss`.

    Parameters
    ----------
    specs : pandas.DataFrame
        :func:`model_specs` of the models; only models with an ``iterations`` parameter take part.
    reference_tying : str, optional
        None: compare each model with the same line's largest number of iterations (Fig. 4).
        A tying (e.g. ``"level"``): compare each model of another tying with the model that
        differs only in tying, which is this one (Fig. 5).

    Returns
    -------
    pandas.DataFrame
        One row per compared model: ``line`` (a label from the parameters that tell the lines
        apart, e.g. ``structure=tan, tying=single``), ``model``, ``reference``, ``iterations``,
        ``wins``, ``draws``, ``losses`` (of the model) and the sign test's ``p_value``; sorted by
        line and iterations. Empty when no model has a reference.
    """
    specs = specs.loc[specs.index.isin(results["model"])]
    if ITERATIONS not in specs.columns or (reference_tying is not None and TYING not in specs):
        return pd.DataFrame(columns=CURVE_COLUMNS)
    specs = specs.loc[specs[ITERATIONS] != ""]
    iterations = specs[ITERATIONS].astype(float).astype(int)
    line_columns = [column for column in specs.columns if column != ITERATIONS]
    lines = specs[line_columns].apply(tuple, axis=1)
    model_of = {(line, n): model for model, line, n in zip(specs.index, lines, iterations)}
    most = iterations.groupby(lines).max()
    rows = []
    for model, line in lines.items():
        if reference_tying is None:
            target = (line, most[line])
        else:
            tied = dict(zip(line_columns, line), **{TYING: reference_tying})
            target = (tuple(tied[c] for c in line_columns), iterations[model])
        reference = model_of.get(target, model)
        if reference != model:
            w = win_draw_loss(results, model, reference, metric, datasets=datasets, **options)
            rows.append([line, model, reference, iterations[model], w.wins, w.draws, w.losses, w.p_value])
    curves = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    curves["line"] = _labels(curves["line"], line_columns, [] if reference_tying is None else [TYING])
    return curves.sort_values(["line", "iterations"], ignore_index=True)


def _labels(lines: pd.Series, columns: list[str], always: list[str]) -> pd.Series:
    """``name=value`` of ``always`` and of the parameters that differ between the lines (the
    structure if none does)."""
    if lines.empty:
        return lines
    values = pd.DataFrame(lines.tolist(), columns=columns, index=lines.index)
    shown = always + [c for c in columns if c not in always and values[c].nunique() > 1]
    shown = shown or [c for c in columns if c == MODEL_PARAM_PREFIX + "structure"]
    return values[shown].apply(lambda line: ", ".join(f"{c.rsplit('.', 1)[-1]}={line[c]}" for c in shown), axis=1)
