"""Files bncbench makes beside the user's: never written through a symbolic link it did not make.

A lock file (``.mlflow.db.lock`` beside a store, ``.schema.json.lock`` in a dataset store) is opened,
or created, without following a link and without truncating: a link planted at its name would
otherwise truncate, or create, the file it points to. bncbench's other files are written into folders
it has just created (``tempfile``), then renamed into place, which replaces a link, not its target.
"""

import errno
import fcntl
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bncbench.core.errors import ConfigError


@contextmanager
def locked(path: Path | str) -> Iterator[None]:
    """A block holding the exclusive advisory lock of the file ``path`` (created if absent, never
    truncated; released when the block ends or the process dies).

    Raises
    ------
    ConfigError
        ``path`` is a symbolic link.
    OSError
        The file cannot be opened or created (e.g. a read-only folder).
    """
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        raise ConfigError(
            f"{path} is a symbolic link, where bncbench keeps a lock file of its own: it will not write through "
            f"it; remove the link (rm {path}) and run again."
        ) from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


@contextmanager
def stops_held() -> Iterator[None]:
    """A block that Ctrl-C and SIGTERM do not cut: one that comes is raised when the block ends, by the handler that
    was in place (KeyboardInterrupt, or bncbench's SIGTERM handler). For what must not be cut between two steps, e.g.
    creating a temporary file and entering the ``try`` that removes it. Outside the main thread (where Python runs
    signal handlers) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    stops = (signal.SIGINT, signal.SIGTERM)
    handlers = {stop: signal.signal(stop, lambda signum, frame: received.append(signum)) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in handlers.items():
            signal.signal(stop, handler)
    if received:
        signal.raise_signal(received[0])
