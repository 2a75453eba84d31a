"""The objects term: boids steer away from the world's objects and never end a move inside one.

The objects themselves (records, shapes, checks, packing, distances, the keep-out) are
:mod:`flock3d.core.objects`; this module puts them in the step. The generated step calls
:func:`avoidance` and :func:`keep_out` at their addresses (:data:`AVOIDANCE`, :data:`KEEP_OUT`;
``objects_term.keep_out_at``): the objects' distance chain compiles once, beside a layout's own
compile rather than within it (:mod:`flock3d.core.kernel.calls`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import numpy as np
from numba import types

from flock3d.core.fields import Part, Problem, Spec
from flock3d.core.kernel import P_X, Called
from flock3d.core.kernel.predators import KEEP_OUT_SIGNATURE
from flock3d.core.objects.checks import covered_start_problems, objects_problems
from flock3d.core.objects.keep_out import avoidance, keep_out
from flock3d.core.objects.oracle import bodies
from flock3d.core.objects.packing import packed
from flock3d.core.objects.readable import away_reference, keep_out_reference
from flock3d.core.objects.records import ROLES, Object
from flock3d.core.terms import Term

__all__ = [
    "OBJECTS", "Objects", "TERM", "avoidance", "keep_out",
    "AVOIDANCE", "KEEP_OUT", "avoidance_at", "keep_out_at",
]  # fmt: skip

#: :func:`keep_out` as the step calls it: the boid's new and old positions, the packed objects,
#: the step's start and end times and whether the flock is planar; where the boid may be.
KEEP_OUT = Called(keep_out, KEEP_OUT_SIGNATURE)
keep_out_at = KEEP_OUT.at
#: :func:`avoidance` as the step calls it, at its address: the boid's position, velocity, heading
#: and orientation, the time, the packed objects, the weight, the margin and the turn rate.
#: Inlined, it had numba type the objects' distance chain in each layout's chunk (1.2 s).
AVOIDANCE = Called(avoidance, types.UniTuple(types.float64, 3)(*[types.float64] * 14, types.float64[::1],
                                                               *[types.float64] * 3))  # fmt: skip
avoidance_at = AVOIDANCE.at

OBJECTS = Spec(
    "objects", "[[objects]] tables: primitives, ground and meshes that boids stay out of (role obstacle) "
    "or in (role arena)", kind="items", checked=False,
    parts=(Part("shape", "string", required=True), Part("size", "numbers"), Part("radius", "number"),
           Part("height", "number"), Part("tube", "number"), Part("image", "string"), Part("seed", "integer"),
           Part("file", "string"), Part("position", "vector3"),
           Part("rotation", "vector3"), Part("scale", "scale"), Part("role", "choice", choices=ROLES),
           Part("color", "color"), Part("motion", "motion")),
)  # fmt: skip


class Objects(Term):
    """The world's objects: boids steer away from them looking one turn radius ahead (as the
    arena's containment does), and after each move a boid that entered one is put back on its
    surface (:func:`keep_out`): no boid is ever inside an obstacle or outside the arena object.
    The same constraint holds the predators after their hunt (:attr:`keeps_predators`); they do
    not steer away. The constraint moves the position only: the velocity and orientation keep
    the turn and speed limits, and the steer turns the boid away at the next step. The fast
    engine measures with the
    compiled functions (:func:`~flock3d.core.objects.object_clearance`), the reference engine with
    their readable twins written from each shape's definition (:mod:`flock3d.core.objects.oracle`),
    on the same grids."""

    name = "objects"
    module = __name__
    fields = ("objects",)
    switches = ("objects",)
    needs = "it needs objects"
    world_width = 1  # one record: the packed objects, their offsets, how many move, their count
    constrains = True
    species_values: ClassVar[frozenset[str]] = frozenset({"omega"})
    label = "5 objects (primitives)"
    called: ClassVar[tuple[Called, ...]] = (AVOIDANCE, KEEP_OUT)
    keeps_predators: ClassVar[Called | None] = KEEP_OUT

    def present(self, params):
        return bool(params.objects)

    def values(self, params):
        return {"avoidance": params.avoidance, "margin": params.avoidance_margin,
                "omega": math.radians(params.max_turn_rate)}  # fmt: skip

    def world(self, params, fields=None):
        data, offsets = packed(params.objects, fields)
        moving = sum(o.motion is not None for o in params.objects)  # keep_out's `moving`
        return np.concatenate([data, offsets.astype(np.float64), [moving, len(offsets) - 1.0]]).reshape(-1, 1)

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz = {g.called(self, AVOIDANCE)}(px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, "
                f"qz, now, {g.world(self)}, {v('avoidance')}, {v('margin')}, {v('omega')})"]  # fmt: skip

    def example(self, base):
        from flock3d.core.terms.attractors import ring

        shapes = [
            Object("sphere", radius=3.0),
            Object("box", size=(5.0, 5.0, 5.0), rotation=(30.0, 20.0, 0.0)),
            Object("cylinder", radius=2.0, height=8.0),
            Object("capsule", radius=2.0, height=8.0),
            Object("torus", radius=3.0, tube=1.0, rotation=(0.0, 0.0, 90.0)),
        ]
        places = zip(shapes, ring(base)[:5], strict=True)
        return base.replace(objects=[o._replace(position=p) for o, p in places])

    def constraint(self, g):
        start = ", ".join(f"staged[{P_X + a}, slot]" for a in range(3))
        keep_out_at = g.called(self, KEEP_OUT)
        return [f"mx, my, mz = {keep_out_at}(mx, my, mz, {start}, {g.world(self)}, now, later, planar)"]

    def reference(self, boid, world, velocity, params):
        f = boid.heading(params)
        ahead = boid.position + np.linalg.norm(velocity) / math.radians(params.max_turn_rate) * f
        margin, total = params.avoidance_margin, np.zeros(3)
        for body in bodies(params.objects, world.fields):
            c, n = body.clearance(world.time, boid.position)
            c_ahead, n_ahead = body.clearance(world.time, ahead)
            if c_ahead < c:
                c, n = c_ahead, n_ahead
            if c < margin:
                urgency = 1.0 if c <= 0.0 else (margin - c) / margin
                total += params.avoidance * urgency * away_reference(n, f, boid)
        return total

    def constrained(self, boid, before, world, params):
        position = keep_out_reference(
            boid.position,
            before.position,
            bodies(params.objects, world.fields),
            world.time,
            world.time + params.dt,
            params.dimensions == 2,
        )
        return replace(boid, position=position)

    def problems(self, values, reported):
        if values["objects"] == ():
            return []
        problems = [Problem(*p) for p in objects_problems(values)]
        depends = {"objects", "arena_center", "init_radius", "arena_radius", "avoidance_margin", "dimensions"}
        if not problems and not reported & depends:
            problems = [Problem(*p) for p in covered_start_problems(values)]
        return problems


TERM = Objects()
