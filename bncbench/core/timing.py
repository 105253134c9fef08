"""Timing fits and predictions without numba's compilation in them.

numba compiles a kernel, or loads it from its on-disk cache, the first time the kernel is called with
new argument types, inside whatever call that happens to be: on a fresh install the first fold's
``fit_seconds`` would be compilation (tens of seconds) rather than fitting. ``timed`` guarantees that
no timed region holds a compilation; the warm-up of ``bncbench.protocol.cross_validation`` on a few rows of each cell
(``bncbench.protocol.cross_validation.cross_validate``) makes it rare that ``timed`` has to repeat a call.
"""

import time
import warnings
from collections.abc import Callable

from numba.core import event

#: numba enters its compiler lock to compile a kernel or load one from its cache, and at no other time
#: (a call with types already compiled in the process is dispatched without it).
COMPILER_EVENT = "numba:compiler_lock"
#: A call that still compiles after this many attempts is not timed (its time would not be its own).
ATTEMPTS = 3


class CompilationInTimingWarning(UserWarning):
    """A call kept compiling numba kernels each time it ran, so its time was not recorded."""


def timed(function: Callable, what: str = "call"):
    """Run ``function()`` and time it by ``time.perf_counter``, with no numba compilation inside.

    When numba compiled (or loaded from its cache) during the call, the call is made again and the
    repeat is timed, so ``function`` must give the same result when repeated (a fit with a fixed
    ``random_state``, a prediction).

    Parameters
    ----------
    function : callable
        The call to time, without arguments.
    what : str
        What the call is, for the warning.

    Returns
    -------
    result, float
        What ``function`` returned, and its wall-clock seconds; NaN seconds (with a
        ``CompilationInTimingWarning``) if it compiled in each of ``ATTEMPTS`` attempts.
    """
    for _ in range(ATTEMPTS):
        result = None  # a first result is let go before the repeat: two fits' data at once could double a peak
        with event.install_recorder(COMPILER_EVENT) as recorder:
            start = time.perf_counter()
            result = function()
            seconds = time.perf_counter() - start
        if not recorder.buffer:
            return result, seconds
    warnings.warn(
        f"{what} compiled numba kernels each of {ATTEMPTS} times it ran; its time is not recorded (NaN).",
        CompilationInTimingWarning,
        stacklevel=2,
    )
    return result, float("nan")
