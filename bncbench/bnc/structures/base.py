"""The structure contract: one abstract class, ``Structure``, and the registry of its subclasses by name.

A structure learns from the training data which attributes each attribute depends on besides the class
(``learn``). Its parameters are the keyword arguments of its ``__init__``, with their defaults, checked
there: ``k`` for the structures that read it (``BNClassifier(k=...)``, a config's ``k``), the others its
``structure_params``. It declares its presets, the named settings that models are built from
(``structure_presets``). It says what shape of network it learns (``naive_bayes_shaped``,
``product_of_attribute_tables``), so that an estimator defined on some shapes asks it, not its name. A
subclass that sets ``name`` is registered under it; configs and ``BNClassifier(structure=...)`` refer to
that name. A structure given as a dict ``{attribute: [parents]}`` is a ``GivenStructure``.
"""

import abc
from collections.abc import Mapping, Sequence

from bncbench.bnc.information import StructureStatistics
from bncbench.bnc.network import CountedNetwork
from bncbench.core.registry import Registered, Registry
from bncbench.core.errors import ConfigError

#: Structure name -> class, filled as the structures are defined (``registry.Registered``).
STRUCTURES = Registry("structure", alternative="a dict {attribute: [parents]}")


class Structure(Registered, abc.ABC):
    """A structure learner: ``__init__`` takes its parameters by keyword and checks their values; a subclass
    that sets ``name`` is registered under it (``bncbench.core.registry.Registered``).

    Attributes
    ----------
    name : str
        The registry key, as written in configs.
    presets : dict
        The named settings of this structure that models are built from (``kdb5`` in ``kdb5_hdp``): preset
        name -> ``{"k": ..., "structure_params": {...}}``, ``k`` left out for None and ``structure_params``
        for ``{}``.
    product_of_attribute_tables : bool
        True when the network's joint probability is one product of tables, the class's and one per
        attribute, as WANBIA weights them; False for a mixture of networks (AODE).
    handles_missing : bool
        True when ``learn`` reads a missing value (``encoding.MISSING``) as no value, by available-case
        counts (``BNClassifier(missing="ignore")``); the others are refused with that setting.
    attribute_names : sequence or None
        The attributes' names, which ``BNClassifier`` sets before ``learn`` for the structures whose
        choices depend on them (TAN-HC's alphabetical rule); None: only their column positions are known.
    """

    registry = STRUCTURES
    presets: Mapping[str, Mapping] = {}
    product_of_attribute_tables: bool = True
    attribute_names: Sequence | None = None
    handles_missing: bool = False

    @abc.abstractmethod
    def learn(self, data, cards, n_classes, memory_limit=None) -> tuple[CountedNetwork, dict]:
        """The counted network of the structure learned from ``data``, and what else was found.

        Parameters
        ----------
        data : training_data.TrainingData
            Passes over chunks of the integer code matrix, the class in the last column.
        cards : ndarray of int
            Number of values of each attribute.
        n_classes : int
        memory_limit : memory.MemoryLimit, optional
            Bound that the pairwise counts and the network's trees are checked against before they are
            allocated.

        Returns
        -------
        network : CountedNetwork
            For every attribute in the model the ordered list of its attribute parents (the class being a
            parent of each), and the counts. The parent order is the order of the context tree's levels
            below the class (HDP paper Sect. 3.3).
        found : dict
            What else the structure learned, e.g. ``"selection"`` (``"skdb"``).
        """

    def naive_bayes_shaped(self) -> bool:
        """Whether every attribute in the network has the class as its only parent, and the class no
        parent: the networks MANB averages over."""
        return False

    @classmethod
    def uses_k(cls) -> bool:
        """Whether the structure reads ``k``, i.e. declares it as a parameter."""
        return "k" in cls.defaults()


class GivenStructure(Structure):
    """A structure given as data, not learned: ``BNClassifier(structure={attribute: [parents]})``.

    Parameters
    ----------
    parents : dict
        Attribute -> ordered list of its attribute parents; an attribute left out has none. ``learn``
        reads them as column positions (``BNClassifier`` checks a dict of column names and maps it).
    """

    handles_missing = True

    def __init__(self, parents: Mapping):
        self.parents = parents

    def learn(self, data, cards, n_classes, memory_limit=None):
        parents = [list(self.parents.get(attribute, [])) for attribute in range(len(cards))]
        return counted(CountedNetwork(parents, cards, n_classes, memory_limit=memory_limit), data), {}

    def naive_bayes_shaped(self) -> bool:
        return not any(self.parents.values())


def structure_class(name: str) -> type[Structure]:
    """The structure class registered as ``name``, or a ``ConfigError`` listing the valid ones."""
    return STRUCTURES.lookup(name)


def structure_defaults(name: str) -> dict:
    """The ``structure_params`` of the structure registered as ``name`` and their defaults: its parameters
    but ``k``, which ``BNClassifier`` and configs give apart (its default: ``structure_class(name).defaults()``)."""
    return {parameter: value for parameter, value in structure_class(name).defaults().items() if parameter != "k"}


def make_structure(structure, k=None, structure_params=None) -> Structure:
    """The structure of ``BNClassifier(structure=structure, k=k, structure_params=structure_params)``.

    Parameters
    ----------
    structure : str or dict
        A registered name, or a dict ``{attribute: [parents]}`` (then ``k`` and ``structure_params`` are
        not read).
    k : int, optional
        Given to the structures that read it; None: their default.
    structure_params : dict, optional

    Raises
    ------
    ConfigError
        For an unknown name, a parameter the structure does not take, naming those it takes, or a value
        it refuses.
    """
    if isinstance(structure, dict):
        return GivenStructure(structure)
    cls = structure_class(structure)
    params = dict(structure_params or {})
    accepted = sorted(structure_defaults(structure))
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(
            f"structure {structure!r} does not take structure_params {unknown}; accepted: {accepted or 'none'}."
        )
    if k is not None and cls.uses_k():
        params["k"] = k
    return cls(**params)


def structure_presets() -> dict[str, dict]:
    """Preset name -> ``{"structure": name, "k": k, "structure_params": {...}}`` for the presets of every
    registered structure (``Structure.presets``), sorted by name: the settings a model named
    ``<preset>_<estimator>`` is built from.

    Raises
    ------
    ConfigError
        If two structures declare the same preset.
    """
    found = {}
    for cls in STRUCTURES.values():
        for preset, settings in vars(cls).get("presets", {}).items():  # a subclass does not inherit them
            if preset in found:
                raise ConfigError(
                    f"structure preset {preset!r} is declared by structures {found[preset]['structure']!r} and "
                    f"{cls.name!r}; rename one."
                )
            found[preset] = {
                "structure": cls.name,
                "k": settings.get("k"),
                "structure_params": dict(settings.get("structure_params", {})),
            }
    return dict(sorted(found.items()))


def structure_uses_k(structure) -> bool:
    """Whether ``structure`` (a name, or a dict, which does not) depends on ``k``, so that a config hash
    can leave ``k`` out of the others."""
    return not isinstance(structure, dict) and structure_class(structure).uses_k()


def counted(network: CountedNetwork, data) -> CountedNetwork:
    """``network`` with the counts of one pass over the training data."""
    return data.accumulate(network, CountedNetwork.add)


def statistics(data, cards, n_classes, pairs=True, memory_limit=None) -> StructureStatistics:
    """The mutual-information counts of one pass over the training data."""
    return data.accumulate(StructureStatistics(cards, n_classes, pairs, memory_limit), StructureStatistics.add)
