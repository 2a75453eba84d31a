"""The Cucker-Smale model (Cucker & Smale 2007): its theorem (for beta < 1/2 the velocities of an
all-to-all flock converge to their mean from any start, and the total momentum is conserved), one
step against its closed form, fast == reference, its defaults and its checks."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params


def cs(**overrides) -> Params:
    """A small all-to-all flock in open space (the model's defaults), K = 2, beta = 0.25."""
    return Params(**{"model": "cucker-smale", "count": 8, "cs_coupling": 2.0, "cs_beta": 0.25, "dt": 0.1,
                     "init_radius": 5.0, **overrides})  # fmt: skip


def spread(velocities: np.ndarray) -> float:
    """The largest distance of a velocity from the mean velocity."""
    return float(np.max(np.linalg.norm(velocities - velocities.mean(axis=0), axis=1)))


def starts():
    """Starts to converge from: random ones, and two halves flying apart head on."""
    rng = np.random.default_rng(7)
    for _ in range(2):
        yield rng.uniform(-5.0, 5.0, (8, 3)), rng.uniform(-6.0, 6.0, (8, 3))
    apart = np.array([[x, 0.0, 0.0] for x in (-4, -3, -2, -1, 1, 2, 3, 4)], dtype=float)
    yield apart, np.sign(apart) * np.array([5.0, 0.0, 0.0]) + np.array([0.0, 0.3, 0.0])


@pytest.mark.parametrize("start", list(starts()), ids=["random-a", "random-b", "apart"])
def test_for_beta_below_one_half_the_velocities_converge_and_the_momentum_is_conserved(start):
    positions, velocities = start
    flock = Flock(cs(), positions=positions, velocities=velocities)
    momentum = velocities.sum(axis=0)
    spreads = [spread(flock.velocities)]
    for _ in range(30):
        flock.step(20)
        spreads.append(spread(flock.velocities))
        np.testing.assert_allclose(flock.velocities.sum(axis=0), momentum, rtol=0.0, atol=1e-9)
    # The spread never grows (the discrete step contracts it for dt K < 1) and falls to rounding.
    assert all(b <= a * (1.0 + 1e-9) + 1e-12 for a, b in zip(spreads, spreads[1:], strict=False))
    assert spreads[-1] < 1e-9 * spreads[0]
    np.testing.assert_allclose(flock.velocities, np.broadcast_to(momentum / 8, (8, 3)), atol=1e-8)


def test_one_step_is_the_mean_of_the_weighted_velocity_differences(engine):
    # Two individuals 3 apart: a_0 = (1/2) K (1 + 9)^-beta (v_1 - v_0), and a_1 = -a_0.
    params = cs(count=2, cs_coupling=1.5, cs_beta=0.4, dt=0.05)
    v = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    flock = Flock(params, positions=[[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]], velocities=v, engine=engine)
    flock.step()
    a0 = 0.5 * 1.5 * 10.0**-0.4 * (v[1] - v[0])
    np.testing.assert_allclose(flock.velocities, [v[0] + 0.05 * a0, v[1] - 0.05 * a0], atol=1e-14)
    np.testing.assert_allclose(flock.positions[1], [3.0, 0.0, 0.0] + 0.05 * (v[1] - 0.05 * a0), atol=1e-14)


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # all-to-all in open space
        # metric, in a cone, with a turn limit, planar, in a periodic box
        {"view_distance": 3.0, "fov": 270.0, "max_turn_rate": 200.0, "dimensions": 2,
         "arena_shape": "periodic", "arena_radius": 4.0, "init_radius": None, "count": 12},
    ],
    ids=["all-to-all", "metric-periodic"],
)  # fmt: skip
def test_fast_and_reference_agree(overrides):
    params = cs(**overrides)
    fast, reference = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
    fast.step(40)
    reference.step(40)
    np.testing.assert_allclose(fast.positions, reference.positions, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, reference.velocities, rtol=0.0, atol=1e-9)


def test_its_defaults_apply_however_params_is_built():
    p = Params(model="cucker-smale")
    assert (p.fov, p.max_turn_rate, p.view_distance, p.arena_shape) == (360.0, math.inf, math.inf, "none")
    assert Params(model="cucker-smale", fov=200.0).fov == 200.0  # unless the caller sets them
    assert Params().replace(model="cucker-smale").view_distance == math.inf
    assert Params(model="cucker-smale").replace(model="boids").fov == Params().fov


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"neighbours": 6}, "neighbours must be unset for the cucker-smale model"),
        ({"arena_shape": "sphere"}, "must be 'none' (open space) or 'periodic' for the cucker-smale model"),
        ({"cs_beta": -1.0}, "cs_beta must be in [0, 100]"),
        ({"wind": (1.0, 0.0, 0.0)}, "is a feature of the boids model"),
    ],
)
def test_its_checks(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        cs(**overrides)


def test_a_scene_turns_it_on():
    from flock3d.scene import parse_scene

    scene = parse_scene('model = "cucker-smale"\n[cucker_smale]\ncoupling = 3.0\nbeta = 0.1\n', "x.toml")
    p = scene.params
    assert (p.model, p.cs_coupling, p.cs_beta, p.view_distance) == ("cucker-smale", 3.0, 0.1, math.inf)
