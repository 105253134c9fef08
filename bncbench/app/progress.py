"""Progress of a sweep: cells done out of all, the cells running, and an ETA from the cost model.

The ETA is the cost model's prediction of the cells left (``bncbench.protocol.cost``), those not
started and what remains of the running ones, over the cells that run at once, scaled by how the
cells done in this sweep compared with their predictions (this machine's speed, its load): not the
elapsed time divided by the cells done, which counts start-up and treats a connect-4 cell as an iris one.
A fit's own progress is ``bncbench.bnc.progress``.
"""

import math
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping

from bncbench.app import some_of
from bncbench.core.terminal import duration, is_terminal
from bncbench.protocol.cell import Cell

#: Seconds between two lines on a terminal while cells end (a line each time one ends, at most this often).
INTERVAL = 5.0
#: Seconds between two lines on a terminal while no cell ends.
QUIET_INTERVAL = 60.0
#: Seconds between two lines when the output is not a terminal (a log file, a batch job's output).
LOG_INTERVAL = 600.0
#: Predicted seconds that the first cells' ratio of actual to predicted cost is shrunk towards 1 by.
_PRIOR_SECONDS = 60.0
#: How far (a factor either way) the cells done may be from their predictions before a line says so, and why.
SLOWER_SAID = 1.5


def _load() -> str:
    """`` (load average 3.9 on 2 cores)``: what a machine shared with other work shows, or nothing if unknown."""
    try:
        return f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    except (OSError, AttributeError):
        return ""


class SweepProgress:
    """Progress lines, printed by a background thread to ``stream`` (default ``sys.stderr``), of a sweep that
    runs ``cells``, ``workers`` at once, with the ``predicted`` CPU seconds of each (by ``Cell.key``); ``running()``
    gives the cells running now (``Executor.running``), and ``done_before`` the plan's cells finished before."""

    def __init__(self, cells, predicted: Mapping[tuple[str, str], float], workers: int,
                 running: Callable[[], list[Cell]], stream=None, done_before: int = 0):
        self.total = len(cells) + done_before
        self.done_before = done_before
        self.predicted = dict(predicted)
        self.workers = max(1, workers)
        self.running = running
        self.stream = sys.stderr if stream is None else stream
        self.counts: Counter = Counter()
        self._done: set[tuple[str, str]] = set()
        self._actual = self._expected = 0.0
        self._started_at: dict[tuple[str, str], float] = {}
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._thread = None
        self._shown = None

    def start(self) -> "SweepProgress":
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="bncbench-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread; on a terminal, the last count if a cell ended since the last line."""
        if self._thread is not None:
            self._stop.set()
            self._changed.set()
            self._thread.join()
            self._thread = None
            if is_terminal(self.stream) and sum(self.counts.values()) != self._shown:
                print(self.line(), file=self.stream, flush=True)

    def done(self, cell: Cell, status: str, seconds: float) -> None:
        """Count a cell that ended; its time calibrates the ETA when it was computed."""
        with self._lock:
            self.counts[status] += 1
            self._done.add(cell.key)
            if status == "finished" and cell.key in self.predicted:
                self._actual += seconds
                self._expected += self.predicted[cell.key]
        self._changed.set()

    def factor(self) -> float:
        """How long the cells done took against their predictions, shrunk towards 1 while they are few."""
        return (self._actual + _PRIOR_SECONDS) / (self._expected + _PRIOR_SECONDS)

    def seconds_left(self, now: float | None = None) -> float:
        """Predicted wall seconds until the last cell ends (see the module)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            factor = self.factor()
            running = {cell.key for cell in self.running()}
            for key in running:
                self._started_at.setdefault(key, now)
            waiting = sum(cost for key, cost in self.predicted.items() if key not in self._done and key not in running)
            underway = sum(max(0.0, self.predicted.get(key, 0.0) * factor - (now - self._started_at[key]))
                           for key in running)
        return waiting * factor / self.workers + underway / max(1, min(self.workers, len(running) or 1))

    def line(self, now: float | None = None) -> str:
        """``bncbench: 7/18 cells done (1 failed); running: iris/nb_hdp, wine/nb_hdp; 2 min 5 s elapsed,
        about 3 min 10 s left (ETA 14:03)``."""
        now = time.monotonic() if now is None else now
        done = self.done_before + sum(self.counts.values())
        failed = f" ({self.counts['failed']} failed)" if self.counts["failed"] else ""
        text = f"bncbench: {done}/{self.total} cells done{failed}"
        running = self.running()
        if running:
            text += "; running: " + some_of((cell.name for cell in running), 3)
        text += f"; {duration(now - self._start)} elapsed"
        if done < self.total:
            left = self.seconds_left(now)
            arrival = time.strftime("%H:%M", time.localtime(time.time() + left))
            text += f", about {duration(left)} left (ETA {arrival})"
            factor = self.factor()
            if abs(math.log(factor)) > math.log(SLOWER_SAID):
                text += f"; the cells done took {factor:.1f}x the time the plan predicted{_load()}"
        return text

    def _run(self) -> None:
        terminal = is_terminal(self.stream)
        quiet = QUIET_INTERVAL if terminal else LOG_INTERVAL
        last = time.monotonic()
        while not self._stop.is_set():
            changed = self._changed.wait(quiet - (time.monotonic() - last))
            if self._stop.is_set():
                return
            if changed and not terminal:
                self._changed.clear()
                continue
            if changed:
                self._stop.wait(max(0.0, INTERVAL - (time.monotonic() - last)))
                self._changed.clear()
            self._shown = sum(self.counts.values())
            print(self.line(), file=self.stream, flush=True)
            last = time.monotonic()
