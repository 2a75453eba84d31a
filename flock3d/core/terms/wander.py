"""Wander: each boid's heading drifts with smooth noise of its own (Reynolds' wander).

``W_i(t) = k_w * (g_i(t) - (g_i(t) . f_i) f_i)``: a sideways steer of up to k_w, across the
boid's heading f_i, along a random direction g_i(t) that changes smoothly in time. g_i is
value noise: at each whole second k (the knot) every boid draws a vector with components
uniform in [-1, 1], from the counters (seed, k, boid), and between knots g_i moves from one
to the next along the smoothstep ``s = 3u^2 - 2u^3`` of the fraction u of the second. So it
is the same whatever the thread count or how steps are grouped into calls, and both engines
draw the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core import noise
from flock3d.core.fields import Spec
from flock3d.core.terms import Term, inlined

WEIGHT = Spec(
    "rules.wander", "wander: a sideways steer of up to this along a direction that drifts smoothly, "
    "each boid its own, over about a second (0: off)", unit="units/s²", symbol="k_w", label="Wander",
    slider=(0.0, 50.0),
)  # fmt: skip

#: The noise streams of the three components (apart from the other models' streams).
_STREAM = 16


@inlined
def knot(seed, k, boid, axis):
    """Component ``axis`` of boid's random vector at knot ``k``: uniform in [-1, 1]."""
    return 2.0 * noise.uniform(seed, k, boid, _STREAM + axis) - 1.0


@inlined
def acceleration(fx, fy, fz, now, seed, boid, k_w):
    """The wander steer at time ``now``: the smooth noise vector, less its part along the heading."""
    k = math.floor(now)
    u = now - k
    s = u * u * (3.0 - 2.0 * u)
    # The six knot components drawn in one loop: one inlined draw (four SplitMix64 rounds) for
    # numba to type, not one for each of the nine uses (1.4 s of each layout's compile), and LLVM
    # unrolls the loop back into straight code.
    k0 = np.int64(k)
    ax = ay = az = bx = by = bz = 0.0
    for j in range(6):
        value = knot(seed, k0 + j // 3, boid, j % 3)
        if j == 0:
            ax = value
        elif j == 1:
            ay = value
        elif j == 2:
            az = value
        elif j == 3:
            bx = value
        elif j == 4:
            by = value
        else:
            bz = value
    gx, gy, gz = ax + s * (bx - ax), ay + s * (by - ay), az + s * (bz - az)
    along = gx * fx + gy * fy + gz * fz
    return k_w * (gx - along * fx), k_w * (gy - along * fy), k_w * (gz - along * fz)


class Wander(Term):
    name = "wander"
    module = __name__
    fields = ("wander",)
    weight = "wander"
    decided_by = ("wander",)
    needs = "it needs wander > 0"
    label = "rules.wander = 10"

    def present(self, params):
        return params.wander > 0.0

    def values(self, params):
        return {"k_w": params.wander}

    def line(self, g):
        return [f"tx, ty, tz = {g.term(self)}.acceleration(fx, fy, fz, now, seed, boid, {g.v('k_w')})"]

    def reference(self, boid, world, velocity, params):
        k = math.floor(world.time)
        s = (world.time - k) * (world.time - k) * (3.0 - 2.0 * (world.time - k))
        g0 = np.array([knot_reference(world.seed, k, boid.index, axis) for axis in range(3)])
        g1 = np.array([knot_reference(world.seed, k + 1, boid.index, axis) for axis in range(3)])
        g = g0 + s * (g1 - g0)
        f = boid.heading(params)
        return params.wander * (g - np.dot(g, f) * f)

    def example(self, base):
        return base.replace(wander=10.0)


def knot_reference(seed: int, k: int, boid: int, axis: int) -> float:
    """:func:`knot`, from Python: the same counter-based draw."""
    return 2.0 * noise.uniform(seed, k, boid, _STREAM + axis) - 1.0


TERM = Wander()
