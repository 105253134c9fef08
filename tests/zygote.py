"""A zygote of ``python -m bncbench``: a process that imports bncbench's heavy modules once, then forks a
child per command, which starts with them imported (the ``run_cli`` fixture of conftest.py starts one per
pytest worker and talks to it).

``python tests/zygote.py REQUESTS REPLIES``: reads requests from the pipe ``REQUESTS`` and answers on
``REPLIES`` (file descriptors, ``multiprocessing.connection`` messages of JSON). A request is
``{"module", "argv", "cwd", "env", "stdout", "stderr", "session"}``; the zygote forks a child that runs
``python -m <module> <argv>`` with exactly that environment and working directory, its output in the files
``stdout`` and ``stderr`` (one file when they are the same path; a terminal's path is a path too), its input
/dev/null, in a new session (``setsid``, as ``subprocess``'s ``start_new_session``) if ``session``, and answers
``{"pid"}`` at once, then ``{"returncode"}``
(minus the signal's number if a signal ended it, as ``subprocess`` says), then ``{"reaped"}`` once the pid is
free. The zygote is single-threaded
(forking a process with threads of Python is unsafe) and serves one request at a time, until its request
pipe closes.
"""

import atexit
import importlib
import json
import os
import runpy
import signal
import sys
import threading
from multiprocessing.connection import Connection

#: Modules a sweep's command imports as it goes (its store, a dataset of scikit-learn's, the metrics, the
#: report's tables and figures, the code's git commit), found by the modules a child of ``preload`` alone
#: imported while it ran ``experiment=smoke``: imported here, once, instead of in every child.
IMPORTED_AS_IT_GOES = (
    "alembic.command", "alembic.config", "git", "narwhals.stable.v2", "narwhals._pandas_like.dataframe",
    "pandas.io.formats.style", "pyarrow.pandas_compat", "sklearn.metrics",
    "sklearn.model_selection", "sqlalchemy.dialects.sqlite", "bncbench.data.sources.scikit_learn",
    "bncbench.report.writer", "bncbench.tracking.record", "bncbench.tracking.runs", "bncbench.tracking.store",
)


def preload() -> None:
    """Import what a command imports; MLflow sets its log level from the environment as
    ``bncbench.app.cli`` sets it before MLflow loads. ``bncbench.__main__`` itself is left out: runpy warns
    when the module it runs as ``__main__`` is already imported. Then what a first use costs each process:
    Hydra's search for its plugins, and numba's set-up of its CPU target (its typing and lowering registries),
    made by compiling a function of one line; no kernel of bncbench runs here (numba's OpenMP threads must
    not start before a fork)."""
    from bncbench.app import cli

    cli._quiet_libraries()
    import hydra  # noqa: F401
    import mlflow
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    import numba
    import sklearn  # noqa: F401
    from hydra.core.plugins import Plugins

    import bncbench.app.runner
    import bncbench.app.sweep  # noqa: F401

    for module in IMPORTED_AS_IT_GOES:
        importlib.import_module(module)
    Plugins.instance()
    numba.njit(lambda x: x + 1)(1)


def serve(requests: Connection, replies: Connection) -> None:
    """Fork a child per request; answer its pid, then its exit status."""
    while True:
        try:
            request = json.loads(requests.recv_bytes())
        except EOFError:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                requests.close()
                replies.close()
                run_command(request)
            finally:  # never back into the zygote's loop, whatever failed
                os._exit(1)
        replies.send_bytes(json.dumps({"pid": pid}).encode())
        # Wait without reaping: the pid stays the child's (a zombie) until its status is sent, so that a
        # client killing it at a timeout cannot hit another process that took the pid.
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        code = ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
        replies.send_bytes(json.dumps({"returncode": code}).encode())
        os.waitpid(pid, 0)
        replies.send_bytes(json.dumps({"reaped": pid}).encode())


def run_command(request: dict) -> None:
    """In the forked child: run the request's command as ``python -m`` would, then exit with its status."""
    if request["session"]:
        os.setsid()
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.path[0] = os.getcwd()  # where ``python -m`` puts the working directory
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                            (2, request["stderr"], os.O_WRONLY)):
        if fd == 2 and path == request["stdout"]:
            os.dup2(1, 2)  # as ``stderr=subprocess.STDOUT``: one file, one offset
            continue
        opened = os.open(path, flags | os.O_NOCTTY)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [sys.argv[0], *request["argv"]]  # runpy puts the module's file first, as ``-m`` does
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as exit:
        status = exit_status(exit.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        status = -signal.SIGINT  # Python ends itself by SIGINT then
    except BaseException:  # noqa: BLE001 - what Python itself does with an uncaught exception
        sys.excepthook(*sys.exc_info())
        status = 1
    threading._shutdown()  # what the interpreter does at exit: join the threads, then the atexit functions
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            status = 120  # as Python, when its output cannot be flushed at exit
    if status == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


def exit_status(code) -> int:
    """The exit status of ``sys.exit(code)``: 0 for None, the number, else 1 with the code on stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main() -> None:
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    preload()
    replies.send_bytes(json.dumps({"ready": os.getpid()}).encode())
    try:
        serve(requests, replies)
    except KeyboardInterrupt:  # Ctrl-C on the test session: its process group
        pass


if __name__ == "__main__":
    main()
