"""Fleeing predators: boids flee from each predator they see within the flee distance.

``F_i = -k_f * sum_m u_im`` over the predators m a boid sees (in its cone) closer than
``predators.flee_distance``, with u_im the unit offset towards m. The predators themselves
(agents that chase the nearest boid at constant speed, turning at a limited rate) are moved
by the kernel's hunt, from the start-of-step state; boids flee from where they were.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.fields import Spec
from flock3d.core.kernel import image
from flock3d.core.quaternion import turn_limit
from flock3d.core.space import offsets, visible
from flock3d.core.terms import Term, inlined

COUNT = Spec("predators.count", "predators chasing the nearest boid", kind="integer", checked=False,
             allowed="0 to 10,000")  # fmt: skip
SPEED = Spec("predators.speed", "their constant speed", unit="units/s", low_open=True)
TURN_RATE = Spec("predators.max_turn_rate", "their largest heading change", unit="degrees/s", low_open=True,
                 allow_inf=True)  # fmt: skip
DISTANCE = Spec("predators.flee_distance", "boids that see a predator closer than this flee", unit="units",
                low_open=True)  # fmt: skip
WEIGHT = Spec(
    "predators.flee", "flee acceleration away from each predator seen", unit="units/s²",
    label="Flee predators", slider=(0.0, 300.0),
)  # fmt: skip


@inlined
def flight(px, py, pz, fx, fy, fz, predators, flee_distance2, strength, cone, box, periodic, planar):
    """Flee from each predator (rows of x, y, z) seen within the flee distance: strength away."""
    ax = ay = az = 0.0
    for k in range(predators.shape[0]):
        dx = image(predators[k, 0] - px, 2.0 * box[3], periodic)
        dy = image(predators[k, 1] - py, 2.0 * box[4], periodic)
        dz = image(predators[k, 2] - pz, 2.0 * box[5], periodic and not planar)
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        if (d2 > 0.0) & (d2 < flee_distance2) & (dot * abs(dot) >= cone * d2):
            w = strength / math.sqrt(d2)
            ax -= w * dx
            ay -= w * dy
            az -= w * dz
    return ax, ay, az


class Flee(Term):
    name = "flee"
    module = __name__
    fields = ("predator_count", "predator_speed", "predator_turn_rate", "flee_distance", "flee")
    switches = ("predator_count",)
    needs = "it needs predator_count > 0"
    weight = "flee"
    label = "3 predators"

    def present(self, params):
        return params.predator_count > 0

    def values(self, params):
        out = {"flee2": params.flee_distance**2, "flee": params.flee, "predator_speed": params.predator_speed}
        limit = turn_limit(math.radians(params.predator_turn_rate) * params.dt)
        out["predator_cos_max"], out["predator_cos_half"], out["predator_sin_half"] = limit
        return out

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz = {g.term(self)}.flight(px, py, pz, fx, fy, fz, hunters, {v('flee2')}, "
                f"{v('flee')}, {v('cone')}, box, periodic, planar)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):

        if not world.predators:
            return np.zeros(3)
        positions = np.array([p.position for p in world.predators])
        d = offsets(boid.position, positions, params)
        seen = visible(
            boid.position, boid.heading(params), positions, params, params.flee_distance, params.fov
        )
        return sum((-params.flee * (d[j] / np.linalg.norm(d[j])) for j in np.flatnonzero(seen)), np.zeros(3))

    def example(self, base):
        return base.replace(predator_count=3)


TERM = Flee()
