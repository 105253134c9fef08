"""A full disk under the store and its artifacts: each cell says so in one line, without a traceback,
and nothing already logged is lost. The disk is a real small tmpfs (mounting needs root, as in CI)."""

import logging
import os
import shutil

import pytest

from bncbench import tracking
from bncbench.app.runner import DISK_FULL, run_cell


def fill(disk, leave_bytes):
    """Fill the disk but ``leave_bytes``."""
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as filler:
        filler.write(b"\0" * max(0, free - leave_bytes))


@pytest.mark.parametrize("leave_kib", [16, 64])  # the run cannot start; it starts, its artifacts cannot be written
def test_a_cell_on_a_full_disk_says_so_in_one_line(leave_kib, tmp_path, empty_store_template, caplog,
                                                    small_disk, plan_cell):
    with small_disk(tmp_path / "disk", "4m") as disk:
        shutil.copyfile(empty_store_template, disk / "mlflow.db")
        places = [f"tracking_uri=sqlite:///{disk}/mlflow.db", f"artifact_location={disk}/artifacts"]
        job = plan_cell("sklearn-iris", "nb_laplace", *places)
        client = tracking.open_store(job[1].tracking_uri)
        exp = tracking.prepare_experiment(client, "smoke", job[1].artifact_location)
        assert run_cell(*job).status == "finished"
        kept = client.search_runs([exp])[0].info.run_id
        fill(disk, leave_kib * 1024)
        other = plan_cell("sklearn-wine", "nb_laplace", *places)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            outcome = run_cell(*other)
        assert (outcome.status, outcome.message) == ("failed", DISK_FULL)  # the sweep's one line
        assert not any(r.exc_info or r.levelno >= logging.WARNING for r in caplog.records)
        os.remove(disk / "filler")
        assert client.get_run(kept).info.status == "FINISHED"  # what was logged before is intact
        started = [r for r in client.search_runs([exp]) if r.info.run_id != kept]
        assert len(started) == (0 if leave_kib == 16 else 1)
        assert all(r.info.status != "FINISHED" for r in started)  # so the next sweep runs it again
