"""What makes ``mlflow ui`` show a researcher what they came for: the experiment's tags (its description and
a saved view of its runs table) and the link a sweep prints, which opens that view in the model-training
navigation.

What MLflow 3.17's UI reads (its TypeScript source, ``mlflow/server/js/src``; docs/ui.md says more):

- the navigation, GenAI or model training, is the URL's ``workflowType`` (``genai`` or
  ``machine_learning``), else the browser's last choice (localStorage ``mlflow.workflowType``), else GenAI
  (``common/contexts/WorkflowTypeContext.tsx``); the tag ``mlflow.experimentKind`` is not read while
  ``shouldEnableWorkflowBasedNavigation()`` returns true, as it does in 3.17;
- the runs table's visible columns are not a URL parameter: they are the browser's state, or a view saved
  as the experiment tag ``mlflow.sharedViewState.<id>`` and opened by the URL's ``viewStateShareKey=<id>``
  (``useSharedExperimentViewState``, ``utils/savedViewEnvelope.ts``); the view also holds the sort order.
"""

import functools
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlencode, urlparse

from sqlalchemy.engine import make_url

from bncbench import tracking
from bncbench.core.errors import BncbenchError
from bncbench.core.metrics import LOSSES
from bncbench.core.uris import masked
from bncbench.protocol.cell import Plan, semantic_of_params
from bncbench.tracking import tags as tag

#: The saved view's id: in its tag's key and in the link's ``viewStateShareKey``.
SAVED_VIEW_ID = "bncbench"
#: The losses every run logs as means over its folds, as the runs table's column ids (``makeCanonicalSortKey``).
LOSS_COLUMNS = [f"metrics.`{loss}`" for loss in LOSSES]
#: The runs table of the saved view: the losses, in the order of ``LOSSES``, beside run names wide enough to read,
#: the runs sorted by name (``ATTRIBUTE_COLUMN_SORT_KEY.RUN_NAME``), which puts the cells of a dataset
#: together. The UI applies widths to the columns ``columnOrder`` lists, alone.
SAVED_VIEW_STATE = {
    "selectedColumns": LOSS_COLUMNS,
    "columnOrder": ["attributes.`Run Name`", "runDateAndNestInfo", "duration", *LOSS_COLUMNS],
    "columnWidths": {"attributes.`Run Name`": 320, **{column: 160 for column in LOSS_COLUMNS}},
    "orderByKey": "tags.`mlflow.runName`",
    "orderByAsc": True,
}


def view_tags() -> dict[str, str]:
    """The experiment tags the link of ``browse_hint`` needs, whatever the plan: the saved view it opens,
    and the kind ``custom_model_development``, for the UIs that read it (3.17's takes the link's instead)."""
    # The envelope of a view saved from the UI's "Views" menu (encodeSavedViewEnvelope); a plain-JSON state
    # is read as well as a compressed one.
    envelope = {"name": "bncbench: losses by cell", "createdAt": 0, "state": json.dumps(SAVED_VIEW_STATE)}
    return {f"mlflow.sharedViewState.{SAVED_VIEW_ID}": json.dumps(envelope),
            "mlflow.experimentKind": "custom_model_development"}


def ui_tags(plan: Plan) -> dict[str, str]:
    """The experiment tags a sweep sets: ``view_tags`` and a description (``mlflow.note.content``, which
    the UI renders as Markdown above the runs table)."""
    comparisons = ", ".join(f"{c['a']} vs {c['b']}" for c in plan.comparisons) or "none"
    description = (
        f"bncbench experiment `{plan.experiment}`: {len(plan.datasets)} datasets x {len(plan.models)} models, "
        f"{plan.cv.repetitions}x{plan.cv.folds} cross-validation (seed {plan.cv.seed}). One run per cell, "
        "named `dataset/model` and what sets it apart from the cell's runs in other configurations "
        "(`it=50000`), with per-fold metrics `fold/<metric>` (step = fold) and their means. "
        f"Comparisons: {comparisons}. Report: `bncbench report experiment={plan.experiment}`."
    )
    return {"mlflow.note.content": description, **view_tags()}


def imported_experiment_tags(experiment: str) -> dict[str, str]:
    """The experiment tags an import of bundles sets: those a sweep of the experiment's own config sets
    (:func:`ui_tags`), or, for an experiment this checkout does not define, the view and a description
    saying where its runs came from."""
    own = _own_config(experiment)
    if own is not None:
        return ui_tags(own.plan)
    description = (f"bncbench experiment `{experiment}`, imported from bundles (`bncbench import`); this "
                   "checkout has no config of that name. One run per cell, named `dataset/model`.")
    return {"mlflow.note.content": description, **view_tags()}


def imported_run_name(experiment: str, name: str, tags: Mapping[str, str], params: Mapping[str, str]) -> str | None:
    """The name of an imported run named ``name`` in its bundle: a bare ``<dataset>/<model>`` (runs logged before
    labels were, which left the runs of one cell in two configurations one name) with what sets it apart from
    the cell's runs in other configurations, as a sweep names it (``letter/kdb5_hdp it=50000``,
    ``Cell.run_name``), read from its params and its experiment's grids; None (``name`` kept) for a name that
    says more, or a run whose params are not a cell's."""
    from bncbench.app.config import run_label

    bare = f"{tags.get(tag.DATASET)}/{tags.get(tag.MODEL)}"
    if name != bare:
        return None
    own = _own_config(experiment)
    try:
        label = run_label(tags[tag.MODEL], semantic_of_params(params), own.settings.experiment.grids if own else [])
    except (KeyError, ValueError, TypeError):
        return None
    return f"{bare} {label}" if label else None


@functools.cache
def _own_config(experiment: str):
    """The composed config of the experiment of this name (``bncbench.app.config.Composed``), or None when this
    checkout does not define it."""
    from bncbench.app.config import compose

    try:
        return compose([f"experiment={experiment}"])
    except BncbenchError:
        return None


def browse_hint(tracking_uri: str, experiment_id: str) -> str:
    """How to browse the runs in MLflow's UI: the link opens the experiment's runs table with the saved
    view of ``view_tags`` (which the experiment must have) in the model-training navigation.

    The UI routes by URL fragment (a hash router) and reads its parameters after the fragment's ``?``. A
    SQLite store is shown as an absolute URI, so that the command works from any directory; a server's
    password is masked.
    """
    query = urlencode({"workflowType": "machine_learning", "viewStateShareKey": SAVED_VIEW_ID})
    runs_table = f"#/experiments/{experiment_id}/runs?{query}"
    if urlparse(tracking_uri).scheme in tracking.SERVER_SCHEMES:
        return f"bncbench: browse the runs at {masked(tracking_uri).rstrip('/')}/{runs_table}"
    store = tracking_uri
    if tracking_uri.startswith("sqlite:"):
        url = make_url(tracking_uri)
        store = url.set(database=str(Path(url.database).resolve())).render_as_string(hide_password=False)
    return (
        f"bncbench: browse the runs: mlflow ui --backend-store-uri {shlex.quote(store)}\n"
        f"bncbench: then open http://127.0.0.1:5000/{runs_table}"
    )
