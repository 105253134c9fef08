"""What differs from the paper: each published table's protocol beside that of the runs read.

A published table states the paper's settings (:attr:`PublishedTable.protocol`). Ours come from what
the report knows: the settings the runs read logged (:func:`bncbench.report.run_settings.run_settings`),
the datasets where both models of a cell have runs, whether the models the cells name see
MDL-discretised folds (:func:`bncbench.protocol.models.discretises`), and the table's reading of the
paper's forest (:attr:`PublishedTable.forest`). :func:`protocol_rows` sets them side by side,
:func:`protocol_lines` renders those of one table in ``published.md`` and :func:`differences_section`
those that differ, over all the tables, at the top of the report.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from bncbench.core.errors import ConfigError
from bncbench.protocol.models import discretises, model_spec
from bncbench.report.published_table import PublishedTable
from bncbench.report.tables import markdown_table

#: What bncbench's cross-validation does to a model's folds (``bncbench.protocol.cross_validation``),
#: by :func:`bncbench.protocol.models.discretises`.
DISCRETISATION = {True: "MDL", False: "none (raw attributes)"}
NOT_LOGGED = "not logged"
#: The config keys that set each setting of ours; an override of one of them in the report's command
#: is named as the reason ours differs.
CONFIG_KEYS = {
    "datasets": ("experiment.datasets", "suite"),
    "CV": ("cv.repetitions", "cv.folds", "cv.seed"),
    "discretisation": ("cv.discretisation", "cv.bins", "cv.sample_rows"),
    "HDP iterations": ("hdp.iterations",),
}
#: Where ours comes from when no override of the command sets it.
SOURCES = {
    "datasets": "the experiment's datasets where both models of a cell have runs",
    "CV": "`cv.repetitions` x `cv.folds` of the runs read",
    "HDP iterations": "`hdp.iterations` of the runs read",
    "discretisation": "bncbench's cross-validation, fitted on each training fold, for the table's models",
    "forest": "the model the table's cells compare with, picked by its key in `report.published`",
    "m-estimate": "the reading of the paper's m-estimate the table's cells compare with, picked by its key in "
    "`report.published`",
}


#: How ours stands to the paper's: the same, different, or a reading of a setting the paper leaves partly open
#: (:attr:`PublishedTable.open_settings`), which is neither.
SAME, DIFFERS, READING = "same", "**differs**", "a reading: the paper leaves it open"


@dataclass(frozen=True)
class ProtocolRow:
    """One setting of a published table's protocol: the paper's value, ours, and how they stand (``status``:
    ``SAME``, ``DIFFERS`` or ``READING``)."""

    setting: str
    paper: str
    ours: str
    status: str

    @property
    def same(self) -> bool:
        return self.status == SAME


def protocol_rows(table: PublishedTable, comparison: pd.DataFrame,
                  settings: Mapping[str, Mapping[str, int]] | None = None) -> list[ProtocolRow]:
    """The settings of ``table.protocol``, the paper's beside ours: those of the runs read (``settings``,
    :func:`bncbench.report.run_settings.run_settings`) and of our records beside the table (``comparison``,
    :func:`bncbench.report.side_by_side.compare_published`).

    Returns
    -------
    list of ProtocolRow
        In the order of ``table.protocol``. Ours is the same when it has one value, equal to the
        paper's or starting with it and a comma ("5x2, seed 1" for "5x2"); a reading where the table says
        the paper leaves the setting open (``table.open_settings``), whatever ours is.
    """
    compared = comparison.loc[comparison["status"] == ""]
    rows = []
    for setting, paper in table.protocol.items():
        ours = _ours(setting, table, compared, settings or {})
        same = len(ours) == 1 and (ours[0] == paper or ours[0].startswith(f"{paper},"))
        status = READING if setting in table.open_settings else SAME if same else DIFFERS
        rows.append(ProtocolRow(setting, paper, ", ".join(ours) or NOT_LOGGED, status))
    return rows


def _ours(setting: str, table: PublishedTable, compared: pd.DataFrame, settings: Mapping[str, Mapping[str, int]]
          ) -> list[str]:
    """Our values of ``setting``: the datasets as the compared cells count them (the runs read may cover
    more, e.g. while a protocol's slices go in), the discretisation of the models its cells name, the table's
    forest, else the values the runs logged."""
    if setting == "datasets" and not compared.empty:
        per_cell = (compared["wins"] + compared["draws"] + compared["losses"]).astype(int)
        return [str(n) for n in sorted(per_cell.unique())]
    if setting == "discretisation" and "discretisation" in settings:  # logged by runs off MDL, the default
        return list(settings["discretisation"])
    if setting == "discretisation":
        seen = {_discretises(model) for cell in table.cells for model in (cell.a, cell.b) if model is not None}
        return sorted(DISCRETISATION[value] for value in seen - {None})
    if setting == "forest":
        return [table.forest] if table.forest else []
    if setting == "m-estimate":
        return [table.competitor] if table.competitor else []
    return list(settings.get(setting) or {})


def _discretises(model: str) -> bool | None:
    """Whether the model sees discretised folds; None for a model no config gives (not in the catalogue)."""
    try:
        return discretises(model_spec(model))
    except ConfigError:
        return None


def protocol_lines(rows: Sequence[ProtocolRow]) -> list[str]:
    """One table's protocol beside ours, each setting marked as the same or not (``published.md``)."""
    if not rows:
        return []
    return [
        "The paper's protocol and ours (from the runs' logged params and the table's models; datasets: "
        "those where both models of a cell have runs):",
        "",
        markdown_table(["setting", "paper", "ours", ""], [[r.setting, r.paper, r.ours, r.status] for r in rows]),
    ]


def differences_section(published: Sequence[tuple[PublishedTable, pd.DataFrame]],
                        settings: Mapping[str, Mapping[str, int]], command: str) -> list[str]:
    """The README section "What differs from the paper, and why", over every published table (``Report.published``
    and ``Report.settings``); an override of the report's ``command`` that sets a setting that differs is named
    as the reason.

    Returns
    -------
    list of str
        Markdown lines; none without published tables. A setting that differs in several tables in the
        same way is one row naming them all.
    """
    if not published:
        return []
    differing: dict[tuple[str, str, str], list[str]] = {}
    same: dict[tuple[str, str], list[str]] = {}
    readings: dict[tuple[str, str], dict[str, list[str]]] = {}
    for table, comparison in published:
        for row in protocol_rows(table, comparison, settings):
            if row.status == SAME:
                same.setdefault((row.setting, row.paper), []).append(table.heading)
            elif row.status == READING:
                readings.setdefault((row.setting, row.paper), {}).setdefault(row.ours, []).append(table.heading)
            else:
                differing.setdefault((row.setting, row.paper, row.ours), []).append(table.heading)
    def where(tables: list[str]) -> str:
        return "" if len(tables) == len(published) else f" in {', '.join(tables)}"

    lines = ["## What differs from the paper, and why", ""]
    if differing:
        rows = [[setting, paper, ours, _why(setting, command), "; ".join(tables)]
                for (setting, paper, ours), tables in differing.items()]
        lines += [
            "Each published table's protocol beside ours, where they differ (all settings per table: "
            "[published.md](published.md)):",
            "",
            markdown_table(["setting", "paper", "ours", "why ours", "tables"], rows),
        ]
    else:
        lines += ["Nothing, in the settings the published tables state ([published.md](published.md)).", ""]
    if same:
        shown = "; ".join(f"{setting} ({paper}){where(tables)}" for (setting, paper), tables in same.items())
        lines += [f"The same as the paper: {shown}.", ""]
    for (setting, paper), read in readings.items():
        shown = "; ".join(f"{ours}{where(tables)}" for ours, tables in read.items())
        lines += [f"Left partly open by the paper, {setting}: {paper}. Read here as: {shown}.", ""]
    return lines


def _why(setting: str, command: str) -> str:
    """The overrides of ``command`` that set ``setting``, else where ours comes from."""
    keys = CONFIG_KEYS.get(setting, ())
    overrides = [word for word in command.split() if word.partition("=")[0].lstrip("+~") in keys]
    if overrides:
        return ", ".join(f"`{override}`" for override in overrides) + " in this report's command"
    return SOURCES.get(setting, "")
