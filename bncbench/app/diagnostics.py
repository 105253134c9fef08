"""What a cell's run logs of its estimator's diagnostics (``CrossValidationResult.diagnostics``): numbers as
``fold/<name>`` metrics and their mean, tables as ``<name>.csv`` with a fold column, and a loss grid (the
m-estimate's holdout loss by attribute and m) also as a heat map of its mean over the folds, ``<name>.png``."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bncbench import tracking

#: The resolution of the heat maps.
DPI = 150


def log_diagnostics(client, run_id: str, per_fold: list[dict]) -> None:
    """Numbers as ``fold/<name>`` metrics and their mean; tables as ``<name>.csv`` with a fold column,
    and a loss grid also as a heat-map of its mean over the folds, ``<name>.png``."""
    names = sorted({name for found in per_fold for name in found})
    metrics = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            values = [(fold, found[name]) for fold, found in enumerate(per_fold) if name in found]
            if isinstance(values[0][1], pd.DataFrame):
                tables = [table.stack().rename("value").reset_index().assign(fold=fold) for fold, table in values]
                pd.concat(tables).to_csv(Path(tmp) / f"{name}.csv", index=False)
                if values[0][1].attrs.get("grid"):
                    heat_map(sum(t for _, t in values) / len(values), name, Path(tmp) / f"{name}.png")
            else:
                metrics += [(f"fold/{name}", float(v), fold) for fold, v in values]
                metrics.append((name, float(np.mean([v for _, v in values])), 0))
        tracking.log_artifacts(client, run_id, tmp)
    tracking.log_metrics(client, run_id, metrics)


def heat_map(grid: pd.DataFrame, title: str, path: Path) -> Path:
    """A loss grid (e.g. m-estimate's holdout loss by attribute and m) as a heat map, lower is better."""
    figure = Figure(figsize=(max(4, 0.35 * grid.shape[1] + 2), 0.5 * grid.shape[0] + 1.5))
    axes = figure.add_subplot()
    image = axes.imshow(grid.to_numpy(), aspect="auto", cmap="viridis_r")
    axes.set_xticks(range(grid.shape[1]), grid.columns, fontsize=7)
    axes.set_yticks(range(grid.shape[0]), grid.index)
    axes.set_xlabel(grid.columns.name or "")
    axes.set_ylabel(grid.index.name or "")
    axes.set_title(f"{title} (mean over folds)")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    return path
