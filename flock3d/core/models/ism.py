"""The inertial spin model of Attanasi et al. (2014), Nat. Phys. 10:691, and Cavagna et al.
(2015), J. Stat. Phys. 158:601.

Each bird moves at a constant speed v0 and turns by its spin s (angular velocity s / chi).
The velocities of its neighbours (within r, or its n_c nearest) torque the spin, which also
relaxes by a friction eta and is kicked by a thermal noise of temperature T: turns travel
through the flock as waves rather than diffuse.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pyquaternion import Quaternion

from flock3d.core import noise
from flock3d.core.agents import agents, constant_speed_move, moved_state
from flock3d.core.carried import Carried
from flock3d.core.fields import Problem, Spec
from flock3d.core.kernel import cone_threshold
from flock3d.core.models import Model
from flock3d.core.space import neighbours, unit

INERTIA = Spec(
    "ism.inertia", "generalized moment of inertia chi of the spin: s / chi is the bird's angular velocity",
    symbol="χ", low_open=True, model="ism",
)  # fmt: skip
FRICTION = Spec(
    "ism.friction", "friction eta of the spin: alone, it decays as exp(-eta t / chi)", unit="1/s",
    symbol="η", model="ism", allowed=">= 0, at most ism.inertia / sim.dt", label="Friction η",
    slider=(0.0, 5.0),
)  # fmt: skip
COUPLING = Spec(
    "ism.coupling", "coupling J: the torque J v x sum_j v_j / v0^2 of the neighbours' velocities on the spin",
    unit="1/s²", symbol="J", model="ism", label="Coupling J", slider=(0.0, 20.0),
)  # fmt: skip
TEMPERATURE = Spec(
    "ism.temperature", "temperature T of the spin's noise: each component of it has intensity 2 eta T",
    unit="1/s²", symbol="T", model="ism", label="Temperature T", slider=(0.0, 1.0),
)  # fmt: skip

SPINS = Carried(
    "spins", 3, "each bird's spin (zeros in other models): s / chi is its angular velocity, rad/s",
    note="each bird's new spin, kept if it moves",
)  # fmt: skip
"""The spin of each bird, the model's per-boid state."""

#: What makes a flock this model: a periodic box, no view cone, no turn limit (the spin turns it).
OWN = {"arena_shape": "periodic", "fov": 360.0, "max_turn_rate": math.inf}
#: The papers' set-up: the n_c = 6 nearest, at density 1.
SETUP = {"count": 1000, "arena_radius": 5.0, "speed": 1.0, "neighbours": 6, "view_distance": 2.5,
         "dt": 0.05}  # fmt: skip
DEFAULTS: dict[str, Any] = {"model": "ism", **OWN, **SETUP}
"""The values a scene with ``model = "ism"`` starts from: 1,000 birds in a periodic cube of side 10
(density 1, a nearest neighbour about 0.55 away), each coupled to its n_c = 6 nearest (within 2.5),
v0 = 1, dt = 0.05, no turn limit, and the fields' own defaults chi = 1.25, eta = 0.3, J = 0.8,
T = 0.02: an ordered flock (polarization about 0.98) whose turns travel as waves."""


class InertialSpin(Model):
    name = "ism"
    words = "the inertial spin model of 2014"
    title = "Inertial spin model"
    fields = {
        "ism_inertia": (1.25, INERTIA),
        "ism_friction": (0.3, FRICTION),
        "ism_coupling": (0.8, COUPLING),
        "ism_temperature": (0.02, TEMPERATURE),
    }
    defaults, setup = OWN, SETUP
    arenas = ("none", "periodic")
    carries = (SPINS,)
    panel = ("speed", "view_distance", "fov", "max_turn_rate", "arena_radius")
    table = "ism"

    def values(self, p):
        return dict(view2=p.view_distance**2, cone=cone_threshold(p.fov), speed=p.speed,
                    chi=p.ism_inertia, friction=p.ism_friction, coupling=p.ism_coupling,
                    temperature=p.ism_temperature)  # fmt: skip

    def update(self, g, c):
        v, b, C = g.v, g.choose(c, "view2", "cone"), g.components
        p, f, u = (", ".join(names) for names in (g.position, g.heading, g.desired))
        g.summed(c, "_, _, _, _, n_o, ox, oy, oz, _, _, _, _", f"{C}.zone_sums", b,
                 f"{p}, {f}, 0.0, {v('view2')}, {v('view2')}, {v('cone')}")  # fmt: skip
        spin, new_spin = g.carried(c, "spins")
        c(f"{', '.join(new_spin)}, {u} = {C}.inertial_spin(",
          f"    {f}, {', '.join(spin)}, ox, oy, oz, {v('chi')}, {v('friction')}, "
          f"{v('coupling')}, {v('temperature')}, {v('dt')}, {g.planar}, {g.noise})")  # fmt: skip
        g.stage(c, v("speed"), v("speed"))

    def step(self, state, params, seed):
        """Each bird's spin relaxes by its friction, is torqued towards the velocities of its
        neighbours (within r, or its n_c nearest) and kicked by the noise; then the bird's velocity
        turns about the new spin, at the angular velocity s / chi for dt, and it moves at v0 along
        it (the heading turns to it at most by the turn limit, none by default)."""
        group = agents(state)
        chi, eta, dt = params.ism_inertia, params.ism_friction, params.dt
        moved, spins = [], []
        for i, bird in enumerate(group):
            v = params.speed * bird.heading
            partners = np.flatnonzero(neighbours(bird.position, bird.heading, state.positions, params))
            others = sum((params.speed * group[j].heading for j in partners), np.zeros(3))
            g = np.array([noise.gaussian(seed, state.step_count, i, stream) for stream in (0, 2, 4)])
            xi = math.sqrt(2.0 * eta * params.ism_temperature / dt) * g  # white noise, sampled over dt
            # ds/dt = v x [J sum_j v_j / v0^2 - (eta / v0^2) dv/dt + xi / v0], with dv/dt = s x v / chi:
            # for s perpendicular to v the friction term is -(eta / chi) s.
            torque = np.cross(v, params.ism_coupling * others / params.speed**2 + xi / params.speed)
            spin = state.spins[i] + dt * (torque - (eta / chi) * state.spins[i])
            if params.dimensions == 2:
                spin[:2] = 0.0
            # dv/dt = s x v / chi with the new spin held over the step: a rotation by |s| dt / chi about s.
            turn = (
                Quaternion(axis=spin, angle=np.linalg.norm(spin) * dt / chi) if np.any(spin) else Quaternion()
            )
            moved.append(constant_speed_move(bird, unit(np.asarray(turn.rotate(bird.heading))), params))
            spins.append(spin)
        new = moved_state(state, params, moved)
        new.spins = np.array(spins, dtype=np.float64).reshape(len(group), 3)
        return new

    def problems(self, values, ok):
        if (
            ok.get("ism_friction")
            and ok.get("ism_inertia")
            and ok.get("dt")
            and (values["ism_friction"] * values["dt"] > values["ism_inertia"])
        ):
            return [
                Problem(
                    "ism_friction",
                    f"must be at most ism_inertia / dt = {values['ism_inertia'] / values['dt']:g}, or the "
                    f"friction reverses the spin in one step (got {values['ism_friction']!r})",
                )
            ]
        return []


MODEL = InertialSpin()
