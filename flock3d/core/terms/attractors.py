"""Attractors: points boids seek (Reynolds' seek).

Each attractor at a, with weight w and radius r, pulls a boid closer than r by
``w * (s_max * unit(a - p) - v)``: the velocity turns towards full speed straight at it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from flock3d.core.fields import Part, Spec, finite_vector, number_problem, record, vector
from flock3d.core.kernel import image
from flock3d.core.terms import Term, inlined


class Attractor(NamedTuple):
    """A point that boids seek: steering ``weight * (max_speed * unit(target - p) - v)``."""

    position: tuple[float, float, float]
    weight: float = 1.0
    """1/s: how fast the boid's velocity turns to the seek velocity."""
    radius: float = math.inf
    """Only boids closer than this feel it."""


def normalise(value):
    return record(value, Attractor, lambda a: a._replace(position=vector(a.position) or a.position))


ATTRACTORS = Spec(
    "attractors", "[[attractors]] tables: points boids seek", kind="items",
    parts=(Part("position", "vector3", required=True), Part("weight", "number"), Part("radius", "number")),
)  # fmt: skip


@inlined
def seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, max_speed, box, periodic, planar):
    """Reynolds' seek towards (tx, ty, tz): weight * (max_speed * unit(offset) - v)."""
    dx = image(tx - px, 2.0 * box[3], periodic)
    dy = image(ty - py, 2.0 * box[4], periodic)
    dz = image(tz - pz, 2.0 * box[5], periodic and not planar)
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d == 0.0:
        return 0.0, 0.0, 0.0
    s = max_speed / d
    return weight * (s * dx - vx), weight * (s * dy - vy), weight * (s * dz - vz)


@inlined
def attraction(px, py, pz, vx, vy, vz, attractors, max_speed, box, periodic, planar):
    """Seek every attractor (rows of x, y, z, weight, radius) closer than its radius."""
    ax = ay = az = 0.0
    for k in range(attractors.shape[0]):
        tx, ty, tz, weight, radius = (attractors[k, 0], attractors[k, 1], attractors[k, 2],
                                      attractors[k, 3], attractors[k, 4])  # fmt: skip
        dx = image(tx - px, 2.0 * box[3], periodic)
        dy = image(ty - py, 2.0 * box[4], periodic)
        dz = image(tz - pz, 2.0 * box[5], periodic and not planar)
        if dx * dx + dy * dy + dz * dz < radius * radius:
            sx, sy, sz = seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, max_speed, box, periodic, planar)
            ax += sx
            ay += sy
            az += sz
    return ax, ay, az


def seek_reference(boid, target: np.ndarray, weight: float, velocity: np.ndarray, params) -> np.ndarray:
    """Reynolds' seek, readably: steer the velocity towards max_speed straight at ``target``."""
    from flock3d.core.reference import offsets

    offset = offsets(boid.position, target[None], params)[0]
    if not np.any(offset):
        return np.zeros(3)
    return weight * (params.max_speed * (offset / np.linalg.norm(offset)) - velocity)


class Attractors(Term):
    name = "attractors"
    module = __name__
    fields = ("attractors",)
    switches = ("attractors",)
    needs = "it needs attractors"
    world_width = 5
    label = "3 attractors"

    def present(self, params):
        return bool(params.attractors)

    def world(self, params, fields=None):
        rows = [[*a.position, a.weight, a.radius] for a in params.attractors]
        return np.array(rows, dtype=np.float64).reshape(-1, 5)

    def line(self, g):
        return [f"tx, ty, tz = {g.term(self)}.attraction(px, py, pz, vx, vy, vz, {g.world(self)}, "
                f"{g.v('s_max')}, box, periodic, planar)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        from flock3d.core.reference import offsets

        total = np.zeros(3)
        for a in params.attractors:
            target = np.asarray(a.position)
            if np.linalg.norm(offsets(boid.position, target[None], params)[0]) < a.radius:
                total += seek_reference(boid, target, a.weight, velocity, params)
        return total

    @staticmethod
    def item_problems(a) -> list[str]:
        if not isinstance(a, Attractor):
            return [f" must have a position, a weight and optionally a radius (got {a!r})"]
        out = []
        if not finite_vector(a.position):
            out.append(f".position must be 3 finite numbers (got {a.position!r})")
        if p := number_problem(a.weight, 0.0, math.inf, False, True, False):
            out.append(f".weight {p}")
        if p := number_problem(a.radius, 0.0, math.inf, True, True, True):
            out.append(f".radius {p}")
        return out

    def problems(self, values, reported):
        from flock3d.core.fields import item_problems

        return item_problems("attractors", values["attractors"], self.item_problems)

    def example(self, base):
        return base.replace(attractors=[Attractor(p, 1.0) for p in ring(base)[:3]])


def ring(base, points: int = 6) -> list[tuple[float, float, float]]:
    """``points`` points on a circle of 0.6 the initial ball's radius: where the bench's scenes put
    attractors, waypoints and obstacles."""
    angles = np.linspace(0, 2 * np.pi, points, endpoint=False)
    r = 0.6 * base.initial_radius
    return [(r * np.cos(a), r * np.sin(a), 0.0) for a in angles]


TERM = Attractors()
