"""Credentials in URIs (``http://user:secret@host:5000``): kept out of everything bncbench prints or writes.

A ``tracking_uri`` may carry a password for an mlflow server. Text shown or written (messages, the
composed config, a command to resume, a cluster's job files) has it masked (``masked``); the workers
of a sweep are given the URI without it and the credentials in MLflow's own variables
(``MLFLOW_TRACKING_USERNAME``, ``MLFLOW_TRACKING_PASSWORD``), which they inherit
(``credentials_to_environment``).
"""

import os
import re
from urllib.parse import unquote

#: ``scheme://user:password@``: the user information of a URI with a password, anywhere in a text.
_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s'\"]*):(?P<password>[^/@\s'\"]*)@")
MASK = "***"


def masked(text) -> str:
    """``text`` with the password of every URI in it replaced by ``MASK``."""
    return _CREDENTIALS.sub(rf"\g<scheme>\g<user>:{MASK}@", str(text))


def credentials_to_environment(uri: str) -> str:
    """``uri`` without its user information; its user name and password, if it has them, set as
    ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` of this process (and so of the
    processes it starts), where MLflow's HTTP client reads them."""
    found = _CREDENTIALS.match(uri)
    if found is None:
        return uri
    os.environ["MLFLOW_TRACKING_USERNAME"] = unquote(found["user"])
    os.environ["MLFLOW_TRACKING_PASSWORD"] = unquote(found["password"])
    return found["scheme"] + uri[found.end():]
