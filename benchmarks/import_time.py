"""Start-up of the classifier alone (issue 13): ``from bncbench import BNClassifier`` in a fresh
process, beside the same process importing only the libraries the classifier needs (scikit-learn's
base classes, pandas, numba, scipy.special), so that bncbench's own share shows; and which heavy
libraries the import pulls in (mlflow, hydra and matplotlib must not be among them).

Each figure is the best wall time of ``--repeats`` fresh interpreters (bytecode and numba's cache
warm after the first), interpreter start and exit included. On a loaded machine the difference of two
such figures is mostly noise, so bncbench's share is also timed inside one interpreter that has
imported the libraries first (wall and CPU time of the classifier's import alone). Bytecode is written
for the timed runs even under ``PYTHONDONTWRITEBYTECODE``, as an installed package has it.

    python benchmarks/import_time.py [--repeats 5]
"""

import argparse
import os
import subprocess
import sys
import time

CLASSIFIER = "from bncbench import BNClassifier"
LIBRARIES = "import sklearn.base, pandas, numba, scipy.special"
MUST_NOT_LOAD = ("mlflow", "hydra", "matplotlib")
#: The classifier's import timed in an interpreter that has imported ``LIBRARIES``: "<wall> <cpu>".
SHARE = (f"{LIBRARIES}; import time; wall, cpu = time.perf_counter(), time.process_time(); {CLASSIFIER}; "
         "print(time.perf_counter() - wall, time.process_time() - cpu)")
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def best_seconds(code: str, repeats: int) -> float:
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)  # may write bytecode: not timed
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
        times.append(time.perf_counter() - start)
    return min(times)


def own_share(repeats: int) -> tuple[float, float]:
    """The best wall and CPU seconds of the classifier's import after the libraries', in one interpreter."""
    runs = [subprocess.run([sys.executable, "-c", SHARE], check=True, env=ENV, capture_output=True, text=True)
            for _ in range(repeats)]
    walls, cpus = zip(*(map(float, run.stdout.split()) for run in runs), strict=True)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    loaded = subprocess.run(
        [sys.executable, "-c", f"{CLASSIFIER}; import sys; print(' '.join(sorted(sys.modules)))"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    heavy = sorted({name.split(".")[0] for name in loaded} & set(MUST_NOT_LOAD))
    classifier, libraries = best_seconds(CLASSIFIER, args.repeats), best_seconds(LIBRARIES, args.repeats)
    print(f"{CLASSIFIER!r}: {classifier:.3f} s; the libraries alone ({LIBRARIES!r}): {libraries:.3f} s; "
          f"bncbench's own share: {classifier - libraries:.3f} s (best of {args.repeats})")
    wall, cpu = own_share(args.repeats)
    print(f"timed in one interpreter after the libraries: {CLASSIFIER!r} adds {wall:.3f} s wall, {cpu:.3f} s CPU "
          f"(best of {args.repeats})")
    print(f"of {', '.join(MUST_NOT_LOAD)}, imported: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
