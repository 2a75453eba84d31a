"""Model parameters (the ``Params`` column of ``shared/spec/model.md``).

``Params`` is a frozen dataclass: a flock is re-tuned by building a new one
(``dataclasses.replace(params, fov=180)``) and assigning it to ``flock.params``.
Every value is checked once, here, by :func:`params_problems`; the scene loader
reuses the same checks so that a scene file and a Python caller see the same
rules, and the numerical core then trusts its parameters.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["Params", "Problem", "params_problems"]


@dataclass(frozen=True)
class Params:
    """Parameters of the flocking model.

    Lengths are in world units, times in seconds, angles in degrees.

    The defaults were tuned so that a few hundred boids in an arena of radius 30
    form polarized flocks that keep their spacing: from a random start (P ~ 0.05),
    500 boids reach polarization 0.9 within about 30 s and merge into one flock,
    while the mean number of boids within view distance levels off near 50 and
    the mean nearest-neighbour distance stays near the separation distance (2).
    Weaker separation (10) let the flock contract without bound (over 140
    neighbours within view after 2 minutes).
    """

    arena_radius: float = 30.0
    """R: radius of the arena sphere, > 0."""
    arena_center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """c: centre of the arena sphere."""
    confinement_start: float = 0.8
    """f_b: fraction of R beyond which confinement pushes inwards, in (0, 1]."""
    confinement: float = 12.0
    """k_b: confinement acceleration, units/s^2, >= 0."""
    view_distance: float = 5.0
    """r_v: how far a boid sees, > 0 (``inf`` for global perception)."""
    fov: float = 270.0
    """alpha: full field-of-view cone angle in degrees, in (0, 360]."""
    separation_distance: float = 2.0
    """r_s: neighbours closer than this repel, 0 < r_s <= r_v."""
    separation: float = 30.0
    """k_s: separation weight, >= 0 (units^2/s^2: S = k_s / d at distance d)."""
    alignment: float = 5.0
    """k_a: velocity-matching weight, 1/s, >= 0."""
    cohesion: float = 1.0
    """k_c: centering weight, 1/s^2, >= 0."""
    min_speed: float = 3.0
    """s_min: lowest speed, units/s, >= 0."""
    max_speed: float = 6.0
    """s_max: highest speed, units/s, >= s_min and > 0."""
    max_turn_rate: float = 180.0
    """omega: largest heading change, degrees/s, > 0 (``inf``: unlimited)."""
    dt: float = 1.0 / 60.0
    """Fixed time step, seconds, > 0."""
    count: int = 500
    """N: number of boids, >= 0."""
    init_radius: float | None = None
    """r_0: radius of the initial ball around c; ``None`` means 0.5 R."""

    def __post_init__(self) -> None:
        # Accept any 3-sequence of numbers (a TOML array, a numpy row) and numpy integers, but
        # store plain floats and ints so that Params stays hashable and compares by value.
        center = self.arena_center
        if hasattr(center, "__len__") and len(center) == 3 and all(_is_real(c) for c in center):
            object.__setattr__(self, "arena_center", tuple(float(c) for c in center))
        if isinstance(self.count, numbers.Integral) and not isinstance(self.count, bool):
            object.__setattr__(self, "count", int(self.count))
        problems = params_problems(self)
        if problems:
            raise ValueError("; ".join(str(p) for p in problems))

    @property
    def initial_radius(self) -> float:
        """r_0 with its default resolved: ``init_radius`` or 0.5 R."""
        return 0.5 * self.arena_radius if self.init_radius is None else self.init_radius

    def replace(self, **changes: Any) -> Params:
        """A copy with some fields changed (validated like a new ``Params``)."""
        return dataclasses.replace(self, **changes)


class Problem(NamedTuple):
    """One invalid parameter: the field it concerns and what is wrong."""

    field: str
    message: str
    """Reads after the field's name, e.g. ``must be > 0 (got -1)``."""

    def __str__(self) -> str:
        return f"{self.field} {self.message}"


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# (field, low, high, low_open, high_open, allow_inf) for the plain scalar fields.
_RANGES: list[tuple[str, float, float, bool, bool, bool]] = [
    ("arena_radius", 0.0, math.inf, True, True, False),
    ("confinement_start", 0.0, 1.0, True, False, False),
    ("confinement", 0.0, math.inf, False, True, False),
    ("view_distance", 0.0, math.inf, True, True, True),
    ("fov", 0.0, 360.0, True, False, False),
    ("separation", 0.0, math.inf, False, True, False),
    ("alignment", 0.0, math.inf, False, True, False),
    ("cohesion", 0.0, math.inf, False, True, False),
    ("min_speed", 0.0, math.inf, False, True, False),
    ("max_speed", 0.0, math.inf, True, True, False),
    ("max_turn_rate", 0.0, math.inf, True, True, True),
    ("dt", 0.0, math.inf, True, True, False),
]


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if math.isinf(high):
        return f"> {low:g}" if low_open else f">= {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def params_problems(values: Params | dict[str, Any]) -> list[Problem]:
    """Every problem with a set of parameter values, in field order.

    Args:
        values: a ``Params`` or a mapping of field names to values (missing
            fields take their defaults).

    Returns:
        An empty list when the values are valid.
    """
    if isinstance(values, Params):
        values = {f.name: getattr(values, f.name) for f in dataclasses.fields(Params)}
    else:
        defaults = {f.name: f.default for f in dataclasses.fields(Params)}
        values = {**defaults, **values}

    problems: list[Problem] = []
    real_ok: dict[str, bool] = {}
    for name, low, high, low_open, high_open, allow_inf in _RANGES:
        value = values[name]
        rule = _range_text(low, high, low_open, high_open)
        if not _is_real(value) or math.isnan(value):
            problems.append(Problem(name, f"must be a number {rule} (got {value!r})"))
            continue
        too_low = value <= low if low_open else value < low
        too_high = value >= high if high_open else value > high
        if math.isinf(value) and not allow_inf:
            problems.append(Problem(name, f"must be finite and {rule} (got {value!r})"))
        elif too_low or (too_high and not (allow_inf and math.isinf(value))):
            problems.append(Problem(name, f"must be {rule} (got {value!r})"))
        else:
            real_ok[name] = True

    center = values["arena_center"]
    if not (
        isinstance(center, (list, tuple))
        and len(center) == 3
        and all(_is_real(c) and math.isfinite(c) for c in center)
    ):
        problems.append(Problem("arena_center", f"must be 3 finite numbers (got {center!r})"))

    rs, rv = values["separation_distance"], values["view_distance"]
    rule = "in (0, view_distance]"
    if not _is_real(rs) or not math.isfinite(rs):
        problems.append(Problem("separation_distance", f"must be a finite number {rule} (got {rs!r})"))
    elif rs <= 0 or (real_ok.get("view_distance") and rs > rv):
        got = f"{rs!r} with view_distance {rv!r}" if rs > 0 else repr(rs)
        problems.append(Problem("separation_distance", f"must be {rule} (got {got})"))

    if real_ok.get("min_speed") and real_ok.get("max_speed"):
        if values["min_speed"] > values["max_speed"]:
            problems.append(
                Problem(
                    "min_speed",
                    f"must be <= max_speed (got {values['min_speed']!r} > {values['max_speed']!r})",
                )
            )

    count = values["count"]
    if not isinstance(count, numbers.Integral) or isinstance(count, bool) or count < 0:
        problems.append(Problem("count", f"must be a whole number >= 0 (got {count!r})"))

    init = values["init_radius"]
    if init is not None and (not _is_real(init) or not math.isfinite(init) or init <= 0):
        problems.append(Problem("init_radius", f"must be > 0 or unset for 0.5 * arena_radius (got {init!r})"))

    order = [f.name for f in dataclasses.fields(Params)]
    problems.sort(key=lambda p: order.index(p.field))
    return problems
