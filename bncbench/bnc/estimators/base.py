"""The estimator contract: one abstract class, ``Estimator``, and the registry of its subclasses by name.

An estimator fills the probability tables of a counted network (``tables``), and says how
``BNClassifier`` predicts with them (``predictor``), which structures it is defined on
(``valid_structure``), whether counts alone suffice (``count_based``, for out-of-core fitting) and what
its fit found besides the tables (``diagnostics``, ``attribute_values``). A subclass that sets ``name``
is registered under it; model names (``kdb5_<name>``, ``bncbench.protocol.models``) and
``BNClassifier(estimator=...)`` refer to that name.
"""

import abc
from collections.abc import Mapping
from types import MappingProxyType

from bncbench.bnc.inference import PackedNetwork
from bncbench.core.registry import Registered, Registry
from bncbench.core.errors import ConfigError

#: Estimator name -> class, filled as the estimators are defined (``registry.Registered``).
ESTIMATORS = Registry("estimator")


class Estimator(Registered, abc.ABC):
    """A parameter estimator, scikit-learn style: ``__init__`` takes its parameters by keyword; a subclass that
    sets ``name`` is registered under it (``bncbench.core.registry.Registered``).

    Attributes
    ----------
    name : str
        The registry key, as written in configs.
    count_based : bool
        True when ``tables`` reads only the network's counts, ``data.sample`` and ``data.rows_at``, so the
        estimator can be fitted out of core (``bncbench.bnc.out_of_core``).
    structures_taken : str
        What ``valid_structure`` accepts, in words, for ``check_pairing``'s message.
    handles_missing : bool
        True when ``tables`` reads available-case counts right (``BNClassifier(missing="ignore")``):
        it uses the counts alone, each table row's total being the rows that observe its child in its
        context (methods vignette, Eq. incp_params); the others are refused with that setting.
    added_later : Mapping[str, object]
        The parameters added after runs of the estimator were logged, each with the value that does
        what those runs did (``{"selection": "largest_tied"}``). A cell's hash leaves such a parameter
        out at that value (``bncbench.protocol.cell.canonical_model``), so that adding a parameter
        does not make every finished cell of the estimator run again; at any other value it is hashed.
    earlier_defaults : Mapping[str, object]
        The parameters whose default changed after runs of the estimator were logged, each with its
        earlier default (``{"backoff": "value"}``): such a run logged its params without the parameter,
        and its cfg_hash holds the earlier value (``bncbench.protocol.cell.logged_hashes``).
    settings : tuple of str
        The parameters an experiment sets for every model of the estimator at once, on the command line as
        ``<name>.<parameter>=...`` (``hdp.iterations=50000``) or in its file (``hdp: {iterations: 1000}``), with
        ``__init__``'s defaults (None: the estimator decides); a model's own value (its grid) wins. Declaring
        one here is all it takes (``estimator_settings``, composed by ``bncbench.app.config``).
    warm_up_params : Mapping[str, object]
        Parameters under which a fit calls the same numba kernels with the same types in much less time
        (``{"iterations": 20, ...}`` of a sampler): the untimed fits that load or compile the kernels before a
        sweep or a cell (``bncbench.protocol.cross_validation.warm_up_model``) take them over the model's own.
    """

    registry = ESTIMATORS
    count_based: bool = False
    structures_taken: str = "every structure"
    handles_missing: bool = False
    added_later: Mapping[str, object] = MappingProxyType({})
    earlier_defaults: Mapping[str, object] = MappingProxyType({})
    warm_up_params: Mapping[str, object] = MappingProxyType({})
    settings: tuple[str, ...] = ()

    @abc.abstractmethod
    def tables(self, network, data, rng) -> list[list]:
        """For each context tree of ``network`` and each of its levels, the ``(n_nodes, n_values)``
        table of conditional probabilities.

        Parameters
        ----------
        network : CountedNetwork
            The structure with its counts.
        data : InMemoryCodes or ChunkedCodes
            The training rows, codes with the class last: ``data.sample`` those held in memory (all of
            them in memory, a uniform sample out of core), ``data.rows_at(positions)`` those at given
            positions (out of core, one pass over the data).
        rng : numpy.random.Generator
        """

    def predictor(self, network, tables):
        """What ``BNClassifier`` predicts with: an object with ``predict_proba(codes)``; by default the
        tables read at each row's deepest context seen in training."""
        return PackedNetwork(network, tables)

    @staticmethod
    def valid_structure(structure, k) -> bool:
        """Whether the estimator is defined on ``BNClassifier(structure=structure, k=k)``; an estimator
        defined on some shapes of network asks the structure (``make_structure(structure, k)``), not its
        name."""
        return True

    def diagnostics(self, column_names) -> dict:
        """What the fit found besides the tables, for logging: numbers and DataFrames.

        Parameters
        ----------
        column_names : list of str
            Name of each column of the code matrix (the attributes, then the class).
        """
        return {}

    def attribute_values(self) -> dict:
        """Fitted numbers with one value per attribute, by attribute name (e.g. ``"feature_weights_"``):
        ``{name: {attribute column: value}}``; ``BNClassifier`` exposes each under that name."""
        return {}


def table_name(column_names, child: int, variables) -> str:
    """How diagnostics name the table of ``child`` given ``variables`` (columns): ``child | parent, ...``, or
    ``child`` alone without a context."""
    context = ", ".join(column_names[v] for v in variables)
    return f"{column_names[child]} | {context}" if variables else column_names[child]


def estimator_class(name: str) -> type[Estimator]:
    """The estimator class registered as ``name``, or a ``ConfigError`` listing the valid ones."""
    return ESTIMATORS.lookup(name)


def make_estimator(name: str, params: dict) -> Estimator:
    """Instantiate the estimator registered as ``name`` with ``params``, or say what is valid."""
    cls = estimator_class(name)
    accepted = list(cls.defaults())
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(
            f"estimator {name!r} does not take {unknown}; its estimator_params are: {accepted or 'none'}."
        )
    return cls(**params)


def estimator_defaults(name: str) -> dict:
    """The parameters of the estimator registered as ``name`` and their defaults."""
    return estimator_class(name).defaults()


def estimator_settings() -> dict[str, dict]:
    """``{estimator: {parameter: default}}`` of the registered estimators that declare ``settings``."""
    return {name: {parameter: cls.defaults()[parameter] for parameter in cls.settings}
            for name, cls in sorted(ESTIMATORS.items()) if cls.settings}


def check_pairing(estimator: str, structure, k) -> None:
    """Refuse, before fitting, a structure the estimator is not defined on (e.g. ``tan`` with ``manb``).

    Raises
    ------
    ConfigError
        Naming what the estimator takes.
    """
    cls = estimator_class(estimator)
    if not cls.valid_structure(structure, k):
        described = "a given structure" if isinstance(structure, dict) else f"structure {structure!r} with k={k}"
        raise ConfigError(
            f"estimator {estimator!r} takes only {cls.structures_taken}; {described} is not one of them. "
            "Choose another structure or estimator."
        )
