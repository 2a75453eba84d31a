"""Opacity (Pearce et al. 2014) against closed forms: a cap of the sphere of view, a lattice's
covered area, and Beer-Lambert through a random ball."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flock3d.opacity import sky_opacity, view_opacity


def test_one_bird_hides_the_cap_it_subtends_from_a_point():
    r, d = 1.0, 4.0
    cap = 0.5 * (1.0 - math.sqrt(1.0 - (r / d) ** 2))  # solid angle / 4 pi
    seen = view_opacity([[d, 0.0, 0.0]], r, points=[[0.0, 0.0, 0.0]], samples=20_000)
    assert seen[0] == pytest.approx(cap, abs=2e-3)


def test_in_a_plane_one_bird_hides_the_arc_it_subtends():
    r, d = 1.0, 3.0
    flock = np.array([[0.0, 0.0, 0.0], [d, 0.0, 0.0]])
    seen = view_opacity(flock, r, samples=3600, dimensions=2)
    # Each hides the other's arc, 2 asin(r / d) of 2 pi; a bird never hides itself.
    assert seen == pytest.approx([math.asin(r / d) / math.pi] * 2, abs=1e-3)


def test_a_ball_cut_from_a_cubic_lattice_hides_pi_r2_over_a2_of_the_sky_along_an_axis():
    # Along a lattice axis every sightline meets the same column: birds hide pi r^2 of each a^2,
    # however deep the flock (but for the few rim columns the ball leaves empty).
    a, r = 1.0, 0.3
    i, j, k = np.meshgrid(*[np.arange(-16, 17)] * 3, indexing="ij")
    lattice = a * np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1).astype(np.float64)
    ball = lattice[np.linalg.norm(lattice, axis=1) <= 15.0 * a]
    for axis in np.eye(3):
        assert sky_opacity(ball, r, axis) == pytest.approx(math.pi * r * r / (a * a), abs=0.01)
    # Along a diagonal, the columns interleave: more of the sky is hidden.
    assert sky_opacity(ball, r, (1.0, 1.0, 1.0)) > math.pi * r * r / (a * a) + 0.1


def test_a_planar_flock_is_seen_edge_on_in_its_plane():
    # A disc cut from a square lattice (spacing 1): along a lattice axis every sightline meets
    # the same column, so discs of radius 0.25 hide 2 r / a = 1/2 of the line.
    i, j = np.meshgrid(np.arange(-31, 32), np.arange(-31, 32), indexing="ij")
    square = np.stack([i.ravel(), j.ravel(), np.zeros(i.size)], axis=1).astype(np.float64)
    disc = square[np.linalg.norm(square, axis=1) <= 30.0]
    assert sky_opacity(disc, 0.25, (0.0, 1.0, 0.0), dimensions=2) == pytest.approx(0.5, abs=0.02)
    with pytest.raises(ValueError, match="z = 0"):
        sky_opacity(disc, 0.25, (0.0, 0.0, 1.0), dimensions=2)


def test_a_random_ball_of_birds_hides_what_beer_lambert_says():
    rng = np.random.default_rng(3)
    big, n, r = 20.0, 3000, 0.35
    v = rng.standard_normal((n, 3))
    ball = v / np.linalg.norm(v, axis=1, keepdims=True) * big * rng.random((n, 1)) ** (1 / 3)
    kappa = n / (4 / 3 * math.pi * big**3) * math.pi * r * r  # hits per unit length of sightline
    # The mean over the ball's disc of 1 - exp(-kappa * chord), the chord 2 sqrt(R^2 - rho^2).
    seen_through = 2.0 / big**2 * (1.0 - math.exp(-2 * kappa * big) * (1 + 2 * kappa * big)) / (4 * kappa**2)
    for direction in [(0.0, 1.0, 0.0), (1.0, 1.0, 0.0), (0.3, -0.2, 0.9)]:
        assert sky_opacity(ball, r, direction) == pytest.approx(1.0 - seen_through, abs=0.03)


def test_denser_flocks_are_more_opaque_and_bad_input_is_named():
    rng = np.random.default_rng(0)
    ball = rng.standard_normal((500, 3))
    assert sky_opacity(ball * 2.0, 0.1) < sky_opacity(ball, 0.1)
    assert view_opacity(ball * 2.0, 0.1).mean() < view_opacity(ball, 0.1).mean()
    with pytest.raises(ValueError, match="radius must be"):
        sky_opacity(ball, 0.0)
    with pytest.raises(ValueError, match="empty"):
        view_opacity(np.zeros((0, 3)), 1.0)
    with pytest.raises(ValueError, match="direction must"):
        sky_opacity(ball, 0.1, (0.0, 0.0, 0.0))
