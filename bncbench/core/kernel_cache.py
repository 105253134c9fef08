"""numba's on-disk kernel cache made safe for processes that compile at the same time, and for code
that changes under it.

numba (0.68, ``numba.core.caching.IndexDataCacheFile.save``) saves a compiled kernel in four steps:
read the cache index, pick the first data-file number the index does not use, write the index, write
the data file. Two processes that compile different signatures of one kernel at once (the workers of
a sweep, two launchers) can both read the index before either writes it and pick the same number;
the index left by one then names the machine code left by the other, and every later process loads
the wrong code for that signature, until the kernel's source changes: a cell that fails, or a wrong
number. ``lock_cache_saves`` makes each save hold an exclusive lock (``fcntl.flock``) on a file beside
the index, so that for other processes the four steps are one. Loads need no lock: a save never
rewrites a data file the index gives to another signature.

numba keys a kernel's cache on the source of the file that defines it, not on the files of the kernels
it calls: after an edit, a ``git pull`` or a checkout in an editable install that changes only a
callee's file (``estimates.py`` under ``sampler.run_chains``), every process would go on loading the
old machine code, silently. ``key_on_package_source`` adds a digest of every Python file of bncbench
to the key of the package's kernels, so that any change to the package recompiles them once.
"""

import functools
import hashlib
from pathlib import Path

from numba.core import caching
from numba.core.caching import IndexDataCacheFile

from bncbench.core.files import locked

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _locked(save):
    @functools.wraps(save)
    def locked_save(self, key, data):
        with locked(f"{self._index_path}.lock"):
            save(self, key, data)

    locked_save.saves_under_lock = True
    return locked_save


def lock_cache_saves() -> None:
    """Make every save to numba's on-disk cache, in this process, hold the index's lock (idempotent)."""
    if not getattr(IndexDataCacheFile.save, "saves_under_lock", False):
        IndexDataCacheFile.save = _locked(IndexDataCacheFile.save)


@functools.cache
def package_source_digest(package_dir: Path = PACKAGE_DIR) -> bytes:
    """SHA-256 of the relative path and content of every ``.py`` file under ``package_dir``."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def _with_package_digest(get_source_stamp):
    @functools.wraps(get_source_stamp)
    def source_stamp(self):
        stamp = get_source_stamp(self)
        if PACKAGE_DIR in Path(self._py_file).resolve().parents:
            return (stamp, package_source_digest())
        return stamp

    source_stamp.keyed_on_package = True
    return source_stamp


def key_on_package_source() -> None:
    """Key the on-disk cache of every kernel defined in bncbench, in this process, on the whole
    package's source as well as its own file's (idempotent; before the kernels' modules are imported:
    numba reads the key when a kernel is defined)."""
    mixin = caching._SourceFileBackedLocatorMixin
    if not getattr(mixin.get_source_stamp, "keyed_on_package", False):
        mixin.get_source_stamp = _with_package_digest(mixin.get_source_stamp)
