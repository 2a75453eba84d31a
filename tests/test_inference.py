"""The topological maximum-entropy fit (flock3d.inference).

Snapshots drawn from the model itself give back its range exactly.
"""

import re

import numpy as np
import pytest

from flock3d import inference, metrics


def laplacian(positions, n_c, box=None):
    """Lambda of the symmetrized graph of each point's n_c nearest, written out plainly."""
    n = len(positions)
    idx, _ = metrics._nearest_k(positions, n_c, box)
    m = np.zeros((n, n))
    for i in range(n):
        for j in idx[i]:
            m[i, j] += 0.5
            m[j, i] += 0.5
    return np.diag(m.sum(axis=1)) - m


def spin_waves(positions, n_c, coupling, rng, dims=3, box=None, mean=(1.0, 0.0, 0.0)):
    """Directions (N, 3) drawn from the spin-wave model: each transverse component Gaussian with
    precision J Lambda on the non-zero modes, about ``mean``."""
    values, vectors = np.linalg.eigh(laplacian(positions, n_c, box))
    scale = np.where(values > 1e-9, 1.0 / np.sqrt(coupling * np.maximum(values, 1e-9)), 0.0)
    pi = vectors @ (scale[:, None] * (vectors.T @ rng.normal(size=(len(positions), dims - 1))))
    axis = np.asarray(mean, dtype=float) / np.linalg.norm(mean)
    # Unit vectors across the mean direction (in the plane z = 0 for a planar flock).
    across = np.linalg.svd(axis[None, :])[2][1:] if dims == 3 else np.array([[-axis[1], axis[0], 0.0]])
    return axis * np.sqrt(1.0 - (pi**2).sum(axis=1))[:, None] + pi @ across


@pytest.mark.parametrize("n_c", [3, 6, 11])
def test_snapshots_of_the_model_give_back_its_range_and_coupling(n_c):
    rng = np.random.default_rng(n_c)
    frames = []
    for _ in range(3):
        p = rng.uniform(0.0, 9.0, (600, 3))
        frames.append((p, spin_waves(p, n_c, 50.0, rng)))
    fit = inference._fit(frames, range(1, 21), None, 50)
    # Exact in n_c; J to 10% (the spin-wave expansion drops terms of order 1/J).
    assert fit.n_c == n_c and list(fit.frame_n_c) == [n_c] * 3
    assert fit.J == pytest.approx(50.0, rel=0.1)
    assert np.nanargmax(fit.log_likelihood) == n_c - 1
    assert fit.predicted_polarization == pytest.approx(fit.polarization, abs=0.005)
    # At the fit the model's alignment is the measured one: J* = D (N - 1) / (N n_c (1 - C_int)).
    one = inference.maxent(*frames[0], n_c_range=range(1, 21))
    assert one.J == one.couplings[n_c - 1] == pytest.approx(2 * 599 / (600 * n_c * (1 - one.c_int[n_c - 1])))


def test_a_planar_flock_has_one_transverse_direction():
    rng = np.random.default_rng(2)
    p = np.column_stack([rng.uniform(0.0, 30.0, (800, 2)), np.zeros(800)])
    fit = inference.maxent(p, spin_waves(p, 5, 40.0, rng, dims=2), n_c_range=range(1, 13))
    assert fit.dimensions == 2 and fit.n_c == 5
    assert fit.J == pytest.approx(40.0, rel=0.1)


def test_the_fit_depends_on_neighbour_ranks_and_directions_only():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.0, 8.0, (400, 3))
    s = spin_waves(p, 6, 25.0, rng)
    base = inference.maxent(p, 3.0 * s, n_c_range=range(1, 13))
    rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    order = rng.permutation(400)
    for p2, v2 in [
        (p[order], s[order]),  # the boids numbered otherwise
        (p @ rotation.T + 5.0, s @ rotation.T),  # the whole flock turned and moved
        (2.5 * p, s * rng.uniform(1.0, 4.0, (400, 1))),  # another length unit, other speeds
    ]:
        fit = inference.maxent(p2, v2, n_c_range=range(1, 13))
        assert fit.n_c == base.n_c
        np.testing.assert_allclose(fit.log_likelihood, base.log_likelihood, rtol=1e-9)
        assert fit.J == pytest.approx(base.J, rel=1e-9)


def test_separate_flocks_are_fitted_as_pieces_with_their_own_directions():
    # Two clumps far apart, each drawn from the model about its own direction: at the true
    # range the neighbour graph is two pieces, each with its own rotation (a zero mode).
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.0, 6.0, (300, 3)), rng.uniform(0.0, 6.0, (300, 3)) + 100.0
    p = np.concatenate([a, b])
    s = np.concatenate([spin_waves(a, 6, 30.0, rng), spin_waves(b, 6, 30.0, rng, mean=(0.0, 1.0, 0.0))])
    fit = inference.maxent(p, s, n_c_range=range(1, 15))
    assert np.all(np.isfinite(fit.log_likelihood))
    assert fit.n_c == 6 and fit.J == pytest.approx(30.0, rel=0.1)
    # Polarization ~0.7 (two directions at right angles), predicted from the pieces' observed means.
    assert fit.polarization == pytest.approx(0.7, abs=0.02)
    assert fit.predicted_polarization == pytest.approx(fit.polarization, abs=0.005)


def test_predicted_correlations_are_binned_as_the_measured_ones():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.0, 8.0, (500, 3))
    s = spin_waves(p, 6, 30.0, rng)
    fit = inference.maxent(p, s, n_c_range=range(1, 10), bins=20)
    measured = metrics.velocity_correlation(p, s, bins=20)
    np.testing.assert_array_equal(fit.pairs, measured.pairs)
    np.testing.assert_allclose(fit.measured, measured.orientation, rtol=1e-12)
    np.testing.assert_allclose(fit.r, measured.r, rtol=1e-12)
    # The model's fluctuations are correlated over the flock and cross zero (their sum is zero).
    assert fit.predicted[0] > 0.2 and np.nanmin(fit.predicted) < 0.0 < fit.predicted_xi < fit.r_max
    box = np.full(3, 8.0)  # through the faces of a periodic box: half the side
    periodic = inference.maxent(p, s, n_c_range=range(1, 10), bins=20, period=box)
    np.testing.assert_array_equal(
        periodic.pairs, metrics.velocity_correlation(p, s, bins=20, period=box).pairs
    )
    assert periodic.r_max == 4.0


def test_bad_arguments_are_refused_with_the_value():
    p, v = np.random.default_rng(0).normal(size=(2, 50, 3))
    cases = [
        (dict(positions=p, velocities=v[:40]), "same boids: 50 and 40"),
        (dict(positions=p, velocities=v, n_c_range=[3, 2]), "increasing whole numbers from 1 to N - 1 = 49"),
        (dict(positions=p, velocities=v, n_c_range=range(1, 60)), "from 1 to 49 (got 50)"),
        (dict(positions=p, velocities=v, bins=0), "bins must be a whole number from 1"),
        (
            dict(positions=p, velocities=np.where(np.arange(50)[:, None] == 7, 0.0, v)),
            "boid 7 has zero velocity",
        ),
        (dict(positions=np.where(p > 1.0, np.nan, p), velocities=v), "must be finite"),
        (dict(positions=p, velocities=np.tile([1.0, 0.0, 0.0], (50, 1))), "the directions do not fluctuate"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            inference.maxent(**kwargs)
    too_many = np.zeros((inference.MAX_BOIDS + 1, 3))
    with pytest.raises(ValueError, match="at most 5,000 boids a snapshot \\(got 5,001\\)"):
        inference.maxent(too_many, too_many + 1.0)
    with pytest.raises(ValueError, match="at least one frame"):
        inference.maxent_frames([])
