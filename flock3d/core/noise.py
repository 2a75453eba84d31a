"""Counter-based random numbers: a pure function of (seed, step, boid, stream).

A stochastic model (the Couzin zone model's angular noise) needs random numbers
that do not depend on the order boids are processed in, the thread count, or how
steps are grouped into calls. Hashing the counters with SplitMix64 gives exactly
that: the same seed, step and boid always draw the same numbers. Both the fast
kernel and the reference draw their noise here, so they see the same random
input while computing the model independently.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["uniform", "gaussian", "uniforms"]


@numba.njit(cache=True, inline="always")
def _mix(z):
    """SplitMix64's output function on a uint64."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def uniform(seed, step, index, stream):
    """A number in (0, 1], determined by the four integer counters alone."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    z = _mix(np.uint64(seed) + golden)
    z = _mix(z ^ (np.uint64(step) + golden))
    z = _mix(z ^ (np.uint64(index) + golden))
    z = _mix(z ^ (np.uint64(stream) + golden))
    # 53 random bits, shifted into (0, 1] so that log(u) is always finite.
    return (float(z >> np.uint64(11)) + 1.0) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, inline="always")
def gaussian(seed, step, index, stream):
    """A standard normal number (Box-Muller on streams ``stream`` and ``stream + 1``)."""
    u1 = uniform(seed, step, index, stream)
    u2 = uniform(seed, step, index, stream + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@numba.njit(cache=True)
def uniforms(seed, step, n, stream):
    """(n,) uniforms for boids 0..n-1 at one step (for tests and analysis)."""
    out = np.empty(n)
    for i in range(n):
        out[i] = uniform(seed, step, i, stream)
    return out
