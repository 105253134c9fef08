"""An mlflow server that refuses connections, or accepts them and never answers, is reported within a
bounded time with a message naming its URI: never minutes of silence, never a hang. The servers are
real sockets on 127.0.0.1."""

import socket
import subprocess
import sys
import threading

import pytest

from bncbench import tracking
from bncbench.core.errors import ConfigError

BOUND = 60  # seconds: far above the 10 s limit of the first request, far below MLflow's minutes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server():
    """A server on 127.0.0.1 that accepts every connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


def open_within_bound(uri: str) -> str:
    """The message of open_store's ConfigError, asserting that it came within BOUND seconds."""
    outcome = {}

    def attempt():
        try:
            tracking.open_store(uri)
        except ConfigError as err:
            outcome["message"] = str(err)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"open_store({uri!r}) did not answer within {BOUND} s"
    return outcome["message"]


def test_a_server_that_refuses_connections_is_named():
    uri = f"http://127.0.0.1:{free_port()}"
    assert f"cannot open the tracking store {uri!r}" in open_within_bound(uri)


def test_a_server_that_never_answers_is_named(silent_server):
    assert f"cannot open the tracking store {silent_server!r}" in open_within_bound(silent_server)


def test_the_run_command_stops_at_once_on_a_server_that_never_answers(silent_server, cli_env, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bncbench", f"tracking_uri={silent_server}"],
        cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=BOUND + 60,
    )
    assert done.returncode == 2
    assert f"cannot open the tracking store {silent_server!r}" in done.stderr and "Traceback" not in done.stderr


def test_the_report_stops_at_once_on_a_server_that_never_answers(silent_server, cli_env, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bncbench", "report", "experiment=smoke", f"tracking_uri={silent_server}"],
        cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=BOUND + 60,
    )
    assert done.returncode == 2
    assert f"cannot open the tracking store {silent_server!r}" in done.stderr and "Traceback" not in done.stderr
