"""Writing a report so that a failure half-way leaves the previous one intact.

The report is built in a staging folder beside its place (``<report_dir>/.<name>-*``, same file
system), then published: each file of it replaces its namesake by one atomic rename, a folder (the
figures) by a swap of two renames, and report files of the previous version that this one does not
have are removed. A report that cannot be built (a read-only or full disk, a bug) leaves the place
as it was; what else the report's folder holds (e.g. bundles of results) is never touched. Two
processes publishing the same report take turns (a lock on ``report_dir``).
"""

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged(place: Path, outputs: Iterable[str]) -> Iterator[Path]:
    """Yield an empty staging folder to write a report into; publish it to ``place`` on success.

    Parameters
    ----------
    place : Path
        The report's folder, ``<report_dir>/<name>``.
    outputs : iterable of str
        Names of the files and folders a report may hold: those of the previous version that the new
        one lacks are removed; anything else in ``place`` stays.
    """
    place.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{place.name}-", dir=place.parent))
    try:
        yield staging
        with _locked(place.parent):
            _publish(staging, place, set(outputs))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _publish(staging: Path, place: Path, outputs: set[str]) -> None:
    place.mkdir(exist_ok=True)
    built = {entry.name for entry in staging.iterdir()}
    for name in sorted(built):
        source, target = staging / name, place / name
        if source.is_dir():
            if target.exists():
                target.rename(staging / f".{name}.previous")
            source.rename(target)
        else:
            os.replace(source, target)
    for name in sorted(outputs - built):
        target = place / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
