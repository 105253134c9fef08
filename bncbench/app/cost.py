"""What a sweep will cost, said before its first cell: CPU-hours, wall time, and lighter settings.

TEMPORARY crude model until bncbench.protocol.cost lands.
"""

from dataclasses import dataclass

from bncbench.core.terminal import duration
from bncbench.protocol.cell import Cell, Plan


@dataclass(frozen=True)
class Costs:
    seconds: dict

    def order(self, cell: Cell):
        dataset_total = sum(s for (d, _), s in self.seconds.items() if d == cell.dataset)
        return (dataset_total, cell.dataset, self.seconds[cell.key])

    def lines(self, plan: Plan, to_run: list[Cell], workers: int) -> list[str]:
        total = sum(self.seconds[c.key] for c in to_run)
        return [
            f"bncbench: experiment {plan.experiment!r}: {len(plan)} cells ({len(plan.datasets)} datasets x "
            f"{len(plan.models)} models): {len(to_run)} to run, {len(plan) - len(to_run)} finished before.",
            f"bncbench: expected cost about {total / 3600:.1f} CPU-hours, {duration(total / workers)} on {workers} workers.",
        ]


def plan_costs(plan: Plan, cfg, client) -> Costs:
    seconds = {}
    for cell in plan.cells:
        it = cell.semantic()["model"].get("estimator_params", {}).get("iterations") or 100
        seconds[cell.key] = 1.0 + it / 1000
    return Costs(seconds)
