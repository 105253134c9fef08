"""Memory that a long out-of-core cross-validation frees goes back to the system, not into a fragmented heap.

glibc's malloc maps an allocation of at least ``M_MMAP_THRESHOLD`` bytes on its own (128 KiB at first) and unmaps it
when freed; but each time such a block is freed it raises the threshold to the block's size (up to 32 MiB), so that
later arrays of that size come from the heap. An out-of-core fit allocates the same few sizes of arrays a chunk at a
time (decoded columns, value ids, codes, the id cache's chunks, which live across passes), and from the heap they
fragment it: a cell's peak grew with its folds (5M rows of 21 columns, NB, the id cache on: 498 MiB over 1
repetition of 2 folds, 550 over 5; 490 and 501 with the threshold fixed at 128 KiB; 497 and 531 fixed at 1 MiB). The
threshold fixed (``mallopt``, which also stops its raising) keeps each such array mapped on its own.

Not done here: pyarrow, which decodes the chunks of a parquet file, allocates from its own pool (mimalloc in its
wheels), which keeps pages it freed: the same cell at 5M rows from parquet, kDB-5, one repetition, peaked at 497-512
MiB with it, 454-456 with ``ARROW_DEFAULT_MEMORY_POOL=system`` (malloc, with the threshold above) and 469-470 with
``jemalloc``, for 27.8-33.7, 30.0-34.0 and 29.5-30.1 CPU-s (runs one after another, by hand). The pool is chosen when
pyarrow is loaded: ``pyarrow.set_memory_pool`` later left the peak at 507-508 MiB; so the variable is the user's to
set, before a run (``docs/running.md``).
"""

import ctypes
import ctypes.util
import functools

#: ``mallopt``'s parameter number of the mmap threshold (glibc's ``malloc.h``).
M_MMAP_THRESHOLD = -3
#: Allocations from this size on are mapped on their own and given back whole when freed: glibc's initial value.
MMAP_THRESHOLD = 128 * 2**10


@functools.cache
def give_back_freed_memory() -> bool:
    """Fix this process's malloc mmap threshold at ``MMAP_THRESHOLD`` (module docstring), once; whether it was done
    (False where the C library has no ``mallopt``: not glibc)."""
    library = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(library).mallopt
    except (OSError, AttributeError, TypeError):  # no C library found, or one without mallopt (musl, macOS)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
