"""Wind: an external acceleration field, ``a(p) = a_0 + G (p - c)``.

A uniform part a_0 and a linear gradient G (3 x 3, 1/s²) around the arena centre c: shear,
a vortex, an updraft growing with height. In a periodic arena p is the boid's wrapped
position, so a gradient jumps at the faces.
"""

from __future__ import annotations

import numpy as np

from flock3d.core.fields import Spec
from flock3d.core.terms import Term, inlined

_ZERO3 = (0.0, 0.0, 0.0)

ACCELERATION = Spec("wind.acceleration", "uniform wind acceleration a_0 [x, y, z]", kind="vector3",
                    unit="units/s²", allowed="3 finite numbers")  # fmt: skip
GRADIENT = Spec("wind.gradient", "3 x 3 matrix G: wind at p = acceleration + G (p - arena.center)",
                kind="matrix3", unit="1/s²", allowed="3 x 3 finite numbers")  # fmt: skip


@inlined
def acceleration(px, py, pz, box, w):
    """The wind at the boid: ``w[0, :3] + G @ (p - centre)``, G the row's last nine numbers."""
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    return (
        w[0, 0] + w[0, 3] * rx + w[0, 4] * ry + w[0, 5] * rz,
        w[0, 1] + w[0, 6] * rx + w[0, 7] * ry + w[0, 8] * rz,
        w[0, 2] + w[0, 9] * rx + w[0, 10] * ry + w[0, 11] * rz,
    )


class Wind(Term):
    name = "wind"
    module = __name__
    fields = ("wind", "wind_gradient")
    switches = ("wind", "wind_gradient")
    needs = "it needs a wind or wind_gradient other than zero"
    world_width = 12
    label = "wind (uniform + gradient)"

    def present(self, params):
        return any(params.wind) or any(any(row) for row in params.wind_gradient)

    def world(self, params, fields=None):
        return np.array([[*params.wind, *np.ravel(params.wind_gradient)]], dtype=np.float64)

    def line(self, g):
        return [f"tx, ty, tz = {g.term(self)}.acceleration(px, py, pz, box, {g.world(self)})"]

    def reference(self, boid, world, velocity, params):
        r = boid.position - np.asarray(params.arena_center)
        return np.asarray(params.wind) + np.asarray(params.wind_gradient) @ r

    def example(self, base):
        return base.replace(wind=(1.0, 0.0, 0.0), wind_gradient=((0, 0, -0.1), (0, 0, 0), (0.1, 0, 0)))


TERM = Wind()
