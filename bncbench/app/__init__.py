"""The application: the ``bncbench`` command, composing an experiment into a plan (Hydra), the sweep of
its cells through an executor, and the glue that runs one cell and logs it."""
