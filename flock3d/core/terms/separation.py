"""Separation: push away from the neighbours closer than r_s (step 2 of ``docs/model.md``).

``S_i = k_s * mean_{j in M_i} f(d_ij) u_ij`` over the neighbours M_i seen within r_s (and
its own cone, if it has one), with u_ij the unit offset away from j and the falloff f:
1/d (the model's), d, r_s - d or (r_s - d)^2; summed instead of averaged on request.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from flock3d.core.fields import Problem, Spec, is_real_number, number_problem, short_repr
from flock3d.core.kernel import cone_threshold
from flock3d.core.terms import PairTerm, inlined

FALLOFFS = ("inverse", "linear", "linear_gap", "quadratic")
"""How separation grows as a neighbour closes in (d = distance, u = unit offset away):
``inverse`` u/d (the model's), ``linear`` u*d (the offset itself), ``linear_gap``
u*(r_s - d), ``quadratic`` u*(r_s - d)^2."""

DISTANCE = Spec(
    "rules.separation_distance", "neighbours closer than this repel", unit="units", symbol="r_s",
    checked=False, allowed="(0, r_v]",
)  # fmt: skip
WEIGHT = Spec("rules.separation", "separation weight (S = k_s / d at distance d)", unit="units²/s²",
              symbol="k_s")  # fmt: skip
FALLOFF = Spec(
    "rules.separation_falloff", "how the push grows as a neighbour closes in: inverse (1/d), linear (d), "
    "linear_gap (r_s - d) or quadratic ((r_s - d)^2)", kind="choice", choices=FALLOFFS,
)  # fmt: skip
AVERAGE = Spec("rules.separation_average", "average the push over the close neighbours (false: sum it)",
               kind="boolean")  # fmt: skip
FOV = Spec(
    "rules.separation_fov", "cone of the separation rule", unit="degrees", low=0.0, high=360.0,
    low_open=True, checked=False, unset="perception.fov", example=270.0,
)  # fmt: skip


@inlined
def inverse(dx, dy, dz, d2, rs):
    """The model's falloff: away from the neighbour by 1/distance, u/d."""
    w = 1.0 / d2
    return -w * dx, -w * dy, -w * dz


@inlined
def linear(dx, dy, dz, d2, rs):
    """By the offset itself, u*d (the sum of offsets of many tutorials)."""
    return -dx, -dy, -dz


@inlined
def linear_gap(dx, dy, dz, d2, rs):
    """By the gap to the separation distance, u*(r_s - d)."""
    d = math.sqrt(d2)
    w = (rs - d) / d
    return -w * dx, -w * dy, -w * dz


@inlined
def quadratic(dx, dy, dz, d2, rs):
    """By the squared gap, u*(r_s - d)^2: strong when close, gentle far off."""
    d = math.sqrt(d2)
    w = (rs - d) * (rs - d) / d
    return -w * dx, -w * dy, -w * dz


@inlined
def weighted(k, n, sx, sy, sz, average):
    """k times the mean (``average``) or the sum of n contributions; zero when n = 0."""
    if n == 0.0:
        return 0.0, 0.0, 0.0
    w = k / n if average else k
    return w * sx, w * sy, w * sz


class Separation(PairTerm):
    name = "separation"
    module = __name__
    fields = (
        "separation_distance",
        "separation",
        "separation_falloff",
        "separation_average",
        "separation_fov",
    )
    weight = "separation"
    matrix = "separates_m"
    rule_index = 1
    species_values: ClassVar[frozenset[str]] = frozenset({"rs", "sep2", "sep_cone", "k_s"})

    def values(self, params):
        rs, fov = params.separation_distance, params.rule_fovs[0]
        return {"rs": rs, "sep2": rs * rs, "sep_cone": cone_threshold(fov), "k_s": params.separation,
                "average": 1.0 if params.separation_average else 0.0}  # fmt: skip

    def neighbourhood(self, layout):
        return "sep2", ("sep_cone" if layout.own_neighbourhoods[0] else "cone")

    def contribution(self, g, buffer):
        return f"tx, ty, tz = {g.module(self)}.{g.layout.falloff}(dx, dy, dz, d2, {g.v('rs')})"

    def finish(self, g):
        return [f"tx, ty, tz = {g.module(self)}.weighted({g.v('k_s')}, n_separation, s_separation_x, "
                f"s_separation_y, s_separation_z, {g.v('average')} > 0.0)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        close = boid.seen(world, params.separation_distance, params.rule_fovs[0], self.rule_index)
        rs = params.separation_distance
        pushes = []
        for _, offset in close:
            away = -offset  # p_i - p_j
            d = np.linalg.norm(away)
            pushes.append({
                "inverse": away / d**2,
                "linear": away,
                "linear_gap": (rs - d) * away / d,
                "quadratic": (rs - d) ** 2 * away / d,
            }[params.separation_falloff])  # fmt: skip
        if not pushes:
            return np.zeros(3)
        total = np.mean(pushes, axis=0) if params.separation_average else np.sum(pushes, axis=0)
        return params.separation * total

    def problems(self, values, reported):
        problems = []
        rs, rv = values["separation_distance"], values["view_distance"]
        rv = rv if is_real_number(rv) and rv > 0 else None
        rule = "in (0, view_distance]"
        if not is_real_number(rs) or not math.isfinite(rs):
            problems.append(
                Problem("separation_distance", f"must be a finite number {rule} (got {short_repr(rs)})")
            )
        elif rs <= 0 or (rv is not None and rs > rv and values["model"] == "boids"):
            got = f"{rs!r} with view_distance {rv!r}" if rs > 0 else repr(rs)
            problems.append(Problem("separation_distance", f"must be {rule} (got {got})"))
        if values["separation_fov"] is not None:
            problem = number_problem(values["separation_fov"], 0.0, 360.0, True, False, False)
            if problem:
                problems.append(Problem("separation_fov", problem.replace("must be", "must be unset or", 1)))
        return problems


TERM = Separation()
