"""Confinement: the arena pushes a boid back (step 5 of ``docs/model.md``).

In a sphere, ``B_i = -k_b r_i / |r_i|`` once ``|r_i| > f_b R`` (r_i from the centre c); in a
box, a push of k_b back along each axis where the boid is beyond f_b of the half side.
Periodic, wrap and open arenas have none.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.fields import Spec
from flock3d.core.terms import Term, inlined

START = Spec(
    "arena.confinement_start", "fraction of R beyond which the arena pushes back", symbol="f_b", low=0.0,
    high=1.0, low_open=True,
)  # fmt: skip
WEIGHT = Spec("arena.confinement", "strength of the push back", unit="units/s²", symbol="k_b")


@inlined
def sphere(px, py, pz, box, start, k):
    """Beyond ``start`` from the centre, a push of k straight back towards it."""
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    r = math.sqrt(rx * rx + ry * ry + rz * rz)
    if r > start:
        w = k / r
        return -w * rx, -w * ry, -w * rz
    return 0.0, 0.0, 0.0


@inlined
def box_(px, py, pz, box, fraction, k, planar):
    """A push of k back along each axis where the boid is beyond ``fraction`` of the half side."""
    ax = ay = az = 0.0
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    sx, sy, sz = fraction * box[3], fraction * box[4], fraction * box[5]
    ax = -k if rx > sx else (k if rx < -sx else 0.0)
    ay = -k if ry > sy else (k if ry < -sy else 0.0)
    if not planar:
        az = -k if rz > sz else (k if rz < -sz else 0.0)
    return ax, ay, az


class Confinement(Term):
    name = "confinement"
    module = __name__
    fields = ("confinement_start", "confinement")
    weight = "confinement"
    needs = "it needs arena_shape 'sphere' or 'box'"
    decided_by = ("arena_shape",)

    def present(self, params):
        return params.arena_shape in ("sphere", "box")

    def values(self, params):
        return {"conf_start": params.confinement_start * params.arena_radius,
                "conf_fraction": params.confinement_start, "k_b": params.confinement}  # fmt: skip

    def line(self, g):
        m, v = g.module(self), g.v
        if g.layout.shape == "sphere":
            return [f"tx, ty, tz = {m}.sphere(px, py, pz, box, {v('conf_start')}, {v('k_b')})"]
        return [f"tx, ty, tz = {m}.box_(px, py, pz, box, {v('conf_fraction')}, {v('k_b')}, planar)"]

    def reference(self, boid, world, velocity, params):
        r = boid.position - np.asarray(params.arena_center)
        if params.arena_shape == "sphere":
            distance = np.linalg.norm(r)
            start = params.confinement_start * params.arena_radius
            return -params.confinement * r / distance if distance > start else np.zeros(3)
        push = np.zeros(3)
        for axis in range(params.dimensions):
            if abs(r[axis]) > params.confinement_start * params.half_extents[axis]:
                push[axis] = -params.confinement * np.sign(r[axis])
        return push


TERM = Confinement()
