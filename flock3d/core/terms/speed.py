"""The speed limit as a stage of a chain (``rules.combine = "chain"``).

Summed terms are clamped to [s_min, s_max] once, when the boid turns (step 8 of
``docs/model.md``); a chain applies the clamp where this stage stands in its order, as the
sources that chain their rules do, and the turn then clamps nothing more.
"""

from __future__ import annotations

import numpy as np

from flock3d.core.terms import Term


class Speed(Term):
    name = "speed"
    clamps = True
    needs = "it needs combine = 'chain'"
    decided_by = ("combine",)

    def present(self, params):
        return params.combine == "chain"

    def line(self, g):
        return [f"vx, vy, vz = clamp_speed(vx, vy, vz, {g.v('s_min')}, {g.v('s_max')})"]

    def reference(self, boid, world, velocity, params):
        return clamped(velocity, params.min_speed, params.max_speed)


def clamped(v: np.ndarray, s_min: float, s_max: float) -> np.ndarray:
    """v with its speed clamped to [s_min, s_max] (zero stays zero)."""
    speed = np.linalg.norm(v)
    if speed == 0.0:
        return v.copy()
    return v * (min(max(speed, s_min), s_max) / speed)


TERM = Speed()
