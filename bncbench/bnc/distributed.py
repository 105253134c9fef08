"""The counting passes of an out-of-core fit on a dask.distributed cluster (``fit_file(..., client=...)``).

Counts are sums, so a pass over a file's chunks can be made by many workers and added up (SkDB paper Sect.
2.1; DESIGN.md, "Scale"). A pass is ``data.accumulate(total, add)`` (``bncbench.bnc.training_data``): in one
process ``add(total, chunk)`` for each chunk in turn; here one task per chunk reads its rows from the file itself
(``ChunkedCodes.chunk_codes``: the workers see the file at the same path, as on a SLURM cluster's shared file
system), codes them as the driver does, adds them to an empty copy of ``total`` with the same ``add`` (the same
numba kernels) and returns that partial total, and the driver merges the partial totals into ``total`` in the
chunks' order (``total.merge``). Integer counts are equal to the last bit in any order; the contexts of a context
tree are numbered as one pass numbers them because the merges go in the chunks' order (``ContextTree.merge``),
and SkDB's leave-one-out losses, floating sums, are added chunk by chunk in the order of one pass.

What stays in the driver: the first pass (the columns' values, the sample, the MDL cut points), the structure
chosen from the counts, the gathering of the m-estimate's holdout rows (``rows_at``), the estimator's tables and
the predictions. dask is imported only when a scheduler is asked for (``dask_client``).
"""

import collections
import contextlib
import logging
import os
from collections.abc import Iterator

from bncbench.core.errors import ConfigError

#: Seconds a client waits for the scheduler at a given address before the setting is refused.
CONNECT_SECONDS = 30


def accumulate_on(client, data, total, add):
    """``data.accumulate(total, add)`` on the workers of ``client`` (module docstring): one task per chunk of
    ``data.file_chunks()``; at most twice as many partial totals waiting as the workers have threads, so that the
    driver holds one at a time and the workers never wait for it long."""
    shared = client.scatter([data, add, total.empty_copy()], broadcast=True, hash=False)
    window = max(2, 2 * sum(client.nthreads().values()))
    pending = collections.deque()
    for chunk in data.file_chunks():
        pending.append(client.submit(_partial_total, *shared, chunk, pure=False))
        if len(pending) >= window:
            total.merge(pending.popleft().result())
    while pending:
        total.merge(pending.popleft().result())
    return total


def _partial_total(data, add, empty, chunk):
    """A task: the chunk's rows added to an empty total (``empty`` is shared by the worker's tasks: copied)."""
    partial = empty.empty_copy()
    add(partial, data.chunk_codes(chunk))
    return partial


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int = 2, connect_seconds: float = CONNECT_SECONDS) -> Iterator:
    """The dask client that ``out_of_core.scheduler`` names, closed after: None for none (count in this process);
    ``"local"``, a ``LocalCluster`` of ``workers`` processes of one thread started for the block (each with its share
    of this machine's cores for the numba kernels) and stopped after it; else the address of a running scheduler
    (``tcp://host:8786``), whose workers count.

    Raises
    ------
    ConfigError
        dask.distributed is not installed, or no scheduler answers at the address within ``connect_seconds``.
    """
    if scheduler is None:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            f"out_of_core.scheduler={scheduler!r} counts on a dask cluster, and dask.distributed is not installed: "
            "pip install 'bncbench[distributed]', or set out_of_core.scheduler=null to count in this process."
        ) from None
    if scheduler == "local":
        threads = {"NUMBA_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // workers))}
        with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0", env=threads,
                          silence_logs=logging.ERROR) as cluster:  # any free port: cells may start clusters at once
            with Client(cluster) as client:
                yield client
        return
    try:
        client = Client(scheduler, timeout=connect_seconds)
    except (OSError, ValueError, TypeError) as error:  # refused, timed out, or not an address
        raise ConfigError(
            f"out_of_core.scheduler={scheduler!r}: no dask scheduler answered there within {connect_seconds} s "
            f"({type(error).__name__}: {error}); give the address of a running scheduler (tcp://host:8786), local to "
            "start a LocalCluster on this machine, or null to count in this process."
        ) from None
    with client:
        yield client
