"""The topological maximum-entropy fit (flock3d.inference, `flock3d infer maxent`).

Snapshots drawn from the model itself give back its range exactly; boids that align with
their k nearest give back k; any H5MD file with positions and velocities can be fitted.
"""

import gc
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import altered_copy, assert_clean_failure, flock3d, process_env, small_recording

import flock3d as f3d
from flock3d import inference, metrics
from flock3d.core.quaternion import forward
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.metrics.periodic import nearest_k
from flock3d.scene import Scene


def laplacian(positions, n_c, box=None):
    """Lambda of the symmetrized graph of each point's n_c nearest, written out plainly."""
    n = len(positions)
    idx, _ = nearest_k(positions, n_c, box)
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_predicted_correlations_are_those_of_the_model():
    # Averaged over many snapshots drawn from the model (same birds, range and coupling), the
    # measured <ds_i . ds_j> at each distance is the predicted one, and so is the polarization.
    rng = np.random.default_rng(6)
    p = rng.uniform(0.0, 7.0, (400, 3))
    measured, predicted, order = [], [], []
    for _ in range(30):
        s = spin_waves(p, 7, 30.0, rng)
        fit = inference.maxent(p, s, n_c_range=[7], bins=10)
        c0 = np.mean(np.sum((s - s.mean(axis=0)) ** 2, axis=1))
        measured.append(fit.measured * c0)
        predicted.append(fit.predicted * c0)
        order.append((fit.polarization, fit.predicted_polarization))
    measured, predicted = np.mean(measured, axis=0), np.mean(predicted, axis=0)
    # The first bins (closest pairs, most correlated) to 15%, the rest to 15% of the first.
    np.testing.assert_allclose(predicted[:3], measured[:3], rtol=0.15)
    np.testing.assert_allclose(predicted, measured, atol=0.15 * measured[0])
    np.testing.assert_allclose(*np.mean(order, axis=0), atol=0.001)


def test_bad_arguments_are_refused_with_the_value():
    p, v = np.random.default_rng(0).normal(size=(2, 50, 3))
    cases = [
        (dict(positions=p, velocities=v[:40]), "must hold as many boids, got 50 and 40"),
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


# -- recordings: flock3d's own, and H5MD files of other programs -----------------------------------

SIGMA = 15.0  # units/s^2: a random kick each step, the only source of fluctuations


@f3d.force
def jitter(position, velocity, time):
    """A kick uniform in [-SIGMA/2, SIGMA/2] per axis, a hash of where and when (so reproducible)."""
    h = np.sin(position * np.array([12989.8, 78233.0, 37719.0]) + time * np.array([311.7, 173.3, 257.9]))
    u = h * 43758.5453
    return SIGMA * (u - np.floor(u) - 0.5)


def aligning_boids(path, k, seed, n=500, settle=1200, frames=8, every=120):
    """Record boids that only align, with their k nearest, and are kicked at random.

    Alignment 10 /s (a sixth of the gap closed per step of 1/60 s), no separation or
    cohesion, constant speed 1, no turn limit, in a periodic box at density 1, started
    heading one way: the flock stays polarized (P ~ 0.96 at k = 6).
    """
    side = n ** (1 / 3)
    params = f3d.Params(count=n, arena_shape="periodic", arena_radius=side / 2, fov=360.0, neighbours=k,
                        view_distance=3.0, separation=0.0, cohesion=0.0, alignment=10.0, min_speed=1.0,
                        max_speed=1.0, max_turn_rate=float("inf"))  # fmt: skip
    positions = np.random.default_rng(seed).uniform(-side / 2, side / 2, (n, 3))
    flock = f3d.Flock(
        params, positions=positions, velocities=np.tile([1.0, 0.0, 0.0], (n, 1)), forces=[jitter]
    )
    flock.step(settle)
    with TrajectoryWriter(path, n, Scene(params, seed=seed), every=every) as writer:
        for _ in range(frames):
            flock.step(every)
            writer.append(flock.state)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("k", [4, 6, 8])
def test_boids_aligning_with_their_k_nearest_give_back_k(tmp_path, k):
    # Measured over seeds 1 to 3, 8 snapshots of 500 boids each: the mean n_c 4.00 at k = 4, 5.88 to
    # 6.38 at k = 6, 8.00 to 8.25 at k = 8 (each snapshot within 2 of k); 9.88 to 11.0 at k = 10, where
    # the likelihood is flatter. The tolerance is 0.5 (this seed: 4.00, 6.12, 8.12).
    path = aligning_boids(tmp_path / "aligning.h5", k, seed=3)
    out = flock3d("infer", "maxent", path, "--frames", "::", "--n-max", "16", "--no-progress")
    assert out.returncode == 0, out.stderr
    n_c = float(re.search(r"n_c = ([\d.]+) ±", out.stdout)[1])
    assert abs(n_c - k) <= 0.5, out.stdout
    assert "8 of 8 frames" in out.stdout and "periodic box" in out.stdout


def h5md_file(path, positions, velocities, group="birds", box=None, steps=None):
    """An H5MD file as another program writes it: no flock3d scene, no orientations."""
    frames = len(positions)
    with h5py.File(path, "w") as f:
        f.create_group("h5md").attrs["version"] = np.array([1, 1])
        g = f.create_group(f"particles/{group}")
        step = np.arange(frames) * 10 if steps is None else steps
        for name, value in (("position", positions), ("velocity", velocities)):
            g[f"{name}/value"] = value
            g[f"{name}/step"] = step
            g[f"{name}/time"] = step * 0.5
        b = g.create_group("box")
        b.attrs["dimension"] = positions.shape[2]
        if box is None:
            b.attrs["boundary"] = np.array([b"none"] * positions.shape[2])
        else:
            b.attrs["boundary"] = np.array([b"periodic"] * positions.shape[2])
            b["edges"] = np.asarray(box, dtype=float)
    return path


def model_frames(n_c, frames=4, n=400, seed=7, box=None):
    """Frames of n points uniform in a cube of side 7, moving as the model of range n_c draws them
    (neighbours through the faces when ``box``)."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0.0, 7.0, (frames, n, 3))
    velocities = np.stack([2.0 * spin_waves(p, n_c, 30.0, rng, box=box) for p in positions])
    return positions, velocities


def test_h5md_files_of_other_programs_are_read_and_fitted(tmp_path):
    positions, velocities = model_frames(5)
    path = h5md_file(tmp_path / "birds.h5", positions, velocities)
    with Trajectory(path) as traj:
        assert (traj.scene, traj.n_frames, traj.n_boids, traj.every, traj.period) == (None, 4, 400, 10, None)
        assert traj.group == "particles/birds" and traj.dimensions == 3
        np.testing.assert_array_equal(traj.times, [0.0, 5.0, 10.0, 15.0])
        state = traj.frame(2)
        np.testing.assert_array_equal(state.positions, positions[2])
        unit = velocities[2] / np.linalg.norm(velocities[2], axis=1, keepdims=True)
        np.testing.assert_allclose(forward(state.orientations), unit, atol=1e-12)  # facing the motion
    out = flock3d("infer", "maxent", path, "--frames", "::", "--n-max", "15", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "n_c = 5.00 ± 0.00 (per frame 5 to 5)" in out.stdout, out.stdout
    assert "H5MD group particles/birds" in out.stdout
    # Other commands read flock3d recordings only, and say which command reads this one.
    assert_clean_failure(flock3d("metrics", path), "from another program", "flock3d infer maxent")


def test_a_periodic_box_of_another_program_is_measured_through_its_faces(tmp_path):
    positions, velocities = model_frames(5, frames=2)
    path = h5md_file(tmp_path / "box.h5", positions, velocities, box=[7.0, 7.0, 7.0])
    with Trajectory(path) as traj:
        np.testing.assert_array_equal(traj.period, [7.0, 7.0, 7.0])
    planar = h5md_file(
        tmp_path / "planar.h5", positions[..., :2], velocities[..., :2], box=np.diag([7.0, 7.0])
    )
    with Trajectory(planar) as traj:
        assert traj.dimensions == 2
        np.testing.assert_array_equal(traj.period, [7.0, 7.0, 0.0])
        assert np.all(traj.frame(0).positions[:, 2] == 0.0)


def test_a_file_written_by_mdanalysis_is_fitted_as_written(tmp_path):
    mda = pytest.importorskip("MDAnalysis")  # in the test extra
    from MDAnalysis.coordinates.memory import MemoryReader

    positions, velocities = model_frames(6, frames=3, box=np.full(3, 7.0))
    universe = mda.Universe.empty(positions.shape[1], trajectory=False)
    box = np.array([7.0, 7.0, 7.0, 90.0, 90.0, 90.0])
    universe.load_new(positions.astype(np.float32), format=MemoryReader,
                      velocities=velocities.astype(np.float32), dimensions=box, dt=0.5)  # fmt: skip
    path = tmp_path / "mda.h5md"
    with mda.Writer(str(path), n_atoms=positions.shape[1], velocities=True, convert_units=False) as writer:
        for _ in universe.trajectory:
            writer.write(universe)
    del writer  # its datasets keep the file open (and locked) until they are freed
    gc.collect()
    with Trajectory(path) as traj:
        assert traj.group == "particles/trajectory" and traj.n_frames == 3
        np.testing.assert_array_equal(traj.period, [7.0, 7.0, 7.0])
        np.testing.assert_array_equal(traj.frame(1).positions, positions[1].astype(np.float32))
    out = flock3d("infer", "maxent", path, "--frames", "::", "--n-max", "12", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "n_c = 6.00 ± 0.00" in out.stdout, out.stdout


def test_the_command_refuses_bad_input_in_one_line(tmp_path):
    positions, velocities = model_frames(5, frames=2, n=50)
    good = h5md_file(tmp_path / "good.h5", positions, velocities)
    still = velocities.copy()
    still[1, 3] = 0.0
    ours = small_recording(tmp_path / "ours.h5")
    two = tmp_path / "two.h5"
    h5md_file(two, positions, velocities, group="starlings")
    with h5py.File(two, "a") as f:
        f["particles/jackdaws/position/value"] = positions
    cases = [
        (["maxent", tmp_path / "missing.h5"], "no such file"),
        (["maxent", good, "--frames", "1:2:0"], "STEP must be >= 1"),
        (["maxent", good, "--frames", "x"], "expected FIRST:LAST[:STEP]"),
        (["maxent", good, "--frames", "5:"], "--frames selects none of the 2 frames"),
        (["maxent", good, "--n-max", "50"], "--n-max must be below the number of boids, 50 (got 50)"),
        (["maxent", good, "--csv", tmp_path / "c.txt"], "--csv must end in .csv"),
        (
            ["maxent", h5md_file(tmp_path / "still.h5", positions, still), "--frames", "::"],
            "boid 3 has zero velocity",
        ),
        (
            ["maxent", two],
            "groups (jackdaws, starlings) and no flock3d scene to say which is the flock; `flock3d "
            "infer maxent --group NAME` or Trajectory(path, group=NAME) reads one",
        ),
        (["maxent", two, "--group", "gulls"], "no particles group 'gulls' with positions"),
        (["maxent", two, "--group", "jackdaws"], "no particles/jackdaws/velocity/value"),
        (
            ["maxent", ours, "--group", "predators"],
            "a flock3d recording, whose boids are the particles group 'flock'",
        ),
        (["bayes", good], "invalid choice: 'bayes'"),
    ]
    for args, message in cases:
        out = flock3d("infer", *args)
        assert_clean_failure(out, message)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = flock3d("infer", "maxent", ours, "--no-progress")  # a flock3d recording says its arena
    assert out.returncode == 0 and "20 boids in a sphere of radius 30 (scene " in out.stdout, out.stdout
    tables = ("--csv", tmp_path / "c.csv", "--likelihood", tmp_path / "l.csv")
    out = flock3d("infer", "maxent", two, "--group", "starlings", "--no-progress", *tables)
    assert out.returncode == 0, out.stderr
    header = (tmp_path / "c.csv").read_text().splitlines()[0]
    assert header == "bin,r,pairs,measured,predicted"
    assert len((tmp_path / "l.csv").read_text().splitlines()) == 1 + 40


def test_a_flock_outside_the_spin_wave_assumption_is_told_so(tmp_path):
    """A disordered flock fits anyway, but not as polarized; an ordered one is; and the command
    line warns in one line for the first only."""
    rng = np.random.default_rng(4)
    p = rng.uniform(0.0, 10.0, (200, 3))
    ordered = inference.maxent(p, spin_waves(p, 5, 40.0, rng), n_c_range=range(1, 9))
    disordered = inference.maxent(p, rng.normal(size=(200, 3)), n_c_range=range(1, 9))
    assert ordered.polarized and ordered.fluctuation < 0.1
    assert not disordered.polarized and disordered.fluctuation > 0.8
    path = tmp_path / "swarm.h5"
    from flock3d.core.state import state_from_arrays

    scene = f3d.Scene(params=f3d.Params(count=200, arena_shape="periodic", arena_size=(12.0, 12.0, 12.0)))
    with TrajectoryWriter(path, 200, scene, every=1) as writer:
        for _ in range(3):
            writer.append(state_from_arrays(p, rng.normal(size=(200, 3))))
    out = flock3d("infer", "maxent", path, "--frames", "::", "--n-max", "8", "--no-progress")
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "not polarized" in line]
    assert len(warnings) == 1 and warnings[0].startswith("flock3d infer: warning:"), out.stderr


def test_the_readmes_flock3d_inference_and_opacity_work_after_a_plain_import():
    # `flock3d.inference.maxent(...)` after `import flock3d` was an AttributeError; both modules
    # are still loaded only when first asked for.
    code = (
        "import sys, flock3d\n"
        "assert 'flock3d.inference' not in sys.modules and 'flock3d.opacity' not in sys.modules\n"
        "print(flock3d.inference.maxent.__name__, flock3d.opacity.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=process_env()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["maxent", "flock3d.opacity"]


def test_a_frame_the_fit_cannot_take_is_named_with_its_time(tmp_path):
    def spoil(f):  # one coordinate of frame 5 not a number
        f["particles/flock/position/value"][5, 0, 0] = np.nan

    recording = altered_copy(small_recording(tmp_path / "r.h5", frames=8), tmp_path / "nan.h5", spoil)
    out = flock3d("infer", "maxent", recording, "--frames", "4:7", "--no-progress")
    assert_clean_failure(out, "frame 5 (t = 0.", "holds NaN, infinite or huge positions or velocities")
    out = flock3d("infer", "maxent", recording, "--frames", "0:4", "--n-max", "8", "--no-progress")
    assert out.returncode == 0, out.stderr  # the others fit
