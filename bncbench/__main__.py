"""``python -m bncbench [subcommand] [arguments]``: the ``bncbench`` command (``bncbench.cli``).

Without a subcommand it is ``bncbench run``, as before there were subcommands: ``python -m bncbench``
runs the ``smoke`` experiment, ``python -m bncbench experiment=kdb`` the ``kdb`` one.
"""

import sys

from bncbench.cli import main, run

if __name__ == "__main__":
    sys.exit(run([], "python -m bncbench") if len(sys.argv) == 1 else main(prog="python -m bncbench"))
