"""``python -m bncbench [subcommand] [arguments]``: the ``bncbench`` command (``bncbench.app.cli``).

Without a subcommand it is ``bncbench run``, as before there were subcommands: ``python -m bncbench``
runs the ``smoke`` experiment, ``python -m bncbench experiment=kdb`` the ``kdb`` one.
"""

import sys

from bncbench.app import cli


def main() -> None:
    """Run the command of ``sys.argv`` and exit with its status."""
    prog = "python -m bncbench"
    sys.exit(cli.main(prog=prog))


if __name__ == "__main__":
    main()
