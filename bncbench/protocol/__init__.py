"""The protocol of an experiment, free of MLflow and Hydra: its cells and their hashes
(:mod:`~bncbench.protocol.cell`), the models they fit (:mod:`~bncbench.protocol.models`) and the
cross-validation of one cell (:mod:`~bncbench.protocol.cross_validation`)."""
