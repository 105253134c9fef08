"""The ``bncbench`` command: ``run``, ``report``, ``list``, ``export``, ``import`` and ``data add`` (argparse).

A command composes the experiment once (``bncbench.app.config.compose``: a wrong name or value is one line, exit
status 2); ``python -m bncbench [overrides]`` is ``bncbench run [overrides]``. ``bncbench list`` reads the YAML
files under ``config_dir()`` directly, without composing them, so that it answers at once.
"""

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from bncbench.app import some_of
from bncbench.core.config_files import config_dir
from bncbench.core.errors import BncbenchError, ConfigError
from bncbench.core.uris import masked
from bncbench.data.store import STORE_FORMATS

DESCRIPTION = ("Benchmark suite for Bayesian network classifiers: 5x2 cross-validation of every (dataset, model) "
               "cell of an experiment, logged to MLflow, and the win-draw-loss tables of its comparisons.")
OVERRIDES_HELP = ("settings as key=value, e.g. experiment=kdb, experiment.datasets=[iris,zoo], hdp.iterations=1000, "
                  "runs_dir=/scratch/runs, tracking_uri=http://host:5000, executor.n_jobs=4, executor=slurm "
                  "(see conf/config.yaml)")
REPLACE_HELP = ("write the report over one of other cells, or tracked by git (a committed one), that is in its place; "
                "without it such a report is refused")
#: What ``bncbench list`` lists: the config group (folder of ``conf/``) of each.
LISTED_GROUPS = {"experiments": "experiment", "models": "models", "datasets": "dataset", "suites": "suite"}


def parser(prog: str = "bncbench") -> argparse.ArgumentParser:
    """The ``bncbench`` argument parser, one subparser per subcommand."""
    main = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    commands = main.add_subparsers(dest="command", metavar="<command>", required=True)
    run = commands.add_parser(
        "run",
        help="run an experiment (default: smoke); finished cells are skipped, so it also resumes",
        description="Run every (dataset, model) cell of an experiment (5x2 cross-validation, one MLflow "
        "run per cell; cells already finished are skipped), smallest first, then write its report and "
        "say how to browse the runs. It first prints the plan: cells to run and finished, and the "
        "expected CPU-hours and wall time.",
    )
    run.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    run.add_argument("--dry-run", action="store_true", help="print the plan and its cost, run nothing")
    run.add_argument("--cfg", choices=["job"], help="print the composed config (job), run nothing")
    run.add_argument("--replace", action="store_true", help=REPLACE_HELP)
    report = commands.add_parser(
        "report",
        help="write an experiment's tables again from its logged runs (nothing reruns)",
        description="Write the report of an experiment (win-draw-loss tables with sign tests as Markdown, "
        "LaTeX and CSV, figures) from the runs logged for the configuration the overrides give.",
    )
    report.add_argument("overrides", nargs="*", help=OVERRIDES_HELP + "; report.round=3, report_dir=...")
    report.add_argument("--replace", action="store_true", help=REPLACE_HELP)
    report.add_argument(
        "--allow-uncommitted", action="store_true",
        help="write a report into a folder git tracks from runs made by code with uncommitted changes (refused "
        "without it: nobody could rebuild that code)",
    )
    report.add_argument("--bundles", nargs="+", metavar="FOLDER",
                        help="read the runs from these bundles (each a bundle's folder or a folder of bundles, e.g. "
                        "reports/*/bundles; those of other experiments are passed by) instead of the MLflow store")
    listing = commands.add_parser("list", description="List the named configs of one kind, one line each.",
                                  help="list the experiments, models, datasets or suites that overrides can name")
    listing.add_argument("kind", choices=list(LISTED_GROUPS), help="what to list")
    listing.add_argument("overrides", nargs="*", metavar="data_dir=...",
                         help="datasets: the data directory whose datasets are described (default: as a run's)")
    export = commands.add_parser(
        "export",
        help="write an experiment's finished cells to a portable bundle (to commit, or to merge elsewhere)",
        description="Write the finished cells of the configuration the overrides give (tracking_uri, "
        "experiment=..., its datasets, models and settings such as hdp.iterations: the runs its report "
        "reads) to a new bundle folder: a manifest and parquet tables of every run's tags, params, "
        "provenance and per-fold metrics, which `bncbench import` loads into any store.",
    )
    export.add_argument("overrides", nargs="*", help=OVERRIDES_HELP)
    export.add_argument("--out", help="folder to write the bundle into (default: <runs_dir>/bundles, beside the store)")
    export.add_argument("--predictions", action="store_true", help="also carry each run's predictions (large)")
    export.add_argument("--all", action="store_true", dest="every_configuration",
                        help="every finished cell of the experiment in the store, whatever its datasets, models and "
                        "settings (e.g. to move a whole store)")
    load = commands.add_parser(
        "import",
        help="load bundles into a store as ordinary runs; cells it has finished already are left alone",
        description="Load one or more bundles (folders written by `bncbench export`) into the store of "
        "tracking_uri=... (default: runs/mlflow.db), checking each whole before writing anything; a cell "
        "already finished there with the same cfg_hash, data digest and numbers is left alone, so importing "
        "twice adds nothing; one finished there with other numbers is a conflict, which refuses the import "
        "unless --keep says which run to keep. Then `bncbench report experiment=...` reads them as usual.",
    )
    load.add_argument("items", nargs="+", metavar="bundle | override", help="bundle folders, then overrides")
    load.add_argument("--keep", choices=["store", "bundle"],
                      help="where the store and a bundle hold one cell (cfg_hash and data digest) with other numbers: "
                      "keep the store's run (the bundle's is not imported) or the bundle's (the store's is deleted; "
                      "mlflow runs restore brings it back); without it such an import is refused")
    _add_data_parser(commands)
    return main


def _add_data_parser(commands) -> None:
    """``bncbench data add``: a dataset's original files converted into the data directory; ``bncbench data
    convert``: datasets of the data directory rewritten in another format."""
    data = commands.add_parser("data", help="add a dataset to the data directory from its original files, or "
                               "rewrite datasets there as CSV or parquet",
                               description="Manage the datasets of the data directory (data_dir).")
    actions = data.add_subparsers(dest="data_command", metavar="<data command>", required=True)
    add = actions.add_parser(
        "add",
        help="convert a dataset's original files (ARFF, libsvm, CSV) into the data directory",
        description="Convert a dataset's original files into <data_dir>/<name>.csv.gz and its schema.json entry "
        "(bncbench.data.original_files), streaming, so files of millions of rows take little memory; nothing is "
        "written unless the whole conversion succeeds. Then conf/dataset/<name>.yaml (source: store) runs on it.",
    )
    add.add_argument("name", help="the dataset's name in the data directory, that of its conf/dataset/<name>.yaml")
    add.add_argument("files", nargs="+", metavar="file | override",
                     help="the original files, read one after another as one table (.gz, .bz2, .xz: compressed), "
                     "then overrides: data_dir=...")
    add.add_argument("--format", metavar="arff|libsvm|csv", help="default: from the suffix (.arff, .csv, .libsvm, .svm)")
    add.add_argument("--class", dest="class_column", metavar="COLUMN",
                     help="the class column: a name or a number from 1 (default: the last; libsvm: the label)")
    add.add_argument("--nominal", action="append", default=[], metavar="COLUMNS",
                     help="nominal columns (names, numbers, ranges: 2-4,7, or all); other csv and libsvm columns are numeric")
    add.add_argument("--drop", action="append", default=[], metavar="COLUMNS", help="columns to leave out (e.g. ids)")
    add.add_argument("--missing", action="append", default=[], metavar="TOKEN",
                     help="a token that stands for a missing value (repeatable), besides an empty field and ARFF's ?")
    add.add_argument("--header", action="store_true", help="csv: the first row names the columns")
    add.add_argument("--names", metavar="NAMES", help="csv: the column names, comma-separated (default: att1, att2, ...)")
    add.add_argument("--sep", default=",", metavar="SEPARATOR",
                     help="csv: the separator, one character, tab or whitespace (default: ,)")
    add.add_argument("--replace", action="store_true", help="replace a dataset of that name in the data directory")
    add.add_argument("--store-format", choices=list(STORE_FORMATS), default="csv",
                     help="the format of its file in the data directory: csv (<name>.csv.gz, the default) or parquet "
                     "(<name>.parquet: read faster, a column at a time; for millions of rows)")
    convert = actions.add_parser(
        "convert", help="rewrite datasets of the data directory in another format (csv or parquet)",
        description="Rewrite datasets of the data directory in another format: <name>.csv.gz as <name>.parquet "
        "(--to parquet) or back (--to csv), the same values (bncbench.data.store), the old file removed once the new "
        "one is in place. A run reads the file in the format it finds; the data's digest changes with the file.",
    )
    convert.add_argument("names", nargs="+", metavar="name | override",
                         help="the datasets' names in the data directory, then overrides: data_dir=...")
    convert.add_argument("--to", required=True, choices=list(STORE_FORMATS), help="the format to write")


def main(argv: Sequence[str] | None = None, prog: str = "bncbench") -> int:
    """Run the ``bncbench`` command; ``argv`` defaults to ``sys.argv[1:]``. Returns the exit status.

    Arguments that begin with an override (``experiment=kdb``) rather than a subcommand are those of
    ``run``, as ``python -m bncbench`` has always taken them.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    _quiet_libraries()
    if not argv or (argv[0] not in ("-h", "--help") and ("=" in argv[0] or argv[0].startswith(("-", "~", "+")))):
        argv.insert(0, "run")
    command_line = parser(prog)
    args, extra = command_line.parse_known_args(argv)
    positionals = {"import": "items", "data": "names" if getattr(args, "data_command", None) == "convert" else "files"
                   }.get(args.command, "overrides")
    if extra and not any(arg.startswith("-") for arg in extra):
        # arguments after an option (export x=1 --out d y=2): argparse leaves them over, they are the command's
        setattr(args, positionals, [*getattr(args, positionals), *extra])
    elif extra:
        command_line.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        status = _dispatch(args, " ".join([prog, *argv[1:]]))
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return status
    except BrokenPipeError:  # the reader went away (bncbench list models | head): nothing more to say
        # Python's advice (docs of the signal module, "Note on SIGPIPE"): output to devnull, so that the
        # flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _dispatch(args, command: str) -> int:
    """Run the subcommand ``args`` name (each looked up as it is called); an error a user can act on is one line."""
    commands = {
        "run": lambda: run(args.overrides, command, args.dry_run, args.cfg, args.replace),
        "report": lambda: report(args.overrides, args.replace, args.bundles, args.allow_uncommitted),
        "export": lambda: export(args.overrides, args.out, args.predictions, args.every_configuration),
        "import": lambda: import_(args.items, args.keep),
        "data": lambda: data_add(args) if args.data_command == "add" else data_convert(args),
        "list": lambda: print("\n".join(list_configs(args.kind, _listing_data_dir(args.kind, args.overrides)))),
    }
    try:
        return commands[args.command]() or 0
    except BncbenchError as err:
        print(f"bncbench: error: {_one_line(masked(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise
    except OSError as err:  # a file or folder the command was given, or met, that cannot be used
        print(f"bncbench: error: {masked(_os_error(err))}", file=sys.stderr)
        return 2
    except Exception as err:
        if not _store_locked(err):
            raise
        print("bncbench: error: the SQLite store is locked by another process (SQLite waited for it, then "
              f"gave up: {_one_line(str(getattr(err, 'orig', err)))}); try again when it is done.", file=sys.stderr)
        return 2


def _store_locked(err: BaseException) -> bool:
    """Whether ``err`` is SQLite's "database is locked" (as sqlite3 or SQLAlchemy raise it, directly or as the
    cause of MLflow's error), met after the store was opened."""
    while err is not None:
        if type(err).__name__ == "OperationalError" and "database is locked" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def _one_line(text: str) -> str:
    """A message of several lines (e.g. Hydra's, with a caret under the fault) as one line."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip() not in ("", "^"))


def _os_error(err: OSError) -> str:
    """``cannot use /x/y: Not a directory``: an OSError in one line, naming its file."""
    names = " -> ".join(str(name) for name in (err.filename, err.filename2) if name is not None)
    reason = err.strerror or str(err)
    return f"cannot use {names}: {reason}" if names else reason


def _quiet_libraries() -> None:
    """MLflow and its database migrations (alembic) log at INFO, which says nothing a user acts on: MLflow
    sets its level from ``MLFLOW_LOGGING_LEVEL`` when imported (here and in the workers), alembic's is set;
    MLflow's progress bars of downloads are off."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per file exported
    logging.getLogger("alembic").setLevel(logging.WARNING)


def run(overrides: Sequence[str], command: str, dry_run: bool = False, show: str | None = None,
        replace: bool = False) -> int:
    """Run an experiment: compose its plan once, then run it (``bncbench.app.sweep.run_plan``).

    ``command`` is the command line as the user typed it, which resumes an interrupted sweep.
    """
    from bncbench.app.config import compose

    composed = compose(overrides)  # a wrong setting stops here, before the sweep's libraries load
    from bncbench.app.sweep import run_plan, show_plan

    if show == "job":
        print(masked(yaml.safe_dump(dataclasses.asdict(composed.settings), sort_keys=False)), end="")
        return 0
    if dry_run:
        return show_plan(composed)
    return run_plan(composed, command, replace)


def report(overrides: Sequence[str], replace: bool = False, bundles: Sequence[str] | None = None,
           allow_uncommitted: bool = False) -> int:
    """Write the report of the configuration ``overrides`` compose from the logged runs: those of its
    store, or those of the ``bundles`` folders."""
    from bncbench.app.config import compose
    from bncbench.app.reporting import bundled_runs, write_plan_report
    from bncbench.app.runs_dir import report_dir
    from bncbench.report.writer import plan_runs, report_cells

    composed = compose(overrides)
    settings, plan = composed.settings, composed.plan
    cells = {cell.key for cell in plan.cells}
    before = report_cells(Path(report_dir(settings)) / plan.experiment)  # a subset run's report is replaced: say so
    runs = bundled_runs(plan, bundles) if bundles else plan_runs(plan, settings.tracking_uri)
    place = write_plan_report(plan, runs, report_dir(settings), settings.data_dir, replace=replace,
                              scratch=settings.report_dir is None, allow_uncommitted=allow_uncommitted)
    print(f"report written to {place}")
    after = report_cells(place)
    finished = len(cells & after)
    replaced = f"; it replaced the report of {len(before)} cells that was there" if before and before != after else ""
    if finished < len(cells) or replaced:
        subset = ("; to report only the cells a subset run made, give its overrides (experiment.datasets=[...] "
                  "experiment.models=[...])" if finished < len(cells) else "")
        print(f"bncbench: {finished} of the {len(cells)} cells of this configuration have a finished run{subset}"
              f"{replaced}.")
    return 0


def export(overrides: Sequence[str], out: str | None, predictions: bool, every_configuration: bool) -> int:
    """Export the finished cells of the configuration ``overrides`` give, or with
    ``every_configuration`` those of its experiment in any configuration (``bncbench.bundles``)."""
    from bncbench.app.config import compose
    from bncbench.app.runs_dir import bundle_dir
    from bncbench.bundles import export_bundle, read_bundle

    composed = compose(overrides)
    settings, plan = composed.settings, composed.plan
    folder = Path(out) if out else bundle_dir(settings)
    cells = None if every_configuration else plan.by_key()
    try:
        bundle = export_bundle(settings.tracking_uri, plan.experiment, folder, cells=cells, predictions=predictions)
    except OSError as err:
        raise ConfigError(f"cannot write the bundle into {folder} ({'a file' if folder.is_file() else _os_error(err)});"
                          " name a folder that can be created or written with --out (or runs_dir=...).") from None
    exported = read_bundle(bundle).runs
    print(f"bncbench: bundle written to {bundle}: {len(exported)} runs", end="")
    if cells is not None:
        done = {(tags["dataset"], tags["model"]) for tags in exported["tags"]}
        missing = [cell.name for cell in plan.cells if cell.key not in done]
        lacking = f"; no finished run of {some_of(missing)}" if missing else ""
        print(f", of the {len(plan)} cells of this configuration{lacking}", end="")
    print(".")
    return 0


def import_(items: Sequence[str], keep: str | None = None) -> int:
    """Import the bundles among ``items`` into the store the overrides among them name, keeping the
    store's or the bundles' run of a cell they disagree on as ``keep`` says (``bncbench.bundles.load``)."""
    from bncbench import tracking
    from bncbench.app.config import compose
    from bncbench.app.interrupts import signal_of, sigterm_as_interrupt
    from bncbench.app.runs_dir import artifact_location
    from bncbench.app.ui import browse_hint, imported_experiment_tags, imported_run_name
    from bncbench.bundles import import_bundles
    from bncbench.data import resolve_data_dir

    settings = compose([item for item in items if "=" in item]).settings
    try:
        with sigterm_as_interrupt():
            summary = import_bundles(
                settings.tracking_uri,
                [item for item in items if "=" not in item],
                keep=keep,
                artifact_location=artifact_location(settings),  # beside the database, as a sweep's
                artifact_location_given=settings.artifact_location is not None,
                data_dir=resolve_data_dir(settings.data_dir),
                progress=lambda line: print(f"bncbench: {line}", file=sys.stderr, flush=True),
                experiment_tags=imported_experiment_tags,  # its description, and the view the printed link opens
                run_names=imported_run_name,  # as its sweep names them: letter/kdb5_hdp it=50000
            )
    except KeyboardInterrupt as err:
        signum = signal_of(err)
        print(f"bncbench: import interrupted ({signum.name}): the runs imported before stay, the one being written was "
              "deleted; the same command imports the rest.", file=sys.stderr)
        return 128 + signum
    print("\n".join(summary.lines()))
    client = tracking.open_store(settings.tracking_uri, check=False)
    for name in dict.fromkeys(bundle.split("/")[0] for bundle in summary.imported + summary.already_there):
        print(browse_hint(settings.tracking_uri, tracking.experiment_id(client, name)))
    return 0


def data_add(args) -> int:
    """Convert the original files ``args`` name into the data directory the overrides among them give."""
    from bncbench.app.config import compose
    from bncbench.data import resolve_data_dir
    from bncbench.data.original_files import add_original_files

    data_dir = resolve_data_dir(compose([item for item in args.files if "=" in item]).settings.data_dir)
    entry = add_original_files(
        data_dir, args.name, [item for item in args.files if "=" not in item], file_format=args.format,
        class_column=args.class_column, nominal=[item for items in args.nominal for item in items.split(",")],
        drop=[item for items in args.drop for item in items.split(",")], missing=args.missing, header=args.header,
        names=args.names.split(",") if args.names is not None else None, separator=args.sep, replace=args.replace,
        store_format=args.store_format,
    )
    numeric = sum(attribute["type"] == "numeric" for attribute in entry["attributes"])
    print(f"bncbench: added {args.name} to {data_dir}: {entry['rows']} rows, {len(entry['attributes'])} attributes "
          f"({numeric} numeric), {len(entry['class']['values'])} classes.")
    if not (config_dir() / "dataset" / f"{args.name}.yaml").is_file():
        print(f"bncbench: no conf/dataset/{args.name}.yaml names it yet: add one (name: {args.name}, source: store).")
    return 0


def data_convert(args) -> int:
    """Rewrite the datasets ``args`` name in the format ``args.to``, in the data directory the overrides give."""
    from bncbench.app.config import compose
    from bncbench.data import resolve_data_dir
    from bncbench.data.store import convert_store_file

    data_dir = resolve_data_dir(compose([item for item in args.names if "=" in item]).settings.data_dir)
    for name in [item for item in args.names if "=" not in item]:
        before, after = convert_store_file(data_dir, name, args.to)
        print(f"bncbench: {name} in {data_dir}: " + (f"{before.name} ({before.stat().st_size:,} bytes) is already "
              f"{args.to}" if before == after else f"{after.name} ({after.stat().st_size:,} bytes) written, "
              f"{before.name} removed"))
    return 0


def _listing_data_dir(kind: str, overrides: list[str]) -> Path | None:
    """The data directory ``list datasets`` describes (``data_dir=...``, else a run's default), said on stderr
    with how many of the configs' datasets it holds: a missing directory is named, not met by silence."""
    from bncbench.data import resolve_data_dir
    from bncbench.data.store import DATA_DIR_HINT, read_schema

    others = [override for override in overrides if kind != "datasets" or not override.startswith("data_dir=")]
    if others:
        allowed = "data_dir=... alone" if kind == "datasets" else "no override"
        raise ConfigError(f"bncbench list {kind} takes {allowed}, got {' '.join(others)!r}.")
    if kind != "datasets":
        return None
    data_dir = resolve_data_dir(dict(override.split("=", 1) for override in overrides).get("data_dir"))
    if not data_dir.is_dir():
        print(f"bncbench: the data directory {data_dir} does not exist: a run fetches the datasets with an OpenML id "
              "into it on first use (network needed); the others are converted into it with `bncbench data add`; "
              f"{DATA_DIR_HINT}.", file=sys.stderr)
    else:
        held = len(set(read_schema(data_dir)) & {path.stem for path in (config_dir() / "dataset").glob("*.yaml")})
        print(f"bncbench: the data directory {data_dir} holds {held} of the datasets listed.", file=sys.stderr)
    return data_dir


def list_configs(kind: str, data_dir: Path | None = None) -> list[str]:
    """One line per config of ``kind`` (a key of ``LISTED_GROUPS``): its name and what it is (a dataset's from the
    data directory ``data_dir``)."""
    if kind == "models":
        from bncbench.bnc.estimators import estimator_settings
        from bncbench.protocol.models import catalogue

        grids, settings = _experiment_grids(), estimator_settings()
        names = sorted(catalogue(grids))
    else:
        names = sorted(path.stem for path in (config_dir() / LISTED_GROUPS[kind]).glob("*.yaml"))
    describe = _dataset_describer(data_dir) if kind == "datasets" else {
        "experiments": describe_experiment,
        "models": lambda name: describe_model(name, grids, settings),
        "suites": lambda name: f"{len(_load('suite', name)['datasets'])} datasets",
    }[kind]
    width = max(map(len, names), default=0)
    return [f"{name:<{width}}  {describe(name)}" for name in names]


def _experiment_grids() -> list:
    """The model grids of every experiment."""
    return [grid for path in (config_dir() / "experiment").glob("*.yaml")
            for grid in (_load("experiment", path.stem).get("experiment", {}).get("grids") or [])]


def describe_model(name: str, grids, settings: dict) -> str:
    """``kdb5_hdp`` -> ``structure=kdb k=5  estimator=hdp iterations=5000 (hdp.iterations)``.

    A baseline reads ``baseline=random_forest n_estimators=100 ...``; a parameter an experiment's settings
    (``bncbench.bnc.estimators.estimator_settings``) give (``hdp.iterations``) is shown at its default, with the
    setting that changes it.
    """
    from bncbench.bnc.structures import structure_uses_k
    from bncbench.protocol.models import model_spec, reads_setting

    model = model_spec(name, grids, settings)
    if "baseline" in model:
        return _words(f"baseline={model['baseline']}", model["baseline_params"], {"discretise": model["discretise"]})
    k = {"k": model["k"]} if structure_uses_k(model["structure"]) else {}
    structure = _words(f"structure={model['structure']}", k, model["structure_params"])
    params = {
        key: f"{value} ({model['estimator']}.{key})"
        if reads_setting(model, grids, name, model["estimator"], key) and key in settings.get(model["estimator"], {})
        else value
        for key, value in model["estimator_params"].items()
    }
    estimator = _words(f"estimator={model['estimator']}", params)
    return f"{structure}  {estimator}"


def describe_experiment(name: str) -> str:
    """``kdb`` -> ``68 datasets x 7 models (suite all)``: the size of its sweep."""
    from bncbench.protocol.models import grid_models

    experiment = _load("experiment", name)
    defaults = experiment.get("defaults", [])
    suite = next((entry["override /suite"] for entry in defaults if "override /suite" in entry), None)
    cells = experiment["experiment"]
    datasets = _load("suite", suite)["datasets"] if cells["datasets"] == "${suite.datasets}" else cells["datasets"]
    from_suite = f" (suite {suite})" if suite is not None else ""
    models = cells["models"] if cells.get("models") else grid_models(cells.get("grids"))
    return f"{len(datasets)} datasets x {len(models)} models{from_suite}"


def _dataset_describer(data_dir: Path):
    """``describe(name)`` of a dataset config: its size from the store's ``manifest.csv`` where the
    store has one and lists it, else where it comes from."""
    from bncbench.data.store import read_manifest

    manifest = read_manifest(data_dir)

    def describe(name: str) -> str:
        if name in manifest:
            row = manifest[name]
            attributes = f"{row['n_attributes']} attributes, " if "n_attributes" in row else ""
            return f"{row['rows']} rows, {attributes}{row['n_classes']} classes"
        spec = _load("dataset", name)
        openml = f" (OpenML {spec['openml_id']})" if spec.get("openml_id") is not None else ""
        return f"source {spec['source']}{openml}"

    return describe


def _load(group: str, name: str):
    """The config file ``conf/<group>/<name>.yaml`` as written (interpolations unresolved)."""
    return yaml.safe_load(Path(config_dir(), group, f"{name}.yaml").read_text())


def _words(head: str, *settings) -> str:
    """``head key=value ...`` over the mappings ``settings``, values as YAML writes them (``null``, ``true``)."""
    pairs = [f"{key}={value if isinstance(value, str) else json.dumps(value)}"
             for mapping in settings for key, value in mapping.items()]
    return " ".join([head, *pairs])
