"""The public API: Flock construction, live params, Boid views."""

import math

import numpy as np
import pytest
from pyquaternion import Quaternion

from flock3d import Boid, Flock, Params
from flock3d.core import quaternion

from conftest import hand_flock


def test_random_start_follows_the_spec():
    params = Params(count=5000, arena_radius=40.0, arena_center=(1.0, 2.0, 3.0), min_speed=2.0, max_speed=5.0)
    flock = Flock(params, seed=0)
    r = np.linalg.norm(flock.positions - np.array(params.arena_center), axis=1)
    assert r.max() <= 20.0  # init radius defaults to 0.5 R
    # Uniform in the ball: the fraction within half the radius is 1/8.
    assert abs(np.mean(r < 10.0) - 0.125) < 0.02
    speeds = np.linalg.norm(flock.velocities, axis=1)
    assert speeds.min() >= 2.0 and speeds.max() <= 5.0
    # Uniform directions: their mean is near zero.
    assert np.linalg.norm((flock.velocities / speeds[:, None]).mean(axis=0)) < 0.05
    np.testing.assert_allclose(
        quaternion.forward(flock.orientations), flock.velocities / speeds[:, None], atol=1e-12
    )
    assert flock.time == 0.0 and flock.step_count == 0 and len(flock) == 5000


def test_given_positions_and_velocities():
    p = np.array([[0.0, 0, 0], [1, 2, 3]])
    v = np.array([[0.0, 0, 3], [4, 0, 0]])
    flock = Flock(Params(count=99), positions=p, velocities=v)
    assert len(flock) == 2 and flock.params.count == 2
    np.testing.assert_array_equal(flock.positions, p)
    assert flock.positions is not p  # copied
    np.testing.assert_allclose(flock.boids[1].forward, [1, 0, 0], atol=1e-15)


def test_given_orientations_reaim_velocities():
    q = Quaternion(axis=[0, 1, 0], angle=math.pi / 2)  # forward +Z -> +X
    flock = Flock(Params(), positions=[[0.0, 0, 0]], velocities=[[0.0, 0, 5]], orientations=[q.elements])
    np.testing.assert_allclose(flock.velocities[0], [5, 0, 0], atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(positions=np.zeros((3, 2))), "positions must have shape"),
        (dict(positions=np.zeros((3, 3)), velocities=np.zeros((2, 3))), "velocities has shape"),
        (dict(positions=[[0, 0, np.nan]]), "finite"),
        (dict(positions=np.zeros((1, 3)), orientations=np.zeros((1, 4))), "non-zero"),
        (dict(engine="cuda"), "engine"),
    ],
)
def test_bad_arrays_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Flock(Params(count=3), **kwargs)


def test_params_can_be_replaced_between_steps_without_reset():
    flock = Flock(Params(count=200), seed=1)
    flock.step(10)
    before = flock.positions.copy()
    flock.params = flock.params.replace(fov=90.0, max_turn_rate=30.0, arena_radius=50.0, separation=1.0)
    assert flock.step_count == 10
    np.testing.assert_array_equal(flock.positions, before)
    flock.step(5)
    assert flock.params.fov == 90.0 and flock.step_count == 15
    with pytest.raises(ValueError, match="make a new Flock"):
        flock.params = flock.params.replace(count=10)
    with pytest.raises(TypeError):
        flock.params = {"fov": 100}


def test_live_params_change_the_dynamics():
    base = Flock(Params(count=300), seed=1)
    tweaked = Flock(Params(count=300), seed=1)
    tweaked.params = tweaked.params.replace(fov=60.0)
    base.step(20)
    tweaked.step(20)
    assert not np.allclose(base.positions, tweaked.positions)


def test_boids_are_views_not_copies():
    flock = Flock(Params(count=10), seed=0)
    boid = flock.boids[3]
    assert isinstance(boid, Boid) and boid.index == 3
    pos = boid.position
    flock.step()
    np.testing.assert_array_equal(pos, flock.positions[3])  # the view follows the flock
    boid.position = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(flock.positions[3], [1, 2, 3])
    boid.position[0] = 7.0
    assert flock.positions[3, 0] == 7.0


def test_setting_velocity_turns_the_boid():
    flock = Flock(Params(count=4), seed=0)
    boid = flock.boids[-1]
    assert boid.index == 3
    boid.velocity = [0.0, 0.0, -4.0]
    np.testing.assert_allclose(boid.forward, [0, 0, -1], atol=1e-15)
    assert boid.speed == pytest.approx(4.0)
    np.testing.assert_allclose(flock.velocities[3], [0, 0, -4])
    assert isinstance(boid.orientation, Quaternion)
    np.testing.assert_allclose(boid.orientation.rotate([0, 0, 1]), [0, 0, -1], atol=1e-15)


def test_setting_orientation_reaims_the_velocity():
    flock = Flock(Params(count=2), seed=0)
    boid = flock.boids[0]
    speed = boid.speed
    boid.orientation = Quaternion(axis=[1, 0, 0], angle=-math.pi / 2)  # forward +Z -> +Y
    np.testing.assert_allclose(boid.velocity, [0, speed, 0], atol=1e-12)
    with pytest.raises(ValueError):
        boid.orientation = [0, 0, 0, 0]
    with pytest.raises(ValueError):
        boid.velocity = [1, 2]


def test_neighbours_and_can_see_follow_the_spec_test():
    flock = Flock(Params(count=300, arena_radius=8.0, fov=200.0), seed=2)
    for boid in flock.boids[:20]:
        # The spec's definition, written out here independently of flock3d's own test.
        offsets = flock.positions - boid.position
        d = np.linalg.norm(offsets, axis=1)
        with np.errstate(invalid="ignore"):
            angle = np.degrees(np.arccos(np.clip(offsets @ boid.forward / d, -1, 1)))
        expected = np.flatnonzero((d > 0) & (d < 5.0) & (angle <= 100.0))
        assert [b.index for b in boid.neighbours()] == list(expected)
        assert len(expected) > 0 and boid not in boid.neighbours()
        for j in range(len(flock)):
            assert boid.can_see(flock.boids[j]) == (j in expected)


def test_iteration_and_indexing():
    flock = Flock(Params(count=5), seed=0)
    assert [b.index for b in flock] == [0, 1, 2, 3, 4]
    assert [b.index for b in flock.boids[1:4]] == [1, 2, 3]
    assert flock.boids[-1] == flock.boids[4] and len(flock.boids) == 5
    with pytest.raises(IndexError):
        flock.boids[5]
    assert {flock.boids[0], flock.boids[0]} == {flock.boids[0]}


def test_reference_engine_matches_a_hand_computation():
    # Two boids side by side, cohesion only: u = v + dt * k_c * offset (speed stays within limits).
    params = Params(
        arena_radius=100.0, cohesion=1.0, separation=0.0, alignment=0.0, max_turn_rate=1e9, dt=0.1
    )
    flock = hand_flock(params, [[0, 0, 0], [2, 0, 0]], [[0, 0, 4], [0, 0, 4]], engine="reference")
    flock.step()
    u = np.array([0.1 * 2.0, 0.0, 4.0])  # boid 0 is pulled +x by dt * (2 - 0)
    np.testing.assert_allclose(flock.velocities[0], u, atol=1e-12)
    np.testing.assert_allclose(flock.velocities[1], u * [-1, 1, 1], atol=1e-12)
    np.testing.assert_allclose(flock.positions[0], 0.1 * u, atol=1e-12)
    assert flock.time == pytest.approx(0.1)


def test_state_assign_copies_values_into_the_live_arrays():
    flock = Flock(Params(count=20, predator_count=2), seed=0)
    view, saved = flock.positions, flock.state.copy()
    flock.step(5)
    flock.state.assign(saved)
    assert flock.positions is view  # the same arrays...
    np.testing.assert_array_equal(view, saved.positions)  # ...holding the saved values
    np.testing.assert_array_equal(flock.state.predator_positions, saved.predator_positions)
    assert (flock.time, flock.step_count) == (0.0, 0)


# -- counts, whole or refused --------------------------------------------------------------------


def test_a_seed_is_a_whole_number_of_zero_or_more_or_none():
    # numpy's own message ("SeedSequence expects int or sequence of ints for entropy") named no seed.
    for seed, error, words in [("a", TypeError, "seed must be a whole number [(]got 'a'[)]"),
                               (1.5, TypeError, "seed must be a whole number [(]got 1.5[)]"),
                               (True, TypeError, "seed must be a whole number [(]got True[)]"),
                               (-1, ValueError, "seed must be >= 0 [(]got -1[)]")]:  # fmt: skip
        with pytest.raises(error, match=f"^{words}$"):
            Flock(Params(count=5), seed=seed, engine="reference")
    three = Flock(Params(count=5), seed=3, engine="reference").positions
    assert np.array_equal(Flock(Params(count=5), seed=np.int64(3), engine="reference").positions, three)
    assert Flock(Params(count=5), seed=None, engine="reference").positions.shape == (5, 3)


def test_from_scene_given_a_name_says_what_reads_one(tmp_path):
    # It raised AttributeError: 'str' object has no attribute 'seed'.
    for source in ("torus", tmp_path / "small.toml"):
        with pytest.raises(
            TypeError, match=f"^scene must be a flock3d.Scene: flock3d.load_scene[(]'{source}'[)] reads one$"
        ):
            Flock.from_scene(source)


def test_step_run_export_and_a_writer_take_whole_counts_and_refuse_the_rest(tmp_path):
    # A count of 1.5 was rounded down to 0 a call, and run()'s loop never ended (nor export's).
    from flock3d.flock import MOST_STEPS_A_CALL
    from flock3d.io import TrajectoryWriter
    from flock3d.runner import run
    from flock3d.scene import Scene

    flock = Flock(Params(count=20), seed=1)
    for count, error, words in [
        (1.5, TypeError, "n must be a whole number (got 1.5)"),
        ("3", TypeError, "n must be a whole number (got '3')"),
        (True, TypeError, "n must be a whole number (got True)"),
        (-1, ValueError, f"n must be from 0 to {MOST_STEPS_A_CALL:,} (got -1)"),
        (10**30, ValueError, f"n must be from 0 to {MOST_STEPS_A_CALL:,}"),
    ]:
        with pytest.raises(error, match=f"^{words.replace('(', '[(]').replace(')', '[)]')}"):
            flock.step(count)
    assert flock.step_count == 0
    flock.step(np.int64(2))  # any integral type
    with pytest.raises(TypeError, match="^steps must be a whole number"):
        run(flock, 1.5)
    with pytest.raises(ValueError, match="^every must be >= 1 [(]got 0[)]"):
        run(flock, 10, every=0)
    for kwargs, words in [
        (dict(steps=1.5), "steps must be a whole number"),
        (dict(seconds=1.0, every=0), "every must be >= 1"),
        (dict(seconds=-1.0), "seconds must be > 0"),
        (dict(steps=-3), "steps must be from 0"),
        (dict(seconds=1.0, steps=10), "give seconds or steps, not both"),
    ]:
        with pytest.raises((TypeError, ValueError), match=f"^{words}"):
            flock.export(tmp_path / "a.html", **kwargs)
    with pytest.raises(ValueError, match="^every must be >= 1 [(]got 0[)]"):
        TrajectoryWriter(tmp_path / "r.h5", 20, Scene(Params(count=20)), every=0)
    assert flock.step_count == 2 and list(tmp_path.iterdir()) == []
