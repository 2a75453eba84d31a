"""The inertial spin model (Attanasi et al. 2014, Cavagna et al. 2015): its update against closed
forms on one to three birds, its noise, the total spin a reciprocal coupling conserves, the spin
carried from step to step, fast == reference, and its scene checks."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core.models.ism import DEFAULTS as ISM_DEFAULTS
from flock3d.scene import SceneError, parse_scene

from conftest import FAST_IS_SLOW


def ism(**overrides) -> Params:
    """Open space, no noise, no friction, metric neighbours within 2: each closed form by hand."""
    base = {**ISM_DEFAULTS, "arena_shape": "none", "neighbours": None, "view_distance": 2.0,
            "ism_temperature": 0.0, "ism_friction": 0.0, "dt": 0.1}  # fmt: skip
    return Params(**{**base, **overrides})


def birds(params, positions, headings, engine, spins=None):
    flock = Flock(params, positions=np.asarray(positions, float),
                  velocities=np.asarray(headings, float) * params.speed, engine=engine)  # fmt: skip
    if spins is not None:
        flock.state.spins[...] = spins
    return flock


def test_a_lone_bird_turns_about_its_spin_which_its_friction_slows(engine):
    # No neighbours: s_k = q^k s_0 with q = 1 - eta dt / chi, and each step turns the heading about
    # s_k by |s_k| dt / chi: after n steps by (|s_0| dt / chi) (q + ... + q^n).
    params = ism(ism_friction=0.5, ism_inertia=2.0, speed=3.0, dt=0.05)
    flock = birds(params, [[0, 0, 0]], [[1.0, 0, 0]], engine, spins=[[0, 0, 0.8]])
    q, n = 1.0 - 0.5 * 0.05 / 2.0, 40
    flock.step(n)
    angle = 0.8 * 0.05 / 2.0 * q * (1 - q**n) / (1 - q)
    np.testing.assert_allclose(flock.boids[0].forward, [math.cos(angle), math.sin(angle), 0.0], atol=1e-12)
    np.testing.assert_allclose(flock.state.spins[0], [0.0, 0.0, 0.8 * q**n], atol=1e-14)
    # It flies at v0 along its heading, and each step moves it by dt times its new velocity.
    np.testing.assert_allclose(np.linalg.norm(flock.velocities[0]), 3.0, atol=1e-12)
    turns = 0.8 * 0.05 / 2.0 * q * (1 - q ** np.arange(1, n + 1)) / (1 - q)
    path = 3.0 * 0.05 * np.stack([np.cos(turns), np.sin(turns), np.zeros(n)], axis=1).sum(axis=0)
    np.testing.assert_allclose(flock.positions[0], path, atol=1e-11)


def test_two_birds_torque_each_other_s_spin_and_turn_towards_each_other(engine):
    # One step from rest: s_0' = J dt v_0 x v_1 / v0^2 = J dt z, s_1' = -J dt z; each then turns by
    # J dt^2 / chi about its spin, towards the other's heading.
    params = ism(ism_coupling=2.0, ism_inertia=1.5, speed=0.5, dt=0.1)
    flock = birds(params, [[0, 0, 0], [1.0, 0, 0]], [[1.0, 0, 0], [0, 1.0, 0]], engine)
    flock.step()
    np.testing.assert_allclose(flock.state.spins, [[0, 0, 0.2], [0, 0, -0.2]], atol=1e-15)
    a = 2.0 * 0.1**2 / 1.5
    np.testing.assert_allclose(flock.boids[0].forward, [math.cos(a), math.sin(a), 0], atol=1e-14)
    np.testing.assert_allclose(flock.boids[1].forward, [math.sin(a), math.cos(a), 0], atol=1e-14)
    np.testing.assert_allclose(flock.positions[0], 0.05 * np.array([math.cos(a), math.sin(a), 0]), atol=1e-15)


def test_three_birds_the_torque_is_the_sum_over_the_neighbours_seen(engine):
    # Bird 0 sees 1 (within r = 2) and 2 (within r), not 3 (at 2.5); its spin after a step is
    # J dt f_0 x (f_1 + f_2), with the friction acting on the spin it had.
    params = ism(ism_coupling=1.0, ism_friction=1.0, ism_inertia=1.0, dt=0.1)
    p = [[0, 0, 0], [1.5, 0, 0], [0, 0, -1.0], [0, 2.5, 0]]
    h = [[1.0, 0, 0], [0, 0, 1.0], [0, 1.0, 0], [0, -1.0, 0]]
    flock = birds(params, p, h, engine, spins=[[0, 0.3, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]])
    flock.step()
    expected = 0.9 * np.array([0, 0.3, 0]) + 0.1 * np.cross(h[0], np.add(h[1], h[2]))
    np.testing.assert_allclose(flock.state.spins[0], expected, atol=1e-15)
    np.testing.assert_allclose(flock.state.spins[3], 0.0, atol=1e-15)  # it sees no one


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_a_planar_bird_s_spin_is_along_the_plane_s_normal(engine):
    params = ism(dimensions=2, ism_temperature=0.5, ism_friction=0.2)
    flock = birds(params, [[0, 0, 0], [1.0, 0.5, 0]], [[1.0, 0, 0], [0.6, 0.8, 0]], engine)
    flock.step(5)
    np.testing.assert_array_equal(flock.state.spins[:, :2], 0.0)
    np.testing.assert_array_equal(flock.positions[:, 2], 0.0)


def lone_birds(engine, n):
    side = np.arange(n) * 10.0
    params = ism(ism_friction=0.4, ism_temperature=0.3, ism_coupling=0.0, count=n, dt=0.05)
    rng = np.random.default_rng(3)
    h = rng.normal(size=(n, 3))
    h /= np.linalg.norm(h, axis=1, keepdims=True)
    flock = birds(params, np.stack([side, np.zeros(n), np.zeros(n)], axis=1), h, engine)
    flock.step()
    return h, flock.state.spins


def test_the_noise_kicks_the_spin_across_the_heading_with_variance_2_eta_t_dt(engine):
    h, s = lone_birds(engine, 3000 if engine == "fast" else 300)
    np.testing.assert_allclose(np.einsum("ij,ij->i", h, s), 0.0, atol=1e-15)  # across the heading
    if engine == "fast":  # enough kicks for the variance: two components of 2 eta T dt each
        assert np.mean(np.sum(s * s, axis=1)) == pytest.approx(2 * 2 * 0.4 * 0.3 * 0.05, rel=0.06)
        assert np.linalg.norm(s.mean(axis=0)) < 0.01


def test_with_a_reciprocal_coupling_and_no_friction_the_total_spin_is_conserved():
    # Metric neighbours in a full cone: j torques i as i torques j, equal and opposite, so the sum
    # of the spins changes only by friction and noise (Cavagna et al. 2015's conservation law).
    params = ism(count=200, arena_shape="periodic", arena_radius=3.0, view_distance=1.2, dt=0.05)
    flock = Flock(params, seed=5)
    flock.step(50)
    total = flock.state.spins.sum(axis=0)
    assert np.linalg.norm(flock.state.spins, axis=1).max() > 0.1  # the spins themselves change
    np.testing.assert_allclose(total, 0.0, atol=1e-12)
    # and each spin stays across its bird's heading
    np.testing.assert_allclose(np.einsum("ij,ij->i", flock.state.spins, flock.velocities), 0.0, atol=1e-12)


def test_the_spin_is_state_step_n_equals_n_steps_and_a_new_params_keeps_it():
    params = Params(**{**ISM_DEFAULTS, "count": 300})
    one, many = Flock(params, seed=2), Flock(params, seed=2)
    one.step(30)
    for _ in range(30):
        many.step()
    np.testing.assert_array_equal(one.positions, many.positions)
    np.testing.assert_array_equal(one.state.spins, many.state.spins)
    spins = one.state.spins.copy()
    one.params = params.replace(ism_coupling=2.0)
    np.testing.assert_array_equal(one.state.spins, spins)
    assert one.state.copy().spins is not one.state.spins


AGREEMENT = {
    "defaults (topological, periodic)": Params(**{**ISM_DEFAULTS, "count": 120, "arena_radius": 2.6}),
    "metric, open space": ism(
        count=100,
        view_distance=1.5,
        ism_temperature=0.05,
        ism_friction=0.3,
        ism_coupling=1.5,
        init_radius=2.5,
    ),  # fmt: skip
    "planar": Params(**{**ISM_DEFAULTS, "count": 100, "arena_radius": 3.0, "dimensions": 2}),
    "cone and turn limit": Params(
        **{**ISM_DEFAULTS, "count": 120, "arena_radius": 2.6, "fov": 270.0, "max_turn_rate": 90.0}
    ),  # fmt: skip
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT))
def test_fast_equals_reference(name):
    params = AGREEMENT[name]
    fast, ref = Flock(params, seed=4), Flock(params, seed=4, engine="reference")
    fast.step(100)
    ref.step(100)
    for what in ("positions", "velocities", "orientations"):
        np.testing.assert_allclose(getattr(fast, what), getattr(ref, what), rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.state.spins, ref.state.spins, rtol=0, atol=1e-9)
    assert np.abs(fast.state.spins).max() > 0.01


def test_a_scene_with_model_ism_takes_the_model_s_values():
    p = parse_scene('model = "ism"\n[ism]\ncoupling = 2.0').params
    assert (p.count, p.arena_shape, p.neighbours, p.speed, p.dt) == (1000, "periodic", 6, 1.0, 0.05)
    assert (p.ism_inertia, p.ism_friction, p.ism_coupling, p.ism_temperature) == (1.25, 0.3, 2.0, 0.02)


def test_the_ism_s_own_checks_leave_other_models_alone():
    Params(dt=1000.0, min_speed=1e8, max_speed=1e9)  # a friction that would reverse a spin: no spins here


@pytest.mark.parametrize(
    "text, message",
    [
        ("[arena]\nshape = 'sphere'", "arena.shape must be 'none' (open space) or 'periodic' for the ism"),
        ("[ism]\ninertia = 0", "ism.inertia must be > 0"),
        ("[ism]\nfriction = 30", "ism.friction must be at most ism.inertia / sim.dt = 25"),
        ("[ism]\ntemperature = -1", "ism.temperature must be >= 0"),
        ("[perception]\nadaptive = true", "perception.adaptive applies to the boids and vicsek models"),
        ("[[attractors]]\nposition = [0, 0, 0]", "the ism model has none"),
    ],
)
def test_bad_ism_scenes_are_one_line_naming_the_key(text, message):
    with pytest.raises(SceneError) as caught:
        parse_scene('model = "ism"\n' + text, source="x.toml")
    assert any(message in p for p in caught.value.problems), caught.value.problems
