"""A report is published whole or not at all: a failure half-way (an error, a read-only or full disk)
leaves the previous report as it was, and what else its folder holds is never touched."""

import os

import pytest

from bncbench.report.staging import staged

OUTPUTS = ("README.md", "results.csv", "published.md", "figures")


def previous_report(place):
    (place / "figures").mkdir(parents=True)
    (place / "figures" / "old.png").write_bytes(b"old figure")
    for name in ("README.md", "results.csv", "published.md"):
        (place / name).write_text(f"old {name}")
    (place / "bundles").mkdir()
    (place / "bundles" / "part1.parquet").write_bytes(b"results of hours")
    return {p.relative_to(place): p.read_bytes() for p in place.rglob("*") if p.is_file()}


def snapshot(place):
    return {p.relative_to(place): p.read_bytes() for p in place.rglob("*") if p.is_file()}


def test_a_new_report_replaces_the_old_and_leaves_the_rest(tmp_path):
    place = tmp_path / "reports" / "kdb"
    previous_report(place)
    with staged(place, OUTPUTS) as out:
        (out / "README.md").write_text("new")
        (out / "results.csv").write_text("new results")
        (out / "figures").mkdir()
        (out / "figures" / "new.png").write_bytes(b"new figure")
    assert snapshot(place) == {
        place.joinpath("README.md").relative_to(place): b"new",
        place.joinpath("results.csv").relative_to(place): b"new results",
        place.joinpath("figures/new.png").relative_to(place): b"new figure",
        place.joinpath("bundles/part1.parquet").relative_to(place): b"results of hours",
    }  # published.md, which the new report lacks, is gone; the bundles stay
    assert [p.name for p in place.parent.iterdir()] == ["kdb"]  # no staging folder left


def test_a_failure_half_way_leaves_the_previous_report(tmp_path):
    place = tmp_path / "reports" / "kdb"
    before = previous_report(place)
    with pytest.raises(RuntimeError, match="a bug"):
        with staged(place, OUTPUTS) as out:
            (out / "README.md").write_text("half")
            raise RuntimeError("a bug in the report")
    assert snapshot(place) == before
    assert [p.name for p in place.parent.iterdir()] == ["kdb"]


def test_a_full_disk_leaves_the_previous_report(tmp_path, small_disk):
    with small_disk(tmp_path / "disk", "256k") as disk:
        place = disk / "kdb"
        before = previous_report(place)
        with pytest.raises(OSError) as error:
            with staged(place, OUTPUTS) as out:
                (out / "results.csv").write_bytes(os.urandom(1024) * 1024)  # 1 MiB on 256 KiB
        assert "No space left on device" in str(error.value)
        assert snapshot(place) == before
