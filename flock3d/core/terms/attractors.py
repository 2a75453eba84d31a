"""Attractors: points boids seek (Reynolds' seek).

Each attractor at a, with weight w and radius r, pulls a boid closer than r by
``w * (s_max * unit(a - p) - v)``: the velocity turns towards full speed straight at it. An
attractor may move by keyframes (``motion``, as an object's): it is then where its motion has
it at the step's time, computed by the same compiled function in both engines.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from flock3d.core.fields import FINITE_VECTOR, Part, Spec, finite_vector, number_problem, record, vector
from flock3d.core.geometry import keyframe_frame
from flock3d.core.kernel import image
from flock3d.core.objects import Motion, motion_block, motion_problems, normalise_motion
from flock3d.core.space import offsets
from flock3d.core.terms import Term, inlined


class Attractor(NamedTuple):
    """A point that boids seek: steering ``weight * (max_speed * unit(target - p) - v)``."""

    position: tuple[float, float, float] | None = None
    """Where it is; for a moving one, its motion's first point (which the position may leave out)."""
    weight: float = 1.0
    """1/s: how fast the boid's velocity turns to the seek velocity."""
    radius: float = math.inf
    """Only boids closer than this feel it."""
    motion: Motion | None = None
    """Keyframes it moves by (rotations are not used): see :class:`~flock3d.core.objects.Motion`."""


def normalise(value):
    def plain(a: Attractor) -> Attractor:
        motion = normalise_motion(a.motion)
        position = vector(a.position) or a.position
        if position is None and isinstance(motion, Motion) and motion.points:
            position = vector(motion.points[0]) or position  # where it starts: what the viewer shows
        return a._replace(position=position, motion=motion)

    return record(value, Attractor, plain)


ATTRACTORS = Spec(
    "attractors", "[[attractors]] tables: points boids seek, still or moving", kind="items",
    parts=(Part("position", "vector3"), Part("weight", "number"), Part("radius", "number"),
           Part("motion", "motion")),
)  # fmt: skip

#: Numbers in an attractor's row of the world record: x, y, z, weight, radius, its motion's place.
ROW = 6
#: Numbers before the rows: the count, and whether any attractor moves (1.0) or none (0.0).
HEAD = 2


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
def _pull(px, py, pz, vx, vy, vz, tx, ty, tz, weight, radius, max_speed, box, periodic, planar):
    """One attractor's seek at (tx, ty, tz), or nothing beyond its radius."""
    dx = image(tx - px, 2.0 * box[3], periodic)
    dy = image(ty - py, 2.0 * box[4], periodic)
    dz = image(tz - pz, 2.0 * box[5], periodic and not planar)
    if dx * dx + dy * dy + dz * dz < radius * radius:
        return seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, max_speed, box, periodic, planar)
    return 0.0, 0.0, 0.0


@inlined
def attraction(px, py, pz, vx, vy, vz, attractors, now, max_speed, box, periodic, planar):
    """Seek every attractor closer than its radius, each where it is at time ``now``.

    ``attractors`` is their world record (:meth:`Attractors.world`): their count, whether any
    moves, a row each (x, y, z, weight, radius and the place of its motion block in the record,
    or -1), then the motion blocks, read by :func:`flock3d.core.geometry.keyframe_frame`. Each boid
    places them itself, as it measures a moving object in its frame at ``now``: no array is made
    at the step's time, which a GPU kernel could not allocate. Where none moves, the loop makes
    no call: a call in it, even one never taken, slows every boid's loop."""
    ax = ay = az = 0.0
    if attractors[1] == 0.0:  # none moves
        for k in range(int(attractors[0])):
            r = HEAD + ROW * k
            sx, sy, sz = _pull(px, py, pz, vx, vy, vz, attractors[r], attractors[r + 1],
                               attractors[r + 2], attractors[r + 3], attractors[r + 4], max_speed, box,
                               periodic, planar)  # fmt: skip
            ax, ay, az = ax + sx, ay + sy, az + sz
        return ax, ay, az
    for k in range(int(attractors[0])):
        r = HEAD + ROW * k
        tx, ty, tz = attractors[r], attractors[r + 1], attractors[r + 2]
        if attractors[r + 5] >= 0.0:  # it moves: its motion block's place in the record
            tx, ty, tz, _, _, _, _ = keyframe_frame(attractors, int(attractors[r + 5]), now)
        sx, sy, sz = _pull(px, py, pz, vx, vy, vz, tx, ty, tz, attractors[r + 3], attractors[r + 4],
                           max_speed, box, periodic, planar)  # fmt: skip
        ax, ay, az = ax + sx, ay + sy, az + sz
    return ax, ay, az


def seek_reference(boid, target: np.ndarray, weight: float, velocity: np.ndarray, params) -> np.ndarray:
    """Reynolds' seek, readably: steer the velocity towards max_speed straight at ``target``."""

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
    world_width = 1  # one record: the count, a row each, the motion blocks
    label = "3 attractors"

    def present(self, params):
        return bool(params.attractors)

    def world(self, params, fields=None):
        rows, blocks = [], []
        at = HEAD + ROW * len(params.attractors)
        for a in params.attractors:
            block = [] if a.motion is None else motion_block(a.motion)
            rows.append([*a.position, a.weight, a.radius, at if len(block) else -1.0])
            blocks.append(block)
            at += len(block)
        moves = float(any(a.motion is not None for a in params.attractors))
        return np.concatenate([[len(rows), moves], *rows, *blocks]).astype(np.float64).reshape(-1, 1)

    def line(self, g):
        return [f"tx, ty, tz = {g.term(self)}.attraction(px, py, pz, vx, vy, vz, {g.world(self)}, now, "
                f"{g.v('s_max')}, box, periodic, planar)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):

        total = np.zeros(3)
        for a in params.attractors:
            target = np.asarray(a.position if a.motion is None else moved_to(a.motion, world.time))
            if np.linalg.norm(offsets(boid.position, target[None], params)[0]) < a.radius:
                total += seek_reference(boid, target, a.weight, velocity, params)
        return total

    @staticmethod
    def item_problems(a) -> list[str]:
        if not isinstance(a, Attractor):
            return [f" must have a position or a motion, a weight and optionally a radius (got {a!r})"]
        out = []
        if a.motion is not None:
            out += motion_problems(a.motion)
            if not out and a.position is not None and tuple(a.position) != tuple(a.motion.points[0]):
                out.append(".position is given by .motion.points when it moves; leave it out")
            if not out and a.motion.rotations is not None:
                out.append(".motion.rotations do not apply to an attractor, a point; leave them out")
        elif a.position is None:
            out.append(".position is required (or a .motion)")
        elif not finite_vector(a.position):
            out.append(f".position must be {FINITE_VECTOR} (got {a.position!r})")
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


def moved_to(motion: Motion, t: float) -> tuple[float, float, float]:
    """Where a motion has its point at time t (:func:`~flock3d.core.geometry.keyframe_frame`)."""
    return keyframe_frame(motion_block(motion), 0, t)[:3]


def ring(base, points: int = 6) -> list[tuple[float, float, float]]:
    """``points`` points on a circle of 0.6 the initial ball's radius: where the bench's scenes put
    attractors, waypoints and obstacles."""
    angles = np.linspace(0, 2 * np.pi, points, endpoint=False)
    r = 0.6 * base.initial_radius
    return [(r * np.cos(a), r * np.sin(a), 0.0) for a in angles]


TERM = Attractors()
