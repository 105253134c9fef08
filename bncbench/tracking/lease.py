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

:func:`claim_cell` is that protocol, for a sweep's cell (``bncbench.app.runner``) and for a run imported
from a bundle (``bncbench.bundles.load``) alike: a sweep and an import never give one cell two runs.
"""

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bncbench import tracking
from bncbench.tracking import tags as tag

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
#: The ``error`` tag of a run whose process died, set when its cell is taken up again.
ABANDONED = "left RUNNING by an interrupted process (it ended before the run finished); run again"


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
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        boot = "-"
    return f"{socket.gethostname()}/{boot}"


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
    return {OWNER_TAG: owner(), HEARTBEAT_TAG: f"{time.time():.0f}"} | ({SWEEP_TAG: sweep} if sweep else {})


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


@dataclass(frozen=True)
class Claim:
    """What :func:`claim_cell` found: ``status`` "claimed" (``run_id`` is this process's RUNNING run of the
    cell, which it alone holds), "finished" (``other`` is a FINISHED run of the cell on the same data) or
    "running elsewhere" (``other`` is the live run of another process)."""

    status: str
    run_id: str | None = None
    other: str | None = None


def claim_cell(client, experiment_id: str, run_name: str, tags: dict, data_digest: str | None,
               sweep: str | None = None, start_time: int | None = None) -> Claim:
    """Start this process's run of the cell its ``tags`` name (``tag.CELL``) and claim the cell for it.

    A cell FINISHED on ``data_digest`` or held by a live run of another process is left (no run is
    started); runs of the cell whose process died are marked KILLED (``ABANDONED``); then the run is
    started, leased (``lease_tags``), and :func:`claim` decides. ``start_time`` (milliseconds): that
    of a run imported with its original times.
    """
    hash_, cell = tags[tag.CFG_HASH], (tags[tag.DATASET], tags[tag.MODEL])
    done = tracking.finished_run(client, experiment_id, hash_, data_digest, cell)
    if done is not None:
        return Claim("finished", other=done.info.run_id)
    rivals = live_rivals(client, experiment_id, hash_)
    if rivals:
        return Claim("running elsewhere", other=rivals[0].info.run_id)
    tracking.abandon(
        client, [run for run in tracking.running_runs(client, experiment_id, hash_) if not is_live(run.data.tags)],
        ABANDONED,
    )  # a live run started by another process since the look above is that process's, not abandoned
    run_id = tracking.start_run(client, experiment_id, run_name, {**tags, **lease_tags(sweep)}, start_time)
    try:
        return claim(client, experiment_id, tracking.get_run(client, run_id), data_digest)
    except BaseException:  # stopped (Ctrl-C, SIGTERM) before the cell was decided: no run is left looking alive
        tracking.delete_run(client, run_id)
        raise


def claim(client, experiment_id: str, own, data_digest: str | None) -> Claim:
    """The look after this process started its run ``own`` of a cell: "claimed" once the cell is this
    process's (``decision``; two processes that started the cell together never both keep it), else
    ``own`` is deleted and the cell is "finished" or "running elsewhere" (as :func:`claim_cell`). A wait
    longer than a lease leaves the cell to the other process."""
    tags = own.data.tags
    hash_, cell = tags[tag.CFG_HASH], (tags.get(tag.DATASET), tags.get(tag.MODEL))
    deadline = time.monotonic() + LEASE_SECONDS
    while True:
        done = tracking.finished_run(client, experiment_id, hash_, data_digest, cell)
        rivals = [] if done else live_rivals(client, experiment_id, hash_, own)
        decided = "finished" if done else decision(own, rivals)
        if decided == "claim":
            tracking.set_tags(client, own.info.run_id, {CLAIM_TAG: "1"})
            return Claim("claimed", run_id=own.info.run_id)
        if decided in ("finished", "give way") or time.monotonic() > deadline:
            tracking.delete_run(client, own.info.run_id)
            if done:
                return Claim("finished", other=done.info.run_id)
            return Claim("running elsewhere", other=rivals[0].info.run_id)
        time.sleep(DECISION_POLL_SECONDS)


def own_running_runs(client, experiment_id: str) -> list:
    """The RUNNING runs of the experiment that this process started (its ``OWNER_TAG``), whether or not it
    knows their ids: a signal that comes inside MLflow's ``create_run``, once the run is written, stops the
    process before the id is returned."""
    return client.search_runs(
        [experiment_id], filter_string=f"tags.`{OWNER_TAG}` = '{owner()}' and attributes.status = 'RUNNING'"
    )


def live_rivals(client, experiment_id: str, hash_: str, own=None) -> list:
    """The live RUNNING runs (``is_live``) with ``cfg_hash == hash_`` other than ``own``."""
    return [
        run
        for run in tracking.running_runs(client, experiment_id, hash_)
        if is_live(run.data.tags) and (own is None or run.info.run_id != own.info.run_id)
    ]


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
