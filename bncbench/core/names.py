"""Names that become paths: a dataset's file in the store, an experiment's report folder and artifacts.

Such a name must be one plain path component, so that nothing is read or written outside the place the
user named (``experiment.name=..`` would otherwise put the report over the working directory's files,
a dataset ``../outside/secret`` read or fetch a file outside the data directory).
"""

import re

from bncbench.core.errors import ConfigError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The longest name, in bytes as the file system stores it (UTF-8): below the usual limit of 255 bytes
#: per file name, with room for what bncbench adds around it (``.csv.gz``, a bundle's id, a staging prefix).
MAX_LENGTH = 200


def check_path_name(kind: str, name) -> str:
    """Return ``name`` if it can be used as one file or folder name.

    Parameters
    ----------
    kind : str
        What the name names ("dataset", "experiment.name"), for the message.
    name : object
        The name to check.

    Raises
    ------
    ConfigError
        ``name`` is not a string, is empty, ``.`` or ``..``, starts with a dot, holds a path
        separator or a control character (newline, tab, NUL, ...), or is longer than ``MAX_LENGTH``
        bytes in UTF-8 (``é`` is two).
    """
    problem = None
    if not isinstance(name, str) or not name:
        problem = "is not a non-empty string"
    elif "/" in name or "\\" in name:
        problem = "holds a path separator"
    elif name.startswith("."):
        problem = "starts with a dot ('.', '..' and hidden names are paths, not names)"
    elif _CONTROL.search(name):
        problem = "holds a control character (newline, tab, ...)"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_LENGTH:
        problem = f"is {len(name.encode('utf-8', 'surrogatepass'))} bytes long in UTF-8, over the {MAX_LENGTH} a name may be"
    elif any("\ud800" <= char <= "\udfff" for char in name):
        problem = "holds a lone surrogate, which no file name can"
    if problem:
        raise ConfigError(
            f"{kind} {name!r} {problem}; it becomes a file or folder name, so use a plain name such as "
            "my_experiment or my-dataset (letters, digits, '-', '_', '.' inside)."
        )
    return name
