"""``python -m bncbench [experiment=<name>] [overrides]``: run an experiment (default: ``smoke``).

The experiment runs as a Hydra multirun of its (dataset, model) cells (see ``bncbench.runner``).
Before Hydra starts, the overrides are composed once by ``bncbench.config.compose`` so that a wrong
name or value is reported as one line (exit status 2) instead of Hydra's stack trace.

Ctrl-C (SIGINT) or SIGTERM stops the cells' worker processes (joblib aborts its pool), prints what
finished and how to resume, and exits with status 128 + the signal's number (130, 143). The workers
ignore SIGINT themselves (a terminal sends Ctrl-C to the whole process group): the launcher alone
decides, and a worker caught between two cells prints no traceback of its own.
"""

import signal
import sys

import hydra
from joblib import parallel_config
from hydra._internal.utils import get_args_parser  # Hydra's own CLI parser (pinned hydra-core 1.3)

from bncbench.config import CONFIG_NAME, compose, config_dir
from bncbench.errors import BncbenchError
from bncbench.runner import run_job
from bncbench.sweep import print_interruption

#: Flags after which Hydra does not run the app, or reads configs from elsewhere: no pre-check then.
_UNCHECKED = ("help", "hydra_help", "info", "shell_completion", "config_path", "config_name", "config_dir")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that joblib stops its workers the same way."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _ignore_interrupts() -> None:
    """Run first in each joblib worker: Ctrl-C is the launcher's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def main() -> None:
    args = get_args_parser().parse_known_args()[0]
    cfg = None
    try:
        if not any(getattr(args, flag, None) for flag in _UNCHECKED):
            cfg = compose(args.overrides)
        app = hydra.main(version_base="1.3", config_path=str(config_dir()), config_name=CONFIG_NAME)(run_job)
    except BncbenchError as err:
        print(f"bncbench: error: {err}", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with parallel_config(backend="loky", initializer=_ignore_interrupts):
            app()
    except KeyboardInterrupt as err:
        signum = signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the summary short
        if cfg is not None:
            print_interruption(cfg, signal.Signals(signum).name, sys.argv[1:])
        sys.exit(128 + signum)


if __name__ == "__main__":
    main()
