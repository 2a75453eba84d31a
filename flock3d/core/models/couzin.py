"""The zone model of Couzin, Krause, James, Ruxton and Franks (2002), J. theor. Biol. 218:1.

Each individual moves at a constant speed s. Neighbours within r_r (the zone of repulsion)
push it away, and only they act when there are any; otherwise it aligns with those in the
zone of orientation (out to r_o = r_r + Δr_o) and is drawn to those in the zone of attraction
(out to r_a = r_o + Δr_a), the two directions averaged when both act. It sees within its
cone, turns towards the direction (tilted by a Gaussian angular noise of sd sigma) at most
theta dt, and moves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flock3d.core import noise
from flock3d.core.agents import agents, constant_speed_move, moved_state, tilted
from flock3d.core.fields import Problem, Spec
from flock3d.core.kernel import cone_threshold
from flock3d.core.models import Model
from flock3d.core.space import neighbours, offsets, unit

ZONE_REPULSION = Spec(
    "zones.repulsion", "radius of the zone of repulsion", unit="units", symbol="r_r", low_open=True,
    model="couzin", label="Repulsion r_r", slider=(0.05, 10.0),
)  # fmt: skip
ZONE_ORIENTATION_WIDTH = Spec(
    "zones.orientation_width", "width of the zone of orientation (r_o = r_r + Δr_o)", unit="units",
    symbol="Δr_o", model="couzin", label="Orientation Δr_o", slider=(0.0, 20.0),
)  # fmt: skip
ZONE_ATTRACTION_WIDTH = Spec(
    "zones.attraction_width", "width of the zone of attraction (r_a = r_o + Δr_a)", unit="units",
    symbol="Δr_a", model="couzin", label="Attraction Δr_a", slider=(0.0, 30.0),
)  # fmt: skip
NOISE_SIGMA = Spec(
    "noise.sigma", "Gaussian angular noise on the desired direction, standard deviation", unit="radians",
    symbol="σ", model="couzin", label="Noise σ", slider=(0.0, 1.0),
)  # fmt: skip

#: What makes a flock this model: open space (the boids' sphere is no arena of the paper's).
OWN = {"arena_shape": "none"}
#: The paper's set-up (its values of the boids' fields too: alpha = 270 and theta = 40 deg/s).
SETUP = {"count": 100, "zone_repulsion": 1.0, "fov": 270.0, "max_turn_rate": 40.0, "speed": 3.0,
         "noise_sigma": 0.05, "dt": 0.1, "init_radius": 5.0}  # fmt: skip
DEFAULTS: dict[str, Any] = {"model": "couzin", **SETUP, **OWN}
"""The values of Couzin, Krause, James, Ruxton and Franks (2002) a scene with ``model = "couzin"``
starts from: N = 100, r_r = 1, alpha = 270, theta = 40 deg/s, s = 3, sigma = 0.05 rad,
tau = 0.1 s, in open space, from a random ball (here of radius 5)."""

#: The zone widths: r_a is their sum.
_WIDTHS = ("zone_repulsion", "zone_orientation_width", "zone_attraction_width")
_R_A = "r_a (= zone_repulsion + zone_orientation_width + zone_attraction_width)"


class Couzin(Model):
    name = "couzin"
    words = "the 2002 zone model"
    title = "Zones (Couzin model)"
    fields = {
        "zone_repulsion": (1.0, ZONE_REPULSION),
        "zone_orientation_width": (2.0, ZONE_ORIENTATION_WIDTH),
        "zone_attraction_width": (14.0, ZONE_ATTRACTION_WIDTH),
        "noise_sigma": (0.05, NOISE_SIGMA),
    }
    defaults, setup = OWN, SETUP
    arenas = ("none", "periodic")
    reach_fields = _WIDTHS
    panel = ("speed", "fov", "max_turn_rate")

    def reach(self, params):
        return params.zone_radii[2]

    def values(self, p):
        r_r, r_o, r_a = p.zone_radii
        return dict(rr2=r_r * r_r, ro2=r_o * r_o, ra2=r_a * r_a, cone=cone_threshold(p.fov), speed=p.speed,
                    sigma=p.noise_sigma)  # fmt: skip

    def update(self, g, c):
        v, b, C = g.v, g.choose(c, "ra2", "cone"), g.components
        p, f, u = (", ".join(names) for names in (g.position, g.heading, g.desired))
        sums = "n_r, rx, ry, rz, n_o, ox, oy, oz, n_a, ax, ay, az"
        g.summed(c, sums, f"{C}.zone_sums", b, f"{p}, {f}, {v('rr2')}, {v('ro2')}, {v('ra2')}, {v('cone')}")
        c(f"{u} = {C}.zone_direction({sums}, {f}, {g.planar})",
          f"{u} = {C}.perturbed({u}, {g.planar}, {v('sigma')}, {g.noise})")  # fmt: skip
        g.stage(c, v("speed"), v("speed"))

    def step(self, state, params, seed):
        group = agents(state)
        return moved_state(state, params, [updated(a, group, params, seed, state.step_count, i)
                                           for i, a in enumerate(group)])  # fmt: skip

    def grid_problem(self, values, least, where):
        r_a = sum(values[name] for name in _WIDTHS)
        if r_a >= least:
            return []
        return [
            Problem(
                "zone_attraction_width",
                f"must keep {_R_A} at least {least:g} {where.format('r_a')} (got r_a = {r_a:g}); widen the "
                "zones or make the arena smaller",
            )
        ]

    def periodic_problem(self, values, ok, radius, why):
        if not all(ok.get(name) for name in _WIDTHS):
            return []
        r_a = sum(values[name] for name in _WIDTHS)
        if r_a >= radius:
            return [Problem("zone_attraction_width", f"must keep {_R_A} < {why} (got r_a = {r_a!r})")]
        return []


def desired_direction(agent: Any, group: list, params: Any) -> np.ndarray:
    """Repulsion first; else orientation and attraction, averaged when both act (the reference's)."""

    r_r, r_o, _ = params.zone_radii
    positions = np.array([a.position for a in group]).reshape(-1, 3)
    d = offsets(agent.position, positions, params)
    seen = neighbours(agent.position, agent.heading, positions, params)  # within r_a, in the cone
    repel, orient, attract = [], [], []
    for j in np.flatnonzero(seen):
        distance = np.linalg.norm(d[j])
        if distance < r_r:
            repel.append(d[j] / distance)
        elif distance < r_o:
            orient.append(group[j].heading)
        else:
            attract.append(d[j] / distance)
    if repel:
        desired = -np.sum(repel, axis=0)
    elif orient or attract:
        d_o = unit(agent.heading + np.sum(orient, axis=0)) if orient else None  # its own heading counts
        d_a = unit(np.sum(attract, axis=0)) if attract else None
        desired = d_o if d_a is None else d_a if d_o is None else 0.5 * (d_o + d_a)
    else:
        desired = agent.heading  # nobody in sight: keep going
    if params.dimensions == 2:  # headings carry rounding out of the plane; drop it
        desired = desired * np.array([1.0, 1.0, 0.0])
    return unit(desired) if np.any(desired) else agent.heading


def perturbed(direction: np.ndarray, params: Any, seed: int, step_count: int, index: int) -> np.ndarray:
    """The model's noise: ``direction`` tilted by a Gaussian angle phi (sd sigma) about an axis
    perpendicular to it, uniform around it (in its plane for a planar flock). The random numbers
    come from :mod:`flock3d.core.noise`, shared with the fast step."""
    phi = params.noise_sigma * noise.gaussian(seed, step_count, index, 0)
    psi = 2.0 * math.pi * noise.uniform(seed, step_count, index, 2)
    return tilted(direction, phi, psi, params.dimensions == 2)


def updated(agent: Any, group: list, params: Any, seed: int, step_count: int, index: int) -> tuple:
    """The agent after one step, and its velocity."""
    desired = perturbed(desired_direction(agent, group, params), params, seed, step_count, index)
    return constant_speed_move(agent, desired, params)


MODEL = Couzin()
