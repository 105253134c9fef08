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
                                                    small_disk, compose_cell):
    with small_disk(tmp_path / "disk", "4m") as disk:
        shutil.copyfile(empty_store_template, disk / "mlflow.db")
        places = [f"tracking_uri=sqlite:///{disk}/mlflow.db", f"artifact_location={disk}/artifacts"]
        cfg = compose_cell("sklearn-iris", "nb_laplace", *places)
        client = tracking.open_store(cfg.tracking_uri)
        exp = tracking.prepare_experiment(client, "smoke", cfg.artifact_location)
        assert run_cell(cfg, client, exp, "sklearn-iris", "nb_laplace") == "finished"
        kept = client.search_runs([exp])[0].info.run_id
        fill(disk, leave_kib * 1024)
        other = compose_cell("sklearn-wine", "nb_laplace", *places)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert run_cell(other, client, exp, "sklearn-wine", "nb_laplace") == "failed"
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert [r.getMessage() for r in errors] == [f"sklearn-wine/nb_laplace: FAILED: {DISK_FULL}"]
        assert not any(r.exc_info for r in caplog.records)
        os.remove(disk / "filler")
        assert client.get_run(kept).info.status == "FINISHED"  # what was logged before is intact
        started = [r for r in client.search_runs([exp]) if r.info.run_id != kept]
        assert len(started) == (0 if leave_kib == 16 else 1)
        assert all(r.info.status != "FINISHED" for r in started)  # so the next sweep runs it again
