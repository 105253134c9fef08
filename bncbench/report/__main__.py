"""``python -m bncbench.report experiment=<name> [overrides]``: regenerate an experiment's tables.

Composes the same config as ``python -m bncbench`` (so ``tracking_uri``, ``report_dir`` and
``report.*`` can be overridden alike) and writes the report from the logged runs, refitting nothing.
"""

import sys
from collections.abc import Sequence

from bncbench.config import compose
from bncbench.errors import BncbenchError
from bncbench.report.writer import write_report


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report; a user error is printed as one message and gives exit code 2."""
    try:
        out = write_report(compose(sys.argv[1:] if argv is None else argv))
    except BncbenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
