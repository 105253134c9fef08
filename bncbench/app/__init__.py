"""The application: the ``bncbench`` command, composing an experiment into a plan (Hydra), the sweep of
its cells through an executor, and the glue that runs one cell and logs it."""


def some_of(names, shown: int = 5) -> str:
    """``a/b, c/d and 3 more``: the first ``shown`` of ``names``, and how many others."""
    names = list(names)
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
