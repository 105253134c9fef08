"""``python -m bncbench.report experiment=<name> [overrides]``: regenerate an experiment's tables.

Composes the same config as ``python -m bncbench`` (so ``tracking_uri``, ``report_dir`` and
``report.*`` can be overridden alike) and writes the report from the logged runs of that
configuration (``cv.*``, ``hdp.iterations``, ... select the runs read), refitting nothing.
"""

import sys
from collections.abc import Sequence

from bncbench.app.config import compose
from bncbench.core.errors import BncbenchError
from bncbench.report.writer import write_report


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report; a user error is printed as one message and gives exit code 2."""
    overrides = list(sys.argv[1:] if argv is None else argv)
    try:
        out = write_report(compose(overrides), overrides)
    except BncbenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
