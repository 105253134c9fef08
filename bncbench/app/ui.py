"""What makes ``mlflow ui`` show a researcher what they came for: the experiment's tags (its kind and its
description) and the link a sweep prints, which lands on the experiment's runs table.
"""

import shlex
from pathlib import Path
from urllib.parse import urlparse

from sqlalchemy.engine import make_url

from bncbench import tracking
from bncbench.protocol.cell import Plan


def ui_tags(plan: Plan) -> dict[str, str]:
    """Experiment tags that make ``mlflow ui`` read well: a description (``mlflow.note.content``,
    rendered as Markdown) and the kind ``custom_model_development`` (MLflow 3 otherwise opens an
    experiment on its GenAI overview)."""
    comparisons = ", ".join(f"{c['a']} vs {c['b']}" for c in plan.comparisons) or "none"
    description = (
        f"bncbench experiment `{plan.experiment}`: {len(plan.datasets)} datasets x {len(plan.models)} models, "
        f"{plan.cv.repetitions}x{plan.cv.folds} cross-validation (seed {plan.cv.seed}). One run per cell, "
        "named `dataset/model`, with per-fold metrics `fold/<metric>` (step = fold) and their means. "
        f"Comparisons: {comparisons}. Report: `bncbench report experiment={plan.experiment}`."
    )
    return {"mlflow.note.content": description, "mlflow.experimentKind": "custom_model_development"}


def browse_hint(tracking_uri: str, experiment_id: str) -> str:
    """How to browse the runs in MLflow's UI, landing on the experiment's runs table.

    The UI routes by URL fragment (a hash router); ``#/experiments/<id>/runs`` is the runs table. A
    SQLite store is shown as an absolute URI, so that the command works from any directory.
    """
    runs_table = f"#/experiments/{experiment_id}/runs"
    if urlparse(tracking_uri).scheme in tracking.SERVER_SCHEMES:
        return f"bncbench: browse the runs at {tracking_uri.rstrip('/')}/{runs_table}"
    store = tracking_uri
    if tracking_uri.startswith("sqlite:"):
        url = make_url(tracking_uri)
        store = url.set(database=str(Path(url.database).resolve())).render_as_string(hide_password=False)
    return (
        f"bncbench: browse the runs: mlflow ui --backend-store-uri {shlex.quote(store)}\n"
        f"bncbench: then open http://127.0.0.1:5000/{runs_table}"
    )
