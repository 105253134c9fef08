"""Progress of an experiment's cells, shown only on a terminal (a fit's own progress:
``bncbench.bnc.progress``).

An experiment's cells run in other processes (joblib workers, cluster jobs), so each job leaves a
marker file in the sweep directory when its cell is done (``mark_cell_done``) and the launching process
counts them (``CellProgress``): that works for any Hydra launcher whose jobs see the sweep directory,
which Hydra's launchers need anyway.

Nothing is printed when the stream is not a terminal (a log file, a pipe, a cluster job's output).
"""

import sys
import threading
import time
from collections import Counter
from pathlib import Path

from bncbench.bnc.progress import INTERVAL, duration, is_terminal

#: Directory of the markers of done cells, inside the sweep directory.
MARKER_DIR = ".progress"


def mark_cell_done(sweep_dir: str | Path, job_num: int, status: str) -> None:
    """Record that job ``job_num`` of the sweep is done: ``status`` is what ``bncbench.runner.run_cell``
    returned (finished, copied, skipped, failed...).

    One file per job, so jobs on different machines never write the same file (appending to one
    file is not atomic on NFS).
    """
    directory = Path(sweep_dir) / MARKER_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / str(job_num)).write_text(status)


class CellProgress:
    """Cells done out of ``total``, with an estimated time of arrival, printed by a background thread.

    The ETA extrapolates the time per cell run so far (cells skipped because they finished in an
    earlier sweep, or copied from a finished run, take no time) to the cells left. ``start`` does
    nothing unless ``stream`` is a terminal; ``stop`` prints the last count if it changed since the
    last line.
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
        ran = done - counts["skipped"] - counts["copied"]  # the time goes to the cells computed
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
