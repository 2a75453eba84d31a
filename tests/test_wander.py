"""Wander (rules.wander): each boid's heading drifts with smooth noise of its own."""

from __future__ import annotations

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core import noise

from conftest import acceleration, free_params, hand_flock


def knot_vector(seed: int, k: int, boid: int) -> np.ndarray:
    """The random vector of boid at knot k, written out: components uniform in [-1, 1]."""
    return np.array([2.0 * noise.uniform(seed, k, boid, 16 + axis) - 1.0 for axis in range(3)])


def expected(seed: int, t: float, boid: int, heading: np.ndarray, k_w: float) -> np.ndarray:
    """The closed form: the knots blended by the smoothstep of the second, less the part along f."""
    k = np.floor(t)
    u = t - k
    s = u * u * (3.0 - 2.0 * u)
    g = knot_vector(seed, int(k), boid) + s * (
        knot_vector(seed, int(k) + 1, boid) - knot_vector(seed, int(k), boid)
    )
    return k_w * (g - np.dot(g, heading) * heading)


@pytest.mark.parametrize("t", [0.0, 0.25, 1.5, 7.9])
def test_one_step_gives_the_closed_form_across_the_heading(engine, t):
    params = free_params(wander=4.0)
    positions = [[0.0, 0.0, 0.0], [50.0, 0.0, 0.0], [0.0, 50.0, 0.0]]  # out of each other's sight
    velocities = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
    flock = hand_flock(params, positions, velocities, engine)
    flock.state.time = t
    a = acceleration(flock)
    for i, v in enumerate(velocities):
        heading = np.asarray(v) / np.linalg.norm(v)
        np.testing.assert_allclose(a[i], expected(flock.noise_seed, t, i, heading, 4.0), atol=1e-9)
        assert abs(np.dot(a[i], heading)) < 1e-9  # it turns the boid; it does not speed it up


def test_the_drift_is_smooth_and_bounded():
    flock = Flock(free_params(wander=5.0, count=1), seed=7)
    steps = []
    for _ in range(240):
        steps.append(acceleration(flock))
    a = np.array(steps)[:, 0]
    assert np.all(np.linalg.norm(a, axis=1) <= 5.0 * np.sqrt(3.0) + 1e-12)
    jumps = np.linalg.norm(np.diff(a, axis=0), axis=1)
    # The smoothstep's slope is at most 1.5 per second, each component's gap at most 2: a step of
    # dt changes the steer by at most k_w * sqrt(3) * 2 * 1.5 * dt, plus the heading's turn.
    assert jumps.max() < 5.0 * np.sqrt(3.0) * 3.0 * 0.01 + 0.05


def test_the_same_seed_drifts_the_same_and_another_does_not():
    params = Params(count=40, wander=15.0)
    a, b, c = Flock(params, seed=4), Flock(params, seed=4), Flock(params, seed=5)
    for flock in (a, b, c):
        flock.step(120)
    assert np.array_equal(a.positions, b.positions)
    start = Flock(params, seed=5)
    c2 = Flock(params.replace(wander=0.0), seed=5)
    c2.step(120)
    assert not np.allclose(c.positions, c2.positions)  # wander moved them
    assert not np.allclose(start.positions, c.positions)


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes",
    [{}, {"combine": "chain"}, {"update": "sequential"}, {"update": "per_rule", "combine": "chain"}],
    ids=["sum", "chain", "sequential", "per rule"],
)
def test_fast_equals_reference_after_100_steps(changes):
    params = Params(count=25, arena_radius=8.0, wander=12.0, **changes)
    fast, ref = Flock(params, seed=2), Flock(params, seed=2, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, atol=1e-9)


def test_wander_acts_after_the_wind_and_only_when_on():
    from flock3d.core.params import STAGES, stage_names

    assert STAGES.index("wander") == STAGES.index("wind") + 1
    assert "wander" not in stage_names(Params())
    assert "wander" in stage_names(Params(wander=1.0))
