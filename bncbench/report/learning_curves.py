"""Learning curves: each model's mean loss against the training rows, on synthetic datasets of one declared
network drawn at several sizes (``bncbench.data.synthetic``), as the SkDB paper's Fig. 1.

A curve's datasets are those whose declarations differ in ``rows`` alone (read from the runs' params,
``dataset.synthetic.*``); a network run at one size alone is a curve of one point. The training rows of a size are
those of a training fold: ``rows - rows / cv.folds``.
"""

import pandas as pd

#: The runs' params of a synthetic dataset's declaration (``bncbench.protocol.cell.Cell.params``).
DECLARATION = "dataset.synthetic."
ROWS = DECLARATION + "rows"
FOLDS = "cv.folds"
#: The columns of ``learning_curves``.
COLUMNS = ["network", "dataset", "training_rows", "model", "metric", "value"]


def learning_curves(results: pd.DataFrame, dataset_params: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The points of the learning curves of ``metrics`` (those of them the runs logged), from the mean metrics of
    ``results`` (``LoggedRuns.results``) and each dataset's params ``dataset.*`` and ``cv.folds``
    (``dataset_params``, ``LoggedRuns.dataset_params``).

    Returns
    -------
    pandas.DataFrame
        ``COLUMNS``: ``network`` names the declaration without its rows, one row per (dataset, model, metric),
        the metrics in the order of ``metrics``.
    """
    if ROWS not in dataset_params.columns:
        return pd.DataFrame(columns=COLUMNS)
    synthetic = dataset_params[dataset_params[ROWS].notna()]
    declared = [c for c in synthetic.columns if c.startswith(DECLARATION) and c != ROWS]
    networks = synthetic[declared].apply(_network_name, axis=1).rename("network")
    rows = synthetic.loc[networks.index, ROWS].astype(int)
    folds = synthetic.loc[networks.index, FOLDS].astype(int)
    points = pd.DataFrame({"network": networks, "training_rows": rows - rows // folds})
    metrics = [metric for metric in metrics if metric in results.columns]
    long = results[results["dataset"].isin(points.index)].melt(id_vars=["dataset", "model"], value_vars=metrics,
                                                               var_name="metric", value_name="value")
    curves = long.join(points, on="dataset").assign(order=lambda frame: frame["metric"].map(metrics.index))
    return curves.sort_values(["network", "order", "model", "training_rows"], ignore_index=True)[COLUMNS]


def _network_name(declaration: pd.Series) -> str:
    """``kDB-2, 20 attributes of 4 values, 3 classes, Dirichlet(1.0), seed 1``, from a declaration's params."""
    value = {key.removeprefix(DECLARATION): found for key, found in declaration.items()}
    return (f"kDB-{value.get('k')}, {value.get('attributes')} attributes of {value.get('values')} values, "
            f"{value.get('classes')} classes, Dirichlet({value.get('alpha')}), seed {value.get('seed')}, "
            f"sample seed {value.get('sample_seed')}")
