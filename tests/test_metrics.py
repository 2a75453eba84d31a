import math

import numpy as np
import pytest

from flock3d import Flock, Params, metrics


def brute_force_nn(p):
    d = np.linalg.norm(p[:, None] - p[None], axis=2)
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


def brute_force_groups(p, r):
    n = len(p)
    adj = np.linalg.norm(p[:, None] - p[None], axis=2) <= r
    labels, count = -np.ones(n, int), 0
    for s in range(n):
        if labels[s] >= 0:
            continue
        stack = [s]
        labels[s] = count
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(adj[i] & (labels < 0)):
                labels[j] = count
                stack.append(j)
        count += 1
    return count, labels


def test_polarization_closed_forms():
    assert metrics.polarization(np.tile([0.0, 3.0, 0.0], (10, 1))) == pytest.approx(1.0)
    assert metrics.polarization([[1.0, 0, 0], [-2.0, 0, 0]]) == pytest.approx(0.0)
    # Three boids at 120 degrees in a plane cancel; add a fourth along +z.
    v = [[1, 0, 0], [-0.5, math.sqrt(3) / 2, 0], [-0.5, -math.sqrt(3) / 2, 0], [0, 0, 5]]
    assert metrics.polarization(v) == pytest.approx(0.25)
    assert math.isnan(metrics.polarization(np.zeros((0, 3))))


def test_random_headings_are_not_polarized():
    flock = Flock(Params(count=10_000), seed=0)
    assert metrics.polarization(flock.velocities) < 0.03


def test_milling_of_a_ring_is_one_and_of_a_parallel_flock_zero():
    a = np.linspace(0, 2 * np.pi, 50, endpoint=False)
    p = np.c_[np.cos(a), np.sin(a), np.zeros_like(a)] * 7 + [3, 4, 5]
    v = np.c_[-np.sin(a), np.cos(a), np.zeros_like(a)] * 2
    assert metrics.milling(p, v) == pytest.approx(1.0)
    assert metrics.polarization(v) == pytest.approx(0.0, abs=1e-12)
    assert metrics.milling(p, np.tile([0, 0, 1.0], (50, 1))) == pytest.approx(0.0, abs=1e-12)


def test_nearest_neighbour_distances_match_brute_force():
    rng = np.random.default_rng(1)
    for p in [rng.normal(size=(500, 3)) * 10, rng.uniform(0, 1, (300, 3)) ** 6, np.zeros((3, 3))]:
        np.testing.assert_allclose(metrics.nearest_neighbour_distances(p), brute_force_nn(p), rtol=1e-12)
    assert metrics.nearest_neighbour_distances(np.zeros((1, 3)))[0] == math.inf
    stats = metrics.nearest_neighbour_stats([[0, 0, 0], [0, 0, 2], [0, 0, 5]])
    assert (stats.min, stats.max, stats.mean) == pytest.approx((2.0, 3.0, 7 / 3))


def test_groups_match_brute_force():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 30, (400, 3))
    for r in [0.5, 2.0, 4.0, 10.0]:
        count, labels = metrics.groups(p, r)
        bf_count, bf_labels = brute_force_groups(p, r)
        assert count == bf_count
        np.testing.assert_array_equal(labels, bf_labels)  # both number groups by lowest member
    assert metrics.groups(p, math.inf)[0] == 1
    assert metrics.groups(np.zeros((0, 3)), 1.0)[0] == 0


def test_mean_pair_distance():
    assert metrics.mean_pair_distance([[0, 0, 0], [3, 4, 0]]) == pytest.approx(5.0)
    rng = np.random.default_rng(0)
    p = rng.normal(size=(3000, 3))
    exact = metrics.mean_pair_distance(p)
    sampled = metrics.mean_pair_distance(p, max_pairs=200_000)
    assert sampled == pytest.approx(exact, rel=0.01)
    assert sampled == metrics.mean_pair_distance(p, max_pairs=200_000)  # seeded


def test_summary_keys():
    flock = Flock(Params(count=50), seed=0)
    s = metrics.summary(flock.positions, flock.velocities, flock.params.view_distance)
    assert list(s) == list(metrics.COLUMNS)
    assert s["groups"] >= 1 and 0 <= s["group_polarization"] <= 1
