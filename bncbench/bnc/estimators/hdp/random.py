"""Random numbers of the HDP sampler's numba kernels: SplitMix64 (Steele, Lea and Flood 2014), read
by position (``uniform_at``: the numbers of a seed do not depend on the number of threads) or as a
sequential stream, and the Gamma and Beta deviates of the concentration updates."""

import math

import numpy as np
from numba import njit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
#: Key of the sequential stream of the concentration updates, apart from the positional one.
CONCENTRATION_STREAM = np.uint64(0xD1B54A32D192ED03)


@njit(cache=True, error_model="numpy", inline="always")
def mix(z):
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, error_model="numpy", inline="always")
def to_unit(z):
    """A uniform number in (0, 1) from the top 53 bits."""
    return ((z >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@njit(cache=True, error_model="numpy", inline="always")
def uniform_at(key, counter):
    """Element ``counter`` of the SplitMix64 stream ``key``, as a uniform number in (0, 1)."""
    return to_unit(mix(key + (np.uint64(counter) + np.uint64(1)) * GOLDEN))


@njit(cache=True, error_model="numpy")
def next_uniform(stream):
    """The next uniform number of a sequential SplitMix64 stream (state in ``stream[0]``)."""
    stream[0] += GOLDEN
    return to_unit(mix(stream[0]))


@njit(cache=True, error_model="numpy")
def normal(stream, spare):
    """A standard normal deviate by Marsaglia's polar method, which makes two: ``spare`` keeps one."""
    if spare[0] != 0.0:
        spare[0] = 0.0
        return spare[1]
    while True:
        x = 2.0 * next_uniform(stream) - 1.0
        y = 2.0 * next_uniform(stream) - 1.0
        s = x * x + y * y
        if 0.0 < s < 1.0:
            scale = math.sqrt(-2.0 * math.log(s) / s)
            spare[0] = 1.0
            spare[1] = y * scale
            return x * scale


@njit(cache=True, error_model="numpy")
def gamma(shape, stream, spare):
    """Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 boosted by U^(1/shape)."""
    boost = 1.0
    if shape < 1.0:
        boost = next_uniform(stream) ** (1.0 / shape)
        shape += 1.0
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(stream, spare)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = next_uniform(stream)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2 or math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            return d * v * boost


@njit(cache=True, error_model="numpy")
def beta(a, b, stream, spare):
    x = gamma(a, stream, spare)
    return x / (x + gamma(b, stream, spare))
