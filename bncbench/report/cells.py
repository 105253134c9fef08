"""The cells an experiment's configuration defines, each with the ``cfg_hash`` and data digest its
run must have, so that the report reads the runs of that configuration and no other.

A cell's config is what a job of the sweep composes, the overrides plus ``dataset=<d> model=<m>``,
with the model's node built by ``bncbench.model_configs``; composing each cell with Hydra takes about
0.1 s (476 cells for ``experiment=kdb``). Instead every dataset config is composed once, in one Hydra
call, each under a key of its own (``+dataset@_cells.d0=<d>``), every model node built once, then each
put in place as ``dataset`` and ``model`` in that one config and hashed by ``semantic.cfg_hash``.
Where the overrides or the experiment set keys inside ``dataset`` itself, the dataset is composed once
per name with them, as a job would.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf, open_dict

from bncbench import semantic, tracking
from bncbench.config import CONFIG_NAME, config_dir
from bncbench.data.digest import dataset_digest
from bncbench.model_configs import model_config

_CELLS = "_cells"
_GROUPS = {"dataset": "datasets", "model": "models"}


@dataclass(frozen=True)
class ExpectedCell:
    """What the run of a cell must carry to belong to the configuration.

    Attributes
    ----------
    cfg_hash : str
        ``semantic.semantic_hash`` of the cell's config.
    data_digest : str or None
        The digest of the dataset as it is now (``bncbench.data.digest``); None when the store here
        has no file for it (e.g. a report written on a tracking server): the report then reads the
        version of the dataset its latest run read (``bncbench.report.results.read_runs``).
    params : dict of str to str
        The cell's semantic config flattened, as the runner logs it as params.
    """

    cfg_hash: str
    data_digest: str | None
    params: dict[str, str]


def expected_cells(cfg: DictConfig, overrides: Sequence[str]) -> dict[tuple[str, str], ExpectedCell]:
    """The ``(dataset, model)`` cells of ``cfg.experiment`` and what their runs must carry.

    Parameters
    ----------
    cfg : DictConfig
        The config :func:`bncbench.config.compose` made from ``overrides``.
    overrides : sequence of str
        The command-line overrides of the experiment, e.g. ``["experiment=kdb", "cv.seed=7"]``.

    Returns
    -------
    dict
        ``{(dataset, model): ExpectedCell}`` in the experiment's order.
    """
    names = {group: [str(name) for name in cfg.experiment[field]] for group, field in _GROUPS.items()}
    datasets = names["dataset"]
    with _hydra():
        root = hydra_compose(
            CONFIG_NAME, [*overrides, *(f"+dataset@{_CELLS}.dataset{i}={name}" for i, name in enumerate(datasets))]
        )
        nodes = {
            "dataset": (
                [hydra_compose(CONFIG_NAME, [*overrides, f"dataset={name}"]).dataset for name in datasets]
                if root.get("dataset") is not None  # keys set inside the dataset node: compose as a job does
                else [root[_CELLS][f"dataset{i}"] for i in range(len(datasets))]
            ),
            "model": [model_config(name, root.experiment.get("grids")) for name in names["model"]],
        }
    resolved = {}
    with open_dict(root):
        for group, group_names in names.items():
            for name, node in zip(group_names, nodes[group], strict=True):
                root[group] = node  # in its place: interpolations resolve as in a job's config
                resolved[(group, name)] = OmegaConf.to_container(root[group], resolve=True)
    common = {
        key: OmegaConf.to_container(root[key], resolve=True)
        for key in semantic.SEMANTIC_KEYS
        if key not in _GROUPS
    }
    cells = {}
    for dataset in names["dataset"]:
        data = dataset_digest(resolved[("dataset", dataset)], root.data_dir)
        for model in names["model"]:
            config = {
                **common,
                "dataset": resolved[("dataset", dataset)],
                "model": resolved[("model", model)],
            }
            cells[(dataset, model)] = ExpectedCell(
                semantic.semantic_hash(config), data.digest if data else None, tracking.flatten(config)
            )
    return cells


@contextmanager
def _hydra() -> Iterator[None]:
    """Hydra set up on bncbench's configs: the app's own at the end of ``python -m bncbench`` (its
    callback writes the report), else for this call."""
    if GlobalHydra.instance().is_initialized():
        yield
        return
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="bncbench"):
        yield
