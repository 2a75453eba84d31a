"""The flocking model of Cucker and Smale (2007), IEEE Trans. Automat. Control 52:852.

Each individual's velocity relaxes towards its neighbours', weighted by a communication rate
that decays with their distance:

    dv_i/dt = (1/N) sum_j psi(|x_j - x_i|) (v_j - v_i),    psi(r) = K / (1 + r^2)^beta,

with N the whole flock's size. The sum runs over the neighbours within the view distance (inf:
the whole flock, the paper's all-to-all coupling) and the cone. Over all-to-all pairs the
interaction is symmetric, so the total momentum is conserved; for beta < 1/2 the velocities
converge to their common mean from any start (unconditional flocking). Positions are not
pushed: the model has no separation, cohesion or speed limit.

One step (dt): u_i = v_i + dt a_i from the start-of-step state; the individual turns towards u_i
(at most the turn limit, none by default) and moves at |u_i| for dt.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from pyquaternion import Quaternion

from flock3d.core.agents import FORWARD, Agent, moved_state, turned
from flock3d.core.fields import Problem, Spec
from flock3d.core.kernel import cone_threshold, inlined
from flock3d.core.models import Model
from flock3d.core.space import neighbours, offsets, settle

COUPLING = Spec(
    "cucker_smale.coupling", "coupling strength K of the communication rate psi(r) = K / (1 + r^2)^beta",
    unit="1/s", symbol="K", model="cucker-smale", label="Coupling K", slider=(0.0, 20.0),
)  # fmt: skip
BETA = Spec(
    "cucker_smale.beta", "decay exponent beta of the communication rate (below 1/2 the flock aligns from "
    "any start)", symbol="β", high=100.0, model="cucker-smale", label="Decay β", slider=(0.0, 2.0),
)  # fmt: skip

#: What makes a flock this model, in its pure form.
OWN = {
    # The paper's model couples every pair (all-to-all); a finite view distance makes it metric.
    "view_distance": math.inf,
    # psi depends on the distance alone: nothing is hidden behind an individual.
    "fov": 360.0,
    # The velocity changes by the interaction alone: no turn limit. Nor is its speed clamped (the
    # update stages no speed limit): min_speed and max_speed only draw the initial speeds.
    "max_turn_rate": math.inf,
    # The theorem is about open space; a periodic box (with a finite view distance) is accepted too.
    "arena_shape": "none",
}
#: A scene's set-up: a hundred in a ball of radius 10, a step short against 1 / K.
SETUP = {"count": 100, "init_radius": 10.0, "dt": 0.05}
DEFAULTS: dict[str, Any] = {"model": "cucker-smale", **OWN, **SETUP}
"""The values a scene with ``model = "cucker-smale"`` starts from: 100 individuals in a ball of
radius 10 in open space, all-to-all, no cone, no turn limit, dt = 0.05, and the fields' own
K = 1 and beta = 0.25 (< 1/2: they align whatever the start)."""


@inlined
def acceleration(bx, by, bz, bvx, bvy, bvz, m, px, py, pz, fx, fy, fz, vx, vy, vz, view2, cone, k_n, beta):
    """(1/N) sum_j psi(r_ij) (v_j - v_i) over the candidates seen (within the view distance and the
    cone), with ``k_n`` = K / N."""
    ax = ay = az = 0.0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        if (d2 > 0.0) & (d2 < view2) & (dot * abs(dot) >= cone * d2):
            w = k_n / (1.0 + d2) ** beta
            ax += w * (bvx[j] - vx)
            ay += w * (bvy[j] - vy)
            az += w * (bvz[j] - vz)
    return ax, ay, az


class CuckerSmale(Model):
    name = "cucker-smale"
    words = "the 2007 velocity consensus"
    title = "Cucker-Smale model"
    module = __name__
    fields = {"cs_coupling": (1.0, COUPLING), "cs_beta": (0.25, BETA)}
    defaults, setup = OWN, SETUP
    arenas = ("none", "periodic")
    sees_headings = False
    constant_speed = False
    panel = ("view_distance", "fov", "arena_radius")
    table = "cucker_smale"

    def values(self, p):
        return dict(view2=p.view_distance**2, cone=cone_threshold(p.fov), k_n=p.cs_coupling / max(p.count, 1),
                    beta=p.cs_beta)  # fmt: skip

    def update(self, g, c):
        v, b = g.v, g.choose(c, "view2", "cone")
        p, f, w, u = (", ".join(names) for names in (g.position, g.heading, g.velocity, g.desired))
        # the acceleration first, then v + dt a
        g.summed(c, u, f"{g.model(self)}.acceleration", b,
                 f"{p}, {f}, {w}, {v('view2')}, {v('cone')}, {v('k_n')}, {v('beta')}")  # fmt: skip
        dt = v("dt")
        c(f"{u} = " + ", ".join(f"{x} + {dt} * {a}" for x, a in zip(g.velocity, g.desired, strict=True)))
        g.stage(c, None, None)  # no speed limit

    def step(self, state, params, seed):
        n, positions, velocities = len(state.positions), state.positions, state.velocities
        moved = []
        for i in range(n):
            orientation = Quaternion(state.orientations[i])
            heading = np.asarray(orientation.rotate(FORWARD))
            seen = neighbours(positions[i], heading, positions, params)
            d = offsets(positions[i], positions[seen], params)
            psi = params.cs_coupling / (1.0 + np.sum(d * d, axis=1)) ** params.cs_beta
            a = np.sum(psi[:, None] * (velocities[seen] - velocities[i]), axis=0) / n
            if params.dimensions == 2:
                a[2] = 0.0
            u = velocities[i] + params.dt * a
            speed = np.linalg.norm(u)  # no speed limit
            if speed > 0.0:
                orientation = turned(orientation, u / speed, math.radians(params.max_turn_rate) * params.dt)
            velocity = speed * np.asarray(orientation.rotate(FORWARD))
            position, velocity = settle(positions[i] + params.dt * velocity, velocity, params)
            moved.append((Agent(position, orientation), velocity))
        return moved_state(state, params, moved)

    def problems(self, values, ok):
        if values["neighbours"] is not None:
            return [
                Problem(
                    "neighbours",
                    "must be unset for the cucker-smale model: it couples every individual within the view "
                    f"distance (got {values['neighbours']!r})",
                )
            ]
        return []


MODEL = CuckerSmale()
