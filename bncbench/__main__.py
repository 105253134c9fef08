"""``python -m bncbench [experiment=<name>] [overrides]``: run an experiment (default: ``smoke``).

The experiment runs as a Hydra multirun of its (dataset, model) cells (see ``bncbench.runner``).
Before Hydra starts, the overrides are composed once by ``bncbench.config.compose`` so that a wrong
name or value is reported as one line (exit status 2) instead of Hydra's stack trace.
"""

import sys

import hydra
from hydra._internal.utils import get_args_parser  # Hydra's own CLI parser (pinned hydra-core 1.3)

from bncbench.config import CONFIG_NAME, compose, config_dir
from bncbench.errors import BncbenchError
from bncbench.runner import run_job

#: Flags after which Hydra does not run the app, or reads configs from elsewhere: no pre-check then.
_UNCHECKED = ("help", "hydra_help", "info", "shell_completion", "config_path", "config_name", "config_dir")


def main() -> None:
    args = get_args_parser().parse_known_args()[0]
    try:
        if not any(getattr(args, flag, None) for flag in _UNCHECKED):
            compose(args.overrides)
        app = hydra.main(version_base="1.3", config_path=str(config_dir()), config_name=CONFIG_NAME)(run_job)
    except BncbenchError as err:
        print(f"bncbench: error: {err}", file=sys.stderr)
        sys.exit(2)
    app()


if __name__ == "__main__":
    main()
