"""Import bundles (``bncbench.bundles``) into an MLflow store as ordinary runs, each cell once."""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bncbench.tracking import provenance
from bncbench import tracking
from bncbench.bundles.format import (
    PREDICTIONS_ARTIFACT,
    Bundle,
    read_bundle,
)
from bncbench.data.digest import dataset_digest
from bncbench.core.errors import BncbenchError, ConfigError
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, cell_records, write_record

_SHORT = 8
#: The fields of a logged metric value (``mlflow.entities.Metric``) in the bundle's metrics table.
_METRIC_FIELDS = ["key", "value", "step", "timestamp"]


@dataclass
class ImportSummary:
    """What :func:`import_bundles` did, and what the bundles' runs carry that differs from here.

    Attributes
    ----------
    imported : list of str
        The runs imported, as ``<experiment>/<dataset>/<model>``.
    already_there : list of str
        The runs left alone: their cell was FINISHED in the store with the same ``cfg_hash`` and
        ``data_digest`` (or came earlier in the bundles given).
    other_data : dict of str to str
        Runs (imported or not) that read another version of their dataset than the data directory
        holds, and the two digests; the report, which reads the data as it is now, leaves them out.
    data_not_checked : list of str
        Datasets of the bundles that the data directory does not hold.
    code_versions : dict of str to int
        The code versions (bncbench version, git commit) of the bundles' runs, and how many runs each.
    this_code : str
        The code version of this checkout, in the same form.
    """

    imported: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)
    other_data: dict[str, str] = field(default_factory=dict)
    data_not_checked: list[str] = field(default_factory=list)
    code_versions: dict[str, int] = field(default_factory=dict)
    this_code: str = ""

    def lines(self) -> list[str]:
        """The summary as lines to print."""
        lines = [
            f"bncbench: {len(self.imported)} runs imported, {len(self.already_there)} already there "
            + "(a finished run of the cell with the same cfg_hash and data_digest)."
        ]
        versions = ", ".join(
            f"{code} ({n} run{'s' * (n != 1)}{', this checkout' if code == self.this_code else ''})"
            for code, n in self.code_versions.items()
        )
        lines.append(f"bncbench: code of the bundles' runs: {versions}; this checkout: {self.this_code}.")
        if self.other_data:
            shown = "; ".join(f"{run} ({digests})" for run, digests in list(self.other_data.items())[:5])
            more = f" and {len(self.other_data) - 5} more" if len(self.other_data) > 5 else ""
            lines.append(
                f"bncbench: warning: {len(self.other_data)} runs read another version of their dataset than "
                f"the data directory holds; the report leaves them out: {shown}{more}."
            )
        if self.data_not_checked:
            lines.append(
                "bncbench: data digests not checked (datasets absent from the data directory): "
                + ", ".join(self.data_not_checked)
            )
        return lines


def import_bundles(
    tracking_uri: str,
    bundle_paths,
    *,
    artifact_location: str | None = None,
    data_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ImportSummary:
    """Load bundles into a store as ordinary FINISHED MLflow runs, leaving alone the cells it has.

    Every bundle is read and checked whole (:func:`bncbench.bundles.format.read_bundle`) before the
    store is opened: a bad one refuses the whole import and the store is left untouched. Then each
    run goes into the MLflow experiment of its bundle (created if absent) with its name, original
    start and end times, tags, params, dataset inputs, every metric value with its step and time,
    and its predictions if the bundle has them, tagged with its origin (``tag.ORIGIN_RUN``,
    ``tag.ORIGIN_BUNDLE``) — unless the experiment has a FINISHED run of the same model name with the
    same ``cfg_hash`` and ``data_digest``: importing a bundle twice adds nothing. A cell a sweep copied
    under a renamed model (same ``cfg_hash``, ``bncbench.tracking.reuse``) comes in under each name, as
    the sweep left it: the report reads a model's runs by its name. A run that cannot be written whole is
    deleted, so that an import stopped halfway leaves no partial run and can simply be repeated.

    Parameters
    ----------
    tracking_uri : str
        The store, ``sqlite:///...`` (created if absent) or the ``http(s)://`` address of an mlflow server.
    bundle_paths : str, Path or iterable of them
        Bundle folders (:func:`bncbench.bundles.export_bundle`).
    artifact_location : str, optional
        Where a new experiment keeps its artifacts (``bncbench.tracking.artifact_root``).
    data_dir : str or Path, optional
        The data directory whose dataset files the runs' data digests are compared with (default:
        ``$BNCBENCH_DATA_DIR``, else ``~/.cache/bncbench/datasets``).
    progress : callable, optional
        Told a line as each bundle is done (``bundle 3/40 tying-...: 30 runs imported, 0 already there``).

    Returns
    -------
    ImportSummary

    Raises
    ------
    BundleError
        A bundle is missing, truncated, changed since export or of an unknown format.
    ConfigError
        No bundle given, or the store cannot be opened or written (a run being written is then
        deleted, the runs written before it stay).
    """
    if isinstance(bundle_paths, (str, Path)):  # one bundle, not the characters of its path
        bundle_paths = [bundle_paths]
    bundles = [read_bundle(path) for path in bundle_paths]
    if not bundles:
        raise ConfigError("no bundle to import; give the folders that bncbench export wrote.")
    summary = _provenance_summary(bundles, data_dir)
    client = tracking.open_store(tracking_uri)
    with tracking.quiet_store():
        experiments = {  # every experiment checked (e.g. not deleted) before any run is written
            name: tracking.prepare_experiment(client, name, artifact_location)
            for name in dict.fromkeys(bundle.experiment for bundle in bundles)
        }
        for position, bundle in enumerate(bundles, 1):
            imported_before = len(summary.imported)
            experiment_id = experiments[bundle.experiment]
            done = _finished_cells(client, experiment_id)
            metrics = dict(tuple(bundle.metrics.groupby("run_id", sort=False)))
            for run in bundle.runs.itertuples(index=False):
                cell = (run.tags[tag.CFG_HASH], run.tags.get(tag.DATA_DIGEST), run.tags.get(tag.MODEL))
                name = f"{bundle.experiment}/{run.run_name}"
                if cell in done:
                    summary.already_there.append(name)
                    continue
                try:
                    _import_run(client, experiment_id, bundle, run, metrics.get(run.run_id))
                except Exception as err:  # MLflow raises many types (MlflowException, OSError, requests)
                    raise ConfigError(
                        f"run {name} of bundle {bundle.path} could not be written to {tracking_uri!r}: {err}. "
                        f"{len(summary.imported)} runs were imported before it and stay; make the store (and "
                        "its artifact location) writable and import again: what is there is left alone."
                    ) from err
                done.add(cell)
                summary.imported.append(name)
            if progress is not None:
                added = len(summary.imported) - imported_before
                progress(f"bundle {position}/{len(bundles)} {bundle.path.name}: {added} runs imported, "
                         f"{len(bundle.runs) - added} already there")
    return summary


def _finished_cells(client, experiment_id: str) -> set[tuple[str, str | None, str | None]]:
    """``(cfg_hash, data_digest, model)`` of the experiment's FINISHED runs."""
    return {
        (run.cfg_hash, run.data_digest, run.tags.get(tag.MODEL))
        for run in cell_records(client, experiment_id)
        if run.status == "FINISHED" and run.cfg_hash is not None
    }


def _import_run(client, experiment_id: str, bundle: Bundle, run, metrics) -> None:
    record = CellRecord(
        run_id=run.run_id,
        name=run.run_name,
        status="FINISHED",
        start_time=_millis(run.start_time),
        end_time=_millis(run.end_time),
        tags={**run.tags, tag.ORIGIN_RUN: run.run_id, tag.ORIGIN_BUNDLE: bundle.id},
        params=run.params,
        inputs=tuple(run.inputs),
    )
    history = [] if metrics is None else list(metrics[_METRIC_FIELDS].itertuples(index=False, name=None))
    artifacts = dict(bundle.artifacts.get(run.run_id, {}))
    if run.run_id in bundle.predictions:
        artifacts[PREDICTIONS_ARTIFACT] = bundle.predictions[run.run_id].read_bytes()
    write_record(client, experiment_id, record, history, artifacts)


def _millis(value) -> int | None:
    return None if pd.isna(value) else int(value)


def _provenance_summary(bundles: list[Bundle], data_dir) -> ImportSummary:
    """The code versions of the bundles' runs, and their runs whose data digest differs from the data here."""
    here, absent = {}, set()
    summary = ImportSummary(this_code=_code(provenance.run_tags()))
    codes = Counter()
    for bundle in bundles:
        for run in bundle.runs.itertuples(index=False):
            codes[_code(run.tags)] += 1
            spec = {
                "name": run.params.get("dataset.name", run.tags[tag.DATASET]),
                "source": run.params.get("dataset.source", "store"),
            }
            key = (spec["name"], spec["source"])
            if key not in here:
                here[key] = _digest_here(spec, data_dir)
            logged = run.tags.get(tag.DATA_DIGEST)
            if here[key] is None:
                absent.add(spec["name"])
            elif logged != here[key]:
                summary.other_data[f"{bundle.experiment}/{run.run_name}"] = (
                    f"bundle {str(logged)[:_SHORT]}, data directory {here[key][:_SHORT]}"
                )
    summary.code_versions = dict(codes.most_common())
    summary.data_not_checked = sorted(absent)
    return summary


def _digest_here(spec: dict, data_dir) -> str | None:
    try:
        found = dataset_digest(spec, data_dir)
    except (BncbenchError, OSError):  # an unreadable data directory: nothing to compare with
        return None
    return found.digest if found else None


def _code(tags: dict) -> str:
    """``bncbench <version>, git <commit>`` (``with uncommitted changes`` when dirty) of a run's tags."""
    commit = str(tags.get(tag.GIT_COMMIT, "not logged"))
    dirty = " with uncommitted changes" if tags.get(tag.GIT_DIRTY) == "true" else ""
    return f"bncbench {tags.get(tag.VERSION, 'not logged')}, git {commit[:12]}{dirty}"
