"""Memory that a long out-of-core cross-validation frees goes back to the system, not into a fragmented heap.

glibc's malloc maps an allocation of at least ``M_MMAP_THRESHOLD`` bytes on its own (128 KiB at first) and unmaps it
when freed; but each time such a block is freed it raises the threshold to the block's size (up to 32 MiB), so that
later arrays of that size come from the heap. An out-of-core fit allocates the same few sizes of arrays a chunk at a
time (decoded columns, value ids, codes, the id cache's chunks, which live across passes), and from the heap they
fragment it: a cell's peak grew with its folds (5M rows of 21 columns, NB, the id cache on: 498 MiB over 1
repetition of 2 folds, 550 over 5; 490 and 501 with the threshold fixed at 128 KiB; 497 and 531 fixed at 1 MiB). The
threshold fixed (``mallopt``, which also stops its raising) keeps each such array mapped on its own.

pyarrow, which reads the files' chunks, allocates from its own pool, mimalloc in its wheels, which keeps pages it
freed. Its jemalloc pool (in its Linux and macOS wheels) gives them back. NB's cell at 5M rows of 21 columns from
parquet, the id cache on, the threshold fixed, over 1 and 5 repetitions of 2 folds: 440-445 and 450-458 MiB, 19-20
and 97-98 CPU-s with jemalloc; 462 and 473 MiB, 23 and 109 CPU-s with pyarrow's system pool (malloc, whose buffers
of a chunk are then each mapped, and faulted in anew, at the threshold above); 605 and 623 MiB, 25 and 103 CPU-s
with mimalloc (two runs at a time, by hand). Out of core without the id cache, NB's fit and predict of 2M rows took
46 MiB above the baseline with jemalloc, 42 with malloc, 66-73 with mimalloc (``benchmarks/out_of_core_memory.py``).
The pool is process-wide: it is jemalloc (else malloc) from here on, unless the user chose one
(``ARROW_DEFAULT_MEMORY_POOL``); what mimalloc already holds stays held, so a process sets this before it reads a
file (a cell: first of all, ``protocol.out_of_core.cross_validate_file``).
"""

import ctypes
import ctypes.util
import functools
import os

import pyarrow as pa

#: ``mallopt``'s parameter number of the mmap threshold (glibc's ``malloc.h``).
M_MMAP_THRESHOLD = -3
#: Allocations from this size on are mapped on their own and given back whole when freed: glibc's initial value.
MMAP_THRESHOLD = 128 * 2**10


@functools.cache
def give_back_freed_memory() -> bool:
    """Fix this process's malloc mmap threshold at ``MMAP_THRESHOLD`` and make jemalloc pyarrow's pool (malloc where
    pyarrow was built without it) unless the user chose one (module docstring), once; whether the threshold was fixed
    (False where the C library has no ``mallopt``: not glibc)."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(_pool_giving_back())
    library = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(library).mallopt
    except (OSError, AttributeError, TypeError):  # no C library found, or one without mallopt (musl, macOS)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


def arrow_pool() -> str:
    """The name of pyarrow's pool in this process (``jemalloc``, ``system``, ``mimalloc``)."""
    return pa.default_memory_pool().backend_name


def _pool_giving_back() -> pa.MemoryPool:
    """pyarrow's jemalloc pool, or its system pool (malloc) where pyarrow was built without jemalloc."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.system_memory_pool()
