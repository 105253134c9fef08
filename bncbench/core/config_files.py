"""Where bncbench's configs live: the top-level ``conf/`` directory of a checkout, or the same files as
``bncbench/conf`` in an installed (non-editable) package (see ``setup.py``). The app composes them with
Hydra; the data layer reads a dataset's own file (``conf/dataset/<name>.yaml``) to load it by name."""

from pathlib import Path

from bncbench.core.errors import ConfigError

CONFIG_NAME = "config"


def config_dir() -> Path:
    """The directory holding ``config.yaml``: ``bncbench/conf`` when installed, else ``<checkout>/conf``."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / f"{CONFIG_NAME}.yaml").is_file():
            return candidate
    raise ConfigError(
        f"no {CONFIG_NAME}.yaml in {package / 'conf'} or {package.parent / 'conf'}; "
        "reinstall bncbench (pip install .) or run it from a checkout."
    )
