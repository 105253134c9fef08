"""Where a run leaves its files: the ``runs_dir`` setting and the defaults that follow from it.

``conf/config.yaml`` derives from ``runs_dir`` the SQLite store (``tracking_uri``), and the app the
runs' artifacts (``artifact_location``), the reports (``report_dir``), the bundles ``export`` writes and
submitit's job folders. With ``runs_dir`` left
null they go to ``runs/``, or, when ``tracking_uri`` names a SQLite database, beside that database,
so that a store kept elsewhere never leaves files in the working directory (a checkout) by accident.
"""

from pathlib import Path
from urllib.parse import urlparse

from omegaconf import OmegaConf

from bncbench.app.schema import Settings

RESOLVER = "bncbench.runs_dir"
#: ``runs_dir`` when neither it nor a SQLite ``tracking_uri`` says otherwise (relative to the working directory).
DEFAULT_RUNS_DIR = "runs"


def runs_dir(setting: str | None, tracking_uri: str | None = None) -> str:
    """The folder of a run's files: ``setting`` (``runs_dir``) when set, else the folder of the SQLite
    database ``tracking_uri`` names, else ``DEFAULT_RUNS_DIR``."""
    if setting is not None:
        return str(setting)
    if tracking_uri is not None and str(tracking_uri).startswith("sqlite:"):
        from sqlalchemy.engine import make_url  # here: composing a config needs no database library

        database = make_url(str(tracking_uri)).database
        if database and database != ":memory:":
            return str(Path(database).parent)
    return DEFAULT_RUNS_DIR


def artifact_location(settings: Settings) -> str | None:
    """``artifact_location``, or when it is null ``<runs dir>/artifacts`` (``runs_dir``), except with
    a tracking server: its ``--artifacts-destination`` then (None)."""
    from bncbench.tracking import SERVER_SCHEMES  # here: MLflow is slow to import

    if settings.artifact_location is not None or urlparse(str(settings.tracking_uri)).scheme in SERVER_SCHEMES:
        return settings.artifact_location
    return str(Path(runs_dir(settings.runs_dir, settings.tracking_uri)) / "artifacts")


def report_dir(settings: Settings) -> Path:
    """``report_dir``, or when it is null ``<runs dir>/reports``: a scratch run's report goes beside
    its store, never over a committed one by accident."""
    if settings.report_dir is not None:
        return Path(settings.report_dir)
    return Path(runs_dir(settings.runs_dir, settings.tracking_uri)) / "reports"


def bundle_dir(settings: Settings) -> Path:
    """Where ``bncbench export`` writes a bundle unless told: ``<runs dir>/bundles``, beside the store."""
    return Path(runs_dir(settings.runs_dir, settings.tracking_uri)) / "bundles"


OmegaConf.register_new_resolver(RESOLVER, runs_dir, replace=True)
