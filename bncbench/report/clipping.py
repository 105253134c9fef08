"""Where a log-loss comparison measures the clip at ``PROBABILITY_FLOOR`` rather than the models.

``log_loss`` clips the true class's probability at ``bncbench.core.metrics.PROBABILITY_FLOOR`` (1e-15):
a test row whose true class was given a probability below it (0, or as small: naive Bayes' product over
many attributes gives 1e-17 to a true class on breast-cancer, with Laplace smoothing, computed in logs) adds ``-log(1e-15) / n = 34.5 / n`` to the log
loss of a fold of n rows, whatever else the model does. The runner logs that part of each fold's log
loss as ``clipped_log_loss``. Where it is more than half of a model's mean ``log_loss`` on a
dataset, a win or loss there counts the zeros the model gave more than it measures its other
probabilities.
Runs logged before ``clipped_log_loss`` existed have no value (NaN) and get no note.
"""

from collections.abc import Iterable

import pandas as pd

from bncbench.core.metrics import PROBABILITY_FLOOR
from bncbench.report.tables import markdown_text
from bncbench.report.win_draw_loss import WinDrawLoss, paired_means

CLIPPED = "clipped_log_loss"
#: A model's log loss on a dataset is dominated by the clip when the clipped part is more than this.
DOMINATED_SHARE = 0.5


def clip_dominated(results: pd.DataFrame, a: str, b: str, datasets: Iterable[str] | None = None) -> pd.DataFrame:
    """The datasets of A vs B on ``log_loss`` where clipped rows make most of A's or B's log loss (``results``:
    the mean ``log_loss`` and, for runs that logged it, ``clipped_log_loss``); as in
    :func:`bncbench.report.win_draw_loss.win_draw_loss`, only the ``datasets`` where both have a log loss.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``model``, ``share`` (``clipped_log_loss / log_loss``), one row per
        (dataset, model) whose share is more than ``DOMINATED_SHARE``: A's, then B's, each in the
        order of the compared datasets.
    """
    compared = paired_means(results, a, b, "log_loss", datasets)[0].index
    shares = pd.DataFrame({model: _shares(results, model).reindex(compared) for model in (a, b)}, index=compared)
    long = shares.rename_axis("dataset").reset_index().melt("dataset", var_name="model", value_name="share")
    return long.loc[long["share"] > DOMINATED_SHARE].reset_index(drop=True)


def _shares(results: pd.DataFrame, model: str) -> pd.Series:
    """``clipped_log_loss / log_loss`` of a model by dataset; NaN where none was logged."""
    rows = results.loc[results["model"] == model].set_index("dataset")
    clipped = rows[CLIPPED] if CLIPPED in rows.columns else float("nan")
    return clipped / rows["log_loss"]


def clipping_note(a: str, b: str, dominated: pd.DataFrame) -> str:
    """A Markdown list item: where A vs B on ``log_loss`` measures the clip; ``""`` if nowhere.

    ``dominated`` is what :func:`clip_dominated` returns.
    """
    if dominated.empty:
        return ""
    sides = [markdown_text(f"{model} on {', '.join(rows['dataset'])}")
             for model in (a, b)
             if not (rows := dominated.loc[dominated["model"] == model]).empty]
    n = dominated["dataset"].nunique()
    return (f"- {markdown_text(a)} vs {markdown_text(b)}, log_loss: on {n} dataset{'s' if n > 1 else ''} more than "
            f"{DOMINATED_SHARE:.0%} of the mean log_loss is clipped rows (true class given "
            f"probability below {PROBABILITY_FLOOR:g}): {'; '.join(sides)}. There this comparison measures the "
            f"{PROBABILITY_FLOOR:g} clip (`{CLIPPED}` in results.csv).")


def clipping_notes(results: pd.DataFrame, wdls: Iterable[WinDrawLoss], datasets: Iterable[str] | None = None
                   ) -> list[str]:
    """The notes of :func:`clipping_note` for the ``log_loss`` comparisons among ``wdls`` that have
    one, as Markdown lines followed by a blank line; no line when none has."""
    datasets = None if datasets is None else list(datasets)
    notes = [clipping_note(w.a, w.b, clip_dominated(results, w.a, w.b, datasets)) for w in wdls
             if w.metric == "log_loss"]
    notes = [note for note in notes if note]
    return [*notes, ""] if notes else []
