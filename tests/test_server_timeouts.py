"""An mlflow server that refuses connections, or accepts them and never answers, is reported within a
bounded time with a message naming its URI: never minutes of silence, never a hang. The servers are
real sockets on 127.0.0.1. The first request's limit is MLflow's ``MLFLOW_HTTP_REQUEST_TIMEOUT`` where it is lower
than bncbench's 10 s: 1 s here, so that the tests wait 1 s, not 10, for a server that never answers."""

import socket
import threading

import pytest

from bncbench import tracking
from bncbench.core.errors import ConfigError

BOUND = 60  # seconds: far above the 10 s limit of the first request, far below MLflow's minutes
QUICK = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "1"}


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


def test_a_server_that_never_answers_is_named(silent_server, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", QUICK["MLFLOW_HTTP_REQUEST_TIMEOUT"])
    message = open_within_bound(silent_server)
    assert f"cannot open the tracking store {silent_server!r}" in message and "read timeout=1)" in message


@pytest.mark.parametrize("asked", [None, "30", "not a number"])
def test_the_first_request_waits_10_seconds_unless_mlflow_is_told_fewer(asked, monkeypatch):
    from bncbench.tracking.store import _first_request_timeout

    if asked is None:
        monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", asked)
    assert _first_request_timeout() == "10"
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    assert _first_request_timeout() == "3"


@pytest.mark.parametrize("command", [[], ["report", "experiment=smoke"]], ids=["run", "report"])
def test_a_command_stops_at_once_on_a_server_that_never_answers(command, silent_server, run_cli, cli_env, tmp_path):
    done = run_cli(*command, f"tracking_uri={silent_server}", cwd=tmp_path, env={**cli_env, **QUICK}, timeout=BOUND + 60)
    assert done.returncode == 2
    assert f"cannot open the tracking store {silent_server!r}" in done.stderr and "Traceback" not in done.stderr
