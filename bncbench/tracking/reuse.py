"""A cell already computed in another experiment of the store, or in this one under another model
name (a renamed model), is copied, not run again.

Experiments share cells: ``bnc_vs_rf``'s TAN and SkDB cells are ``hdp_vs_m``'s, run on the same data
with the same folds. A cell is one computation, identified by its ``cfg_hash`` (dataset, model and CV,
``bncbench.protocol.cell``) and the digest of the data it read; when another experiment of the store has a
FINISHED run of both, ``bncbench run`` copies that run into this experiment instead of fitting again
(``reuse_runs: false`` runs it anyway, e.g. to time it on this machine).

The copy is the source's record, not a new computation: its params (``experiment.name`` and
``model.name`` stay those it was computed under), its tags (code version, machine, data digest: what produced the
numbers), the full history of its metrics, its dataset inputs and its artifacts; plus
``tag.COPIED_FROM`` naming the source, and the source's original id (``tag.ORIGIN_RUN``), by which a
report and a bundle know the two runs as one. Only the copy's lease and sweep tags are its own.
"""

import dataclasses

from mlflow.entities import Run

from bncbench import tracking
from bncbench.tracking import lease, provenance
from bncbench.tracking import tags as tag
from bncbench.tracking.record import CellRecord, metric_history, stored_artifacts, write_record

#: Tags of the copy that stay its own: who runs it, in which sweep, and its cell's names in this
#: experiment (the source's ``model.name`` param keeps the name it was computed under).
_OWN_TAGS = (*lease.LEASE_TAGS, "mlflow.runName", tag.DATASET, tag.MODEL)


def computed_elsewhere(client, experiment_id: str, hash_: str, data_digest: str | None) -> Run | None:
    """The latest FINISHED run of another experiment of the store with this ``cfg_hash`` and data, or None."""
    return tracking.finished_run_in_other_experiments(client, experiment_id, hash_, data_digest)


def copy_cell(client, source: Run, run_id: str) -> None:
    """Make the RUNNING run ``run_id`` a copy of ``source`` (see the module), ended FINISHED now."""
    record = CellRecord.of_run(source)
    tags = {key: value for key, value in record.tags.items() if key not in _OWN_TAGS}
    tags[tag.ORIGIN_RUN] = record.shown_id
    tags[tag.COPIED_FROM] = f"{tracking.experiment_name(client, source.info.experiment_id)}/{record.run_id}"
    copy = dataclasses.replace(record, tags=tags, end_time=None, history=metric_history(client, record),
                               artifacts=stored_artifacts(client, record.run_id))
    # what this process tagged at the start and the source does not say is not the source's provenance
    write_record(client, run_id, copy, removed_tags=provenance.run_tags())
