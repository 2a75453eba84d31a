"""Playing a recording back: the frame schedule of `flock3d render`, and frames it cannot draw."""

import re

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core.state import FlockState
from flock3d.io.playback import (
    DRAWN_LENGTHS,
    MAX_DRAWN,
    PlaybackError,
    check_drawable,
    check_scene,
    playback,
    simulated_frames,
    simulated_playback,
)
from flock3d.scene import Scene, ViewHints


def recorded_times(seconds: float, every: int = 6, dt: float = 1 / 60, t0: float = 0.0) -> np.ndarray:
    """The times a run records: sums of steps, one frame every ``every`` steps."""
    steps = np.full(round(seconds / dt), dt)
    return t0 + np.concatenate([[0.0], np.cumsum(steps)])[::every]


def nearest(times: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    return np.abs(times[None, :] - wanted[:, None]).argmin(axis=1)


def test_a_minute_plays_as_a_minute_frame_for_frame():
    times = recorded_times(60.0)  # 601 frames, 0.1 s apart, the last at 59.99999999999...
    plan = playback(times)
    assert plan.fps == 10.0  # the recording's own rate
    np.testing.assert_array_equal(plan.indices, np.arange(600))
    assert (plan.start, plan.end) == (0.0, pytest.approx(60.0))  # not 60.1: no frame past the end


@pytest.mark.parametrize("fps", [30.0, 24.0, 7.0])
def test_each_video_frame_shows_the_recorded_frame_nearest_its_time(fps):
    times = recorded_times(60.0)
    plan = playback(times, fps)
    assert len(plan.indices) == int(60 * fps) and plan.end == pytest.approx(60.0)
    np.testing.assert_array_equal(plan.indices, nearest(times, np.arange(len(plan.indices)) / fps))


def test_the_schedule_follows_the_recorded_times_not_a_fixed_interval():
    # A recording that starts late and whose frames are unevenly spaced.
    times = np.concatenate([100.0 + np.arange(50) * 0.1, 105.0 + np.arange(1, 21) * 0.5])
    plan = playback(times, 20.0, start=3.0, frames=200)
    wanted = 103.0 + np.arange(200) / 20.0
    assert plan.start == 103.0 and len(plan.indices) == 200
    np.testing.assert_array_equal(plan.indices, nearest(times, wanted))


def test_frames_and_stills_within_the_recording():
    times = recorded_times(2.0, every=4)  # 31 frames, 1/15 s apart
    assert len(playback(times, 15.0, frames=10).indices) == 10
    assert len(playback(times, 15.0, frames=1000).indices) == 30  # at most what the recording holds
    last = playback(times, 15.0, still=True)  # a PNG's default: the last recorded frame
    assert list(last.indices) == [30] and last.first == 30
    tenth = playback(times, 15.0, frames=10, still=True)
    assert list(tenth.indices) == [9] and tenth.first == 9
    named_last = playback(times, 15.0, frames=31, still=True)  # the default's frame, asked for by number
    assert list(named_last.indices) == [30] and named_last.first == 30
    with pytest.raises(
        PlaybackError, match=r"^--frames 32: a still of this recording is one of its frames 1 to 31 "
    ):
        playback(times, 15.0, frames=32, still=True)
    at_start = playback(times, 15.0, start=1.0, still=True)  # with --start, the frame at it
    assert list(at_start.indices) == [15] and at_start.first == 0 and at_start.start == 1.0
    assert list(playback(times, 15.0, start=1.0, frames=16, still=True).indices) == [30]
    one = playback(np.array([4.0]))  # a single frame still makes one video frame
    assert list(one.indices) == [0] and one.start == 4.0


def test_schedules_that_cannot_be_made_are_refused():
    times = recorded_times(2.0)
    with pytest.raises(PlaybackError, match=r"^--start 3 is past the end of the recording \(2 s long\)$"):
        playback(times, 30.0, start=3.0)
    with pytest.raises(PlaybackError, match="36,000 frames at 10 fps, more than the 1,000 a render may take"):
        playback(recorded_times(3600.0), max_frames=1000)
    # Finite times whose span overflows: refused, not an OverflowError or an endless loop.
    with pytest.raises(PlaybackError, match="inf frames at 30 fps"):
        playback(np.array([-1e308, 1e308]))
    assert len(playback(np.array([0.0, 1e300]), frames=5).indices) == 5


def state(n=4, positions=None, velocities=None, orientations=None) -> FlockState:
    s = FlockState(np.zeros((n, 3)), np.ones((n, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), 0.5, 30)
    for name, value in (("positions", positions), ("velocities", velocities), ("orientations", orientations)):
        if value is not None:
            getattr(s, name)[1] = value
    return s


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"positions": np.nan}, "positions that are NaN, infinite or beyond 1e+15"),
        ({"positions": 1e308}, "positions that are NaN, infinite or beyond 1e+15"),
        ({"velocities": -np.inf}, "velocities that are NaN, infinite or beyond 1e+15"),
        ({"orientations": np.nan}, "orientations that are not unit quaternions"),
        ({"orientations": 1e308}, "orientations that are not unit quaternions"),
        ({"orientations": 0.0}, "orientations that are not unit quaternions"),
    ],
)
def test_frames_that_cannot_be_drawn_are_named(change, problem):
    check_drawable(state(positions=MAX_DRAWN, velocities=-MAX_DRAWN), "the edge")  # drawable
    with np.errstate(all="raise"):  # and no numpy warning on the way
        with pytest.raises(
            PlaybackError, match=f"^{re.escape(f'frame 7 cannot be drawn: it holds {problem}')}$"
        ):
            check_drawable(state(**change), "frame 7")


def test_scene_lengths_the_camera_cannot_frame():
    low, high = DRAWN_LENGTHS
    check_scene(Scene(Params(arena_radius=low), view=ViewHints(camera_distance=high)))
    for params, view, message in [
        ({"arena_radius": 1e-300}, {}, "arena.radius = 1e-300 cannot be drawn"),
        ({}, {"camera_distance": 1e-300}, "view.camera_distance = 1e-300 cannot be drawn"),
        ({}, {"camera_distance": 1e300}, "view.camera_distance = 1e+300 cannot be drawn"),
        ({}, {"boid_size": 1e-12}, "view.boid_size = 1e-12 cannot be drawn"),
    ]:
        with pytest.raises(
            PlaybackError, match=re.escape(f"{message}: the camera frames lengths from 1e-09 to 1e+15")
        ):
            check_scene(Scene(Params(**params), view=ViewHints(**view)))
    check_scene(Scene(Params(arena_shape="none", arena_radius=1e-12)))  # no arena to frame


def test_a_simulation_is_drawn_at_the_step_nearest_each_frames_time():
    # Steps of 0.1 s at 30 fps: three video frames a step, frame k at the step nearest k / 30 s.
    plan = simulated_playback(0.1, 30.0, frames=60)
    np.testing.assert_array_equal(plan.indices, np.round(np.arange(60) / 3.0))
    assert (plan.first, plan.start, plan.fps, plan.end) == (0, 0.0, 30.0, 2.0)
    late = simulated_playback(1 / 60, 15.0, start=2.0, frames=45)  # 4 steps a frame, from step 120
    np.testing.assert_array_equal(late.indices, 120 + 4 * np.arange(45))
    assert late.end == pytest.approx(5.0)
    still = simulated_playback(1 / 60, 15.0, frames=31, still=True)  # frame 31 alone, at t = 2 s
    assert list(still.indices) == [120] and still.first == 30
    default = simulated_playback(1 / 60)  # 300 frames at 30 fps; a still is the first frame
    assert (len(default.indices), default.fps) == (300, 30.0)
    assert list(simulated_playback(1 / 60, still=True).indices) == [0]


def test_a_simulation_past_the_steps_a_render_may_take_is_refused_before_any_step():
    simulated_playback(0.01, 10.0, frames=11, max_steps=100)  # t = 1 s: 100 steps exactly
    with pytest.raises(PlaybackError, match=r"^rendering to 1\.1 simulated seconds at sim\.dt = 0\.01 takes "
                       r"110 steps, more than the 100 a render may take$"):  # fmt: skip
        simulated_playback(0.01, 10.0, frames=12, max_steps=100)


def test_simulated_frames_step_the_flock_to_each_frame_with_its_mean_acceleration_since_the_last():
    params = Params(count=40, dt=0.05)
    plan = simulated_playback(params.dt, 10.0, start=0.1, frames=3)  # t = 0.1, 0.2, 0.3 s
    shown = [(s.step_count, s.positions.copy(), a) for s, a in simulated_frames(Flock(params, seed=3), plan)]
    assert [step for step, _, _ in shown] == list(plan.indices) == [2, 4, 6]
    replay = Flock(params, seed=3)
    replay.step(1)
    before = replay.velocities.copy()  # no frame before the first: its last step's acceleration
    for step, positions, acceleration in shown:
        since = step - replay.step_count
        replay.step(since)
        np.testing.assert_array_equal(positions, replay.positions)
        wanted = (replay.velocities - before) / (since * params.dt)
        np.testing.assert_allclose(acceleration, wanted, rtol=1e-12)
        before = replay.velocities.copy()
    # A frame at the step of the one before it shows that one's acceleration again.
    again = simulated_playback(params.dt, 50.0, start=0.1, frames=3)  # steps 2, 2, 3
    drawn = [(s.step_count, a.copy()) for s, a in simulated_frames(Flock(params, seed=3), again)]
    assert [step for step, _ in drawn] == [2, 2, 3]
    np.testing.assert_array_equal(drawn[0][1], drawn[1][1])
    assert not np.array_equal(drawn[1][1], drawn[2][1])
