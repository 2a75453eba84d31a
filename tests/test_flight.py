"""Aerodynamic flight (StarDisplay's): lift, drag, thrust and gravity against their closed forms on
one to three birds, turning by banking with the roll carried by the orientation, the roost's pull,
fast == reference, and the scene checks."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core import quaternion
from flock3d.core.params import Object
from flock3d.core.terms.flight import bank_angles
from flock3d.scene import SceneError, parse_scene

from conftest import FAST_IS_SLOW, free_params

G, V0, RATIO, TAU = 9.81, 5.0, 3.3, 1.0


def flying(**overrides) -> Params:
    """A bird alone in open space: no rule acts, no turn limit, wide speed limits."""
    base = dict(flight="aerodynamic", arena_shape="none", confinement=0.0, separation=0.0, alignment=0.0,
                cohesion=0.0, min_speed=0.1, max_speed=50.0, flight_cruise_speed=V0, dt=0.02)  # fmt: skip
    return Params(**{**base, **overrides})


def bird(params, velocity, engine, position=(0.0, 0.0, 0.0), orientation=None):
    return Flock(params, positions=[position], velocities=[velocity], engine=engine,
                 orientations=None if orientation is None else [orientation])  # fmt: skip


@pytest.mark.slow
def test_at_cruise_speed_a_level_bird_flies_straight_on(engine):
    # Lift = weight and thrust = drag at v0: nothing changes.
    flock = bird(flying(), [V0, 0.0, 0.0], engine)
    flock.step(50)
    np.testing.assert_allclose(flock.velocities[0], [V0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(flock.positions[0], [50 * 0.02 * V0, 0.0, 0.0], atol=1e-11)
    np.testing.assert_allclose(bank_angles(flock.orientations), 0.0, atol=1e-12)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_a_slow_bird_sinks_and_speeds_up_by_the_closed_form(engine):
    # At s = 3: lift g (s/v0)^2 up, gravity g down; thrust g/eps + (v0 - s)/tau, drag (g/eps)(s/v0)^2.
    s, dt = 3.0, 0.02
    flock = bird(flying(dt=dt), [s, 0.0, 0.0], engine)
    flock.step()
    r2 = (s / V0) ** 2
    ahead = G / RATIO + (V0 - s) / TAU - G / RATIO * r2
    expected = np.array([s + dt * ahead, dt * (G * r2 - G), 0.0])
    np.testing.assert_allclose(flock.velocities[0], expected, atol=1e-12)
    np.testing.assert_allclose(flock.positions[0], dt * expected, atol=1e-13)
    np.testing.assert_allclose(flock.boids[0].forward, expected / np.linalg.norm(expected), atol=1e-12)


@pytest.mark.slow
def test_a_bird_steered_sideways_banks_and_its_lift_turns_it(engine):
    # A lateral acceleration a (a wind along the bird's right: -z for a bird flying +x with +y up)
    # is not applied: the bird rolls to atan(a / g), and the lift, tilted by that bank, pushes it
    # sideways by g sin(beta) at cruise speed.
    a, dt = 4.0, 0.02
    right = np.cross([0.0, 1.0, 0.0], [1.0, 0.0, 0.0])  # up x forward
    flock = bird(flying(dt=dt, wind=tuple(a * right), flight_roll_rate=3000.0), [V0, 0.0, 0.0], engine)
    flock.step()
    beta = math.atan2(a, G)
    np.testing.assert_allclose(bank_angles(flock.orientations), [beta], atol=1e-12)
    wings = math.cos(beta) * np.array([0.0, 1.0, 0.0]) + math.sin(beta) * right
    expected = np.array([V0, 0.0, 0.0]) + dt * (G * wings - [0.0, G, 0.0])
    np.testing.assert_allclose(flock.velocities[0], expected, atol=1e-12)
    # It keeps turning towards the push, banked, the bank easing as the push comes round ahead of it.
    flock.step(100)
    assert flock.boids[0].forward @ right > 0.8
    assert 0.0 < bank_angles(flock.orientations)[0] < beta


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_the_roll_rate_and_the_steepest_bank_bound_the_roll(engine):
    dt, rate = 0.02, 90.0
    wind = tuple(50.0 * np.cross([0.0, 1.0, 0.0], [1.0, 0.0, 0.0]))  # asks for atan(50 / g) = 79 degrees
    flock = bird(
        flying(dt=dt, wind=wind, flight_roll_rate=rate, flight_max_bank=45.0), [V0, 0.0, 0.0], engine
    )
    flock.step()
    assert bank_angles(flock.orientations)[0] == pytest.approx(math.radians(rate) * dt, abs=1e-12)
    flock.step(40)
    assert bank_angles(flock.orientations)[0] == pytest.approx(math.radians(45.0), abs=1e-9)


def test_the_bank_is_the_orientation_s_roll():
    # Birds facing every way, each with its up leaning by beta towards its right (up x forward).
    rng = np.random.default_rng(2)
    forward = rng.normal(size=(200, 3))
    forward /= np.linalg.norm(forward, axis=1, keepdims=True)
    beta = rng.uniform(-1.5, 1.5, 200)
    level = np.array([0.0, 1.0, 0.0]) - forward[:, 1:2] * forward
    level /= np.linalg.norm(level, axis=1, keepdims=True)
    right = np.cross(level, forward)
    up = np.cos(beta)[:, None] * level + np.sin(beta)[:, None] * right
    rolled = np.array([quaternion.look_rotation(f[None], u)[0] for f, u in zip(forward, up, strict=True)])
    np.testing.assert_allclose(bank_angles(rolled), beta, atol=1e-9)
    np.testing.assert_allclose(bank_angles(quaternion.look_rotation(forward)), 0.0, atol=1e-9)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_the_roost_pulls_towards_its_axis_beyond_its_radius_and_to_its_height(engine):
    from conftest import acceleration, hand_flock

    params = free_params(roost=(10.0, 5.0, 0.0), roost_radius=3.0, roost_weight=2.0, roost_altitude=0.5)
    flock = hand_flock(params, [[0, 0, 0], [9.0, 1.0, 1.0]], [[1.0, 0, 0], [1.0, 0, 0]], engine)
    a = acceleration(flock)
    np.testing.assert_allclose(a[0], [2.0, 0.5 * 5.0, 0.0], atol=1e-12)  # 10 away: the full pull
    np.testing.assert_allclose(a[1], [0.0, 0.5 * 4.0, 0.0], atol=1e-12)  # within 3 of the axis: height only


def test_the_roost_is_summed_after_wander_and_before_the_world_acts_after_the_move():
    from flock3d.core.params import STAGES

    wander, roost = STAGES.index("wander"), STAGES.index("roost")
    assert wander + 1 == roost < STAGES.index("perching") < STAGES.index("objects")


def level_flock(params, n, seed):
    rng = np.random.default_rng(seed)
    heading = rng.normal(size=(n, 3)) * [1.0, 0.0, 1.0]
    heading /= np.linalg.norm(heading, axis=1, keepdims=True)
    return rng.uniform(-4.0, 4.0, (n, 3)), heading * rng.uniform(4.0, 6.0, (n, 1))


AGREEMENT = {
    "rules and roost": Params(
        count=40,
        flight="aerodynamic",
        arena_shape="none",
        min_speed=1.0,
        max_speed=10.0,
        roost_weight=2.0,
        roost_altitude=0.3,
        roost_radius=5.0,
    ),  # fmt: skip
    "topological, in a box": Params(
        count=40,
        flight="aerodynamic",
        arena_shape="box",
        arena_radius=12.0,
        neighbours=5,
        min_speed=1.0,
        max_speed=10.0,
        roost_altitude=0.3,
        flight_roll_rate=90.0,
        flight_max_bank=40.0,
    ),  # fmt: skip
    # Each boid's radius for the next step, and a resting bird's orientation, are written by the
    # flown step as by the boids' own (each was left unwritten once).
    "adaptive radii": Params(
        count=40,
        flight="aerodynamic",
        arena_shape="none",
        neighbours=5,
        adaptive=True,
        min_speed=1.0,
        max_speed=10.0,
        roost_altitude=0.3,
    ),  # fmt: skip
    "perching on a plane": Params(
        count=40,
        flight="aerodynamic",
        arena_shape="none",
        min_speed=1.0,
        max_speed=10.0,
        roost_altitude=0.3,
        objects=[Object("plane", position=(0.0, -6.0, 0.0))],
        perching_height=3.0,
        perching_duration=0.5,
        perching_cooldown=0.5,
    ),  # fmt: skip
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT))
def test_fast_equals_reference(name):
    params = AGREEMENT[name]
    p, v = level_flock(params, params.count, 3)
    fast = Flock(params, positions=p, velocities=v)
    ref = Flock(params, positions=p, velocities=v, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)
    np.testing.assert_allclose(bank_angles(fast.orientations), bank_angles(ref.orientations), atol=1e-9)
    np.testing.assert_allclose(fast.state.radii, ref.state.radii, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.state.perches, ref.state.perches, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(fast.orientations, axis=1), 1.0, atol=1e-12)
    assert np.abs(bank_angles(fast.orientations)).max() > 0.05  # they bank


@pytest.mark.parametrize(
    "text, message",
    [
        ("[sim]\ndimensions = 2", "flock.flight 'aerodynamic' needs sim.dimensions = 3"),
        ("[rules]\ncombine = 'chain'", "flock.flight 'aerodynamic' needs rules.combine = 'sum'"),
        (
            "[flight]\ncruise_speed = 8",
            "flight.cruise_speed must be within [flock.min_speed, flock.max_speed]",
        ),
        ("[flight]\nmax_bank = 90", "flight.max_bank must be in (0, 89]"),
        ("model = 'couzin'", "flock.flight 'aerodynamic' needs model = 'boids'"),
    ],
)
def test_bad_flight_scenes_are_one_line_naming_the_key(text, message):
    scene = text + "\n" if text.startswith("model") else ""
    body = "" if text.startswith("model") else text
    with pytest.raises(SceneError) as caught:
        parse_scene(f"{scene}[flock]\nflight = 'aerodynamic'\n{body}", source="x.toml")
    assert any(message in p for p in caught.value.problems), caught.value.problems
