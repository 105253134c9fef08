"""SIGTERM stops a command as Ctrl-C does: raised as ``KeyboardInterrupt``, so that what is half-written is undone
and the command says what stays, instead of dying with the shell's "Terminated"."""

import contextlib
import signal
from collections.abc import Iterator


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""


def _raise_interrupted(signum, frame):
    raise Interrupted()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Interrupted``; the handler before it is put back after."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def signal_of(interrupt: KeyboardInterrupt) -> signal.Signals:
    """The signal that raised ``interrupt``: SIGTERM (``Interrupted``) or SIGINT (Ctrl-C)."""
    return signal.SIGTERM if isinstance(interrupt, Interrupted) else signal.SIGINT
