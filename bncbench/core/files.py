"""Files bncbench makes beside the user's: never written through a symbolic link it did not make.

A lock file (``.mlflow.db.lock`` beside a store, ``.schema.json.lock`` in a dataset store) is opened,
or created, without following a link and without truncating: a link planted at its name would
otherwise truncate, or create, the file it points to. bncbench's other files are written into folders
it has just created (``tempfile``), then renamed into place, which replaces a link, not its target.
"""

import errno
import fcntl
import os
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
