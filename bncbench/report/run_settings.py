"""The settings and the code and data versions of the runs a report read, from what they logged.

:func:`run_settings` counts them (from :meth:`bncbench.report.results.LoggedRuns.provenance`);
:func:`settings_lines` renders them, and the runs left out, as a section of the report's README.
"""

import pandas as pd

from bncbench.report.tables import markdown_text

#: The settings in the order shown; data digests (one setting per dataset) come last.
SETTINGS = ("CV", "discretisation", "HDP iterations", "datasets", "bncbench version", "git commit", "computed in experiment",
            "bundles")
#: The ``bundles`` value of a run not imported from a bundle.
COMPUTED_HERE = "none (computed in the store)"
DIGEST_PREFIX = "data digest of "
NOT_LOGGED = "not logged"
_SHORT = 8


def run_settings(provenance: pd.DataFrame, experiment: str | None = None) -> dict[str, dict[str, int]]:
    """How many of the runs read have each value of each setting.

    Parameters
    ----------
    provenance : pandas.DataFrame
        One row per run read, as :meth:`bncbench.report.results.LoggedRuns.provenance` returns it.
    experiment : str, optional
        The report's experiment: when some runs were computed in another one and copied
        (``bncbench.tracking.reuse``), the setting ``computed in experiment`` counts them by experiment.

    Returns
    -------
    dict
        ``{setting: {value: runs}}`` for the settings of :data:`SETTINGS` (``HDP iterations`` only
        for the runs whose model has them; ``computed in experiment`` only as said above) and ``data
        digest of <dataset>`` per dataset; a value a run did not log counts as ``"not logged"``. ``bundles``
        (only when some run was imported from a bundle, ``bncbench.bundles``): the ids (content digests)
        of the bundles the runs were imported from, ``COMPUTED_HERE`` for the others.
    """
    runs = provenance.astype(object).where(provenance.notna(), NOT_LOGGED)
    dirty = runs["git_dirty"].map({"true": " with uncommitted changes", "false": ""}).fillna("")
    cv = (runs["cv.repetitions"] + "x" + runs["cv.folds"] + ", seed " + runs["cv.seed"]).where(
        provenance["cv.repetitions"].notna(), NOT_LOGGED
    )
    equal_frequency = provenance["cv.discretisation"] == "equal_frequency"
    discretisation = pd.Series("MDL", index=runs.index).where(~equal_frequency, runs["cv.bins"] + "-bin equal frequency")
    computed_in = provenance["experiment"]
    copied = experiment is not None and (computed_in.notna() & (computed_in != experiment)).any()
    values = {
        "CV": cv,
        # only where some run logged it (cv.discretisation off its default): reports of MDL runs state nothing new
        "discretisation": discretisation if equal_frequency.any() else discretisation.iloc[:0],
        "HDP iterations": runs.loc[provenance["iterations"].notna(), "iterations"],
        "datasets": pd.Series(str(runs["dataset"].nunique()), index=runs.index),
        "bncbench version": runs["bncbench"],
        "git commit": runs["git_commit"] + dirty,
        "computed in experiment": runs["experiment"] if copied else runs["experiment"].iloc[:0],
        "bundles": provenance["bundle"].fillna(COMPUTED_HERE) if provenance["bundle"].notna().any()
        else runs["bundle"].iloc[:0],
        **{f"{DIGEST_PREFIX}{d}": rows["data_digest"] for d, rows in runs.groupby("dataset", sort=True)},
    }
    return {setting: column.value_counts().to_dict() for setting, column in values.items() if len(column)}


def settings_lines(settings: dict[str, dict[str, int]], left_out: pd.DataFrame | None,
                   repeats: dict[str, int] | None = None) -> list[str]:
    """The README section stating ``settings`` (:func:`run_settings`), the runs ``left_out``
    (:meth:`bncbench.report.results.LoggedRuns.left_out`; None when the runs were not checked against the
    configuration) and the bundles' runs passed over as ``repeats`` of cells read before
    (:attr:`bncbench.report.results.LoggedRuns.repeats`)."""
    read = (
        "Not checked against a configuration: each cell's latest finished run is read, whatever its settings."
        if left_out is None
        else "Each cell's latest finished run with the `cfg_hash` of this configuration and the `data_digest` of the "
        "dataset file as it is now (where the data directory holds it; elsewhere, the one the dataset's latest run "
        "read)."
    )
    read_from = f"From the params and tags of the {sum(settings.get('CV', {}).values())} runs read:"
    lines = ["## Settings and code of the runs read", "", read, "", read_from,
             *(markdown_text(f"- {name}: {_counts(settings[name])}") for name in SETTINGS if name in settings)]
    digests = {s.removeprefix(DIGEST_PREFIX): v for s, v in settings.items() if s.startswith(DIGEST_PREFIX)}
    if digests:
        shown = [f"{dataset} {_counts(values, short=True)}" for dataset, values in digests.items()]
        lines.append(markdown_text(f"- data digests: {'; '.join(shown)}"))
    if left_out is not None and not left_out.empty:
        reasons = "; ".join(f"{n} with {reason}" for reason, n in left_out["differs"].value_counts().items())
        lines += ["", markdown_text(f"Left out: {len(left_out)} finished runs of these cells with other settings or "
                                    f"data: {reasons}.")]
    if repeats:
        passed = ", ".join(f"{n} of {bundle}" for bundle, n in repeats.items())
        lines += ["", markdown_text(
            f"Not read: {sum(repeats.values())} runs of cells that a bundle read before holds with the same numbers "
            f"({passed}; bundles are read in the order named, a folder's in name order): their times and memory are "
            "not those shown; remove a bundle that a later run supersedes.")]
    return lines + [""]


def _counts(values: dict[str, int], short: bool = False) -> str:
    """``a`` for one value, else ``a (3 runs), b (1 run)``; digests cut to 8 characters."""

    def shown(value: str) -> str:
        return value[:_SHORT] if short and value != NOT_LOGGED else value

    if len(values) == 1:
        return shown(next(iter(values)))
    return ", ".join(f"{shown(v)} ({n} run{'s' * (n != 1)})" for v, n in values.items())
