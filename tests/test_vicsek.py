"""The Vicsek et al. (1995) model: the alignment rule and the noise against their closed forms,
the order parameter falling with the noise, fast == reference, and the shipped scenes."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params, metrics
from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
from flock3d.scene import SceneError, parse_scene, resolve_scene, shipped_scenes

from conftest import FAST_IS_SLOW


def vicsek(**overrides) -> Params:
    return Params(**{**VICSEK_DEFAULTS, **overrides})


def stepped(params, positions, headings, engine, steps=1):
    flock = Flock(params, positions=np.asarray(positions, float),
                  velocities=np.asarray(headings, float) * params.speed, engine=engine)  # fmt: skip
    flock.step(steps)
    return flock


def test_a_particle_takes_the_mean_direction_of_itself_and_those_within_r(engine):
    # Particle 0 flies +x; within r = 1 fly +y and (-1, 1)/sqrt(2); one at 1.2 (flying -x) is out of reach.
    params = vicsek(noise_eta=0.0, count=4)
    p = [[0, 0, 0], [0.5, 0, 0], [0, -0.9, 0], [-1.2, 0, 0]]
    h = [[1.0, 0, 0], [0, 1.0, 0], [-1 / math.sqrt(2), 1 / math.sqrt(2), 0], [-1.0, 0, 0]]
    flock = stepped(params, p, h, engine)
    total = np.sum(h[:3], axis=0)
    expected = total / np.linalg.norm(total)
    np.testing.assert_allclose(flock.boids[0].forward, expected, atol=1e-12)
    np.testing.assert_allclose(flock.velocities[0], 0.03 * expected, atol=1e-12)  # v0, dt = 1
    np.testing.assert_allclose(flock.positions[0], 0.03 * expected, atol=1e-12)
    np.testing.assert_allclose(flock.boids[3].forward, [-1.0, 0, 0], atol=1e-12)  # alone: straight on


def test_the_old_position_update_moves_a_particle_along_the_heading_it_had(engine):
    # Vicsek et al.'s Eq. 1: x(t + 1) = x(t) + v(t); the new heading is that of the default update.
    params = vicsek(noise_eta=0.0, count=4, position_update="old")
    p = [[0, 0, 0], [0.5, 0, 0], [0, -0.9, 0], [-1.2, 0, 0]]
    h = [[1.0, 0, 0], [0, 1.0, 0], [-1 / math.sqrt(2), 1 / math.sqrt(2), 0], [-1.0, 0, 0]]
    old, new = stepped(params, p, h, engine), stepped(params.replace(position_update="new"), p, h, engine)
    np.testing.assert_allclose(old.positions[0], [0.03, 0, 0], atol=1e-15)
    np.testing.assert_allclose(old.positions[1], [0.5, 0.03, 0], atol=1e-15)
    np.testing.assert_allclose(old.velocities, new.velocities, atol=1e-15)  # the same turn
    np.testing.assert_allclose(new.positions - np.array(p), new.velocities, atol=1e-15)  # dt = 1
    # Two steps: the second move is along the heading the first step chose.
    old.step()
    np.testing.assert_allclose(old.positions[0], [0.03, 0, 0] + new.velocities[0], atol=1e-15)


def test_in_3d_and_through_the_faces_of_the_box(engine):
    params = vicsek(noise_eta=0.0, count=3, dimensions=3, arena_radius=2.0)
    # 0 and 1 are 0.4 apart across the x faces (x = -1.9 and 1.9 in a box of side 4).
    p = [[-1.9, 0, 0], [1.9, 0, 0], [0, 1.5, 1.5]]
    h = [[0, 0, 1.0], [0, 1.0, 0], [1.0, 0, 0]]
    flock = stepped(params, p, h, engine)
    np.testing.assert_allclose(flock.boids[0].forward, np.array([0, 1.0, 1.0]) / math.sqrt(2), atol=1e-12)
    assert np.all(np.abs(flock.positions) < 2.0)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_topological_vicsek_takes_itself_and_its_k_nearest(engine):
    params = vicsek(noise_eta=0.0, count=4, neighbours=1, view_distance=2.0)
    p = [[0, 0, 0], [0.9, 0, 0], [0, 0.5, 0], [0, -1.5, 0]]
    h = [[1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [-1.0, 0, 0]]
    flock = stepped(params, p, h, engine)
    np.testing.assert_allclose(flock.boids[0].forward, [math.sqrt(0.5), -math.sqrt(0.5), 0], atol=1e-12)


def lone_particles(dimensions, eta, engine, n=2000, steps=1):
    """Particles too far apart to see each other: each step shows the noise alone."""
    side = 200.0
    grid = np.stack(np.meshgrid(*[np.arange(-side / 2 + 2.5, side / 2, 5.0)] * 2), -1).reshape(-1, 2)[:n]
    p = np.concatenate([grid, np.zeros((len(grid), 1))], axis=1)
    rng = np.random.default_rng(1)
    h = rng.normal(size=(len(p), 3))
    if dimensions == 2:
        h[:, 2] = 0.0
    h /= np.linalg.norm(h, axis=1, keepdims=True)
    params = vicsek(
        noise_eta=eta, count=len(p), dimensions=dimensions, arena_radius=side / 2, view_distance=0.5
    )
    flock = stepped(params, p, h, engine, steps)
    return h, flock.velocities / params.speed


def test_the_planar_noise_is_uniform_in_plus_minus_eta_over_2(engine):
    eta = 2.5
    before, after = lone_particles(2, eta, engine, n=1600 if engine == "fast" else 200)
    xi = np.arctan2(np.cross(before, after)[:, 2], np.sum(before * after, axis=1))
    assert np.abs(xi).max() <= eta / 2 + 1e-12
    if engine == "fast":  # enough draws for the shape
        assert np.abs(xi).max() > 0.98 * eta / 2
        counts, _ = np.histogram(xi, bins=8, range=(-eta / 2, eta / 2))
        assert counts.min() > 0.75 * len(xi) / 8 and counts.max() < 1.25 * len(xi) / 8
        assert np.var(xi) == pytest.approx(eta**2 / 12, rel=0.1)


def test_the_3d_noise_is_uniform_on_the_cap_within_eta_over_2():
    eta = 2.0
    before, after = lone_particles(3, eta, "fast", n=1600)
    cosines = np.sum(before * after, axis=1)
    low = math.cos(eta / 2)
    assert cosines.min() >= low - 1e-12
    counts, _ = np.histogram(cosines, bins=8, range=(low, 1.0))  # uniform in cos: uniform on the cap
    assert counts.min() > 0.75 * len(cosines) / 8 and counts.max() < 1.25 * len(cosines) / 8
    # The azimuth around the old direction is uniform too: the mean displacement is ~0.
    assert np.linalg.norm(np.mean(after - cosines[:, None] * before, axis=0)) < 0.05


def test_full_noise_scatters_directions_over_the_whole_sphere():
    _, after = lone_particles(3, 2 * math.pi, "fast", n=1600)
    assert np.linalg.norm(after.mean(axis=0)) < 0.08  # uniform on the sphere: mean ~ 1/sqrt(N)
    assert after[:, 2].min() < -0.99 and after[:, 2].max() > 0.99


def order_parameter(eta, seed=1, n=100):
    params = vicsek(noise_eta=eta, count=n, arena_radius=0.5 * math.sqrt(n / 4.0))
    flock = Flock(params, seed=seed)
    flock.step(600)
    values = []
    for _ in range(60):
        flock.step(20)
        values.append(metrics.polarization(flock.velocities))
    return float(np.mean(values))


def test_the_order_parameter_falls_as_the_noise_grows():
    # N = 100 at density 4 (L = 5): v_a ~ 1 with little noise, ~ 1/sqrt(N) with the most.
    v_a = [order_parameter(eta) for eta in (0.1, 1.5, 3.0, 5.0)]
    assert v_a[0] > 0.95
    assert all(a > b + 0.05 for a, b in zip(v_a, v_a[1:], strict=False)), v_a
    assert v_a[-1] < 0.3


def test_speed_stays_v0_and_polarization_is_the_order_parameter():
    flock = Flock(vicsek(noise_eta=1.0, count=200), seed=2)
    flock.step(50)
    speeds = np.linalg.norm(flock.velocities, axis=1)
    np.testing.assert_allclose(speeds, 0.03, atol=1e-15)
    v_a = np.linalg.norm(flock.velocities.sum(axis=0)) / (200 * 0.03)
    assert metrics.polarization(flock.velocities) == pytest.approx(v_a, abs=1e-12)


def test_a_vicsek_flock_starts_uniform_in_its_box():
    flock = Flock(vicsek(count=4000, arena_radius=10.0), seed=0)
    counts, _, _ = np.histogram2d(flock.positions[:, 0], flock.positions[:, 1], bins=4, range=[[-10, 10]] * 2)
    assert counts.min() > 200 and counts.max() < 300  # 250 per quarter-square
    np.testing.assert_array_equal(flock.positions[:, 2], 0.0)


AGREEMENT = {  # density 4 (2D) and 3.2 (3D), as the paper's
    "2d": vicsek(count=64, arena_radius=2.0, noise_eta=1.0),
    "3d": vicsek(count=100, arena_radius=1.5, noise_eta=1.5, dimensions=3),
    "topological": vicsek(count=64, arena_radius=2.0, noise_eta=1.0, neighbours=3, view_distance=1.9),
    "adaptive": vicsek(
        count=64, arena_radius=2.0, noise_eta=1.0, neighbours=3, view_distance=1.9, adaptive=True
    ),
    "cone and turn limit": vicsek(count=64, arena_radius=2.0, noise_eta=0.5, fov=180.0, max_turn_rate=20.0),
    "old position update": vicsek(
        count=100, arena_radius=1.5, noise_eta=1.5, dimensions=3, position_update="old"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT))
def test_fast_equals_reference(name):
    params = AGREEMENT[name]
    fast, ref = Flock(params, seed=4), Flock(params, seed=4, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)


def test_same_seed_same_run_whatever_the_threads():
    import numba

    params = vicsek(count=400, noise_eta=2.0)
    runs = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        flock = Flock(params, seed=9)
        flock.step(30)
        runs.append(flock.positions.copy())
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(*runs)


@pytest.mark.parametrize("name", [s for s in shipped_scenes() if s.startswith("vicsek/")])
def test_the_shipped_vicsek_scenes_are_the_paper_s_model(name):
    p = resolve_scene(name).params
    assert p.model == "vicsek" and p.arena_shape == "periodic" and p.speed == 0.03 and p.dt == 1.0


def test_the_old_position_update_is_the_vicsek_model_s_alone():
    with pytest.raises(SceneError) as caught:
        parse_scene("[vicsek]\nposition_update = 'old'", source="x.toml")
    assert caught.value.problems == [
        "x.toml: vicsek.position_update applies to the vicsek model (got model 'boids')"
    ]


def test_a_scene_with_model_vicsek_takes_the_paper_s_values():
    p = parse_scene('model = "vicsek"\n[noise]\neta = 3.0').params
    assert (p.count, p.arena_radius, p.dimensions, p.speed, p.view_distance) == (400, 5.0, 2, 0.03, 1.0)
    assert p.noise_eta == 3.0
    assert p.count / (2 * p.arena_radius) ** 2 == 4.0  # the paper's density


@pytest.mark.parametrize(
    "text, message",
    [
        ("[arena]\nshape = 'sphere'", "arena.shape must be 'periodic' for the vicsek model"),
        ("[noise]\neta = 7", "noise.eta must be in [0, 6.28319]"),
        ("[perception]\nview_distance = 6", "perception.view_distance must be < arena.radius"),
        ("[[attractors]]\nposition = [0, 0, 0]", "the vicsek model has none"),
        ("[sim]\nupdate = 'sequential'", "sim.update must be 'synchronous' for the vicsek model"),
        ("[vicsek]\nposition_update = 'later'", "vicsek.position_update must be one of 'new', 'old'"),
    ],
)
def test_bad_vicsek_scenes_are_one_line_naming_the_key(text, message):
    with pytest.raises(SceneError) as caught:
        parse_scene('model = "vicsek"\n' + text, source="x.toml")
    assert any(message in p for p in caught.value.problems), caught.value.problems
