"""What one cell costs the machine: its process's peak resident memory and its CPU time, per cell.

A worker process runs several cells one after another, so the process's peak since it started
(``ru_maxrss``) is not a cell's. On Linux the kernel's high-water mark of the resident set (``VmHWM`` of
``/proc/self/status``) is reset by writing ``5`` to ``/proc/self/clear_refs`` (proc(5)): ``CellResources``
resets it when the cell starts and reads it when the cell ends, so the peak is that of the cell's span
(which includes what the process held before it: the interpreter, the libraries and numba's kernels).
Where that cannot be done (no ``/proc``, as on macOS, or a kernel that refuses the write) the peak is not
measured, and so not logged: never a number that is not the cell's. The CPU time is ``time.process_time()``
over the cell: every thread of the process (numba's included), not the processes of a dask cluster.
"""

import time
from pathlib import Path

#: The process's files: the high-water mark's reset and its reading.
CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


class CellResources:
    """A context manager around a cell's work; after it, ``peak_rss_bytes`` (None where not measured) and
    ``cpu_seconds``."""

    def __init__(self):
        self.peak_rss_bytes: int | None = None
        self.cpu_seconds: float | None = None

    def __enter__(self) -> "CellResources":
        self._measured = _reset_peak()
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.cpu_seconds = time.process_time() - self._cpu
        self.peak_rss_bytes = _peak_bytes() if self._measured else None


def _reset_peak() -> bool:
    """Reset the process's ``VmHWM`` to its current resident size; whether that could be done."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _peak_bytes() is not None


def _peak_bytes() -> int | None:
    """``VmHWM`` of ``/proc/self/status`` in bytes, or None without it."""
    try:
        status = STATUS.read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            value, unit = line.split()[1:3]
            return int(value) * 1024 if unit == "kB" else None
    return None
