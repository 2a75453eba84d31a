"""Containment: wall avoidance, looking one turn radius ahead (OpenSteer's containment).

A boid whose point one turn radius ahead (``|v| / omega``) lies beyond the confinement start
steers sideways with k: across its heading, towards the inside (to its right when heading
straight at the wall, so that it turns rather than brakes). Keeps slow-turning boids in.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from flock3d.core.fields import Spec
from flock3d.core.quaternion import right_of
from flock3d.core.terms import Term, inlined

WEIGHT = Spec(
    "arena.containment", "wall avoidance: steer sideways when one turn radius ahead lies beyond the "
    "confinement start (0: off)", unit="units/s²",
)  # fmt: skip

RIGHT = np.array([1.0, 0.0, 0.0])


@inlined
def sideways(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz, k):
    """k along the part of the inward direction n across the heading f (the boid's right
    when heading straight along n, so that it turns one way rather than brake)."""
    along = nx * fx + ny * fy + nz * fz
    lx, ly, lz = nx - along * fx, ny - along * fy, nz - along * fz
    l2 = lx * lx + ly * ly + lz * lz
    if l2 < 1e-12:
        lx, ly, lz = right_of(qw, qx, qy, qz)
        l2 = lx * lx + ly * ly + lz * lz
    w = k / math.sqrt(l2)
    return w * lx, w * ly, w * lz


@inlined
def sphere(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, start, k):
    """In a sphere: when the point ``look`` ahead (one turn radius) lies beyond ``start`` from
    the centre, steer sideways towards the inside with k."""
    qx_, qy_, qz_ = px + look * fx - box[0], py + look * fy - box[1], pz + look * fz - box[2]
    if qx_ * qx_ + qy_ * qy_ + qz_ * qz_ <= start * start:
        return 0.0, 0.0, 0.0
    return sideways(box[0] - px, box[1] - py, box[2] - pz, fx, fy, fz, qw, qx, qy, qz, k)


@inlined
def box_(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, fraction, k, planar):
    """In a box: when the point ``look`` ahead crosses a face's margin (``fraction`` of the half
    side), steer sideways, away from the faces it crosses, with k."""
    nx = ny = nz = 0.0
    ex, ey, ez = px + look * fx - box[0], py + look * fy - box[1], pz + look * fz - box[2]
    if abs(ex) > fraction * box[3]:
        nx = -1.0 if ex > 0.0 else 1.0
    if abs(ey) > fraction * box[4]:
        ny = -1.0 if ey > 0.0 else 1.0
    if not planar and abs(ez) > fraction * box[5]:
        nz = -1.0 if ez > 0.0 else 1.0
    if nx == 0.0 and ny == 0.0 and nz == 0.0:
        return 0.0, 0.0, 0.0
    return sideways(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz, k)


class Containment(Term):
    name = "containment"
    module = __name__
    fields = ("containment",)
    weight = "containment"
    needs = "it needs containment > 0 and arena_shape 'sphere' or 'box'"
    decided_by = ("arena_shape", "containment")
    species_values: ClassVar[frozenset[str]] = frozenset({"omega"})
    label = "arena.containment = 40"

    def present(self, params):
        return params.arena_shape in ("sphere", "box") and params.containment > 0.0

    def values(self, params):
        return {"conf_start": params.confinement_start * params.arena_radius,
                "conf_fraction": params.confinement_start, "containment": params.containment,
                "omega": math.radians(params.max_turn_rate)}  # fmt: skip

    def line(self, g):
        m, v = g.module(self), g.v
        lines = ["speed = math.sqrt(vx * vx + vy * vy + vz * vz)", f"look = speed / {v('omega')}"]
        if g.layout.shape == "sphere":
            return lines + [f"tx, ty, tz = {m}.sphere(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, "
                            f"{v('conf_start')}, {v('containment')})"]  # fmt: skip
        return lines + [f"tx, ty, tz = {m}.box_(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, "
                        f"{v('conf_fraction')}, {v('containment')}, planar)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        f = boid.heading(params)
        look = np.linalg.norm(velocity) / math.radians(params.max_turn_rate)
        ahead = boid.position + look * f - np.asarray(params.arena_center)
        if params.arena_shape == "sphere":
            if np.linalg.norm(ahead) <= params.confinement_start * params.arena_radius:
                return np.zeros(3)
            inward = np.asarray(params.arena_center) - boid.position
        else:
            inward = np.zeros(3)
            for axis in range(params.dimensions):
                if abs(ahead[axis]) > params.confinement_start * params.half_extents[axis]:
                    inward[axis] = -np.sign(ahead[axis])
            if not np.any(inward):
                return np.zeros(3)
        across = inward - np.dot(inward, f) * f
        if np.dot(across, across) < 1e-12:
            across = np.asarray(boid.orientation.rotate(RIGHT))
        return params.containment * (across / np.linalg.norm(across))

    def example(self, base):
        return base.replace(containment=40.0)


TERM = Containment()
