"""Errors that carry a message meant for the user: what is wrong and how to fix it.

The command-line entry points print these without a traceback; anything else is a bug.
"""


class BncbenchError(Exception):
    """Base class of the errors bncbench reports to the user as a plain message."""


class ConfigError(BncbenchError, ValueError):
    """A configuration value (name of a dataset, model, structure, estimator, URI ...) is invalid."""


class DatasetError(BncbenchError, ValueError):
    """A dataset cannot be found, read or used (bad file, schema mismatch, unusable class column)."""


class NotApplicableError(BncbenchError, ValueError):
    """A method cannot run on this dataset, e.g. HPB on more sub-patterns than its bound; the runner
    logs the cell as skipped, not failed."""


class BncbenchWarning(UserWarning):
    """Base class of the warnings bncbench gives about data it can use but probably should not."""


class ContinuousColumnWarning(BncbenchWarning):
    """A column given to a discrete classifier looks continuous: it needs discretising first."""


class UnseenValuesWarning(BncbenchWarning):
    """Every value of a column at prediction was unseen in training: the column carries no evidence."""
