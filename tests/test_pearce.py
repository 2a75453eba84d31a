"""The projection model of Pearce et al. (2014): the projection a bird sees against closed forms
(the ends of the dark intervals, two overlapping discs as one interval, a bird hidden behind a
nearer one left out of the alignment, a cap's rim in 3D), in both engines' code; one step of
each engine; fast == reference in a plane and in 3D; its defaults, checks and GPU refusal."""

import math
from pathlib import Path

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core.models import pearce
from flock3d.gpu import refusal


def at_angle(degrees: float, distance: float) -> list[float]:
    """A point in the plane at ``distance`` from the origin in the direction ``degrees``."""
    a = math.radians(degrees)
    return [distance * math.cos(a), distance * math.sin(a), 0.0]


def unit_at(radians: float) -> np.ndarray:
    return np.array([math.cos(radians), math.sin(radians), 0.0])


def fast_view(others, headings, body=1.0, sigma=4, planar=True):
    """delta and the alignment mean of a bird at the origin heading +x, from the fast engine's
    numba function, over the candidates ``others`` (a row of its own, at distance 0, is skipped)."""
    b = np.array([[0.0, 0.0, 0.0], *others], dtype=float)
    h = np.array([[1.0, 0.0, 0.0], *headings], dtype=float)
    out = pearce.projection(b[:, 0].copy(), b[:, 1].copy(), b[:, 2].copy(), h[:, 0].copy(), h[:, 1].copy(),
                            h[:, 2].copy(), len(b), 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, np.inf, -1.0, body,
                            float(sigma), planar)  # fmt: skip
    return np.array(out[:3]), np.array(out[3:])


def reference_view(others, headings, body=1.0, sigma=4, planar=True):
    """The same from the reference engine's functions."""
    d, h = np.array(others, dtype=float), np.array(headings, dtype=float)
    order = pearce.visible_order(d, body, planar, sigma)
    return pearce.seen_boundaries(d, body, planar), h[order].mean(axis=0) if len(order) else np.zeros(3)


VIEWS = [fast_view, reference_view]


@pytest.mark.slow
@pytest.mark.parametrize("view", VIEWS, ids=["fast", "reference"])
def test_delta_is_the_mean_direction_to_the_ends_of_the_intervals(view):
    # Two discs apart in view: at 0 deg and 5 away, at -90 deg and 4 away; four ends.
    a, b = math.asin(1 / 5), math.asin(1 / 4)
    ends = [unit_at(-a), unit_at(a), unit_at(-math.pi / 2 - b), unit_at(-math.pi / 2 + b)]
    delta, mean = view([at_angle(0, 5), at_angle(-90, 4)], [[0, 1, 0], [-1, 0, 0]])
    np.testing.assert_allclose(delta, np.mean(ends, axis=0), atol=1e-12)
    np.testing.assert_allclose(mean, [-0.5, 0.5, 0.0], atol=1e-12)  # both are seen


@pytest.mark.parametrize("view", VIEWS, ids=["fast", "reference"])
def test_two_discs_overlapping_in_view_make_one_interval_with_two_ends(view):
    # [-14.5, 14.5] deg and [10.4, 29.6] deg: one dark interval from -asin(1/4) to 20 + asin(1/6) deg.
    delta, _ = view([at_angle(0, 4), at_angle(20, 6)], [[0, 1, 0], [0, 1, 0]])
    ends = [unit_at(-math.asin(1 / 4)), unit_at(math.radians(20) + math.asin(1 / 6))]
    np.testing.assert_allclose(delta, np.mean(ends, axis=0), atol=1e-12)
    # A third disc inside the union changes nothing; one round it all darkens the whole circle.
    inner, _ = view([at_angle(0, 4), at_angle(20, 6), at_angle(12, 9)], [[0, 1, 0]] * 3)
    np.testing.assert_allclose(inner, delta, atol=1e-12)
    ring = [at_angle(angle, 1.5) for angle in range(0, 360, 30)]  # each covers +-41.8 deg
    dark, _ = view(ring, [[0, 1, 0]] * len(ring))
    np.testing.assert_allclose(dark, 0.0, atol=1e-12)


@pytest.mark.parametrize("view", VIEWS, ids=["fast", "reference"])
def test_a_bird_hidden_behind_a_nearer_one_is_not_in_the_alignment(view):
    # C, 10 away straight behind A (4 away), is hidden; D at 60 deg is seen.
    others = [at_angle(0, 4), at_angle(0, 10), at_angle(60, 5)]
    delta, mean = view(others, [[0, 1, 0], [1, 0, 0], [0, -1, 0]])
    np.testing.assert_allclose(mean, [0.0, 0.0, 0.0], atol=1e-12)  # A and D: (0, 1) and (0, -1)
    ends = [unit_at(-math.asin(1 / 4)), unit_at(math.asin(1 / 4))]
    ends += [unit_at(math.radians(60) - math.asin(1 / 5)), unit_at(math.radians(60) + math.asin(1 / 5))]
    np.testing.assert_allclose(delta, np.mean(ends, axis=0), atol=1e-12)  # C adds no boundary
    _, only_a = view(others, [[0, 1, 0], [1, 0, 0], [0, -1, 0]], sigma=1)
    np.testing.assert_allclose(only_a, [0.0, 1.0, 0.0], atol=1e-12)
    # E, 12 away at 0 deg, has its centre behind F (11 away at 2 deg) but peeks out on one side.
    _, both = view([at_angle(2, 11), at_angle(0, 12)], [[0, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(both, [0.5, 0.5, 0.0], atol=1e-12)


@pytest.mark.parametrize("view", VIEWS, ids=["fast", "reference"])
def test_in_3d_a_caps_rim_points_back_along_it_and_hidden_caps_are_left_out(view):
    # One cap 5 away: its rim's points, evenly spread round it, average to cos(alpha) u.
    delta, mean = view([[0.0, 0.0, 5.0]], [[0.0, 1.0, 0.0]], planar=False)
    np.testing.assert_allclose(delta, [0.0, 0.0, math.sqrt(1 - 1 / 25)], atol=1e-12)
    # Two caps opposite each other: their boundaries cancel. A third straight behind one of them
    # adds none and is not in the alignment.
    others = [[0.0, 0.0, 5.0], [0.0, 0.0, -5.0], [0.0, 0.0, 20.0]]
    delta, mean = view(others, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], planar=False)
    np.testing.assert_allclose(delta, 0.0, atol=1e-12)
    np.testing.assert_allclose(mean, [0.5, 0.5, 0.0], atol=1e-12)
    # Each rim point weighs its share of its rim's length, sin(alpha): a near cap outweighs a far one.
    near_far, _ = view([[3.0, 0.0, 0.0], [0.0, 9.0, 0.0]], [[0.0, 1.0, 0.0]] * 2, planar=False)
    s3, s9 = 1 / 3, 1 / 9
    expected = s3 * math.sqrt(1 - s3**2) * np.array([1, 0, 0]) + s9 * math.sqrt(1 - s9**2) * np.array(
        [0, 1, 0]
    )
    np.testing.assert_allclose(near_far, expected / (s3 + s9), atol=1e-12)


@pytest.mark.slow
def test_one_step_of_each_engine_steers_along_delta(engine):
    # phi_a = phi_n = 0: the bird at the origin turns to delta (no turn limit) and moves at v0.
    params = Params(
        model="pearce", count=3, dimensions=2, speed=1.0, dt=1.0, pearce_phi_a=0.0, pearce_phi_n=0.0
    )
    positions = [[0.0, 0.0, 0.0], at_angle(0, 5), at_angle(-90, 4)]
    flock = Flock(params, positions=positions, velocities=[[1, 0, 0], [0, 1, 0], [-1, 0, 0]], engine=engine)
    flock.step()
    a, b = math.asin(1 / 5), math.asin(1 / 4)
    delta = np.mean([unit_at(-a), unit_at(a), unit_at(-math.pi / 2 - b), unit_at(-math.pi / 2 + b)], axis=0)
    np.testing.assert_allclose(flock.velocities[0], delta / np.linalg.norm(delta), atol=1e-12)
    np.testing.assert_allclose(flock.positions[0], delta / np.linalg.norm(delta), atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("dimensions", [2, 3])
@pytest.mark.parametrize(
    "overrides",
    [{}, {"fov": 270.0, "view_distance": 12.0, "max_turn_rate": 40.0, "pearce_sigma": 2, "pearce_body": 0.7}],
    ids=["all-to-all", "cone-metric-turn-limit"],
)
def test_fast_and_reference_agree(dimensions, overrides):
    params = Params(model="pearce", count=40, dimensions=dimensions, speed=1.0, dt=1.0, init_radius=8.0,
                    pearce_phi_p=0.2, **overrides)  # fmt: skip
    fast, reference = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
    fast.step(6)
    reference.step(6)
    np.testing.assert_allclose(fast.positions, reference.positions, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, reference.velocities, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(fast.velocities, axis=1), 1.0, atol=1e-12)  # v0 = 1


def test_its_defaults_apply_however_params_is_built():
    p = Params(model="pearce")
    assert (p.fov, p.max_turn_rate, p.view_distance, p.arena_shape) == (360.0, math.inf, math.inf, "none")
    assert (p.pearce_phi_p, p.pearce_phi_a, p.pearce_phi_n, p.pearce_body, p.pearce_sigma) == (
        0.03, 0.8, 0.17, 1.0, 4)  # fmt: skip
    assert Params().replace(model="pearce").view_distance == math.inf


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"neighbours": 7}, "neighbours must be unset for the pearce model"),
        ({"pearce_sigma": 0}, "pearce_sigma must be a whole number, 1 to 100,000,000 (got 0)"),
        (
            {"pearce_phi_p": 0.0, "pearce_phi_a": 0.0, "pearce_phi_n": 0.0},
            "must not be 0 with phi_p and phi_a 0",
        ),
        ({"pearce_body": 0.0}, "pearce_body must be > 0"),
        ({"arena_shape": "sphere"}, "for the pearce model"),
    ],
)
def test_its_checks(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Params(model="pearce", **overrides)


def test_a_scene_turns_it_on_and_the_gpu_engine_refuses_it_in_one_line():
    from flock3d.scene import parse_scene

    scene = parse_scene('model = "pearce"\n[pearce]\nphi_p = 0.1\nsigma = 6\n', "x.toml")
    p = scene.params
    assert (p.model, p.pearce_phi_p, p.pearce_sigma, p.dimensions, p.count) == ("pearce", 0.1, 6, 2, 200)
    line = refusal(p)
    assert "the pearce model" in line and line.endswith("yet (engine 'fast' does)") and "\n" not in line


@pytest.mark.parametrize("name", ["planar", "3d"])
def test_its_scenes_are_the_papers_model_and_the_gpu_step_refuses_them_in_one_line(name):
    from helpers import assert_one_line_failure, flock3d

    from flock3d.scene import resolve_scene

    path = Path(__file__).resolve().parents[1] / "scenes" / "pearce" / f"{name}.toml"
    p = resolve_scene(str(path)).params
    assert (p.model, p.arena_shape, p.view_distance, p.fov, p.max_turn_rate) == (
        "pearce", "none", math.inf, 360.0, math.inf)  # fmt: skip
    assert (p.pearce_phi_p, p.pearce_phi_a, p.pearce_phi_n, p.pearce_body, p.pearce_sigma) == (
        0.03,
        0.8,
        0.17,
        1,
        4,
    )
    assert (p.speed, p.dt, p.dimensions) == (1.0, 1.0, 2 if name == "planar" else 3)
    out = flock3d("debug", "step", path, "--engine", "gpu")
    assert_one_line_failure(out, "the GPU engine does not run the pearce model (its projection takes every ")
