"""What a sweep will cost, said before its first cell: CPU-hours, wall time, and lighter settings.

Each cell's CPU seconds come from the cost model (``bncbench.protocol.cost``), shipped fitted to the
runs of the committed bundles, rescaled to this machine by the cells of the plan its store has
finished already (their logged ``fit_seconds`` and ``predict_seconds`` against the model's
prediction, shrunk towards 1 while they are few), plus a second a cell for what is not a fit. The
sweep runs the cells smallest first: datasets in increasing order of their cells' cost, each
dataset's cells together.
"""

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from bncbench.core.config_files import config_dir
from bncbench.core.errors import DatasetError
from bncbench.core.terminal import duration
from bncbench.protocol.cell import Cell, Plan, canonical_model
from bncbench.protocol.cost import CostModel, wall_seconds
from bncbench.protocol.cost_features import FEATURE_COLUMNS, CellFeatures, cell_features, config_features

#: Seconds a cell costs besides its fits and predictions (discretisation, the warm-up fit, logging to
#: the store: a median 0.6 s in the committed bundles' runs, more on a loaded machine).
_CELL_OVERHEAD_SECONDS = 1.0
#: Predicted CPU seconds by which the machine's factor is shrunk towards 1 (see the module).
_PRIOR_SECONDS = 600.0
#: A sweep this long or longer is told its lighter settings.
_LIGHTER_FROM_SECONDS = 600.0
#: The Gibbs iterations of the lighter setting ``hdp.iterations=...``.
_LIGHTER_ITERATIONS = 1000
#: The suite of the lighter setting ``suite=...``.
_LIGHTER_SUITE = "small"


@dataclass(frozen=True)
class Costs:
    """Predicted CPU seconds of each cell of a plan, and what they come from; by ``Cell.key``."""

    seconds: Mapping[tuple[str, str], float]
    features: Mapping[tuple[str, str], CellFeatures | None]  # None for a dataset the store does not describe
    factor: float  # this machine's speed against the model's reference (1: no cell of the plan finished yet)
    model: CostModel

    def order(self, cell: Cell) -> tuple:
        """The sweep's order: datasets by their cells' total cost, smallest first, then each dataset's
        cells smallest first."""
        return self.dataset_totals[cell.dataset], cell.dataset, self.seconds[cell.key]

    def lines(self, plan: Plan, to_run: Sequence[Cell], workers: int) -> list[str]:
        """What the sweep prints before its first cell (``to_run`` in the order it runs them)."""
        known = [cell for cell in to_run if self.features[cell.key] is not None]
        seconds = [self.seconds[cell.key] for cell in known]
        unknown = sorted({cell.dataset for cell in to_run if self.features[cell.key] is None})
        lines = [
            f"bncbench: experiment {plan.experiment!r}: {len(plan)} cells ({len(plan.datasets)} datasets x "
            f"{len(plan.models)} models): {len(to_run)} to run, {len(plan) - len(to_run)} finished before."
        ]
        if known:
            speed = "" if self.factor == 1.0 else f", at this machine's speed ({self.factor:.2f}x the model's)"
            part = f" for the {len(known)} cells of the datasets the data directory describes" if unknown else ""
            wall = _wall(wall_seconds(seconds, workers))
            lines.append(f"bncbench: expected cost about {_hours(sum(seconds))}, {wall} on {workers} "
                         f"worker{'s' if workers > 1 else ''}{part} (cost model{speed}; typically within x1.3 a cell, "
                         "x2 for 90% of them).")
        if unknown:
            lines.append(f"bncbench: no cost known for {len(to_run) - len(known)} cells, those of {', '.join(unknown)} "
                         "(not in the data directory's manifest.csv): the expected cost leaves them out.")
        if sum(seconds) >= _LIGHTER_FROM_SECONDS:
            lines.append(self._lighter(plan, known))
        return lines

    def cpu_seconds(self, cells: Sequence[Cell], plan: Plan, iterations: int | None = None) -> float:
        """The CPU seconds of ``cells`` (each described by the store), as ``plan_costs`` prices a cell: the model's
        prediction at this machine's factor plus the overhead of a cell; with ``hdp.iterations=<iterations>``
        where given. The one price of a cell, for the whole sweep and for its lighter settings alike."""
        if iterations is None:
            return float(sum(self.seconds[cell.key] for cell in cells))
        features = [
            replace(self.features[cell.key], iterations=iterations) if _reads_iterations(plan, cell)
            else self.features[cell.key]
            for cell in cells
        ]
        predicted = self.model.predict(features) if features else np.zeros(0)
        return float(np.sum(predicted * self.factor + _CELL_OVERHEAD_SECONDS))

    @functools.cached_property
    def dataset_totals(self) -> dict[str, float]:
        """The cost of each dataset's cells, summed once (``order`` reads it per cell)."""
        totals = Counter()
        for (dataset, _), seconds in self.seconds.items():
            totals[dataset] += seconds
        return totals

    def _lighter(self, plan: Plan, known: Sequence[Cell]) -> str:
        """``bncbench: lighter: hdp.iterations=1000 (about 1.2 h), suite=small (...), ...``, priced over the cells
        of ``known`` as the whole sweep is (``cpu_seconds``)."""
        options = []
        hdp = [cell for cell in known if _reads_iterations(plan, cell)
               and cell.model_spec["estimator_params"]["iterations"] > _LIGHTER_ITERATIONS]
        if hdp:
            fewer = self.cpu_seconds(known, plan, _LIGHTER_ITERATIONS)
            options.append(f"hdp.iterations={_LIGHTER_ITERATIONS} (about {_hours(fewer)})")
        small = set(_suite(_LIGHTER_SUITE))
        if small and set(plan.datasets) == set(_suite("all")):  # the datasets come from the suite
            in_suite = [cell for cell in known if cell.dataset in small]
            options.append(f"suite={_LIGHTER_SUITE} (about {_hours(self.cpu_seconds(in_suite, plan))})")
            if hdp:
                options.append(f"both (about {_hours(self.cpu_seconds(in_suite, plan, _LIGHTER_ITERATIONS))})")
        options.append("or a subset: experiment.models=[...] experiment.datasets=[...]")
        return "bncbench: lighter: " + ", ".join(options) + "."


def plan_costs(plan: Plan, data_dir, logged: Iterable = ()) -> Costs:
    """The predicted cost of every cell of ``plan``, the datasets' sizes read from the store ``data_dir``; the
    finished runs of the plan's cells among ``logged`` (``CellRecord``s) set this machine's factor."""
    model = CostModel.default()
    features = {cell.key: _features(cell, data_dir) for cell in plan.cells}
    known = [key for key, found in features.items() if found is not None]
    predicted = dict(zip(known, model.predict([features[key] for key in known]), strict=True)) if known else {}
    fallback = float(np.median(list(predicted.values()))) if predicted else 1.0
    factor = _machine_factor(plan, predicted, logged)
    seconds = {
        cell.key: float(predicted.get(cell.key, fallback)) * factor + _CELL_OVERHEAD_SECONDS for cell in plan.cells
    }
    return Costs(seconds, features, factor, model)


def plan_features(plan: Plan, data_dir) -> pd.DataFrame:
    """One row per cell of ``plan`` whose dataset the store describes: ``dataset``, ``model`` and the
    cell's ``FEATURE_COLUMNS`` (what ``CostModel.predict`` takes)."""
    rows = [
        {"dataset": cell.dataset, "model": cell.model, **dataclasses.asdict(found)}
        for cell in plan.cells
        if (found := _features(cell, data_dir)) is not None
    ]
    return pd.DataFrame(rows, columns=["dataset", "model", *FEATURE_COLUMNS])


def _features(cell: Cell, data_dir) -> CellFeatures | None:
    try:
        size = config_features(Path(data_dir), cell.semantic()["dataset"])
    except DatasetError:  # not in the store's manifest (yet): its cells are priced at the median
        return None
    return cell_features(canonical_model(cell.semantic()["model"]), size, cell.cv.repetitions * cell.cv.folds)


def _machine_factor(plan: Plan, predicted: Mapping, logged: Iterable) -> float:
    """This machine's logged seconds of the plan's finished cells over their predicted seconds, shrunk
    towards 1 by ``_PRIOR_SECONDS``."""
    cells = plan.by_key()
    actual = expected = 0.0
    for record in logged:
        cell = cells.get(record.key)
        if cell is None or record.cfg_hash != cell.cfg_hash or cell.key not in predicted:
            continue
        means = record.means()
        if "fit_seconds" in means and "predict_seconds" in means:
            actual += (means["fit_seconds"] + means["predict_seconds"]) * cell.cv.repetitions * cell.cv.folds
            expected += predicted[cell.key]
    return (actual + _PRIOR_SECONDS) / (expected + _PRIOR_SECONDS) if expected else 1.0


def _reads_iterations(plan: Plan, cell: Cell) -> bool:
    """Whether ``hdp.iterations`` sets the iterations of the cell's model."""
    return "hdp.iterations" in plan.settings_read.get(cell.model, ())


def _suite(name: str) -> list[str]:
    path = config_dir() / "suite" / f"{name}.yaml"
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["datasets"]) if path.is_file() else []


def _hours(seconds: float) -> str:
    """CPU time as an estimate: ``40000`` -> ``"11.1 CPU-hours"``, ``1858`` -> ``"31 CPU-minutes"``."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} CPU-hours"
    return f"{max(1, round(seconds / 60))} CPU-minute{'s' if round(seconds / 60) > 1 else ''}"


def _wall(seconds: float) -> str:
    """Wall time as an estimate, to the minute (``"5 h 55 min"``, ``"4 min"``, ``"under a minute"``)."""
    if seconds < 60:
        return "under a minute"
    return duration(60 * round(seconds / 60)) if seconds >= 3600 else f"{round(seconds / 60)} min"
