"""Report sections as plug-ins: each module of this package defines ``SECTION``, a :class:`PluginSection` that
receives the computed report (its records, per-fold values and options, :class:`bncbench.report.compute.Report`)
and writes its own files and its part of the README. A new section is one file here, found by :func:`plugins`
with no other file edited; the README shows the plug-ins' sections after the sign tests' W-D-L, in their
``order``.
"""

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bncbench.report.compute import Report
from bncbench.report.readme import Figures, Section


@dataclass(frozen=True)
class PluginSection:
    """A section of the report written by a plug-in.

    Attributes
    ----------
    order : int
        Its place among the plug-ins' sections (lower first).
    files : tuple of str
        The files it may write into the report's folder (an older version's are removed when it writes none).
    write : callable
        ``write(report, folder, figures) -> Section``: its files into ``folder``, its figures through
        ``figures``, and its README section (an empty body says why it is left out).
    """

    title: str
    order: int
    files: tuple[str, ...]
    write: Callable[[Report, Path, Figures], Section]


def plugins() -> list[PluginSection]:
    """Every module's ``SECTION`` in this package, in their ``order``."""
    found = [importlib.import_module(f"{__name__}.{module.name}").SECTION for module in pkgutil.iter_modules(__path__)]
    return sorted(found, key=lambda section: (section.order, section.title))
