"""Cohesion: flock centering (step 4 of ``docs/model.md``).

``C_i = k_c * mean_{j in N_i} (p_j - p_i)`` over the neighbours seen within its radius and
cone (the view's unless it has its own). A boid that sees no one gets nothing, or with
``rules.empty_mean = "zero"`` the mean position taken as the origin.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from flock3d.core.fields import Spec
from flock3d.core.kernel import cone_threshold
from flock3d.core.terms import PairTerm, inlined
from flock3d.core.terms.alignment import optional_fov_problems, optional_radius_problems

WEIGHT = Spec("rules.cohesion", "centering weight", unit="1/s²", symbol="k_c")
DISTANCE = Spec(
    "rules.cohesion_distance", "radius of the cohesion rule", unit="units", checked=False,
    allowed="(0, r_v]", unset="perception.view_distance", example=5.0,
)  # fmt: skip
FOV = Spec(
    "rules.cohesion_fov", "cone of the cohesion rule", unit="degrees", low=0.0, high=360.0, low_open=True,
    checked=False, unset="perception.fov", example=270.0,
)  # fmt: skip


@inlined
def neighbour_offset(dx, dy, dz):
    """A neighbour's contribution: the offset to it."""
    return dx, dy, dz


@inlined
def centering(k, n, sx, sy, sz, px, py, pz, zero_mean):
    """k_c times the mean offset to the neighbours (sums of offsets s). With no neighbours:
    nothing, or with ``zero_mean`` k_c (0 - own position), towards the origin."""
    if n == 0.0:
        return (-k * px, -k * py, -k * pz) if zero_mean else (0.0, 0.0, 0.0)
    m = k / n
    return m * sx, m * sy, m * sz


class Cohesion(PairTerm):
    name = "cohesion"
    module = __name__
    fields = ("cohesion", "cohesion_distance", "cohesion_fov")
    weight = "cohesion"
    matrix = "coheres_m"
    rule_index = 3
    species_values: ClassVar[frozenset[str]] = frozenset({"coh2", "coh_cone", "k_c"})

    def values(self, params):
        radius, fov = params.rule_distances[2], params.rule_fovs[2]
        return {"coh2": radius * radius, "coh_cone": cone_threshold(fov), "k_c": params.cohesion,
                "zero_mean": 1.0 if params.empty_mean == "zero" else 0.0}  # fmt: skip

    def neighbourhood(self, layout):
        return ("coh2", "coh_cone") if layout.own_neighbourhoods[2] else ("view2", "cone")

    def contribution(self, g, buffer):
        return f"tx, ty, tz = {g.module(self)}.neighbour_offset(dx, dy, dz)"

    def finish(self, g):
        return [f"tx, ty, tz = {g.module(self)}.centering({g.v('k_c')}, n_cohesion, s_cohesion_x, "
                f"s_cohesion_y, s_cohesion_z, px, py, pz, {g.v('zero_mean')} > 0.0)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        neighbours = boid.seen(world, params.rule_distances[2], params.rule_fovs[2], self.rule_index)
        if not neighbours:
            return -params.cohesion * boid.position if params.empty_mean == "zero" else np.zeros(3)
        return params.cohesion * np.mean([offset for _, offset in neighbours], axis=0)

    def problems(self, values, reported):
        return optional_radius_problems(values, "cohesion_distance") + optional_fov_problems(
            values, "cohesion_fov"
        )


TERM = Cohesion()
