"""Boids stay in their arena: wall containment's closed form, and every shipped scene with
walls keeping every boid within 1.02 of its wall for 20,000 steps."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.scene import shipped_scenes

from conftest import FAST_IS_SLOW, acceleration, free_params, hand_flock

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import containment  # noqa: E402  (benchmarks/containment.py: the same check, printed)


def test_containment_steers_across_the_heading_when_a_turn_radius_ahead_is_past_the_margin(engine):
    # Speed 2, 90 degrees/s: turn radius 2 / (pi/2) = 1.27. R = 10, the margin starts at 8.
    # Containment 1: a turn of 0.005 rad in a step, under the 90 deg/s limit (0.0157 rad).
    params = free_params(arena_radius=10.0, confinement_start=0.8, containment=1.0, max_turn_rate=90.0)
    # Boid 0 at x = 7 heading +x: 1.27 ahead is 8.27, past 8. Boid 1 at x = 6: 7.27, inside.
    # Boid 2 heading +y, along the wall: its look-ahead, (7, 1.27, 3), stays inside 8.
    p = [[7.0, 0.0, 0.0], [6.0, 0.0, 0.0], [7.0, 0.0, 3.0]]
    v = [[2.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    a = acceleration(hand_flock(params, p, v, engine))
    # Straight at the wall: the inward direction has no part across the heading; it turns right.
    assert np.linalg.norm(a[0]) == pytest.approx(1.0, rel=1e-9) and abs(a[0, 0]) < 1e-9
    np.testing.assert_allclose(a[1:], 0.0, atol=1e-12)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_containment_in_a_box_steers_away_from_the_faces_it_would_cross(engine):
    params = free_params(arena_shape="box", arena_radius=10.0, confinement_start=0.8, containment=3.0,
                         max_turn_rate=math.inf)  # fmt: skip
    # No turn limit: no look-ahead; a boid past the margin at x, flying diagonally, steers -x across.
    flock = hand_flock(params, [[9.0, 0.0, 0.0]], [[1.0, 1.0, 0.0]], engine)
    a = acceleration(flock)[0]
    across = np.array([-1.0, 0.0, 0.0]) - np.dot([-1.0, 0.0, 0.0], [0.5**0.5, 0.5**0.5, 0]) * np.array(
        [0.5**0.5, 0.5**0.5, 0.0]
    )
    np.testing.assert_allclose(a, 3.0 * across / np.linalg.norm(across), atol=1e-9)


def test_a_slow_turning_boid_heading_for_the_wall_stays_in_with_containment():
    # 30 degrees/s at 6 units/s: a turn radius of 11.5, wider than the margin of 6.
    params = Params(count=1, max_turn_rate=30.0, min_speed=6.0, max_speed=6.0)
    for k, worst in ((0.0, 1.02), (30.0, 1.0)):
        flock = Flock(params.replace(containment=k), positions=[[0.0, 0.0, 0.0]], velocities=[[6.0, 0, 0]])
        reach = 0.0
        for _ in range(1200):
            flock.step()
            reach = max(reach, np.linalg.norm(flock.positions[0]) / 30.0)
        assert (reach > worst) if k == 0.0 else (reach <= worst), (k, reach)


WALLED = [n for n in shipped_scenes() if containment.walled(n) and n not in containment.LITERAL]


@pytest.mark.slow
@pytest.mark.parametrize("name", WALLED)
def test_every_shipped_scene_keeps_its_boids_inside_its_arena(name):
    # A minute of simulated time, at most 250 boids at the scene's density (a smaller arena,
    # so a harder one for a boid's turn). benchmarks/containment.py checks 20,000 steps at
    # full size.
    row = containment.check(name, 6_000, 250)
    assert row["worst"] <= containment.LIMIT, row
