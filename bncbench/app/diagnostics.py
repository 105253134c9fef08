"""What a cell's run records of its estimator's diagnostics (``CrossValidationResult.diagnostics``): numbers as
``fold/<name>`` metrics and their mean, tables as ``<name>.csv`` with a fold column, and a loss grid (the
m-estimate's holdout loss by attribute and m) also as a heat map of its mean over the folds, ``<name>.png``."""

import io

import pandas as pd
from matplotlib.figure import Figure

#: The resolution of the heat maps.
DPI = 150


def diagnostics_record(per_fold: list[dict]) -> tuple[dict[str, dict[int, float]], dict[str, bytes]]:
    """The diagnostics of a cell's folds as its run logs them: the numbers' values by name and fold (laid out
    by ``bncbench.tracking.record.fold_history``), and the files: tables as ``<name>.csv`` with a fold column,
    a loss grid also as a heat map of its mean over the folds, ``<name>.png``."""
    numbers, files = {}, {}
    for name in sorted({name for found in per_fold for name in found}):
        values = {fold: found[name] for fold, found in enumerate(per_fold) if name in found}
        first = next(iter(values.values()))
        if not isinstance(first, pd.DataFrame):
            numbers[name] = {fold: float(value) for fold, value in values.items()}
            continue
        tables = [table.stack().rename("value").reset_index().assign(fold=fold) for fold, table in values.items()]
        files[f"{name}.csv"] = pd.concat(tables).to_csv(index=False).encode()
        if first.attrs.get("grid"):
            files[f"{name}.png"] = heat_map(sum(values.values()) / len(values), name)
    return numbers, files


def heat_map(grid: pd.DataFrame, title: str) -> bytes:
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
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=DPI, bbox_inches="tight")
    return png.getvalue()
