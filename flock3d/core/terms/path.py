"""A path: a closed list of waypoints that every boid seeks in turn.

A boid seeks its current waypoint (as an attractor, with the path's weight) and moves on to
the next once within ``reach`` of it; each boid starts with the waypoint nearest to it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from flock3d.core.fields import (
    FINITE_VECTOR,
    Part,
    Problem,
    Spec,
    finite_vector,
    is_sequence,
    number_problem,
    record,
    short_repr,
    vector,
)
from flock3d.core.kernel import image
from flock3d.core.space import offsets
from flock3d.core.terms import Term, inlined
from flock3d.core.terms.attractors import ring, seek, seek_reference


class WaypointPath(NamedTuple):
    """A closed list of points that every boid seeks in turn."""

    points: tuple[tuple[float, float, float], ...]
    weight: float = 1.0
    """1/s, as for an attractor."""
    reach: float = 2.0
    """A boid this close to its waypoint moves on to the next one."""


def normalise(value):
    def points(path: WaypointPath) -> WaypointPath:
        if not is_sequence(path.points):
            return path
        return path._replace(points=tuple(vector(p) or p for p in path.points))

    return record(value, WaypointPath, points) if value is not None else None


PATH = Spec(
    "path", "[path] table: a closed list of waypoints boids follow", kind="table",
    parts=(Part("points", "points", required=True), Part("weight", "number"), Part("reach", "number")),
)  # fmt: skip


@inlined
def following(px, py, pz, vx, vy, vz, path, waypoint, weight, reach2, max_speed, box, periodic, planar):
    """Seek the current waypoint of a closed path, moving on to the next within reach.

    Returns ``(ax, ay, az, waypoint)`` with the (possibly advanced) waypoint.
    """
    n = path.shape[0]
    k = waypoint % n
    dx = image(path[k, 0] - px, 2.0 * box[3], periodic)
    dy = image(path[k, 1] - py, 2.0 * box[4], periodic)
    dz = image(path[k, 2] - pz, 2.0 * box[5], periodic and not planar)
    if dx * dx + dy * dy + dz * dz < reach2:
        k = (k + 1) % n
    ax, ay, az = seek(px, py, pz, vx, vy, vz, path[k, 0], path[k, 1], path[k, 2], weight, max_speed, box,
                      periodic, planar)  # fmt: skip
    return ax, ay, az, k


class Path(Term):
    name = "path"
    module = __name__
    fields = ("path",)
    switches = ("path",)
    needs = "it needs a path"
    world_width = 3
    label = "waypoint path (6 points)"

    def present(self, params):
        return params.path is not None

    def values(self, params):
        return {"path_weight": params.path.weight if params.path else 0.0,
                "path_reach2": params.path.reach**2 if params.path else 0.0}  # fmt: skip

    def world(self, params, fields=None):
        return np.array(params.path.points if params.path else [], dtype=np.float64).reshape(-1, 3)

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz, wp = {g.term(self)}.following(px, py, pz, vx, vy, vz, {g.world(self)}, "
                f"waypoints[i], {v('path_weight')}, {v('path_reach2')}, {v('s_max')}, box, periodic, planar)",
                "waypoints[i] = wp"]  # fmt: skip

    def reference(self, boid, world, velocity, params):

        points = np.asarray(params.path.points)
        k = boid.waypoint % len(points)
        if np.linalg.norm(offsets(boid.position, points[k][None], params)[0]) < params.path.reach:
            k = (k + 1) % len(points)
        boid.waypoint = k
        return seek_reference(boid, points[k], params.path.weight, velocity, params)

    def problems(self, values, reported):
        path = values["path"]
        if path is None:
            return []
        if not isinstance(path, WaypointPath):
            return [Problem("path", f"must have points, a weight and a reach (got {path!r})")]
        out = []
        points = path.points
        if not (is_sequence(points) and len(points) >= 2 and all(finite_vector(p) for p in points)):
            out.append(f".points must be a list of at least 2 points of {FINITE_VECTOR} (got {points!r})")
        if p := number_problem(path.weight, 0.0, math.inf, False, True, False):
            out.append(f".weight {p}")
        if p := number_problem(path.reach, 0.0, math.inf, True, True, False):
            out.append(f".reach {p}")
        elif not out:  # within reach of a waypoint must not mean within reach of the next one
            shortest = min(math.dist(a, b) for a, b in zip(points, (*points[1:], points[0]), strict=True))
            if not path.reach < shortest / 2:
                out.append(
                    f".reach must be < half the shortest segment of the closed path, {shortest / 2:g} "
                    f"(got {short_repr(path.reach)})"
                )
        return [Problem("path", p) for p in out]

    def example(self, base):
        return base.replace(path=WaypointPath(tuple(ring(base)), 1.0, 3.0))


TERM = Path()
