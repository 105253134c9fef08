"""Who is running a cell: a lease on its MLflow run, so that sweeps sharing one store never run a cell
twice nor mark each other's live runs KILLED.

A run is RUNNING while a process works on it. It is tagged with its owner (``OWNER_TAG``: the host, the
boot of that host, the pid and the process's start time, so that a later process reusing the pid is
not taken for it) and a heartbeat (``HEARTBEAT_TAG``: the time, renewed every ``HEARTBEAT_SECONDS``
while the cell runs). A RUNNING run is *live* when its owner runs on this host and is alive, or runs on
another host and beat less than ``LEASE_SECONDS`` ago; otherwise it was abandoned (its process was
killed) and its cell may run again. A run of a bncbench version before leases has no owner: abandoned.

Two processes may start a run of one cell at the same moment, so each looks again once its run is in the
store (``decision``). Seeing no other live run of the cell, it claims the cell (``CLAIM_TAG``) and runs
it. Seeing one, it gives way (its run is deleted) if that run has claimed the cell or started earlier (by
start time, then run id). The earliest run, seeing only unclaimed others, waits until each of them has
decided: their processes, having looked once, delete their runs or claim at once. Start times alone
would not do: a run is stamped before it is written, so the earlier-stamped run of two can be written
after the other process looked, and both would keep the cell. With the claim, of two processes that
both look after writing, at least one sees the other's run (SQLite, like MLflow's server stores, orders
the writes), and it is never the earlier to run on while the other does.
"""

import logging
import os
import socket
import threading
import time
from functools import cache
from pathlib import Path

from bncbench import tracking

log = logging.getLogger(__name__)

OWNER_TAG = "bncbench.owner"
HEARTBEAT_TAG = "bncbench.heartbeat"
#: The sweep (launching process) a run belongs to (``bncbench.app.runner.Destination.sweep``); the
#: summary of a sweep counts its own runs only.
SWEEP_TAG = "bncbench.sweep"
HEARTBEAT_SECONDS = 60.0
#: Set on a run whose process looked after writing it and saw no other live run of its cell.
CLAIM_TAG = "bncbench.claimed"
#: The tags of a run's lease: they describe the process that ran it, and travel with no copy of it.
LEASE_TAGS = (OWNER_TAG, HEARTBEAT_TAG, SWEEP_TAG, CLAIM_TAG)
#: How often the earliest of several runs of a cell looks again while the others decide.
DECISION_POLL_SECONDS = 0.2
#: A run on another host whose heartbeat is older than this was abandoned. Ten heartbeats: a store
#: that is slow or briefly down, or a machine under load, does not lose a live run its cell.
LEASE_SECONDS = 600.0


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "-"


def _start_ticks(pid: int) -> str:
    """The start time of a process in clock ticks since boot (Linux), "-" where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "-"
    return stat.rsplit(")", 1)[1].split()[19]


@cache
def host() -> str:
    """This host and its boot, as the first part of an owner."""
    return f"{socket.gethostname()}/{_boot_id()}"


def owner(pid: int | None = None) -> str:
    """The owner tag of process ``pid`` (this one by default): ``host/boot:pid:start``."""
    pid = os.getpid() if pid is None else pid
    return f"{host()}:{pid}:{_start_ticks(pid)}"


def _alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return start == "-" or _start_ticks(pid) == start


def is_live(tags: dict, now: float | None = None) -> bool:
    """Whether a RUNNING run with these tags is being run by a live process (see the module)."""
    owner_tag = tags.get(OWNER_TAG)
    if not owner_tag:
        return False
    where, pid, start = owner_tag.rsplit(":", 2)
    if where == host():
        return _alive(int(pid), start)
    try:
        beat = float(tags.get(HEARTBEAT_TAG, "nan"))
    except ValueError:
        return False
    return (time.time() if now is None else now) - beat < LEASE_SECONDS


def lease_tags(sweep: str | None = None) -> dict[str, str]:
    """The tags of a run this process starts: its owner, a first heartbeat, and the sweep it is part of."""
    tags = {OWNER_TAG: owner(), HEARTBEAT_TAG: f"{time.time():.0f}"}
    if sweep:
        tags[SWEEP_TAG] = sweep
    return tags


def decision(run, rivals) -> str:
    """What the process of ``run``, just written, does about ``rivals`` (the other live RUNNING runs of
    its cell): "claim" the cell when there are none; "give way" when one of them has claimed it or
    started earlier (by start time, then run id); else "wait" (it is the earliest, and the others have
    not decided yet: look again)."""
    if not rivals:
        return "claim"
    first = min([run, *rivals], key=lambda r: (r.info.start_time, r.info.run_id))
    if first.info.run_id != run.info.run_id or any(CLAIM_TAG in r.data.tags for r in rivals):
        return "give way"
    return "wait"


class Heartbeat:
    """Renew the heartbeat of a run every ``interval`` seconds while the block runs (a thread)."""

    def __init__(self, client, run_id: str, interval: float = HEARTBEAT_SECONDS):
        self.client, self.run_id, self.interval = client, run_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="bncbench-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                tracking.set_tags(self.client, self.run_id, {HEARTBEAT_TAG: f"{time.time():.0f}"})
            except Exception as err:  # a store briefly down: the next beat tries again
                log.debug("heartbeat of run %s not written: %s", self.run_id, err)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
