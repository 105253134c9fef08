"""numba's on-disk kernel cache made safe for processes that compile at the same time.

numba (0.68, ``numba.core.caching.IndexDataCacheFile.save``) saves a compiled kernel in four steps:
read the cache index, pick the first data-file number the index does not use, write the index, write
the data file. Two processes that compile different signatures of one kernel at once (the workers of
a sweep, two launchers) can both read the index before either writes it and pick the same number;
the index left by one then names the machine code left by the other, and every later process loads
the wrong code for that signature, until the kernel's source changes: a cell that fails, or a wrong
number. ``lock_cache_saves`` makes each save hold an exclusive lock (``fcntl.flock``) on a file beside
the index, so that for other processes the four steps are one. Loads need no lock: a save never
rewrites a data file the index gives to another signature.
"""

import fcntl
import functools

from numba.core.caching import IndexDataCacheFile


def _locked(save):
    @functools.wraps(save)
    def locked_save(self, key, data):
        with open(f"{self._index_path}.lock", "ab") as lock:  # closing it releases the lock
            fcntl.flock(lock, fcntl.LOCK_EX)
            save(self, key, data)

    locked_save.saves_under_lock = True
    return locked_save


def lock_cache_saves() -> None:
    """Make every save to numba's on-disk cache, in this process, hold the index's lock (idempotent)."""
    if not getattr(IndexDataCacheFile.save, "saves_under_lock", False):
        IndexDataCacheFile.save = _locked(IndexDataCacheFile.save)
