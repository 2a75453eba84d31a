"""Each steering rule against its closed form on hand-built flocks of two or three boids.

Under ``free_params`` one step gives v' = v + dt * acceleration exactly (no turn
limit, no speed clamp, no confinement), so the acceleration can be read back as
(v' - v) / dt and compared with the spec's formula.
"""

import numpy as np
import pytest

from conftest import acceleration, free_params, hand_flock

DT = 0.01


def test_separation_two_boids_is_inverse_distance(engine):
    # Boid 0 at the origin, boid 1 at distance 1.5 < r_s along +x: S_0 = k_s (p0 - p1) / d^2.
    p = [[0, 0, 0], [1.5, 0, 0]]
    v = [[0, 0, 1], [0, 0, 1]]
    flock = hand_flock(free_params(separation=3.0), p, v, engine)
    a = acceleration(flock)
    np.testing.assert_allclose(a[0], 3.0 * np.array([-1.5, 0, 0]) / 1.5**2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a[1], -a[0], rtol=1e-9, atol=1e-9)


def test_separation_averages_over_close_neighbours_only(engine):
    # Neighbours at 1 (+x) and 1.9 (+y) repel; one at 3 (-x) is seen but beyond r_s = 2.
    p = [[0, 0, 0], [1, 0, 0], [0, 1.9, 0], [-3, 0, 0]]
    v = [[0, 0, 1]] * 4
    flock = hand_flock(free_params(separation=2.0), p, v, engine)
    a = acceleration(flock)
    expected = 2.0 * 0.5 * (np.array([-1, 0, 0]) / 1.0 + np.array([0, -1.9, 0]) / 1.9**2)
    np.testing.assert_allclose(a[0], expected, rtol=1e-9, atol=1e-9)


def test_alignment_matches_mean_velocity(engine):
    p = [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    v = [[0, 0, 2], [1, 0, 1], [0, 3, 1]]
    flock = hand_flock(free_params(alignment=1.5), p, v, engine)
    a = acceleration(flock)
    v = np.array(v, float)
    for i in range(3):
        others = np.delete(v, i, axis=0)
        np.testing.assert_allclose(a[i], 1.5 * (others.mean(axis=0) - v[i]), rtol=1e-9, atol=1e-9)


def test_cohesion_pulls_towards_the_mean_offset(engine):
    p = [[0, 0, 0], [4, 0, 0], [0, 2, 0]]
    v = [[0, 0, 1]] * 3
    flock = hand_flock(free_params(cohesion=0.7), p, v, engine)
    a = acceleration(flock)
    p = np.array(p, float)
    for i in range(3):
        others = np.delete(p, i, axis=0)
        np.testing.assert_allclose(a[i], 0.7 * (others - p[i]).mean(axis=0), rtol=1e-9, atol=1e-9)


def test_rules_add_up(engine):
    p = [[0, 0, 0], [1.2, 0.3, 0], [-0.5, 2.5, 1]]
    v = [[0, 0, 2], [1, 0, 1], [0, 3, 1]]
    params = free_params(separation=2.0, alignment=0.5, cohesion=0.3)
    a = acceleration(hand_flock(params, p, v, engine))
    p, v = np.array(p, float), np.array(v, float)
    d01 = np.linalg.norm(p[0] - p[1])
    sep = 2.0 * (p[0] - p[1]) / d01**2  # only boid 1 is within r_s of boid 0
    ali = 0.5 * (v[1:].mean(axis=0) - v[0])
    coh = 0.3 * (p[1:] - p[0]).mean(axis=0)
    np.testing.assert_allclose(a[0], sep + ali + coh, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("radius_fraction, pushed", [(0.79, False), (0.81, True)])
def test_confinement_starts_at_the_fraction_of_the_radius(engine, radius_fraction, pushed):
    center = np.array([1.0, -2.0, 3.0])
    direction = np.array([2.0, 1.0, -2.0]) / 3.0
    p = [center + radius_fraction * 10.0 * direction]
    params = free_params(arena_radius=10.0, arena_center=tuple(center), confinement=4.0)
    a = acceleration(hand_flock(params, p, [[0, 1, 0]], engine))
    expected = -4.0 * direction if pushed else np.zeros(3)
    np.testing.assert_allclose(a[0], expected, atol=1e-9)


def test_nobody_in_view_means_no_steering(engine):
    p = [[0, 0, 0], [20, 0, 0]]  # beyond view distance 10
    v = [[0, 0, 1], [1, 0, 0]]
    params = free_params(separation=5.0, alignment=5.0, cohesion=5.0)
    np.testing.assert_allclose(acceleration(hand_flock(params, p, v, engine)), 0.0, atol=1e-12)


def test_coincident_boids_do_not_see_each_other(engine):
    p = [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    v = np.array([[0, 0, 1], [0, 1, 0], [2, 0, 1]], dtype=float)
    params = free_params(separation=3.0, alignment=1.0, cohesion=0.5)
    a = acceleration(hand_flock(params, p, v, engine))
    assert np.all(np.isfinite(a))
    # Boid 0 sees only boid 2 (boid 1 sits on it): separation 3 * (-1, 0, 0) / 1^2,
    # alignment (2, 0, 1) - (0, 0, 1), cohesion 0.5 * (1, 0, 0).
    np.testing.assert_allclose(a[0], [-3.0 + 2.0 + 0.5, 0, 0], atol=1e-9)
    # Boid 2 sees boids 0 and 1 at one point, 1 away: both repel and both count.
    separation = 3.0 * np.array([1.0, 0, 0])  # the mean of two equal pushes
    alignment = np.mean(v[:2], axis=0) - v[2]
    cohesion = 0.5 * np.array([-1.0, 0, 0])
    np.testing.assert_allclose(a[2], separation + alignment + cohesion, atol=1e-9)


def test_speed_is_clamped_to_its_limits(engine):
    p = [[0, 0, 0], [3, 0, 0]]
    v = [[0, 0, 1], [0, 0, 9]]
    params = free_params(alignment=100.0, min_speed=2.0, max_speed=5.0)
    flock = hand_flock(params, p, v, engine)
    for _ in range(5):
        flock.step()
        speeds = np.linalg.norm(flock.velocities, axis=1)
        assert np.all(speeds >= 2.0 - 1e-12) and np.all(speeds <= 5.0 + 1e-12)


def test_zero_desired_velocity_keeps_heading_and_stops(engine):
    # min_speed = 0 and a boid at rest with nothing around: it stays at rest, facing +x.
    flock = hand_flock(free_params(), [[0, 0, 0]], [[1, 0, 0]], engine)
    flock.velocities[0] = 0.0
    flock.step(3)
    np.testing.assert_array_equal(flock.velocities[0], 0.0)
    np.testing.assert_allclose(flock.boids[0].forward, [1, 0, 0], atol=1e-15)


def test_more_rules_than_the_limit_are_refused_before_anything_compiles(tmp_path):
    # Each rule is compiled into the step: 50 one-line pair rules ran out of memory compiling.
    from helpers import assert_one_line_failure, flock3d

    from flock3d import Flock, Params, RuleError, load_rules
    from flock3d.rules import MAX_RULES

    rule = "@flock3d.pair_rule(radius=3.0)\ndef r{k}(p_i, v_i, p_j, v_j):\n    return p_i - p_j\n"
    (tmp_path / "many.py").write_text("import flock3d\n" + "".join(rule.format(k=k) for k in range(50)))
    out = flock3d("run", "default", "--steps", "1", "--rules", "many.py", cwd=tmp_path)
    assert_one_line_failure(out, f"50 rules and 0 forces: a flock runs at most {MAX_RULES} together")
    rules, _ = load_rules(tmp_path / "many.py")
    with pytest.raises(RuleError, match=f"at most {MAX_RULES} together"):
        Flock(Params(count=10), rules=rules[: MAX_RULES + 1])
    Flock(Params(count=10), rules=rules[:MAX_RULES])  # the limit itself is allowed (nothing compiles yet)
