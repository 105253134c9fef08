"""Start-up of the headline command (issues 24, 28): how long ``python -m bncbench experiment=<e>`` takes
to start its first cell on a fresh store, a resume of a finished store to say so and exit, and
``bncbench list <kind>`` to answer.

Each figure is a whole process, timed from its start: "first cell" until the store holds the first run
of a cell (the process is then stopped), "resume" until a rerun of an experiment whose every cell is
finished exits, "list <kind>" until the listing exits (``--no-first-cell`` leaves the first out). With ``--against REV`` the same is timed for another revision of the code (a ``git
archive`` of it on ``PYTHONPATH``) in the same run, alternating, so that the ratio holds on a loaded
machine::

    python benchmarks/startup.py --data-dir ../shared/datasets                      # this checkout
    python benchmarks/startup.py --data-dir ../shared/datasets --against d7f2ac7    # and d7f2ac7 beside it
    python benchmarks/startup.py --data-dir ../shared/datasets --against d7f2ac7 --no-first-cell

numba's cache is warm for both (a warm-up run first); the CPU model is printed with the figures.
"""

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def runs_in(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as connection:
            return connection.execute("select count(*) from runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def first_cell(code: Path, experiment: str, env: dict, timeout: float) -> float:
    """Seconds from the command's start to the first run of a cell in a new store."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mlflow.db"
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "bncbench", f"experiment={experiment}", f"tracking_uri=sqlite:///{db}",
             f"report_dir={tmp}/reports"],
            cwd=tmp, env={**env, "PYTHONPATH": str(code)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while runs_in(db) == 0:
                if process.poll() is not None or time.perf_counter() - start > timeout:
                    return float("nan")
                time.sleep(0.05)
            return time.perf_counter() - start
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def resume(code: Path, store: Path, env: dict) -> float:
    """Seconds a rerun of ``smoke`` on a store where every cell is finished takes, start to exit."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bncbench", "experiment=smoke", f"tracking_uri=sqlite:///{store}",
         f"report_dir={store.parent}/reports"],
        cwd=store.parent, env={**env, "PYTHONPATH": str(code)}, check=True, capture_output=True,
    )
    return time.perf_counter() - start


def listing(code: Path, kind: str, env: dict) -> float:
    """Seconds ``bncbench list <kind>`` takes, start to exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bncbench", "list", kind], env={**env, "PYTHONPATH": str(code)},
                   check=True, capture_output=True)
    return time.perf_counter() - start


#: The listings timed.
LISTED = ("models", "experiments", "datasets")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--experiment", default="hdp_vs_m")
    parser.add_argument("--against", help="another revision to time beside this checkout")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds to wait for a first cell")
    parser.add_argument("--no-first-cell", action="store_true", help="time the resume and the listings only")
    args = parser.parse_args()
    env = {**os.environ, "BNCBENCH_DATA_DIR": str(Path(args.data_dir).resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        codes = {"this checkout": REPO}
        if args.against:
            archive = Path(tmp) / args.against
            archive.mkdir()
            tar = subprocess.run(["git", "-C", str(REPO), "archive", args.against], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(archive)], input=tar.stdout, check=True)
            codes[args.against] = archive
        stores = {}
        for name, code in codes.items():  # warm numba's cache, and a finished smoke store to resume
            stores[name] = Path(tmp) / f"store-{len(stores)}" / "mlflow.db"
            stores[name].parent.mkdir()
            resume(code, stores[name], env)
        cases = ([] if args.no_first_cell else ["first cell"]) + ["resume"] + [f"list {kind}" for kind in LISTED]
        timings = {name: {case: [] for case in cases} for name in codes}
        for _ in range(args.repeats):
            for name, code in codes.items():
                if not args.no_first_cell:
                    timings[name]["first cell"].append(first_cell(code, args.experiment, env, args.timeout))
                timings[name]["resume"].append(resume(code, stores[name], env))
                for kind in LISTED:
                    timings[name][f"list {kind}"].append(listing(code, kind, env))
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; experiment {args.experiment}; {args.repeats} runs each")
    medians = {name: {what: sorted(seconds)[len(seconds) // 2] for what, seconds in found.items()}
               for name, found in timings.items()}
    for name, found in timings.items():
        for what, seconds in found.items():
            shown = ", ".join(f"{s:.1f}" for s in sorted(seconds))
            print(f"{name:>15}  {what:<16}  median {medians[name][what]:7.2f} s  ({shown})")
    if args.against:
        for what in cases:
            ratio = medians[args.against][what] / medians["this checkout"][what]
            print(f"{'speed-up':>15}  {what:<16}  x{ratio:.2f} ({args.against} / this checkout)")


if __name__ == "__main__":
    main()
