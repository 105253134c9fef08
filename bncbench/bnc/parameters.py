"""Checks of the parameters of estimators and structures: numbers of the right type in their range, names in a list.

Each check returns the value converted (``float`` or ``int``) or raises a ``ConfigError`` naming the
parameter, its valid range and the value given, as scikit-learn's parameter validation does. NaN and
infinities are refused everywhere: an infinite pseudo-count or concentration makes every probability
NaN.
"""

import math
from collections.abc import Sequence
from numbers import Integral, Real

from bncbench.core.errors import ConfigError


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _range_text(low, high, low_open, high_open) -> str:
    if high is None:
        return f"{'>' if low_open else '>='} {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def check_number(name: str, value, low: float = 0.0, high: float | None = None, *, low_open=False, high_open=False,
                 none: str | None = None) -> float | None:
    """``value`` as a float if it is a finite real number in the range, else a ``ConfigError``.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : object
        The value given.
    low, high : float
        Bounds of the range (``high`` None: no upper bound), closed unless ``low_open``/``high_open``.
    none : str, optional
        When given, None is accepted (and returned); the text says what None means.
    """
    if value is None and none is not None:
        return None
    inside = _is_real(value) and math.isfinite(value)
    inside = inside and (value > low if low_open else value >= low)
    inside = inside and (high is None or (value < high if high_open else value <= high))
    if not inside:
        alternative = f" or null ({none})" if none is not None else ""
        raise ConfigError(
            f"{name} must be a finite number {_range_text(low, high, low_open, high_open)}{alternative}, "
            f"got {value!r}."
        )
    return float(value)


def check_numbers(name: str, values, low: float = 0.0, *, low_open=False) -> tuple[float, ...]:
    """A non-empty sequence of finite numbers ``>= low`` (``> low`` if ``low_open``) as a tuple of floats."""
    if isinstance(values, str) or not isinstance(values, Sequence) or len(values) == 0:
        raise ConfigError(f"{name} must be a non-empty list of numbers, got {values!r}.")
    bad = [v for v in values if not (_is_real(v) and math.isfinite(v) and (v > low if low_open else v >= low))]
    if bad:
        raise ConfigError(
            f"{name} must be a non-empty list of finite numbers {_range_text(low, None, low_open, False)}, "
            f"got {list(values)!r} (not valid: {bad!r})."
        )
    return tuple(float(v) for v in values)


def check_integer(name: str, value, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer in ``minimum..maximum`` (not a bool, not a float), else a
    ``ConfigError``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, Integral)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ConfigError(f"{name} must be an integer {bound}, got {value!r}.")
    return int(value)


def check_choice(name: str, value, choices):
    """``value`` if it is one of ``choices``, else a ``ConfigError`` naming them."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {choices}, got {value!r}.")
    return value
