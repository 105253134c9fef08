"""What a researcher sees in MLflow's UI after a sweep: the two lines the sweep prints are followed as
written (``mlflow ui`` on the sweep's store, the link opened in headless Chromium), and the page Chromium
renders is read as the researcher would read it.

Chromium's own ``--dump-dom`` renders the page, with ``--virtual-time-budget``: it returns once 20 s of the
page's own clock have passed, a clock that stands still while a request is pending, so that no wait is
guessed whatever the machine's load, and no browser driver is needed.
The test is skipped where Debian's ``chromium`` is absent; ``.ci/run`` installs it.
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bncbench.core.metrics import LOSSES

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH to render MLflow's UI (Debian: apt-get install chromium)"
)

RUNS = ["sklearn-iris/kdb1_m_estimate", "sklearn-iris/nb_laplace"]  # sorted by name, as the view sorts them
#: The flags that run Chromium as root in a container, without a first-run dialog or connections of its own.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: Wide enough that the runs table renders all its columns (it renders only those in sight).
WINDOW = "--window-size=1920,1080"


class RenderedPage(HTMLParser):
    """A page as Chromium rendered it: the texts of its ``<code>``, headings and links, and the cells of
    its runs table (``rows``: run id to ``{column id: text}``, with ``row-index`` the row's position).

    A cell's text is that of its link where it has one: the run name's cell also holds the hex code of the
    run's colour, for screen readers.
    """

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    KEPT = {"code", "h2", "a"}

    def __init__(self, dom: str):
        super().__init__(convert_charrefs=True)
        self.texts = {tag: [] for tag in self.KEPT}
        self.rows = {}
        self._open = []  # per open element: tag, row id, column id, whether it is the cell, its text so far
        self._links = {}  # (row id, column id): the text of the cell's link
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        row, column = self._open[-1][1:3] if self._open else (None, None)
        if "row-id" in attrs:
            row = attrs["row-id"]
            self.rows.setdefault(row, {})["row-index"] = int(attrs["row-index"])
        if tag not in self.VOID:
            self._open.append((tag, row, attrs.get("col-id", column), "col-id" in attrs, []))

    def handle_data(self, data):
        if self._open and self._open[-1][0] not in ("script", "style"):
            self._open[-1][4].append(data)

    def handle_endtag(self, tag):
        while self._open:
            name, row, column, is_cell, parts = self._open.pop()
            text = " ".join("".join(parts).split())
            if self._open:
                self._open[-1][4].append(f" {text} ")
            if name in self.KEPT:
                self.texts[name].append(text)
            if name == "a" and row and column:
                self._links[row, column] = text
            if is_cell and row:
                self.rows[row][column] = self._links.get((row, column), text)
            if name == tag:
                return

    def table(self) -> list[dict]:
        """The rows of the runs table, top to bottom."""
        return sorted(self.rows.values(), key=lambda cells: cells["row-index"])


def render(url: str, profile: Path) -> RenderedPage:
    """``url`` opened in a fresh headless Chromium, once its scripts ran and no request is pending."""
    done = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", WINDOW, "--virtual-time-budget=20000",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return RenderedPage(done.stdout)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(server: subprocess.Popen, url: str, log: Path, seconds: float = 120) -> None:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow ui exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with direct.open(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"mlflow ui did not answer {url} within {seconds} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, run_cli, new_store):
    """A sweep of two cells into a new store: its output and its store's URI."""
    work = tmp_path_factory.mktemp("ui")
    uri = new_store(work)
    result = run_cli(
        "experiment.datasets=[sklearn-iris]",
        "experiment.models=[nb_laplace,kdb1_m_estimate]",
        "experiment.comparisons=[{a: kdb1_m_estimate, b: nb_laplace}]",
        "executor.n_jobs=1",
        f"tracking_uri={uri}",
        cwd=work,
    )
    assert result.returncode == 0, result.output
    return result.stdout, uri


@pytest.fixture(scope="module")
def runs_page(sweep, tmp_path_factory):
    """The page of the link the sweep printed, served by the ``mlflow ui`` command it printed."""
    output, _ = sweep
    command = shlex.split(re.search(r"browse the runs: (mlflow ui .*)", output).group(1))
    link = re.search(r"then open (\S+)", output).group(1)
    port = free_port()
    work = tmp_path_factory.mktemp("browser")
    log = work / "mlflow-ui.log"
    with open(log, "w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", *command, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            # without the job runner of MLflow's GenAI features (a dozen processes), which the page does not use
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_until_up(server, f"http://127.0.0.1:{port}/health", log)
        yield render(link.replace("127.0.0.1:5000", f"127.0.0.1:{port}", 1), work / "profile")
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # mlflow ui and the uvicorn worker it started
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_the_link_opens_the_runs_table_with_the_losses_by_run_name(runs_page, sweep):
    from mlflow.tracking import MlflowClient

    table = runs_page.table()
    assert [row.get("attributes.`Run Name`") for row in table] == RUNS
    output, store = sweep
    experiment_id = re.search(r"#/experiments/(\d+)/", output).group(1)
    logged = {run.info.run_name: run.data.metrics for run in MlflowClient(store).search_runs([experiment_id])}
    for row in table:
        shown = {loss: float(row[f"metrics.`{loss}`"]) for loss in LOSSES}
        assert shown == {loss: logged[row["attributes.`Run Name`"]][loss] for loss in LOSSES}


def test_the_link_opens_the_model_training_navigation(runs_page):
    headings, links = runs_page.texts["h2"], set(runs_page.texts["a"])
    assert "Runs" in headings and "Training runs" not in headings, headings
    assert {"Runs", "Models"} <= links, links
    assert not {"Overview", "Sessions", "Judges", "Evaluation runs"} & links, "GenAI navigation"


def test_the_description_is_rendered_as_markdown(runs_page):
    code = runs_page.texts["code"]
    assert "dataset/model" in code and "fold/<metric>" in code, code


def test_an_import_describes_an_experiment_as_its_sweep_would_or_says_it_has_no_config():
    from bncbench.app.ui import imported_experiment_tags

    smoke = imported_experiment_tags("smoke")
    assert smoke["mlflow.note.content"].startswith("bncbench experiment `smoke`: ") and "Comparisons:" in smoke[
        "mlflow.note.content"]
    unknown = imported_experiment_tags("made_elsewhere")
    assert "`made_elsewhere`, imported from bundles" in unknown["mlflow.note.content"]
    assert "this checkout has no config of that name" in unknown["mlflow.note.content"]
    assert unknown["mlflow.experimentKind"] == smoke["mlflow.experimentKind"]  # the same view either way
