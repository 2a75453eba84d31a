"""The default parameters make flocks: ordered, spaced, not collapsing into clumps."""

import numpy as np

from flock3d import Flock, Params, metrics
from flock3d.core.neighbors import count_within


def test_defaults_form_ordered_flocks_that_keep_their_spacing():
    params = Params(count=300)
    flock = Flock(params, seed=0)
    start_order = metrics.group_polarization(flock.positions, flock.velocities, params.view_distance)
    order, neighbours = [], []
    for _ in range(30):  # 60 s of simulated time, sampled every 2 s
        flock.step(120)
        order.append(metrics.group_polarization(flock.positions, flock.velocities, params.view_distance))
        neighbours.append(count_within(flock.positions, params.view_distance).mean())
    # Random headings: ~1/sqrt(N). After 30 s the groups fly nearly parallel.
    assert start_order < 0.15
    assert np.mean(order[15:]) > 0.85
    assert metrics.polarization(flock.velocities) > 5 * start_order
    # Spacing holds: the neighbour count levels off instead of growing (clumping), and
    # the nearest neighbour stays near the separation distance.
    assert max(neighbours[15:]) < 1.3 * min(neighbours[15:]) and max(neighbours) < 80
    assert metrics.nearest_neighbour_stats(flock.positions).mean > 0.75 * params.separation_distance


def test_weak_separation_clumps_which_is_why_the_default_is_stronger():
    # The failure the defaults avoid: with separation 10 the flock keeps contracting.
    weak = Flock(Params(count=300, separation=10.0), seed=0)
    strong = Flock(Params(count=300), seed=0)
    weak.step(3600)
    strong.step(3600)
    assert count_within(weak.positions, 5.0).mean() > 1.4 * count_within(strong.positions, 5.0).mean()
