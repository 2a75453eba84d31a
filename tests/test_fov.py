"""The field-of-view test (spec step 1) at its boundary, in both engines."""

import math

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.space import visible

from conftest import free_params, hand_flock


def boid_at_angle(angle_deg: float, distance: float = 3.0) -> np.ndarray:
    """A point at ``distance`` from the origin, ``angle_deg`` away from +Z (in the x-z plane)."""
    a = math.radians(angle_deg)
    return distance * np.array([math.sin(a), 0.0, math.cos(a)])


def sees_through_step(fov: float, other: np.ndarray, engine: str) -> bool:
    """Whether boid 0 (at the origin, facing +Z) reacts to ``other``, read off one step.

    Only alignment acts, so boid 0's velocity changes if and only if it sees boid 1.
    """
    params = free_params(fov=fov, alignment=1.0)
    flock = hand_flock(params, [[0, 0, 0], other], [[0, 0, 1], [1, 0, 0]], engine)
    flock.step()
    return not np.allclose(flock.velocities[0], [0, 0, 1], atol=1e-15)


@pytest.mark.parametrize("fov", [10.0, 90.0, 179.0, 180.0, 181.0, 270.0, 359.0])
@pytest.mark.parametrize("inside", [True, False])
def test_boundary_of_the_cone(fov, inside, engine):
    eps = 1e-6  # degrees
    other = boid_at_angle(fov / 2 - eps if inside else fov / 2 + eps)
    assert sees_through_step(fov, other, engine) is inside
    params = Params(fov=fov, view_distance=10.0, separation_distance=1.0)
    assert bool(visible(np.zeros(3), np.array([0.0, 0, 1]), other[None], params)[0]) is inside


def test_360_sees_directly_behind(engine):
    assert sees_through_step(360.0, boid_at_angle(180.0), engine)
    assert not sees_through_step(359.0, boid_at_angle(180.0), engine)


@pytest.mark.parametrize("inside", [True, False])
def test_view_distance_is_strict(engine, inside):
    other = np.array([0.0, 0.0, 10.0 - 1e-9 if inside else 10.0])
    assert sees_through_step(360.0, other, engine) is inside


@pytest.mark.parametrize("fov", [90.0, 179.0])
def test_boids_facing_away_do_not_see_each_other(engine, fov):
    params = free_params(fov=fov, alignment=1.0, cohesion=1.0)
    flock = hand_flock(params, [[0, 0, -1], [0, 0, 1]], [[0, 0, -2], [0, 0, 2]], engine)
    assert flock.boids[0].neighbours() == [] and flock.boids[1].neighbours() == []
    flock.step(10)
    np.testing.assert_allclose(flock.velocities, [[0, 0, -2], [0, 0, 2]], atol=1e-12)


def test_sight_is_asymmetric(engine):
    # Boid 1 is ahead of boid 0, so 0 sees 1; boid 1 faces away and does not see 0.
    params = free_params(fov=120.0, alignment=1.0)
    flock = hand_flock(params, [[0, 0, 0], [0, 0, 3]], [[0, 0, 1], [1, 0, 0.2]], engine)
    b0, b1 = flock.boids[0], flock.boids[1]
    assert b0.can_see(b1) and not b1.can_see(b0)
    v1 = flock.velocities[1].copy()
    flock.step()
    assert not np.allclose(flock.velocities[0], [0, 0, 1])
    np.testing.assert_allclose(flock.velocities[1], v1, atol=1e-12)


@pytest.mark.parametrize(
    "fov, offset",
    [
        (90.0, (0.0, 1.0, 1.0)),
        (270.0, (0.0, 1.0, -1.0)),
        (180.0, (0.0, 1.0, 0.0)),
        (90.0, (1.0, 1.0, 1.4142135623730951)),
    ],
)
def test_a_boid_exactly_on_the_cones_edge_is_seen_by_both_engines(fov, offset, engine):
    # angle == fov / 2 exactly, as the docs' "angle <= fov/2" says; the engines rounded their own
    # ways and one saw (0, 1, 1) at fov 90 where the other did not.
    assert sees_through_step(fov, np.array(offset), engine)
    heading = np.array([0.0, 0.0, 1.0])
    assert visible(np.zeros(3), heading, np.array([offset]), free_params(fov=fov))[0]
    # A hair (1e-9 rad) beyond the edge is not seen.
    a = math.radians(fov / 2.0) + 1e-9
    beyond = (0.0, math.sin(a), math.cos(a))
    assert not sees_through_step(fov, np.array(beyond), engine)
