"""Aerodynamic flight (StarDisplay's, Hildenbrandt, Carere and Hemelrijk 2010): how a boid's steering
becomes motion when it flies as a bird does, and the roost it is drawn to.

With ``flock.flight = "aerodynamic"`` the desired velocity of steps 7 to 9 of ``docs/model.md``
gives way to forces. Per unit mass, for a boid at speed s with heading f, wing normal (body up)
b, lift-to-drag ratio epsilon, cruise speed v0, speed time tau and gravity g:

- lift ``L = g (s / v0)^2 b``: (rho/2) S C_L s^2 / m, whose constant is fixed by level flight at
  the cruise speed (lift = weight at v0);
- drag ``D = -(g / epsilon) (s / v0)^2 f``;
- thrust ``T = max(0, g / epsilon + (v0 - s) / tau) f``: the drag at cruise speed, and the speed
  relaxing to v0 over tau;
- gravity ``-g Y`` (Y the world's up);
- the steering S (the sum of the terms) along the heading and along the level up: the bird speeds
  up or climbs by flapping and lifting. Across the heading it does not push: it banks. Its bank
  (roll) beta is carried by its orientation, and turns towards ``atan(S_lat / g)`` (the bank of a
  level turn with that lateral acceleration, within +-max_bank) by at most the roll rate a step;
  the lift, tilted by beta, then turns the bird.

Then ``v' = v + dt (L + D + T + G + S_f + S_up)``, its speed clamped to [s_min, s_max], the
orientation is the look rotation of v' rolled by beta', and ``p' = p + dt v'``.

The roost (a term, summed with the others): a horizontal pull of ``roost.weight`` towards the
roost's vertical axis beyond ``roost.radius`` from it, and a vertical spring
``roost.altitude * (y_r - y)`` towards its height: birds gather above it at its altitude, as
StarDisplay's do.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.fields import Problem, Spec, is_real_number
from flock3d.core.quaternion import forward_of, look_rotation_of, up_of
from flock3d.core.terms import Term, inlined

FLIGHTS = ("kinematic", "aerodynamic")
"""``kinematic``: the model's steps 8 to 10 (the desired velocity, a speed clamp and a turn limit);
``aerodynamic``: lift, drag, thrust and gravity, turning by banking."""

MODE = Spec(
    "flock.flight", "kinematic (the desired velocity, clamped and turned at most the turn rate) or "
    "aerodynamic (lift, drag, thrust and gravity; turns by banking)", kind="choice", choices=FLIGHTS,
    checked=False,
)  # fmt: skip
CRUISE = Spec("flight.cruise_speed", "aerodynamic flight: the speed of level flight, where lift equals "
              "weight and thrust drag", unit="units/s", symbol="v0", low_open=True)  # fmt: skip
GRAVITY = Spec("flight.gravity", "aerodynamic flight: gravity g", unit="units/s²", symbol="g", low_open=True)
LIFT_DRAG = Spec("flight.lift_drag", "aerodynamic flight: lift-to-drag ratio", symbol="ε", low_open=True)
SPEED_TIME = Spec("flight.speed_time", "aerodynamic flight: the time the thrust brings the speed back to "
                  "cruise speed in", unit="s", symbol="τ", low_open=True)  # fmt: skip
MAX_BANK = Spec("flight.max_bank", "aerodynamic flight: the steepest bank (roll) angle", unit="degrees",
                symbol="β_max", low_open=True, high=89.0)  # fmt: skip
ROLL_RATE = Spec("flight.roll_rate", "aerodynamic flight: how fast a bird rolls", unit="degrees/s",
                 symbol="ω_r", low_open=True)  # fmt: skip

POSITION = Spec("roost.position", "the roost: the point whose vertical axis birds are drawn to, at its "
                "height", kind="vector3", unit="units", allowed="3 finite numbers")  # fmt: skip
RADIUS = Spec("roost.radius", "horizontal distance from the roost's axis within which it does not pull",
              unit="units")  # fmt: skip
# No slider on the panel: the weight is also what turns the roost on, and a control that a scene
# without a roost showed would stand for a feature it lacks.
WEIGHT = Spec("roost.weight", "horizontal pull towards the roost's axis (0: none)", unit="units/s²")
ALTITUDE = Spec("roost.altitude", "vertical pull towards the roost's height, per unit of height (0: none)",
                unit="1/s²")  # fmt: skip

#: Below this the heading is vertical: there is no level frame, and the bird keeps its up.
_VERTICAL = 1e-9


@inlined
def attraction(px, py, pz, rx, ry, rz, radius, weight, altitude):
    """The roost's pull on a boid at p: ``weight`` towards its vertical axis beyond ``radius``, and
    ``altitude * (r_y - p_y)`` up or down."""
    dx, dz = rx - px, rz - pz
    d = math.sqrt(dx * dx + dz * dz)
    pull = weight / d if d > radius and d > 0.0 else 0.0
    return pull * dx, altitude * (ry - py), pull * dz


@inlined
def level_frame(fx, fy, fz, bx, by, bz):
    """The level up and right of heading f: the world up (+Y) across f, and up x f; for a vertical
    heading, the bird's own up b across f."""
    ux, uy, uz = -fy * fx, 1.0 - fy * fy, -fy * fz
    n = math.sqrt(ux * ux + uy * uy + uz * uz)
    if n < _VERTICAL:
        along = bx * fx + by * fy + bz * fz
        ux, uy, uz = bx - along * fx, by - along * fy, bz - along * fz
        n = math.sqrt(ux * ux + uy * uy + uz * uz)
    ux, uy, uz = ux / n, uy / n, uz / n
    return ux, uy, uz, uy * fz - uz * fy, uz * fx - ux * fz, ux * fy - uy * fx


@inlined
def fly(qw, qx, qy, qz, vx, vy, vz, ax, ay, az, dt, cruise, gravity, lift_drag, speed_time, max_bank,
        roll_step, s_min, s_max):  # fmt: skip
    """One step of aerodynamic flight for a boid of orientation q and velocity v, steered by a.

    Returns its new orientation (carrying its bank) and velocity, ``(qw, qx, qy, qz, vx, vy, vz)``.
    """
    fx, fy, fz = forward_of(qw, qx, qy, qz)
    bx, by, bz = up_of(qw, qx, qy, qz)
    ux, uy, uz, rx, ry, rz = level_frame(fx, fy, fz, bx, by, bz)
    bank = math.atan2(bx * rx + by * ry + bz * rz, bx * ux + by * uy + bz * uz)
    lateral = ax * rx + ay * ry + az * rz
    target = min(max(math.atan2(lateral, gravity), -max_bank), max_bank)
    bank += min(max(target - bank, -roll_step), roll_step)
    c, s = math.cos(bank), math.sin(bank)
    wx, wy, wz = c * ux + s * rx, c * uy + s * ry, c * uz + s * rz  # the wings' normal
    speed = math.sqrt(vx * vx + vy * vy + vz * vz)
    lift = gravity * (speed / cruise) ** 2
    push = max(0.0, gravity / lift_drag + (cruise - speed) / speed_time) - lift / lift_drag
    ahead = ax * fx + ay * fy + az * fz + push
    up = ax * ux + ay * uy + az * uz
    nvx = vx + dt * (lift * wx + ahead * fx + up * ux)
    nvy = vy + dt * (lift * wy + ahead * fy + up * uy - gravity)
    nvz = vz + dt * (lift * wz + ahead * fz + up * uz)
    new = math.sqrt(nvx * nvx + nvy * nvy + nvz * nvz)
    if new == 0.0:
        return qw, qx, qy, qz, vx, vy, vz
    hx, hy, hz = nvx / new, nvy / new, nvz / new
    ux, uy, uz, rx, ry, rz = level_frame(hx, hy, hz, wx, wy, wz)
    qw, qx, qy, qz = look_rotation_of(hx, hy, hz, c * ux + s * rx, c * uy + s * ry, c * uz + s * rz)
    speed = min(max(new, s_min), s_max)
    fx, fy, fz = forward_of(qw, qx, qy, qz)
    return qw, qx, qy, qz, speed * fx, speed * fy, speed * fz


def bank_angles(orientations: np.ndarray, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """(N,) each boid's bank (roll) angle, radians: its up axis's angle from the level up of its
    heading (``up`` across it), positive when it rolls towards its right. What aerodynamic flight
    carries in the orientation, and what the viewer draws.

    Args:
        orientations: (N, 4) unit quaternions (w, x, y, z).
        up: the world's up.
    """
    from flock3d.core import quaternion

    q = np.asarray(orientations, dtype=np.float64).reshape(-1, 4)
    f, b = quaternion.forward(q), quaternion.up(q)
    level = np.asarray(up, dtype=np.float64) - (f @ np.asarray(up, dtype=np.float64))[:, None] * f
    norm = np.linalg.norm(level, axis=1, keepdims=True)
    vertical = norm[:, 0] < _VERTICAL
    level = np.where(vertical[:, None], b, level / np.where(vertical[:, None], 1.0, norm))
    right = np.cross(level, f)
    return np.arctan2(np.einsum("ij,ij->i", b, right), np.einsum("ij,ij->i", b, level))


class Roost(Term):
    name = "roost"
    module = __name__
    fields = ("roost", "roost_radius", "roost_weight", "roost_altitude")
    switches = ("roost_weight", "roost_altitude")
    weight = "roost_weight"
    needs = "it needs roost.weight or roost.altitude > 0"
    label = "roost (weight 2, altitude 0.5)"

    def present(self, params):
        return params.roost_weight > 0.0 or params.roost_altitude > 0.0

    def values(self, params):
        # The flight's own numbers travel with its module's term: a flock reads them when it flies.
        x, y, z = params.roost
        return {"roost_x": x, "roost_y": y, "roost_z": z, "roost_r": params.roost_radius,
                "roost_w": params.roost_weight, "roost_v": params.roost_altitude,
                **flight_values(params)}  # fmt: skip

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz = {g.term(self)}.attraction(px, py, pz, {v('roost_x')}, {v('roost_y')}, "
                f"{v('roost_z')}, {v('roost_r')}, {v('roost_w')}, {v('roost_v')})"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        offset = np.asarray(params.roost) - boid.position
        across = np.array([offset[0], 0.0, offset[2]])
        d = np.linalg.norm(across)
        pull = params.roost_weight * across / d if d > params.roost_radius and d > 0.0 else np.zeros(3)
        return pull + np.array([0.0, params.roost_altitude * offset[1], 0.0])

    def example(self, base):
        return base.replace(roost_weight=2.0, roost_altitude=0.5)

    def problems(self, values, reported):
        """Aerodynamic flight replaces the boids model's synchronous, summed, heading-limited move in
        space: it needs those, and a cruise speed within the speed limits."""
        if values["flight"] != "aerodynamic":
            return []
        needed = {"model": "boids", "dimensions": 3, "update": "synchronous", "combine": "sum",
                  "turn_limit": "heading"}  # fmt: skip
        problems = [
            Problem("flight", f"'aerodynamic' needs {name} = {want!r} (got {values[name]!r})")
            for name, want in needed.items()
            if name not in reported and values[name] != want
        ]
        names = ("flight_cruise_speed", "min_speed", "max_speed")
        v0, low, high = (values[name] for name in names)
        if not reported & set(names) and all(map(is_real_number, (v0, low, high))) and not low <= v0 <= high:
            problems.append(
                Problem(
                    "flight_cruise_speed",
                    f"must be within [min_speed, max_speed] = [{low:g}, {high:g}] "
                    f"for aerodynamic flight (got {v0!r})",
                )  # fmt: skip
            )
        return problems


TERM = Roost()


def flight_values(params) -> dict[str, float]:
    """The numbers :func:`fly` reads, by name (pv's entries)."""
    return {"cruise": params.flight_cruise_speed, "gravity": params.flight_gravity,
            "lift_drag": params.flight_lift_drag, "speed_time": params.flight_speed_time,
            "max_bank": math.radians(params.flight_max_bank),
            "roll_step": math.radians(params.flight_roll_rate) * params.dt}  # fmt: skip
