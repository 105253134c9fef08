"""Registries of the classes bncbench takes by name: estimators, structures and dataset sources.

A class joins its kind's registry when it is defined (``Registered.__init_subclass__``), and every class
of a package is defined once ``Registry.discover`` has imported each module under it, as scikit-learn's
``sklearn.utils.discovery.all_estimators`` walks its package: a new estimator or structure is one module,
with no list to edit.
"""

import functools
import importlib
import inspect
import pkgutil
from contextlib import contextmanager

from bncbench.core.errors import ConfigError


class Registry(dict):
    """Name -> class, for one kind of class.

    Parameters
    ----------
    kind : str
        What the classes are, for messages (``"estimator"``).
    alternative : str, optional
        What is valid besides the names, for the message of an unknown name (``"a dict ..."``).
    """

    def __init__(self, kind: str, alternative: str = ""):
        super().__init__()
        self.kind = kind
        self.alternative = alternative

    def add(self, cls) -> None:
        """Register ``cls`` under ``cls.name``, unless another class holds that name."""
        known = self.get(cls.name)
        if known is not None and known is not cls:
            raise ConfigError(
                f"{self.kind} name {cls.name!r} is taken by {known.__module__}.{known.__qualname__}; "
                f"give {cls.__module__}.{cls.__qualname__} another name."
            )
        self[cls.name] = cls

    def lookup(self, name) -> type:
        """The class registered as ``name``, or a ``ConfigError`` listing the valid names."""
        if not isinstance(name, str) or name not in self:
            alternative = f", or {self.alternative}" if self.alternative else ""
            valid = ", ".join(sorted(self))
            raise ConfigError(f"unknown {self.kind} {name!r}; valid {self.kind}s: {valid}{alternative}.")
        return self[name]

    def discover(self, package: str) -> None:
        """Import every module under ``package`` (its dotted name), subpackages included, but those whose
        name starts with ``_``: defining their classes registers them."""
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not any(part.startswith("_") for part in module.name.split(".")):
                importlib.import_module(module.name)


class Registered:
    """A class whose subclasses are registered by ``name`` in ``registry``, and whose parameters are the
    keyword arguments of ``__init__``, each with its default.

    A subclass that sets ``name`` is registered under it, unless defined with ``register=False``
    (``class Mine(Estimator, register=False)``, then ``with registered(Mine): ...``).
    """

    registry: Registry
    name: str

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if register and "name" in cls.__dict__:
            cls.registry.add(cls)

    @classmethod
    def defaults(cls) -> dict:
        """The constructor's parameters and their defaults."""
        return dict(_constructor_defaults(cls))


@functools.cache
def _constructor_defaults(cls) -> tuple:
    """``(name, default)`` of each parameter of ``cls``'s constructor, read from its signature once (a plan's
    cells ask thousands of times)."""
    return tuple((name, p.default) for name, p in inspect.signature(cls).parameters.items())


@contextmanager
def registered(cls):
    """Register ``cls`` (an unregistered ``Registered`` class) for the duration of a ``with`` block, e.g.
    in a test."""
    registry = cls.registry
    if registry.get(cls.name) is cls:
        raise ConfigError(
            f"{registry.kind} {cls.name!r} is registered already; registered() is for unregistered classes."
        )
    registry.add(cls)
    try:
        yield cls
    finally:
        del registry[cls.name]
