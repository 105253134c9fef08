"""What produced a run: the code, its environment, the machine, and the data read.

Each run is tagged with MLflow's own system tags where MLflow defines them (``mlflow.source.*``,
``mlflow.user``, ``mlflow.note.content``, the run's dataset inputs) and plain tags otherwise:
``version.<package>`` (``version.bncbench``, ``version.python``, ...), ``cpu.model``, ``cpu.count``
(``os.cpu_count``), ``cpu.affinity`` (the cores this process may use) and ``data_digest``, on which
resume and the report filter (see ``bncbench.data.digest``).
"""

from __future__ import annotations

import getpass
import importlib.util
import json
import os
import platform
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.dataset_source_registry import get_dataset_source_from_json
from mlflow.data.http_dataset_source import HTTPDatasetSource
from mlflow.data.meta_dataset import MetaDataset
from mlflow.entities import DatasetInput, InputTag, SourceType
from mlflow.types import ColSpec, DataType, Schema
from mlflow.utils.mlflow_tags import (
    MLFLOW_DATASET_CONTEXT,
    MLFLOW_GIT_BRANCH,
    MLFLOW_GIT_COMMIT,
    MLFLOW_GIT_DIRTY,
    MLFLOW_RUN_NOTE,
    MLFLOW_SOURCE_NAME,
    MLFLOW_SOURCE_TYPE,
    MLFLOW_USER,
)

from bncbench.data.digest import DataDigest

#: Packages whose versions each run records as ``version.<name>`` (python too), by their import name:
#: a package may be installed under another distribution's name (xgboost as ``xgboost-cpu``).
PACKAGES = {"bncbench": "bncbench", "numpy": "numpy", "numba": "numba", "scikit-learn": "sklearn", "scipy": "scipy",
            "pandas": "pandas", "pyarrow": "pyarrow", "mlflow": "mlflow", "xgboost": "xgboost"}
#: The distributions that install a package of ``PACKAGES`` under another name, tried before scanning them all.
OTHER_DISTRIBUTIONS = {"xgboost": ("xgboost-cpu",)}
UNKNOWN = "unknown"
#: The checkout the package is imported from (its parent directory holds ``bncbench/``).
PACKAGE_DIR = Path(__file__).resolve().parent
_COLUMN_TYPES = {"numeric": DataType.double, "nominal": DataType.string}


@dataclass(frozen=True)
class GitState:
    """The commit of a checkout and whether its tracked files differ from it; ``commit`` is
    ``"unknown"`` (and ``dirty`` None) when the code is not a git work tree, with ``why``."""

    commit: str
    dirty: bool | None = None
    branch: str | None = None
    why: str = ""


def git_state(package_dir: Path = PACKAGE_DIR) -> GitState:
    """The git state of the work tree ``package_dir`` is tracked in, not guessed: a package
    installed into a directory that some repository holds (untracked there) is unknown."""
    try:
        import git  # GitPython, an MLflow dependency; it needs the git executable

        with git.Repo(package_dir, search_parent_directories=True) as repo:  # closed: no git left running
            if not repo.git.ls_files("--", str(package_dir / "__init__.py")):
                return GitState(UNKNOWN, why=f"{package_dir} is not tracked by {repo.working_tree_dir}")
            branch = None if repo.head.is_detached else repo.active_branch.name
            return GitState(repo.head.commit.hexsha, repo.is_dirty(untracked_files=False), branch)
    except Exception as err:  # GitPython raises ImportError, InvalidGitRepositoryError, GitCommandError...
        return GitState(UNKNOWN, why=f"{package_dir} is not in a git work tree ({type(err).__name__})")


def versions() -> dict[str, str]:
    """Python's version and the installed version of each of ``PACKAGES``."""
    return {"python": platform.python_version()} | {name: _version(name, module) for name, module in PACKAGES.items()}


def _version(name: str, module: str) -> str:
    """The installed version of the package ``name`` (imported as ``module``), or "not installed"."""
    for distribution in (name, *OTHER_DISTRIBUTIONS.get(name, ())):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            pass
    if importlib.util.find_spec(module) is None:
        return "not installed"
    installed = metadata.packages_distributions().get(module)  # scanning every distribution takes a second
    return metadata.version(installed[0]) if installed else "not installed"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or UNKNOWN


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no entry in the password database (containers)
        return UNKNOWN


@cache
def run_tags() -> dict[str, str]:
    """The tags of every run of this process: code, environment and machine (computed once)."""
    git = git_state()
    found = versions()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    tags = {
        MLFLOW_SOURCE_NAME: str(PACKAGE_DIR),
        MLFLOW_SOURCE_TYPE: SourceType.to_string(SourceType.LOCAL),
        MLFLOW_USER: _user(),
        MLFLOW_GIT_COMMIT: git.commit,
        MLFLOW_GIT_DIRTY: UNKNOWN if git.dirty is None else str(git.dirty).lower(),
        **{f"version.{name}": version for name, version in found.items()},
        "cpu.model": cpu_model(),
        "cpu.count": str(os.cpu_count()),
        "cpu.affinity": str(affinity),
    }
    if git.branch:
        tags[MLFLOW_GIT_BRANCH] = git.branch
    code = f"git commit {git.commit}" + (" with uncommitted changes" if git.dirty else "")
    tags[MLFLOW_RUN_NOTE] = (
        f"bncbench {found['bncbench']} ({code if git.dirty is not None else git.why}); "
        + ", ".join(f"{name} {version}" for name, version in found.items() if name != "bncbench")
        + f"; {tags['cpu.model']}, {tags['cpu.count']} cores ({affinity} usable)."
    )
    return tags


def dataset_input(data: DataDigest) -> DatasetInput:
    """The MLflow dataset input of a run that read ``data``: its digest, source and schema."""
    if data.source == "openml":
        source = HTTPDatasetSource(f"https://www.openml.org/d/{data.details['openml_id']}")
    elif data.source == "sklearn":
        source = CodeDatasetSource({"module": "sklearn.datasets", **data.details})
    elif "path" in data.details:
        source = get_dataset_source_from_json(json.dumps({"uri": data.details["path"]}), "local")
    else:  # a source without files (bncbench.data.sources)
        source = CodeDatasetSource({"source": data.source, **data.details})
    columns = [ColSpec(_COLUMN_TYPES.get(kind, DataType.string), name) for name, kind in data.columns]
    schema = Schema(columns) if columns else None
    dataset = MetaDataset(source, name=data.name, digest=data.digest, schema=schema)
    tags = [InputTag(MLFLOW_DATASET_CONTEXT, "cross-validation")]
    tags += [InputTag(key, value) for key, value in data.details.items()]
    return DatasetInput(dataset._to_mlflow_entity(), tags)
