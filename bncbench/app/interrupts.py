"""SIGTERM stops a command as Ctrl-C does: raised as ``KeyboardInterrupt``, so that what is half-written is undone
and the command says what stays, instead of dying with the shell's "Terminated"."""

import contextlib
import signal
from collections.abc import Iterator


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Interrupted``; the handler before it is put back after.

    Python runs a signal's handler in whatever Python code runs when the signal comes, and an exception raised in a
    weakref callback or a ``__del__`` is printed and dropped ("Exception ignored in ..."): a SIGTERM can be lost so
    (seen in CI: an import went on to its end and exited 0). Such a SIGTERM is raised again when the block ends, so a
    command never finishes as if it had not been asked to stop.
    """
    received = []

    def raise_interrupted(signum, frame):
        received.append(signum)
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
    if received:
        raise Interrupted()


def signal_of(interrupt: KeyboardInterrupt) -> signal.Signals:
    """The signal that raised ``interrupt``: SIGTERM (``Interrupted``) or SIGINT (Ctrl-C)."""
    return signal.SIGTERM if isinstance(interrupt, Interrupted) else signal.SIGINT
