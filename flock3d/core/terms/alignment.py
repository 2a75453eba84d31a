"""Alignment: velocity matching (step 3 of ``docs/model.md``).

``A_i = k_a * (mean_{j in N_i} v_j - v_i)`` over the neighbours seen within its radius and
cone (the view's unless it has its own); or ``k_a * mean v_j`` (the ``mean`` form). A boid
that sees no one gets nothing, or with ``rules.empty_mean = "zero"`` the mean taken as zero.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from flock3d.core.fields import Problem, Spec, is_real_number, number_problem
from flock3d.core.kernel import cone_threshold
from flock3d.core.terms import PairTerm, inlined
from flock3d.core.terms.separation import weighted  # noqa: F401 - the mean form's finish

FORMS = ("difference", "mean")
"""``difference``: k_a (mean v_j - v_i) (the model's); ``mean``: k_a mean v_j (adds the
neighbours' mean velocity itself)."""

WEIGHT = Spec("rules.alignment", "velocity-matching weight", unit="1/s", symbol="k_a")
DISTANCE = Spec(
    "rules.alignment_distance", "radius of the alignment rule", unit="units", checked=False,
    allowed="(0, r_v]", unset="perception.view_distance", example=5.0,
)  # fmt: skip
FOV = Spec(
    "rules.alignment_fov", "cone of the alignment rule", unit="degrees", low=0.0, high=360.0, low_open=True,
    checked=False, unset="perception.fov", example=270.0,
)  # fmt: skip
FORM = Spec(
    "rules.alignment_form", "difference (k_a (mean v_j - v_i)) or mean (k_a mean v_j)", kind="choice",
    choices=FORMS,
)  # fmt: skip


@inlined
def neighbour_velocity(vjx, vjy, vjz):
    """A neighbour's contribution: its velocity."""
    return vjx, vjy, vjz


@inlined
def velocity_matching(k, n, sx, sy, sz, vx, vy, vz, zero_mean):
    """The model's form: k_a (mean neighbour velocity - own velocity). With no neighbours:
    nothing, or with ``zero_mean`` k_a (0 - own velocity)."""
    if n == 0.0:
        return (-k * vx, -k * vy, -k * vz) if zero_mean else (0.0, 0.0, 0.0)
    m = 1.0 / n
    return k * (sx * m - vx), k * (sy * m - vy), k * (sz * m - vz)


def optional_radius_problems(values: dict, name: str) -> list[Problem]:
    """A rule's own radius: unset, or a finite number in (0, view_distance]."""
    r, rv = values[name], values["view_distance"]
    rv = rv if is_real_number(rv) and rv > 0 else None
    if r is None:
        return []
    if not is_real_number(r) or not np.isfinite(r) or r <= 0 or (rv is not None and r > rv):
        got = f"{r!r} with view_distance {rv!r}" if is_real_number(r) and r > 0 else repr(r)
        return [Problem(name, f"must be unset or a finite number in (0, view_distance] (got {got})")]
    return []


def optional_fov_problems(values: dict, name: str) -> list[Problem]:
    """A rule's own cone: unset, or an angle in (0, 360]."""
    if values[name] is None:
        return []
    problem = number_problem(values[name], 0.0, 360.0, True, False, False)
    return [Problem(name, problem.replace("must be", "must be unset or", 1))] if problem else []


class Alignment(PairTerm):
    name = "alignment"
    module = __name__
    fields = ("alignment", "alignment_distance", "alignment_fov", "alignment_form")
    weight = "alignment"
    matrix = "aligns_m"
    rule_index = 2
    species_values: ClassVar[frozenset[str]] = frozenset({"ali2", "ali_cone", "k_a"})

    def values(self, params):
        radius, fov = params.rule_distances[1], params.rule_fovs[1]
        return {"ali2": radius * radius, "ali_cone": cone_threshold(fov), "k_a": params.alignment,
                "zero_mean": 1.0 if params.empty_mean == "zero" else 0.0}  # fmt: skip

    def neighbourhood(self, layout):
        return ("ali2", "ali_cone") if layout.own_neighbourhoods[1] else ("view2", "cone")

    def contribution(self, g, buffer):
        vx, vy, vz = buffer["vx"], buffer["vy"], buffer["vz"]
        return f"tx, ty, tz = {g.module(self)}.neighbour_velocity({vx}[j], {vy}[j], {vz}[j])"

    def finish(self, g):
        m = g.module(self)
        if g.layout.alignment_form == "difference":
            return [f"tx, ty, tz = {m}.velocity_matching({g.v('k_a')}, n_alignment, s_alignment_x, "
                    f"s_alignment_y, s_alignment_z, vx, vy, vz, {g.v('zero_mean')} > 0.0)"]  # fmt: skip
        return [f"tx, ty, tz = {m}.weighted({g.v('k_a')}, n_alignment, s_alignment_x, s_alignment_y, "
                "s_alignment_z, True)"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        neighbours = boid.seen(world, params.rule_distances[1], params.rule_fovs[1], self.rule_index)
        if not neighbours:
            zero = params.empty_mean == "zero" and params.alignment_form == "difference"
            return -params.alignment * velocity if zero else np.zeros(3)
        mean = np.mean([b.velocity for b, _ in neighbours], axis=0)
        return params.alignment * (mean - velocity if params.alignment_form == "difference" else mean)

    def problems(self, values, reported):
        return optional_radius_problems(values, "alignment_distance") + optional_fov_problems(
            values, "alignment_fov"
        )


TERM = Alignment()
