"""Progress of a long fit, shown only on a terminal: a loop inside one numba kernel (e.g. the HDP
sampler's iterations) is run in chunks, with a line between them (``iteration_chunks``) naming the work
it belongs to (``task``, e.g. a cell's fold). ``bncbench.app.progress`` shows an experiment's cells.

Nothing is printed when the stream is not a terminal (a log file, a pipe, a cluster job's output).
"""

import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import pairwise

import numpy as np

from bncbench.core.terminal import duration, is_terminal

#: Seconds between two progress lines, at most one line per interval.
INTERVAL = 5.0
#: A loop run by ``iteration_chunks`` on a terminal is cut into this many chunks.
CHUNKS = 20
#: What the work in progress belongs to, e.g. a cell's fold, named in the lines of ``iteration_chunks``.
_task: ContextVar[str | None] = ContextVar("bncbench_task", default=None)


@contextmanager
def task(name: str):
    """Name the work done inside, for the progress lines printed meanwhile (cells run side by side
    print to the same terminal)."""
    token = _task.set(name)
    try:
        yield
    finally:
        _task.reset(token)


def iteration_chunks(total: int, label: str, stream=None, interval: float = INTERVAL, chunks: int = CHUNKS):
    """The ``(first, last)`` ranges a loop of ``total`` iterations runs in, with progress between them.

    Not on a terminal: the single range ``(0, total)`` and no output, so that the loop runs as one call.
    On a terminal: ``chunks`` ranges, and after a range, when ``interval`` seconds have passed since
    the last line (or the start), ``<label> (<task>): 2500/5000 iterations, 10 s elapsed, about 10 s
    left``. A loop that takes less than ``interval`` in all prints nothing.
    """
    stream = sys.stderr if stream is None else stream
    if _task.get():
        label = f"{label} ({_task.get()})"
    if not is_terminal(stream) or total < 2 * chunks:
        yield 0, total
        return
    start = last_line = time.monotonic()
    for first, last in pairwise(np.linspace(0, total, chunks + 1).round().astype(int).tolist()):
        yield first, last
        now = time.monotonic()
        if last < total and now - last_line >= interval:
            last_line = now
            left = (now - start) / last * (total - last)
            elapsed, left = duration(now - start), duration(left)
            print(f"{label}: {last}/{total} iterations, {elapsed} elapsed, about {left} left", file=stream, flush=True)
