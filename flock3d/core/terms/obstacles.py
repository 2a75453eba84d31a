"""Obstacles: spheres boids steer around, looking ahead along their heading.

For each obstacle whose margin (its radius plus ``avoidance.margin``) the heading ray enters
within ``s_max * avoidance.lookahead``, a boid steers sideways, away from the centre, harder
the closer the encounter (``k (1 - t / ahead)``); inside the margin it is pushed straight out.
"""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

import numpy as np

from flock3d.core.fields import (
    FINITE_VECTOR,
    Part,
    Problem,
    Spec,
    finite_vector,
    is_real_number,
    number_problem,
    record,
    vector,
)
from flock3d.core.kernel import image
from flock3d.core.quaternion import right_of
from flock3d.core.space import offsets
from flock3d.core.terms import Term, inlined
from flock3d.core.terms.attractors import ring


class Obstacle(NamedTuple):
    """A sphere that boids steer around (a circle in a planar flock)."""

    center: tuple[float, float, float]
    radius: float


def normalise(value):
    return record(value, Obstacle, lambda o: o._replace(center=vector(o.center) or o.center))


OBSTACLES = Spec(
    "obstacles", "[[obstacles]] tables: spheres boids steer around", kind="items",
    parts=(Part("center", "vector3", required=True), Part("radius", "number", required=True)),
)  # fmt: skip
WEIGHT = Spec(
    "avoidance.weight", "obstacle and object avoidance acceleration", unit="units/s²",
    label="Obstacle avoidance", slider=(0.0, 300.0),
)  # fmt: skip
LOOKAHEAD = Spec("avoidance.lookahead", "how far ahead a boid looks, in seconds at max_speed", unit="s",
                 low_open=True)  # fmt: skip
MARGIN = Spec("avoidance.margin", "clearance kept from an obstacle's surface; objects are steered off "
              "within it", unit="units")  # fmt: skip

RIGHT = np.array([1.0, 0.0, 0.0])


@inlined
def avoidance(px, py, pz, fx, fy, fz, qw, qx, qy, qz, obstacles, strength, ahead, margin, box, periodic,
              planar):  # fmt: skip
    """Steer around the spheres (rows of x, y, z, radius) the heading ray meets within ``ahead``."""
    ax = ay = az = 0.0
    for k in range(obstacles.shape[0]):
        cx, cy, cz, radius = obstacles[k, 0], obstacles[k, 1], obstacles[k, 2], obstacles[k, 3]
        clearance = radius + margin
        ex = -image(cx - px, 2.0 * box[3], periodic)  # from the centre's nearest image to the boid
        ey = -image(cy - py, 2.0 * box[4], periodic)
        ez = -image(cz - pz, 2.0 * box[5], periodic and not planar)
        e = math.sqrt(ex * ex + ey * ey + ez * ez)
        if e < clearance:  # inside the margin: push straight out
            if e > 0.0:
                ax += strength * ex / e
                ay += strength * ey / e
                az += strength * ez / e
            else:
                ax += strength * fx
                ay += strength * fy
                az += strength * fz
            continue
        t = -(ex * fx + ey * fy + ez * fz)  # distance ahead of the closest approach
        if 0.0 < t < ahead:
            lx, ly, lz = ex + t * fx, ey + t * fy, ez + t * fz  # from the centre to that point
            l2 = lx * lx + ly * ly + lz * lz
            if l2 < clearance * clearance:
                w = strength * (1.0 - t / ahead)
                if l2 > 0.0:
                    inv = 1.0 / math.sqrt(l2)
                    ax += w * lx * inv
                    ay += w * ly * inv
                    az += w * lz * inv
                else:  # heading straight at the centre: veer right
                    rx, ry, rz = right_of(qw, qx, qy, qz)
                    ax += w * rx
                    ay += w * ry
                    az += w * rz
    return ax, ay, az


class Obstacles(Term):
    name = "obstacles"
    module = __name__
    fields = ("obstacles", "avoidance", "avoidance_lookahead", "avoidance_margin")
    switches = ("obstacles",)
    needs = "it needs obstacles"
    weight = "avoidance"
    world_width = 4
    species_values: ClassVar[frozenset[str]] = frozenset({"ahead"})
    label = "5 obstacles"

    def present(self, params):
        return bool(params.obstacles)

    def values(self, params):
        return {"avoidance": params.avoidance, "ahead": params.max_speed * params.avoidance_lookahead,
                "margin": params.avoidance_margin}  # fmt: skip

    def world(self, params, fields=None):
        rows = [[*o.center, o.radius] for o in params.obstacles]
        return np.array(rows, dtype=np.float64).reshape(-1, 4)

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz = {g.term(self)}.avoidance(px, py, pz, fx, fy, fz, qw, qx, qy, qz, "
                f"{g.world(self)}, {v('avoidance')}, {v('ahead')}, {v('margin')}, box, periodic, "
                "planar)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):

        total = np.zeros(3)
        f = boid.heading(params)
        ahead = params.max_speed * params.avoidance_lookahead
        for o in params.obstacles:
            to_centre = offsets(boid.position, np.asarray(o.center)[None], params)[0]  # nearest image
            clearance = o.radius + params.avoidance_margin
            away = -to_centre
            if np.linalg.norm(away) < clearance:
                total += (
                    params.avoidance * (away / np.linalg.norm(away)) if np.any(away) else params.avoidance * f
                )
                continue
            t = np.dot(to_centre, f)  # distance ahead of the closest approach
            if 0.0 < t < ahead:
                lateral = t * f - to_centre
                if np.dot(lateral, lateral) < clearance**2:
                    if np.any(lateral):
                        side = lateral / np.linalg.norm(lateral)
                    else:
                        side = np.asarray(boid.orientation.rotate(RIGHT))
                    total += params.avoidance * (1.0 - t / ahead) * side
        return total

    @staticmethod
    def item_problems(o) -> list[str]:
        if not isinstance(o, Obstacle):
            return [f" must have a center and a radius (got {o!r})"]
        out = []
        if not finite_vector(o.center):
            out.append(f".center must be {FINITE_VECTOR} (got {o.center!r})")
        if p := number_problem(o.radius, 0.0, math.inf, True, True, False):
            out.append(f".radius {p}")
        return out

    def problems(self, values, reported):
        from flock3d.core.fields import item_problems

        problems = item_problems("obstacles", values["obstacles"], self.item_problems)
        if problems or reported & {"arena_center", "init_radius", "arena_radius"}:
            return problems
        # Boids start outside obstacles and their margins: one must not cover the whole initial ball.
        init = values["init_radius"]
        r0 = 0.5 * values["arena_radius"] if init is None else init
        margin = values["avoidance_margin"] if is_real_number(values["avoidance_margin"]) else 0.0
        return [
            Problem(
                "obstacles",
                f"[{i}] with its margin covers the whole initial ball of radius {r0:g} around the arena "
                "centre, leaving no room to place the boids (move it, or set a larger init_radius)",
            )
            for i, o in enumerate(values["obstacles"])
            if math.dist(o.center, values["arena_center"]) + r0 <= o.radius + margin
        ]

    def example(self, base):
        return base.replace(obstacles=[Obstacle(p, 3.0) for p in ring(base)[:5]])


TERM = Obstacles()
