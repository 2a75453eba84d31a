"""Perching: boids that come low land on the ground, rest there a while, and take off again.

After the boids pseudocode's extra rule (examples/perching.py does it with a force): a flying
boid that ends a step within ``perching.height`` of a ground (an object of shape ``plane`` or
``heightfield``) lands where it is: its velocity becomes zero and it rests for
``perching.duration`` seconds, holding its position and orientation while the rest of the flock
flies on (the others still see it). Then it takes off, flying again from the next step, and may
not land again for ``perching.cooldown`` seconds.

Each boid's timer is state (:data:`PERCHES`, ``FlockState.perches``), which the fast step
carries after its values (:attr:`~flock3d.core.terms.Term.carries`). The term adds no
acceleration: it acts after the move (:meth:`Perching.constraint`), before the objects keep the
boid out of them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from flock3d.core import geometry as g
from flock3d.core.carried import Carried
from flock3d.core.fields import Problem, Spec
from flock3d.core.kernel import P_X, Q_W
from flock3d.core.objects.distance import object_clearance
from flock3d.core.objects.keep_out import listed
from flock3d.core.objects.oracle import bodies
from flock3d.core.objects.packing import KIND
from flock3d.core.terms import Term, inlined
from flock3d.core.terms import objects as objects_term

HEIGHT = Spec(
    "perching.height", "boids that come within this of the ground (a plane or heightfield object) land "
    "there (0: no perching)", unit="units", symbol="h_p",
)  # fmt: skip
DURATION = Spec("perching.duration", "how long a boid rests on the ground once it landed", unit="s",
                low_open=True)  # fmt: skip
COOLDOWN = Spec("perching.cooldown", "how long after taking off a boid flies before it may land again",
                unit="s", low_open=True)  # fmt: skip

PERCHES = Carried(
    "perches", 1, "each boid's perching timer (``Params.perching_height``; unused otherwise), in seconds: "
    "> 0 resting on the ground, that long still; < 0 flying, that long before it may land again; "
    "0 flying, free to land",
)  # fmt: skip
"""The perching timer, per boid: the term's state."""

#: Kinds of object that are ground to land on.
GROUNDS = ("plane", "heightfield")


@inlined
def ground(world, t, x, y, z):
    """The least height of (x, y, z) above the grounds among the objects of a world record (see
    :func:`flock3d.core.objects.ground_clearance`, which reads packed data and offsets)."""
    count, at = listed(world)
    best = np.inf
    for j in range(count):
        o = int(world[at + j])
        kind = int(world[o + KIND])
        if kind == g.PLANE or kind == g.HEIGHTFIELD:
            best = min(best, object_clearance(world, o, t, x, y, z)[0])
    return best


@inlined
def perch(mx, my, mz, mvx, mvy, mvz, ox, oy, oz, timer, world, t, dt, height, duration, cooldown):
    """A boid just moved to m (from o), with its timer: where it may be, its velocity, its new
    timer, and whether it stays as it was (resting). Returns ``(x, y, z, vx, vy, vz, timer, held)``."""
    if timer > 0.0:  # resting: it stays, still, until its time is up
        timer -= dt
        return ox, oy, oz, 0.0, 0.0, 0.0, -cooldown if timer <= 0.0 else timer, True
    if timer < 0.0:  # flying off: not yet free to land
        return mx, my, mz, mvx, mvy, mvz, min(timer + dt, 0.0), False
    if ground(world, t, mx, my, mz) < height:  # low: it lands here
        return mx, my, mz, 0.0, 0.0, 0.0, duration, False
    return mx, my, mz, mvx, mvy, mvz, timer, False


class Perching(Term):
    name = "perching"
    module = __name__
    fields = ("perching_height", "perching_duration", "perching_cooldown")
    switches = ("perching_height",)
    needs = "it needs perching.height > 0"
    constrains = True
    carries = (PERCHES,)

    def present(self, params):
        return params.perching_height > 0.0

    def values(self, params):
        return {"perch_height": params.perching_height, "perch_duration": params.perching_duration,
                "perch_cooldown": params.perching_cooldown}  # fmt: skip

    def line(self, g):
        return ["tx = ty = tz = 0.0  # it acts after the move"]

    def reference(self, boid, world, velocity, params):
        return np.zeros(3)

    def constraint(self, g):
        v, world = g.v, g.world(objects_term.TERM)
        old = ", ".join(f"staged[{P_X + a}, slot]" for a in range(3))
        limits = f"{v('dt')}, {v('perch_height')}, {v('perch_duration')}, {v('perch_cooldown')}"
        return [
            "mx, my, mz, mvx, mvy, mvz, timer, held = "
            f"{g.term(self)}.perch(mx, my, mz, mvx, mvy, mvz, {old}, pv[perches_at + boid], {world}, later, "
            f"{limits})",
            "pv[perches_at + boid] = timer",
            "if held:",
            "    " + ", ".join(f"quat[k, {a}]" for a in range(4)) + " = "
            + ", ".join(f"staged[{Q_W + a}, slot]" for a in range(4)),
        ]  # fmt: skip

    def constrained(self, boid, before, world, params):
        dt, still, timer = params.dt, np.zeros(3), before.carried[PERCHES.name]
        if timer > 0.0:  # resting: it stays as it was
            timer -= dt
            timer = -params.perching_cooldown if timer <= 0.0 else timer
            return replace(boid, position=before.position.copy(), velocity=still,
                           orientation=before.orientation).carrying(PERCHES.name, timer)  # fmt: skip
        if timer < 0.0:
            return boid.carrying(PERCHES.name, min(timer + dt, 0.0))
        later, objects = world.time + dt, bodies(params.objects, world.fields)
        heights = [b.clearance(later, boid.position)[0] for b in objects if b.shape in GROUNDS]
        if min(heights, default=np.inf) < params.perching_height:
            return replace(boid, velocity=still).carrying(PERCHES.name, params.perching_duration)
        return boid

    def problems(self, values, reported):
        if "perching_height" in reported or not values["perching_height"] > 0.0 or "objects" in reported:
            return []
        objects = values["objects"]
        if any(
            getattr(o, "shape", None) in GROUNDS and getattr(o, "role", None) == "obstacle" for o in objects
        ):
            return []
        return [
            Problem(
                "perching_height",
                f"needs a ground to land on: an [[objects]] table of shape plane or heightfield "
                f"(got perching.height {values['perching_height']:g} and no ground)",
            )
        ]


TERM = Perching()
