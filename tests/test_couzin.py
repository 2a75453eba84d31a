"""The Couzin et al. (2002) zone model: each zone against its closed form, the noise,
the fast kernel against the reference, and the paper's phases."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params, metrics
from flock3d.core import quaternion
from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS
from flock3d.scene import resolve_scene

from conftest import angle_between


def couzin(**overrides) -> Params:
    """The paper's values without noise or turn limit: one step shows the desired direction."""
    return Params(**{**COUZIN_DEFAULTS, "noise_sigma": 0.0, "max_turn_rate": math.inf, **overrides})


def heading_after_one_step(params, positions, headings, engine):
    flock = Flock(
        params, positions=positions, velocities=np.asarray(headings, float) * params.speed, engine=engine
    )
    flock.step()
    return flock


def test_repulsion_has_priority(engine):
    # A neighbour inside r_r = 1 ahead-right, another in the zone of orientation flying +x.
    p = [[0, 0, 0], [0.3, 0, 0.4], [0, 0, 2.0]]
    h = [[0, 0, 1.0], [0, 1.0, 0], [1.0, 0, 0]]
    flock = heading_after_one_step(couzin(), p, h, engine)
    np.testing.assert_allclose(flock.boids[0].forward, [-0.6, 0, -0.8], atol=1e-12)  # straight away
    np.testing.assert_allclose(np.linalg.norm(flock.velocities[0]), 3.0)
    np.testing.assert_allclose(flock.positions[0], 0.1 * 3.0 * np.array([-0.6, 0, -0.8]), atol=1e-12)


def test_orientation_zone_averages_headings_with_its_own(engine):
    p = [[0, 0, 0], [0, 0, 2.0], [1.5, 0, 0]]  # both 1.5-2 away: in the zone of orientation (1 <= d < 3)
    h = [[0, 0, 1.0], [1.0, 0, 0], [0, 1.0, 0]]
    flock = heading_after_one_step(couzin(), p, h, engine)
    np.testing.assert_allclose(flock.boids[0].forward, np.array([1.0, 1.0, 1.0]) / math.sqrt(3), atol=1e-12)


def test_attraction_zone_pulls_towards_the_others(engine):
    p = [[0, 0, 0], [0, 5.0, 0], [8.0, 0, 0]]  # 5 and 8 away: in the zone of attraction (3 <= d < 17)
    h = [[0, 0, 1.0], [0, 0, 1.0], [0, 0, 1.0]]
    flock = heading_after_one_step(couzin(), p, h, engine)
    np.testing.assert_allclose(flock.boids[0].forward, np.array([1.0, 1.0, 0]) / math.sqrt(2), atol=1e-12)


def test_both_zones_are_averaged(engine):
    p = [[0, 0, 0], [0, 0, 2.0], [8.0, 0, 0]]
    h = [[0, 0, 1.0], [0, 1.0, 0], [0, 0, 1.0]]
    flock = heading_after_one_step(couzin(), p, h, engine)
    d_o = np.array([0, 1.0, 1.0]) / math.sqrt(2)  # own (0,0,1) + neighbour (0,1,0)
    d_a = np.array([1.0, 0, 0])
    expected = (d_o + d_a) / np.linalg.norm(d_o + d_a)
    np.testing.assert_allclose(flock.boids[0].forward, expected, atol=1e-12)


def test_blind_volume_and_nobody_in_sight(engine):
    # The only neighbour sits right behind, inside the 90-degree blind cone: keep heading.
    flock = heading_after_one_step(couzin(), [[0, 0, 0], [0, 0, -0.5]], [[0, 0, 1.0], [0, 0, 1.0]], engine)
    np.testing.assert_allclose(flock.boids[0].forward, [0, 0, 1.0], atol=1e-15)
    lone = heading_after_one_step(couzin(), [[0, 0, 0]], [[0.6, 0, 0.8]], engine)
    np.testing.assert_allclose(lone.boids[0].forward, [0.6, 0, 0.8], atol=1e-15)


def test_turns_are_limited_to_theta_tau(engine):
    params = couzin(max_turn_rate=40.0)
    flock = heading_after_one_step(params, [[0, 0, 0], [0.3, 0, 0.4]], [[0, 0, 1.0], [0, 0, 1.0]], engine)
    turned = angle_between(np.array([[0, 0, 1.0]]), flock.boids[0].forward[None])[0]
    assert math.degrees(turned) == pytest.approx(40.0 * 0.1, abs=1e-9)


def test_noise_turns_a_lone_agent_by_gaussian_angles_of_spread_sigma():
    sigma = 0.05
    params = Params(
        **{
            **COUZIN_DEFAULTS,
            "count": 2000,
            "noise_sigma": sigma,
            "max_turn_rate": math.inf,
            "init_radius": 1e6,
        }
    )  # fmt: skip -- far apart: nobody in sight
    flock = Flock(params, seed=3)
    before = quaternion.forward(flock.orientations)
    flock.step()
    angles = angle_between(before, quaternion.forward(flock.orientations))
    # |phi| of a N(0, sigma) has mean sigma sqrt(2/pi) and RMS sigma.
    assert np.sqrt(np.mean(angles**2)) == pytest.approx(sigma, rel=0.05)
    assert np.mean(angles) == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=0.05)


def test_noise_depends_on_the_seed_and_is_repeatable():
    params = Params(**{**COUZIN_DEFAULTS, "zone_orientation_width": 2.0})
    a, b = Flock(params, seed=1), Flock(params, seed=1)
    c = Flock(params, seed=2, positions=a.positions, velocities=a.velocities, orientations=a.orientations)
    for f in (a, b, c):
        f.step(50)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert not np.allclose(a.positions, c.positions)  # same start, other noise


def test_zone_sums_that_cancel_exactly(engine):
    # Orientation zone: one neighbour flying exactly against this agent; own + its heading = 0.
    flock = heading_after_one_step(couzin(), [[0, 0, 0], [2.0, 0, 0]], [[0, 0, 1.0], [0, 0, -1.0]], engine)
    np.testing.assert_allclose(flock.boids[0].forward, [0, 0, 1.0], atol=1e-15)
    # Attraction zone: two neighbours straight opposite each other across the agent (at a
    # distance whose reciprocal is exact, so that the unit offsets cancel exactly in both engines).
    flock = heading_after_one_step(
        couzin(), [[0, 0, 0], [4.0, 0, 0], [-4.0, 0, 0]], [[0, 0, 1.0]] * 3, engine
    )
    np.testing.assert_allclose(flock.boids[0].forward, [0, 0, 1.0], atol=1e-15)
    assert np.all(np.isfinite(flock.positions))
    # Both zones occupied, the orientation sum cancelling: the attraction alone decides.
    flock = heading_after_one_step(
        couzin(), [[0, 0, 0], [2.0, 0, 0], [0, 8.0, 0]], [[0, 0, 1.0], [0, 0, -1.0], [0, 0, 1.0]], engine
    )
    np.testing.assert_allclose(flock.boids[0].forward, [0, 1.0, 0], atol=1e-15)


@pytest.mark.slow
def test_a_planar_flock_stays_in_its_plane_at_constant_speed():
    # Noise-free, orientation-dominated dynamics is where rounding would lift headings out of the
    # plane, were the step not to keep them in it.
    params = Params(**{**COUZIN_DEFAULTS, "dimensions": 2, "noise_sigma": 0.0, "zone_orientation_width": 2.0,
                       "count": 80})  # fmt: skip
    fast, ref = Flock(params, seed=4), Flock(params, seed=4, engine="reference")
    fast.step(3000)
    forward = quaternion.forward(fast.orientations)
    assert np.max(np.abs(forward[:, 2])) < 1e-9
    np.testing.assert_allclose(np.linalg.norm(fast.velocities, axis=1), params.speed, rtol=1e-9)
    np.testing.assert_array_equal(fast.positions[:, 2], 0.0)
    ref.step(100)
    fast = Flock(params, seed=4)
    fast.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)


@pytest.mark.parametrize("width", [0.5, 2.0, 5.0, 12.0])
def test_fast_kernel_equals_reference_with_noise(width):
    params = Params(**{**COUZIN_DEFAULTS, "zone_orientation_width": width, "count": 60})
    fast, ref = Flock(params, seed=5), Flock(params, seed=5, engine="reference")
    fast.step(40)
    ref.step(40)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, atol=1e-9)


@pytest.mark.slow
def test_couzin_in_a_periodic_box_agrees_too():
    params = Params(**{**COUZIN_DEFAULTS, "count": 50, "arena_shape": "periodic", "arena_radius": 12.0,
                       "init_radius": 12.0, "zone_attraction_width": 6.0})  # fmt: skip
    fast, ref = Flock(params, seed=2), Flock(params, seed=2, engine="reference")
    fast.step(30)
    ref.step(30)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)
    assert np.all(np.abs(fast.positions) <= 12.0)


def test_a_couzin_boid_sees_out_to_the_attraction_zone_and_not_behind():
    # r_a = 1 + 2 + 14 = 17, far beyond the boids model's view distance; alpha = 270.
    params = couzin(zone_orientation_width=2.0, zone_attraction_width=14.0)
    assert params.perception_distance == 17.0 and params.view_distance < 17.0
    positions = [[0, 0, 0], [0, 0, 16.5], [0, 0, 17.5], [0, 3.0, 0], [0, 0, -3.0]]
    flock = Flock(params, positions=positions, velocities=[[0, 0, 3.0]] * 5)
    me = flock.boids[0]
    # Ahead inside r_a, ahead beyond it, beside, straight behind (in the blind cone).
    assert [me.can_see(b) for b in flock.boids[1:]] == [True, False, True, False]
    assert [b.index for b in me.neighbours()] == [1, 3]


def test_couzin_rejects_a_confining_arena():
    with pytest.raises(ValueError, match="'none' \\(open space\\) or 'periodic' for the couzin model"):
        Params(model="couzin", arena_shape="sphere")


PHASES = {  # scene: (polarization range, milling range), means over t = 150-300 s
    "couzin/swarm": ((0.0, 0.35), (0.0, 0.4)),
    "couzin/torus": ((0.0, 0.35), (0.7, 1.0)),
    "couzin/dynamic-parallel": ((0.8, 0.97), (0.0, 0.2)),
    "couzin/highly-parallel": ((0.98, 1.0), (0.0, 0.2)),
}


@pytest.mark.parametrize("name", list(PHASES))
def test_the_papers_phases(name):
    flock = Flock.from_scene(resolve_scene(name), seed=0)
    flock.step(1500)
    pol, mill = [], []
    for _ in range(150):
        flock.step(10)
        pol.append(metrics.polarization(flock.velocities))
        mill.append(metrics.milling(flock.positions, flock.velocities))
    (p_lo, p_hi), (m_lo, m_hi) = PHASES[name]
    assert p_lo <= np.mean(pol) <= p_hi
    assert m_lo <= np.mean(mill) <= m_hi
