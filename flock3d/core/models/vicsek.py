"""The self-propelled particles of Vicsek, Czirók, Ben-Jacob, Cohen and Shochet (1995),
Phys. Rev. Lett. 75:1226.

Each particle moves at a constant speed v0 in a periodic box. Every step it takes the mean
direction of itself and its neighbours within r (or its k nearest), tilted by a uniform
angular noise of amplitude eta, and moves along it: with the velocity just chosen (``new``,
the forward update of Chaté et al. 2008) or the one it had (``old``, Vicsek et al.'s Eq. 1).
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
from flock3d.core.space import adapted_radius, neighbours, unit

POSITION_UPDATES = ("new", "old")
"""The model's move: ``new`` (``x(t+1) = x(t) + v(t+1) dt``, the forward update of Chaté et al.
2008 and most later work) or ``old`` (``x(t+1) = x(t) + v(t) dt``, as Vicsek et al. 1995 write
their Eq. 1)."""

NOISE_ETA = Spec(
    "noise.eta", "uniform angular noise: in [-eta/2, eta/2] (on the cap within eta/2 in 3D)",
    unit="radians", symbol="η", high=2.0 * math.pi, model="vicsek", label="Noise η",
    slider=(0.0, 2.0 * math.pi),
)  # fmt: skip
POSITION_UPDATE = Spec(
    "vicsek.position_update", "the velocity a particle moves with: new (the one just chosen: Chaté et al. "
    "2008's forward update) or old (the one it had: Vicsek et al.'s Eq. 1)", kind="choice",
    choices=POSITION_UPDATES, model="vicsek", checked=False,
)  # fmt: skip

#: What makes a flock this model: a periodic box, no view cone, no turn limit (the particle takes
#: the noisy mean direction at once).
OWN = {"arena_shape": "periodic", "fov": 360.0, "max_turn_rate": math.inf}
#: The paper's set-up.
SETUP = {"count": 400, "arena_radius": 5.0, "dimensions": 2, "speed": 0.03, "view_distance": 1.0,
         "noise_eta": 2.0, "dt": 1.0}  # fmt: skip
DEFAULTS: dict[str, Any] = {"model": "vicsek", **OWN, **SETUP}
"""The values of Vicsek, Czirók, Ben-Jacob, Cohen and Shochet (1995) a scene with
``model = "vicsek"`` starts from: N = 400 in a periodic square of side L = 10 (density 4),
v0 = 0.03, r = 1, Delta t = 1, no turn limit, eta = 2."""


class Vicsek(Model):
    name = "vicsek"
    words = "the 1995 self-propelled particles"
    title = "Vicsek model"
    fields = {"noise_eta": (0.0, NOISE_ETA), "position_update": ("new", POSITION_UPDATE)}
    defaults, setup = OWN, SETUP
    arenas = ("periodic",)
    fills_box = True
    adaptive = True
    panel = ("speed", "view_distance", "fov", "max_turn_rate", "arena_radius")

    def values(self, p):
        return dict(view2=p.view_distance**2, cone=cone_threshold(p.fov), speed=p.speed, eta=p.noise_eta)

    def update(self, g, c):
        v, b, C = g.v, g.choose(c, "view2", "cone"), g.components
        p, f, u = (", ".join(names) for names in (g.position, g.heading, g.desired))
        zones = "0.0, 0.0, 0.0, 0.0, n_o, ox, oy, oz, 0.0, 0.0, 0.0, 0.0"  # the orientation zone alone
        g.summed(c, "_, _, _, _, n_o, ox, oy, oz, _, _, _, _", f"{C}.zone_sums", b,
                 f"{p}, {f}, 0.0, {v('view2')}, {v('view2')}, {v('cone')}")  # fmt: skip
        c(f"{u} = {C}.zone_direction({zones}, {f}, {g.planar})",
          f"{u} = {C}.vicsek_noise({u}, {g.planar}, {v('eta')}, {g.noise})")  # fmt: skip
        position = None
        if g.layout.position_update == "old":  # moved now by the old velocity: the batch moves by 0
            position = tuple(
                f"{x} + {v('dt')} * {v('speed')} * {h}" for x, h in zip(g.position, g.heading, strict=True)
            )
        g.stage(c, v("speed"), v("speed"), position)

    def step(self, state, params, seed):
        """Each particle takes the direction of the summed headings of itself and its neighbours
        (within r, or its k nearest), tilts it by the noise (:func:`noisy`), turns to it (at most
        the turn limit, none by default) and moves at v0 for dt: along its new heading, or with
        ``position_update = "old"`` along the one it had."""
        group, positions = agents(state), state.positions
        moved, radii = [], []
        for i, a in enumerate(group):
            radius = state.radii[i] if params.adaptive else None
            partners = neighbours(a.position, a.heading, positions, params, radius=radius)
            total = a.heading + sum((group[j].heading for j in np.flatnonzero(partners)), np.zeros(3))
            if params.dimensions == 2:  # headings carry rounding out of the plane; drop it
                total[2] = 0.0
            direction = unit(total) if np.any(total) else a.heading
            desired = noisy(direction, params, seed, state.step_count, i)
            moved.append(constant_speed_move(a, desired, params, old=params.position_update == "old"))
            if params.adaptive:
                radii.append(adapted_radius(state.radii[i], a.position, a.heading, positions, params))
        return moved_state(state, params, moved, radii if params.adaptive else None)

    def foreign_problems(self, values):
        if values["position_update"] == "old":
            return [
                Problem("position_update", f"applies to the vicsek model (got model {values['model']!r})")
            ]
        return []


def noisy(direction: np.ndarray, params: Any, seed: int, step_count: int, index: int) -> np.ndarray:
    """The noise of amplitude eta: in a plane, the direction's angle plus a number uniform in
    [-eta/2, eta/2]; in 3D, a direction uniform on the cap of those within eta/2 of it (cos(phi)
    uniform in [cos(eta/2), 1], the azimuth uniform)."""
    eta, u = params.noise_eta, noise.uniform(seed, step_count, index, 0)
    if params.dimensions == 2:
        return tilted(direction, eta * (u - 0.5), 0.0, True)
    phi = math.acos(1.0 - u * (1.0 - math.cos(0.5 * eta)))
    return tilted(direction, phi, 2.0 * math.pi * noise.uniform(seed, step_count, index, 2), False)


MODEL = Vicsek()
