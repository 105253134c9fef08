"""Start-up of the classifier alone (issue 13): ``from bncbench import BNClassifier`` in a fresh
process, beside the same process importing only the libraries the classifier needs (scikit-learn's
base classes, pandas, numba, scipy.special), so that bncbench's own share shows; and which heavy
libraries the import pulls in (mlflow, hydra and matplotlib must not be among them).

Each figure is the best of ``--repeats`` fresh interpreters (bytecode and numba's cache warm after the
first), interpreter start and exit included: wall time, and CPU time (user + system of the process),
which a loaded machine inflates far less.

    python benchmarks/import_time.py [--repeats 5]
"""

import argparse
import resource
import subprocess
import sys
import time

CLASSIFIER = "from bncbench import BNClassifier"
LIBRARIES = "import sklearn.base, pandas, numba, scipy.special"
MUST_NOT_LOAD = ("mlflow", "hydra", "matplotlib")


def best_seconds(code: str, repeats: int) -> tuple[float, float]:
    """The best wall and the best CPU seconds of ``repeats`` interpreters running ``code``."""
    subprocess.run([sys.executable, "-c", code], check=True)  # may write bytecode: not timed
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
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
    for kind, mine, theirs in zip(("wall", "CPU"), classifier, libraries, strict=True):
        print(f"{CLASSIFIER!r}: {mine:.3f} s {kind}; the libraries alone ({LIBRARIES!r}): {theirs:.3f} s; "
              f"bncbench's own share: {mine - theirs:.3f} s (best of {args.repeats})")
    print(f"of {', '.join(MUST_NOT_LOAD)}, imported: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
