"""Credentials in URIs (``http://user:secret@host:5000``, ``https://host/api?token=secret``): kept out of
everything bncbench prints or writes.

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
#: A URI in a text, from its scheme to the first blank or quote, or the path of one with parameters, a query or
#: a fragment (``url: /api?token=...``, as urllib3's errors name it).
_URI = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]*|(?<![\w:/.])/[^\s'\"]*[;?#][^\s'\"]*")
#: The value of a path parameter (``;token=...``), of a query parameter (``?key=...``, ``&key=...``), and a
#: fragment (``#...``): each may carry a token.
_PATH_PARAMETER = re.compile(r"(;[^;=/?#]*=)[^;/?#]*")
_QUERY_PARAMETER = re.compile(r"([?&][^=&#]*=)[^&#]*")
_FRAGMENT = re.compile(r"#.+$")
MASK = "***"


def masked(text) -> str:
    """``text`` with every part of a URI in it that can carry a credential replaced by ``MASK``: the password
    of its user information, the values of its path and query parameters, its fragment."""
    return _URI.sub(lambda found: _masked_uri(found.group()), _CREDENTIALS.sub(rf"\g<scheme>\g<user>:{MASK}@", str(text)))


def _masked_uri(uri: str) -> str:
    path, query, fragment = re.match(r"([^?#]*)(\?[^#]*)?(#.*)?$", uri).groups()
    return (_PATH_PARAMETER.sub(rf"\g<1>{MASK}", path) + _QUERY_PARAMETER.sub(rf"\g<1>{MASK}", query or "")
            + _FRAGMENT.sub(f"#{MASK}", fragment or ""))


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
