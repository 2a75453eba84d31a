"""Each classic scene that reproduces a source write-up behaves as a literal re-implementation
of that source (tests/literal_sources.py), step for step, from the same initial state."""

import literal_sources as literal
import numpy as np
import pytest
from pyquaternion import Quaternion

from flock3d import Flock
from flock3d.scene import resolve_scene


def start(name, count=None):
    scene = resolve_scene(f"classics/{name}")
    params = scene.params if count is None else scene.params.replace(count=count)
    flock = Flock(params, scene.seed)
    return flock, flock.positions.copy(), flock.velocities.copy()


def close(a, b, scale):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * scale)


@pytest.mark.slow
def test_raylib_2d_is_the_raylib_source():
    flock, p, v = start("raylib-2d", count=120)
    flock.step(25)
    p2, v2 = p[:, :2].copy(), v[:, :2].copy()
    literal.raylib(
        p2,
        v2,
        25,
        sep_range=20.0,
        visual_range=60.0,
        avoid=0.05,
        align=0.05,
        centre=0.005,
        turn=8.0,
        margin=100.0,
        width=800.0,
        height=800.0,
        min_speed=100.0,
        max_speed=300.0,
        frame_time=1 / 60,
    )
    close(flock.positions[:, :2], p2, 800)
    close(flock.velocities[:, :2], v2, 300)
    # It is not the synchronous model: updated together, the boids would differ.
    together = Flock(flock.params.replace(update="synchronous"), positions=p, velocities=v)
    together.step(1)
    p1, v1 = p[:, :2].copy(), v[:, :2].copy()
    literal.raylib(
        p1,
        v1,
        1,
        sep_range=20.0,
        visual_range=60.0,
        avoid=0.05,
        align=0.05,
        centre=0.005,
        turn=8.0,
        margin=100.0,
        width=800.0,
        height=800.0,
        min_speed=100.0,
        max_speed=300.0,
        frame_time=1 / 60,
    )
    assert np.abs(together.velocities[:, :2] - v1).max() > 1e-3


@pytest.mark.slow
def test_canvas_tutorial_2d_is_the_javascript_tutorial():
    flock, p, v = start("canvas-tutorial-2d")
    flock.step(40)
    p2, v2 = p[:, :2].copy(), v[:, :2].copy()
    literal.canvas_tutorial(
        p2,
        v2,
        40,
        view_radius=50.0,
        view_angle=1.5 * np.pi,
        max_speed=100.0,
        width=720.0,
        height=400.0,
        elapsed=1 / 60,
    )
    close(flock.positions[:, :2], p2, 720)
    close(flock.velocities[:, :2], v2, 100)


@pytest.mark.slow
def test_pseudocode_3d_is_the_pseudocode():
    flock, p, v = start("pseudocode-3d", count=30)
    flock.step(20)
    literal.pseudocode(p, v, 20)
    close(flock.positions, p, 200)
    close(flock.velocities, v, 0.033)


@pytest.mark.slow
def test_unity_3d_is_the_unity_source_with_the_drawn_rotation_lagging():
    flock, p, v = start("unity-3d", count=150)
    rotations = [Quaternion(q) for q in flock.orientations]
    flock.step(30)
    literal.unity(
        p,
        v,
        rotations,
        30,
        fov_distance=5.0,
        fov_angle=135.0,
        min_separation=2.0,
        repulsion=0.5,
        matching=1 / 12,
        centering=1 / 60,
        radius=30.0,
        confinement=0.2,
        min_speed=3.0,
        max_speed=6.0,
        delta_time=1 / 60,
        degrees_per_second=90.0,
    )
    close(flock.positions, p, 30)
    close(flock.velocities, v, 6)
    q = np.array([r.q for r in rotations])
    same_sign = np.sign(np.sum(q * flock.orientations, axis=1))[:, None]
    close(flock.orientations, q * same_sign, 1)
    # The motion turned faster than the drawn boids: forward and velocity part ways.
    forward = np.array([Quaternion(o).rotate([0, 0, 1.0]) for o in flock.orientations])
    heading = flock.velocities / np.linalg.norm(flock.velocities, axis=1, keepdims=True)
    assert np.max(np.degrees(np.arccos(np.clip(np.sum(forward * heading, axis=1), -1, 1)))) > 5.0


@pytest.mark.slow
def test_castor_2d_is_the_castor_program():
    flock, p, v = start("castor-2d")
    flock.step(30)
    p2, v2 = p[:, :2].copy(), v[:, :2].copy()
    literal.castor(
        p2,
        v2,
        30,
        border=(50.0, 50.0),
        margin=2.0,
        turn_factor=1.0,
        max_speed=1.5,
        separation_distance=2.0,
        separation_factor=0.05,
        alignment_distance=7.5,
        alignment_factor=0.10,
        cohesion_distance=8.5,
        cohesion_factor=0.03,
    )
    close(flock.positions[:, :2], p2, 50)
    close(flock.velocities[:, :2], v2, 2)


@pytest.mark.parametrize(
    "name", ["raylib-2d", "canvas-tutorial-2d", "pseudocode-3d", "unity-3d", "castor-2d"]
)
def test_each_source_scene_says_what_it_reproduces_and_what_it_chose(name):
    scene = resolve_scene(f"classics/{name}")
    assert scene.text.startswith("# Reproduces, literally:")
    assert "chosen here" in scene.text.lower() or "the program's values" in scene.text.lower()
