"""Progress of long work, shown only on a terminal: the cells of an experiment, the iterations of a fit.

An experiment's cells run in other processes (joblib workers, cluster jobs), so each job leaves a
marker file in the sweep directory when its cell is done (``mark_cell_done``) and the launching process
counts them (``CellProgress``): that works for any Hydra launcher whose jobs see the sweep directory,
which Hydra's launchers need anyway. A long loop inside one numba kernel is run in chunks of
iterations, with the progress printed between them (``iteration_chunks``).

Nothing is printed when the stream is not a terminal (a log file, a pipe, a cluster job's output).
"""

import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import pairwise
from pathlib import Path

import numpy as np

#: Directory of the markers of done cells, inside the sweep directory.
MARKER_DIR = ".progress"
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


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def duration(seconds: float) -> str:
    """``3725`` -> ``"1 h 2 min"``: two units at most, enough for an estimate."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def mark_cell_done(sweep_dir: str | Path, job_num: int, status: str) -> None:
    """Record that job ``job_num`` of the sweep is done: ``status`` is finished, skipped or failed.

    One file per job, so jobs on different machines never write the same file (appending to one
    file is not atomic on NFS).
    """
    directory = Path(sweep_dir) / MARKER_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / str(job_num)).write_text(status)


class CellProgress:
    """Cells done out of ``total``, with an estimated time of arrival, printed by a background thread.

    The ETA extrapolates the time per cell run so far (cells skipped because they finished in an
    earlier sweep take no time) to the cells left. ``start`` does nothing unless ``stream`` is a
    terminal; ``stop`` prints the last count if it changed since the last line.
    """

    def __init__(self, sweep_dir: str | Path, total: int, stream=None, interval: float = INTERVAL):
        self.directory = Path(sweep_dir) / MARKER_DIR
        self.total = int(total)
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = None
        self._shown = None

    def start(self) -> "CellProgress":
        self.started = time.monotonic()
        if is_terminal(self.stream):
            self._thread = threading.Thread(target=self._run, name="bncbench-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._show()

    def counts(self) -> Counter:
        """How many cells are done, by status."""
        try:
            markers = list(self.directory.iterdir())
        except OSError:  # no cell done yet
            return Counter()
        counts = Counter()
        for marker in markers:
            try:
                counts[marker.read_text().strip() or "finished"] += 1
            except OSError:
                counts["finished"] += 1
        return counts

    def line(self, counts: Counter, elapsed: float, now: float | None = None) -> str:
        """``bncbench: 7/18 cells done (1 failed), 2 min 5 s elapsed, ETA 14:03 (about 3 min 10 s left)``."""
        done = sum(counts.values())
        failed = f" ({counts['failed']} failed)" if counts["failed"] else ""
        text = f"bncbench: {done}/{self.total} cells done{failed}, {duration(elapsed)} elapsed"
        ran = done - counts["skipped"]
        if 0 < done < self.total and ran > 0:
            left = elapsed / ran * (self.total - done)
            arrival = time.strftime("%H:%M", time.localtime((time.time() if now is None else now) + left))
            text += f", ETA {arrival} (about {duration(left)} left)"
        return text

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._show()

    def _show(self) -> None:
        counts = self.counts()
        done = sum(counts.values())
        if done != self._shown:
            self._shown = done
            print(self.line(counts, time.monotonic() - self.started), file=self.stream, flush=True)


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
