"""Import bundles (``bncbench.bundles``) into an MLflow store as ordinary runs, each cell once.

A cell is one computation: runs with the same ``cfg_hash`` and ``data_digest`` in one experiment must
hold the same numbers (every metric value at every step but the timings, ``tag.TIMINGS``). Where a
bundle's run and a run of the store (or of another bundle given) disagree, the import is refused
(:class:`ConflictError`) before anything is written, naming both, unless told which to keep:
``keep="store"`` leaves the store's run and imports the rest; ``keep="bundle"`` deletes the store's
runs that disagree (an MLflow delete: ``mlflow runs restore --run-id`` brings one back) and imports
the bundle's. Two bundles given together that disagree are always refused: import the right one, or
one and then the other with ``keep``. Each run is written under the lease a sweep takes
(``bncbench.tracking.lease.claim_cell``), so that an import and a sweep on one store never give one
cell two runs.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from bncbench import tracking
from bncbench.bundles.format import METRIC_COLUMNS, PREDICTIONS_ARTIFACT, Bundle, read_bundle
from bncbench.core.errors import BncbenchError, ConfigError
from bncbench.data.digest import dataset_digest
from bncbench.tracking import lease, provenance
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, cell_records, timing, write_record

_SHORT = 8
#: Which of two runs of a cell with other numbers an import keeps (``import_bundles``'s ``keep``).
KEEP = ("store", "bundle")
#: Conflicts named in a refusal, at most.
_SHOWN = 3


class ConflictError(BncbenchError, ValueError):
    """Runs of one cell (same ``cfg_hash`` and data digest) hold other numbers."""


@dataclass
class ImportSummary:
    """What :func:`import_bundles` did, and what the bundles' runs carry that differs from here.

    Attributes
    ----------
    imported : list of str
        The runs imported, as ``<experiment>/<dataset>/<model>``.
    already_there : list of str
        The runs left alone: their cell was FINISHED in the store with the same ``cfg_hash``,
        ``data_digest`` and numbers (or came earlier in the bundles given).
    kept_store : list of str
        The runs left out because the store's run of their cell has other numbers (``keep="store"``).
    replaced : list of str
        The store's runs deleted because a bundle's run of their cell has other numbers
        (``keep="bundle"``), as ``<experiment>/<dataset>/<model> (store run <id>...)``.
    running_elsewhere : list of str
        The runs left out because a sweep runs their cell now: import again when it is done.
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
    kept_store: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    running_elsewhere: list[str] = field(default_factory=list)
    other_data: dict[str, str] = field(default_factory=dict)
    data_not_checked: list[str] = field(default_factory=list)
    code_versions: dict[str, int] = field(default_factory=dict)
    this_code: str = ""

    def lines(self) -> list[str]:
        """The summary as lines to print."""
        lines = [
            f"bncbench: {len(self.imported)} runs imported, {len(self.already_there)} already there "
            + "(a finished run of the cell with the same cfg_hash, data_digest and numbers)."
        ]
        if self.kept_store:
            lines.append(f"bncbench: {len(self.kept_store)} runs not imported: the store's run of their cell has "
                         f"other numbers and is kept (--keep store): {_listed(self.kept_store)}.")
        if self.replaced:
            lines.append(f"bncbench: {len(self.replaced)} runs of the store deleted for the bundles' runs of their "
                         f"cells, which have other numbers (--keep bundle): {_listed(self.replaced)}; "
                         "`mlflow runs restore --run-id <id>` brings one back.")
        if self.running_elsewhere:
            lines.append(f"bncbench: warning: {len(self.running_elsewhere)} runs not imported: a sweep is running "
                         f"their cells now: {_listed(self.running_elsewhere)}; import again when it is done.")
        versions = ", ".join(
            f"{code} ({n} run{'s' * (n != 1)}{', this checkout' if code == self.this_code else ''})"
            for code, n in self.code_versions.items()
        )
        lines.append(f"bncbench: code of the bundles' runs: {versions}; this checkout: {self.this_code}.")
        if self.other_data:
            shown = _listed([f"{run} ({digests})" for run, digests in self.other_data.items()], "; ")
            lines.append(f"bncbench: warning: {len(self.other_data)} runs read another version of their dataset "
                         f"than the data directory holds; the report leaves them out: {shown}.")
        if self.data_not_checked:
            lines.append(
                "bncbench: data digests not checked (datasets absent from the data directory): "
                + ", ".join(self.data_not_checked)
            )
        return lines


@dataclass(frozen=True)
class _Held:
    """A FINISHED run of a cell in the store: what names it, its model and its numbers (``_numbers``)."""

    source: str
    run_id: str
    model: str | None
    numbers: tuple

    @classmethod
    def of(cls, record: CellRecord, numbers: tuple) -> "_Held":
        origin = record.tags.get(tag.ORIGIN_BUNDLE)
        source = f"{record.name} (store run {record.run_id}{f', from bundle {origin}' if origin else ''})"
        return cls(source, record.run_id, record.tags.get(tag.MODEL), numbers)


def import_bundles(
    tracking_uri: str,
    bundle_paths,
    *,
    keep: str | None = None,
    artifact_location: str | None = None,
    artifact_location_given: bool = False,
    data_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    experiment_tags: Callable[[str], Mapping[str, str]] | None = None,
    run_names: Callable[[str, str, Mapping[str, str], Mapping[str, str]], str | None] | None = None,
) -> ImportSummary:
    """Load bundles into a store as ordinary FINISHED MLflow runs, leaving alone the cells it has.

    Every bundle is read and verified whole (:func:`bncbench.bundles.format.read_bundle`) and compared with the
    others and with the store's runs (see the module) before anything is written: a bad bundle or a conflict
    leaves the store untouched. Then each run goes into its bundle's MLflow experiment (created if absent) as it
    was logged, with its predictions if the bundle has them (:func:`imported_record`), unless the experiment has
    a FINISHED run of the same model name with the same ``cfg_hash``, ``data_digest`` and numbers: importing a
    bundle twice adds nothing. A cell a sweep copied under a renamed model (``bncbench.tracking.reuse``) comes in
    under each name, as the report reads a model's runs by its name. Each run is written under its cell's lease,
    as a sweep's: a cell a sweep is running is left to it. A run that cannot be written whole is deleted, so that
    an import stopped halfway can simply be repeated.

    Parameters
    ----------
    tracking_uri : str
        The store, ``sqlite:///...`` (created if absent) or the ``http(s)://`` address of an mlflow server.
    bundle_paths : str, Path or iterable of them
        Bundle folders (:func:`bncbench.bundles.export_bundle`).
    keep : {"store", "bundle"}, optional
        Which run of a cell to keep where the store's and a bundle's have other numbers (see the module); None:
        refuse the import.
    artifact_location : str, optional
        Where a new experiment keeps its artifacts (``bncbench.tracking.artifact_root``).
    artifact_location_given : bool
        Whether the user set ``artifact_location``: then an experiment the store already has elsewhere refuses
        the import (``tracking.check_artifact_location``) rather than ignoring it.
    data_dir : str or Path, optional
        The data directory whose dataset files the runs' data digests are compared with (default:
        ``$BNCBENCH_DATA_DIR``, else ``~/.cache/bncbench/datasets``).
    progress : callable, optional
        Told a line as each bundle is done (``bundle 3/40 tying-...: 30 runs imported, 0 already there``).
    experiment_tags : callable, optional
        ``experiment -> tags`` set on each experiment of the bundles before its first run is written (its
        description and the UI's view of it, as a sweep sets them).
    run_names : callable, optional
        ``(experiment, name, tags, params) -> name`` of each run, from its name in the bundle, as a sweep names it
        (``letter/kdb5_hdp it=50000``); None, or a None name: the bundle's.

    Returns
    -------
    ImportSummary

    Raises
    ------
    BundleError
        A bundle is missing, truncated, changed since export, of an unknown format, or its runs are not consistent
        (``bncbench.bundles.verify``).
    ConflictError
        Two bundles given disagree on a cell, or a bundle and the store do and ``keep`` is None.
    ConfigError
        No bundle given, ``keep`` is not one of ``KEEP``, or the store cannot be opened or written (a run being
        written is then deleted, the runs written before it stay).
    """
    if keep not in (None, *KEEP):
        raise ConfigError(f"keep must be one of {', '.join(KEEP)} (or not given), got {keep!r}.")
    if isinstance(bundle_paths, (str, Path)):  # one bundle, not the characters of its path
        bundle_paths = [bundle_paths]
    bundles = [read_bundle(path) for path in bundle_paths]
    if not bundles:
        raise ConfigError("no bundle to import; give the folders that bncbench export wrote.")
    numbers = {bundle.id: bundle_numbers(bundle) for bundle in bundles}
    refuse_conflicts(conflicts_between(bundles, numbers), None)
    summary = _provenance_summary(bundles, data_dir)
    client = tracking.open_store(tracking_uri)
    with tracking.quiet_store():
        names = list(dict.fromkeys(bundle.experiment for bundle in bundles))
        held = {name: _store_runs(client, name, [b for b in bundles if b.experiment == name]) for name in names}
        if keep is None:
            refuse_conflicts(_conflicts_with_store(bundles, numbers, held), tracking_uri)
        if artifact_location_given:
            for name in names:
                tracking.check_artifact_location(client, name, artifact_location)
        # every experiment checked (e.g. not deleted) before any run is written
        experiments = {name: tracking.prepare_experiment(client, name, artifact_location) for name in names}
        for name, experiment_id in experiments.items():  # before the first run, so that an import stopped has them
            for key, value in (experiment_tags(name) if experiment_tags else {}).items():
                client.set_experiment_tag(experiment_id, key, value)
        try:
            for position, bundle in enumerate(bundles, 1):
                added = _import_bundle(client, experiments[bundle.experiment], bundle, numbers[bundle.id],
                                       held[bundle.experiment], keep, summary, tracking_uri, run_names)
                if progress is not None:
                    progress(f"bundle {position}/{len(bundles)} {bundle.path.name}: {added} runs imported, "
                             f"{len(bundle.runs) - added} already there")
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: no run of this import is left looking alive, not even
            for experiment_id in experiments.values():  # one MLflow was starting when the signal came
                for run in lease.own_running_runs(client, experiment_id):
                    tracking.delete_run(client, run.info.run_id)
            raise
    return summary


def _import_bundle(client, experiment_id: str, bundle: Bundle, numbers: dict, held: dict, keep: str | None,
                   summary: ImportSummary, tracking_uri: str, run_names) -> int:
    """Import the runs of one bundle (:func:`_import_run`); how many were imported."""
    imported_before = len(summary.imported)
    for run in bundle.runs.itertuples(index=False):
        try:
            named = run_names and run_names(bundle.experiment, run.run_name, run.tags, run.params)
            _import_run(client, experiment_id, bundle, run._replace(run_name=named or run.run_name),
                        numbers[run.run_id], held, keep, summary)
        except BncbenchError:
            raise
        except Exception as err:  # MLflow raises many types (MlflowException, OSError, requests)
            raise ConfigError(
                f"run {bundle.experiment}/{run.run_name} of bundle {bundle.path} could not be written to "
                f"{tracking_uri!r}: {err}. {len(summary.imported)} runs were imported before it and stay; "
                "make the store (and its artifact location) writable and import again: what is there is "
                "left alone."
            ) from err
    return len(summary.imported) - imported_before


def _import_run(client, experiment_id: str, bundle: Bundle, run, numbers: tuple, held: dict, keep: str | None,
                summary: ImportSummary) -> None:
    """Import one run of a bundle under its cell's lease, or say in ``summary`` why not; ``held`` (the
    store's FINISHED runs by ``cfg_hash`` and ``data_digest``) is kept up to date."""
    name = f"{bundle.experiment}/{run.run_name}"
    cell = held.setdefault((run.tags[tag.CFG_HASH], run.tags.get(tag.DATA_DIGEST)), [])
    disagreeing = [other for other in cell if other.numbers != numbers]
    if disagreeing and keep == "store":
        summary.kept_store.append(name)
        return
    for other in disagreeing:  # keep == "bundle": without keep, a conflict was refused before
        tracking.delete_run(client, other.run_id)
        cell.remove(other)
        summary.replaced.append(f"{bundle.experiment}/{other.source}")
    if any(other.model == run.tags[tag.MODEL] for other in cell):
        summary.already_there.append(name)
        return
    artifacts = dict(bundle.artifacts.get(run.run_id, {}))
    if run.run_id in bundle.predictions:
        artifacts[PREDICTIONS_ARTIFACT] = bundle.predictions[run.run_id].read_bytes()
    history = list(bundle.logged[run.run_id][METRIC_COLUMNS[1:]].itertuples(index=False, name=None))
    record = imported_record(bundle, run, history=history, artifacts=artifacts)
    claimed = lease.claim_cell(client, experiment_id, record.name, record.tags, record.data_digest,
                               start_time=record.start_time)
    if claimed.status == "running elsewhere":
        summary.running_elsewhere.append(name)
        return
    if claimed.status == "finished":  # by a sweep, since the store was read
        (finished,) = _held(client, [CellRecord.of_run(tracking.get_run(client, claimed.other))])
        if finished.numbers != numbers and keep != "store":
            raise ConflictError(
                f"{name}: a sweep finished the cell while it was imported, with other numbers than bundle "
                f"{bundle.id} (run {run.run_id}): {finished.source}. The runs imported before it stay; import "
                "again, with --keep store or --keep bundle."
            )
        (summary.already_there if finished.numbers == numbers else summary.kept_store).append(name)
        cell.append(finished)
        return
    try:
        with lease.Heartbeat(client, claimed.run_id):
            write_record(client, claimed.run_id, record)
    except BaseException:  # stopped or failed before the run is whole: none is left half-written or alive
        tracking.delete_run(client, claimed.run_id)
        raise
    cell.append(_Held.of(replace(record, run_id=claimed.run_id), numbers))
    summary.imported.append(name)


def imported_record(bundle: Bundle, run, **logged) -> CellRecord:
    """The record of a bundle's ``run`` as an import writes it: FINISHED, at its original times, tagged with its
    origin (``tag.ORIGIN_RUN``, ``tag.ORIGIN_BUNDLE``); ``logged``: its metrics, history or artifacts."""
    return CellRecord(
        run_id=run.run_id,
        name=run.run_name,
        status="FINISHED",
        start_time=_millis(run.start_time),
        end_time=_millis(run.end_time),
        tags={**run.tags, tag.ORIGIN_RUN: run.run_id, tag.ORIGIN_BUNDLE: bundle.id},
        params=run.params,
        inputs=tuple(run.inputs),
        **logged,
    )


def _numbers(values: pd.DataFrame) -> tuple:
    """``((key, step, value), ...)`` of metric values but the timings, sorted, NaN as None (equal to
    itself); where a step was logged twice the later value counts."""
    values = values[~values["key"].map(timing).astype(bool)].sort_values("timestamp", kind="stable")
    latest = {(key, int(step)): float(value) for key, step, value in zip(values["key"], values["step"], values["value"])}
    return tuple(sorted((key, step, None if math.isnan(value) else value) for (key, step), value in latest.items()))


def bundle_numbers(bundle: Bundle) -> dict[str, tuple]:
    """The numbers (``_numbers``) of each run of a bundle, by its id in the bundle."""
    return {run_id: _numbers(bundle.logged[run_id]) for run_id in bundle.runs["run_id"]}


def _store_runs(client, experiment: str, bundles: list[Bundle]) -> dict[tuple, list[_Held]]:
    """The store's FINISHED runs of ``experiment`` of the cells of ``bundles``, by ``cfg_hash`` and
    ``data_digest``, with their numbers."""
    found = client.get_experiment_by_name(experiment)
    if found is None or found.lifecycle_stage != "active":
        return {}
    wanted = {cell for *_, cell in _bundle_cells(bundles)}
    records = [
        run for run in cell_records(client, found.experiment_id)
        if run.status == "FINISHED" and (run.cfg_hash, run.data_digest) in wanted
    ]
    held = defaultdict(list)
    for record, run in zip(records, _held(client, records)):
        held[(record.cfg_hash, record.data_digest)].append(run)
    return held


def _held(client, records: list[CellRecord]) -> list[_Held]:
    """``records`` of the store with their numbers, read in bulk."""
    keys = sorted({key for record in records for key in record.metrics if not timing(key)})
    values = tracking.metric_values(client, [record.run_id for record in records], keys)
    groups = defaultdict(lambda: values.iloc[:0], tuple(values.groupby("run_id", sort=False)))
    return [_Held.of(record, _numbers(groups[record.run_id])) for record in records]


def _bundle_cells(bundles: list[Bundle]):
    """Each run of the bundles as ``(bundle, run id, run name, (cfg_hash, data_digest))``."""
    for bundle in bundles:
        for run_id, run_name, tags in zip(bundle.runs["run_id"], bundle.runs["run_name"], bundle.runs["tags"]):
            yield bundle, run_id, run_name, (tags[tag.CFG_HASH], tags.get(tag.DATA_DIGEST))


def conflicts_between(bundles: list[Bundle], numbers: dict) -> list[str]:
    """The cells that two of the bundles given hold with other numbers, each as text naming both."""
    first, found = {}, []
    for bundle, run_id, run_name, cell in _bundle_cells(bundles):
        other = first.setdefault((bundle.experiment, *cell), (bundle.id, run_id, run_name, numbers[bundle.id][run_id]))
        if other[3] != numbers[bundle.id][run_id]:
            found.append(f"{bundle.experiment}/{run_name}: bundle {bundle.id} (run {run_id}) and bundle "
                         f"{other[0]} ({other[2]}, run {other[1]})")
    return found


def _conflicts_with_store(bundles: list[Bundle], numbers: dict, held: dict) -> list[str]:
    """The bundles' runs whose cell the store holds with other numbers, each as text naming both."""
    found = [
        f"{bundle.experiment}/{run_name}: bundle {bundle.id} (run {run_id}) and the store's {other.source}"
        for bundle, run_id, run_name, cell in _bundle_cells(bundles)
        for other in held[bundle.experiment].get(cell, [])
        if other.numbers != numbers[bundle.id][run_id]
    ]
    return list(dict.fromkeys(found))


def refuse_conflicts(found: list[str], tracking_uri: str | None) -> None:
    """Raise ConflictError naming the conflicts ``found``, between the bundles given (``tracking_uri``
    None) or with the store of ``tracking_uri``."""
    if not found:
        return
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    if tracking_uri is None:
        what, choose = "the bundles given", "import the one whose runs are right, or one and then the other with --keep"
    else:
        what = f"the bundles and the store {tracking_uri}"
        choose = ("keep one: --keep store leaves the store's runs and imports the others, --keep bundle deletes "
                  "them (mlflow runs restore brings one back) and imports the bundles'")
    raise ConflictError(
        f"{what} disagree on {len(found)} cells (runs with the same cfg_hash and data digest, other numbers): "
        f"{'; '.join(found[:_SHOWN])}{more}. Nothing was imported; {choose}."
    )


def _listed(names: list[str], separator: str = ", ") -> str:
    return separator.join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


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
