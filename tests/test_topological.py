"""Topological neighbours (Ballerini et al. 2008) and StarDisplay's adaptive radius: the k
nearest seen, checked against a brute force on random flocks in both engines, ties broken by
index, the adaptive radius against its recurrence, and fast == reference."""

import math
import re

import numpy as np
import pytest

import flock3d
from flock3d import Flock, Params
from flock3d.core import space

from conftest import acceleration, free_params, hand_flock


def brute_force_k_nearest_in_cone(positions, headings, i, distance, fov, k, period=None):
    """Indices of the k nearest boids boid i sees, by a plain loop over all the others."""
    candidates = []
    for j in range(len(positions)):
        d = positions[j] - positions[i]
        if period is not None:
            d -= period * np.round(d / period)
        r = math.sqrt(d @ d)
        if j == i or not 0.0 < r < distance:
            continue
        angle = math.degrees(math.acos(max(-1.0, min(1.0, d @ headings[i] / r))))
        if fov >= 360.0 or angle <= fov / 2.0:
            candidates.append((r, j))
    return sorted(j for _, j in sorted(candidates)[:k])


def cohesion_partners(positions, velocities, params, engine):
    """Each boid's interaction set read off one step: with cohesion alone (weight 1, free
    parameters) the acceleration is the mean offset to the boids it interacts with."""
    return acceleration(hand_flock(params, positions, velocities, engine))


@pytest.mark.parametrize(
    "k, fov, distance", [(1, 360.0, 4.0), (4, 270.0, 4.0), (7, 120.0, 6.0), (7, 270.0, math.inf)]
)
def test_topological_neighbours_are_the_k_nearest_seen_on_random_flocks(engine, k, fov, distance):
    rng = np.random.default_rng(k)
    n = 80 if engine == "fast" else 40
    positions = rng.uniform(-6.0, 6.0, (n, 3))
    velocities = rng.normal(size=(n, 3))
    params = free_params(cohesion=1.0, view_distance=distance, fov=fov, neighbours=k)
    a = cohesion_partners(positions, velocities, params, engine)
    headings = velocities / np.linalg.norm(velocities, axis=1, keepdims=True)
    for i in range(n):
        chosen = brute_force_k_nearest_in_cone(positions, headings, i, distance, fov, k)
        expected = np.mean(positions[chosen] - positions[i], axis=0) if chosen else np.zeros(3)
        np.testing.assert_allclose(a[i], expected, atol=1e-9, err_msg=f"boid {i}")
        # The oracle's own function agrees with the brute force.
        got = space.neighbours(positions[i], headings[i], positions, params)
        assert sorted(np.flatnonzero(got)) == chosen


@pytest.mark.slow
def test_a_large_flock_takes_its_k_nearest_from_the_grid_across_cells_and_faces():
    # 3,000 boids in a periodic box over many cells: the grid's candidates must hold the k nearest.
    rng = np.random.default_rng(0)
    n, side = 3000, 24.0
    positions = rng.uniform(-side / 2, side / 2, (n, 3))
    velocities = rng.normal(size=(n, 3))
    params = free_params(cohesion=1.0, view_distance=3.0, fov=240.0, neighbours=7, arena_shape="periodic",
                         arena_radius=side / 2)  # fmt: skip
    a = cohesion_partners(positions, velocities, params, "fast")
    headings = velocities / np.linalg.norm(velocities, axis=1, keepdims=True)
    for i in rng.choice(n, 150, replace=False):
        chosen = brute_force_k_nearest_in_cone(positions, headings, i, 3.0, 240.0, 7, period=side)
        d = positions[chosen] - positions[i]
        d -= side * np.round(d / side)
        np.testing.assert_allclose(a[i], d.mean(axis=0) if chosen else np.zeros(3), atol=1e-9)


def test_ties_go_to_the_lower_index(engine):
    # Boid 0 has four neighbours at exactly distance 1 (and one at 2); k = 2 takes boids 2 and 3
    # whatever order they are listed in: indices, not the buffer's order, break the tie.
    p = [[0, 0, 0], [0, 0, 2.0], [-1.0, 0, 0], [0, 1.0, 0], [1.0, 0, 0], [0, -1.0, 0]]
    params = free_params(cohesion=1.0, neighbours=2)
    a = cohesion_partners(p, [[0, 0, 1.0]] * 6, params, engine)
    np.testing.assert_allclose(a[0], np.mean([p[2], p[3]], axis=0), atol=1e-12)


def test_metric_and_topological_agree_when_k_exceeds_the_boids_seen(engine):
    rng = np.random.default_rng(5)
    p, v = rng.uniform(-3, 3, (30, 3)), rng.normal(size=(30, 3))
    metric = cohesion_partners(p, v, free_params(cohesion=1.0, fov=270.0, view_distance=2.0), engine)
    topological = cohesion_partners(
        p, v, free_params(cohesion=1.0, fov=270.0, view_distance=2.0, neighbours=30), engine
    )
    np.testing.assert_allclose(metric, topological, atol=1e-12)


@pytest.mark.slow
def test_each_rule_acts_on_the_k_nearest_within_its_own_radius(engine):
    # Boid 0 sees three boids at 1, 1.5 and 3; with k = 2 it interacts with the first two; of those,
    # separation (radius 1.2) acts on the first only, and cohesion on both.
    p = [[0, 0, 0], [1.0, 0, 0], [0, 1.5, 0], [0, 0, 3.0]]
    params = free_params(cohesion=1.0, separation=1.0, separation_distance=1.2, separation_falloff="linear",
                         neighbours=2)  # fmt: skip
    a = cohesion_partners(p, [[0, 0, 1.0]] * 4, params, engine)
    np.testing.assert_allclose(a[0], -np.array(p[1]) + np.mean(p[1:3], axis=0), atol=1e-12)


def test_boid_neighbours_are_the_k_nearest(engine):
    rng = np.random.default_rng(2)
    flock = Flock(Params(count=200, neighbours=6, fov=200.0), seed=4, engine=engine)
    positions = rng.uniform(-8, 8, (200, 3))
    flock.positions[...] = positions
    headings = np.array([b.forward for b in flock.boids])
    for boid in flock.boids[:30]:
        chosen = brute_force_k_nearest_in_cone(positions, headings, boid.index, 5.0, 200.0, 6)
        assert [b.index for b in boid.neighbours()] == chosen


def test_the_adaptive_radius_follows_the_distance_of_the_k_th_nearest(engine):
    # Boid 0 with neighbours at 1, 2, 3 (k = 2): its radius starts at the view distance 5 and
    # closes 0.5 of the gap to 2 each step; boids beyond its radius are not its neighbours.
    p = [[0, 0, 0], [1.0, 0, 0], [0, 2.0, 0], [0, 0, -3.0]]
    params = free_params(cohesion=1.0, view_distance=5.0, neighbours=2, adaptive=True, adaptation=0.5,
                         dt=1e-9)  # fmt: skip
    flock = hand_flock(params, p, [[0, 0, 1.0]] * 4, engine)
    assert flock.state.radii[0] == 5.0
    radius = 5.0
    for _ in range(4):
        a = acceleration(flock)
        within = [q for q in p[1:] if np.linalg.norm(q) < radius][:2]
        np.testing.assert_allclose(a[0], np.mean(within, axis=0), atol=1e-6)
        radius += 0.5 * (2.0 - radius)
        assert flock.state.radii[0] == pytest.approx(radius, abs=1e-9)
    assert radius < 2.5  # the 1st and 2nd are still within it; the pull now comes from those two


def test_a_lone_adaptive_boid_widens_its_radius_to_the_view_distance():
    params = Params(count=1, neighbours=3, adaptive=True, view_distance=4.0, adaptation=0.25)
    flock = Flock(params, positions=[[0, 0, 0]], velocities=[[0, 0, 4.0]])
    flock.state.radii[0] = 1.0
    flock.step(1)
    assert flock.state.radii[0] == pytest.approx(1.0 + 0.25 * 3.0)


SMALL = dict(count=30, arena_radius=4.8)  # the density of 60 in a radius of 6
AGREEMENT = {
    "topological": Params(**SMALL, neighbours=5),
    "topological, global view, narrow cone": Params(**SMALL, neighbours=3, fov=100.0, view_distance=math.inf),
    "topological, periodic": Params(count=30, arena_radius=5.5, neighbours=6, arena_shape="periodic"),
    "topological, sequential": Params(**SMALL, neighbours=4, update="sequential"),
    "topological, per rule": Params(**SMALL, neighbours=3, update="per_rule", combine="chain"),
    "adaptive": Params(**SMALL, neighbours=5, adaptive=True, adaptation=0.3),
    "adaptive, planar, sequential": Params(**SMALL, neighbours=4, adaptive=True, dimensions=2,
                                           update="sequential"),
    "couzin, topological": Params(model="couzin", count=30, neighbours=6, init_radius=5.0, arena_shape="none",
                                  dt=0.1, max_turn_rate=40.0, zone_orientation_width=2.0),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT))
def test_fast_equals_reference_with_topological_neighbours(name):
    params = AGREEMENT[name]
    fast, ref = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.state.radii, ref.state.radii, rtol=0, atol=1e-9)


def test_topological_interaction_keeps_the_neighbour_count_as_density_changes():
    # The point of Ballerini et al.: a metric boid's neighbour count grows with density, a
    # topological one's does not.
    for spread in (4.0, 8.0):
        positions = np.random.default_rng(1).uniform(-spread, spread, (400, 3))
        flock = Flock(Params(count=400, neighbours=7, view_distance=20.0), positions=positions)
        counts = [len(b.neighbours()) for b in flock.boids[:50]]
        assert min(counts) == max(counts) == 7


def test_bad_topological_keys_are_one_line_naming_the_key():
    for bad, text in [
        (dict(neighbours=0), "neighbours must be unset or a whole number from 1"),
        (dict(neighbours=2.5), "neighbours must be unset or a whole number"),
        (dict(adaptive=True), "adaptive needs neighbours = k"),
        (dict(adaptive=True, neighbours=3, view_distance=math.inf), "adaptive needs a finite view_distance"),
        (dict(neighbours=3, adaptive=True, update="per_rule", combine="chain"), "adaptive needs update"),
        (dict(adaptation=0.0), "adaptation must be in (0, 1]"),
    ]:
        with pytest.raises(ValueError, match=re.escape(text)):
            Params(**bad)


@flock3d.pair_rule(average=False, radius=2.2, name="count")
def _count(p_i, v_i, p_j, v_j):
    return (1.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "update, adaptive",
    [("synchronous", False), ("sequential", False), ("per_rule", False), ("synchronous", True)],
)
def test_a_rule_of_yours_acts_on_the_k_nearest_within_its_own_radius(engine, update, adaptive):
    # Each boid counts its partners: of its 2 nearest seen within the view distance 5, those
    # within the rule's 2.2. The fast step counted every candidate seen within 2.2 (up to 4).
    p = np.array([[0, 0, 0.0], [1, 0, 0], [0, 2, 0], [0, 0, 2.5], [-3.5, 0, 0], [0, -4.5, 0], [1.5, 1.5, 0]])
    params = free_params(view_distance=5.0, neighbours=2, adaptive=adaptive, adaptation=0.5, update=update,
                         combine="chain" if update == "per_rule" else "sum")  # fmt: skip
    flock = Flock(params, positions=p, velocities=[[0.0, 0.0, 1.0]] * len(p), rules=[_count], engine=engine)
    v0 = flock.velocities.copy()
    flock.step(1)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    nearest = np.sort(np.where(d < 5.0, d, np.inf), axis=1)[:, :2]  # no ties among these distances
    expected = np.sum(nearest < 2.2, axis=1)
    np.testing.assert_allclose((flock.velocities - v0)[:, 0] / params.dt, expected, atol=1e-9)
