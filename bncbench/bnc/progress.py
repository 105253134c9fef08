"""Progress of a long fit: a loop inside one numba kernel (e.g. the HDP sampler's iterations) is run in
chunks of about ``CHUNK_SECONDS`` of CPU time each (``iteration_chunks``), so that Python runs between two
and answers Ctrl-C (a ``KeyboardInterrupt``) within about that long, whatever the output is; on a terminal
a line between two chunks names the work it belongs to (``task``, e.g. a cell's fold).
``bncbench.app.progress`` shows an experiment's cells.

No line is printed when the stream is not a terminal (a log file, a pipe, a cluster job's output).
"""

import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar

from bncbench.core.terminal import duration, is_terminal

#: Seconds between two progress lines, at most one line per interval.
INTERVAL = 5.0
#: CPU seconds of work in one chunk of ``iteration_chunks``: Ctrl-C waits for the chunk under way, and
#: the cost of a call (about 1 ms; more for a parallel kernel's threads on a busy machine) is negligible
#: beside it.
CHUNK_SECONDS = 0.5
#: How many times larger than the one before a chunk may be: the first is one iteration, whose time,
#: short and noisy (or a kernel's compilation), must not size the next.
GROWTH = 8
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


def iteration_chunks(total: int, label: str, stream=None, interval: float = INTERVAL, seconds: float = CHUNK_SECONDS):
    """The ``(first, last)`` ranges a loop of ``total`` iterations runs in, one call of its kernel each.

    Each range is about ``seconds`` of work, sized by the CPU time of the range before (the first is one
    iteration, and a range at most ``GROWTH`` times the one before), so that Python, which runs between
    two ranges, answers Ctrl-C within about ``seconds`` of CPU, on a terminal or not. CPU time, not wall
    time: on a busy machine a range takes longer on the clock while its work is the same, and ranges sized
    by the clock would shrink toward one iteration and pay a call's fixed cost thousands of times (issue
    44: a kDB-5 HDP fit of 7 CPU-s took 184 CPU-s beside other jobs). On a terminal, after a
    range, when ``interval`` seconds have passed since the last line (or the start), ``<label> (<task>):
    2500/5000 iterations, 10 s elapsed, about 10 s left``, the time left at the speed of the range just run
    (never of the first, which a compilation makes slow: a warm-up once promised 15 minutes for a one-second
    fit); a loop that takes less than ``interval`` in all prints nothing, and elsewhere nothing is printed.
    """
    stream = sys.stderr if stream is None else stream
    if _task.get():
        label = f"{label} ({_task.get()})"
    terminal = is_terminal(stream)
    start = last_line = time.monotonic()
    first, size = 0, 1
    while first < total:
        last = min(total, first + size)
        began, began_cpu = time.monotonic(), time.process_time()
        yield first, last
        now = time.monotonic()
        per_iteration = max(now - began, 1e-9) / (last - first)
        cpu_per_iteration = max(time.process_time() - began_cpu, 1e-9) / (last - first)
        size = max(1, min(GROWTH * size, int(seconds / cpu_per_iteration)))
        measured = first > 0  # the first range (a kernel's compilation, a first call) is no measure of speed
        first = last
        if terminal and measured and last < total and now - last_line >= interval:
            last_line = now
            left = per_iteration * (total - last)  # at the speed of the range just run
            elapsed, left = duration(now - start), duration(left)
            print(f"{label}: {last}/{total} iterations, {elapsed} elapsed, about {left} left", file=stream, flush=True)
