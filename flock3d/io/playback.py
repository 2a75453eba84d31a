"""Playing a flock back as a video: which recorded frame, or which step of a simulation,
each video frame shows, and whether a frame can be drawn at all. The library half of
``flock3d render``.

A video plays at the simulation's pace. Its F frames at ``fps`` frames per second
cover the F / fps simulated seconds from ``start``: video frame k shows the flock at
``start + k / fps``, by the recorded frame nearest that time (:func:`playback`,
:func:`recorded_frames`) or the step nearest it (:func:`simulated_playback`,
:func:`simulated_frames`). A recording from t0 to
t1 gives ``floor((t1 - t0 - start) * fps)`` frames, whose span ends at t1 at most, so
the span a video states is the span it shows (the recorded frame at t1 itself is the
frame after the video's last: it is a still's default instead).

Frames are scheduled by their recorded times, not by the recording's ``every`` and the
scene's dt: the times are what the file holds, checked on opening (finite, never
decreasing; see :class:`flock3d.io.Trajectory`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from flock3d.errors import Flock3dError
from flock3d.look.motion import FrameAcceleration

if TYPE_CHECKING:
    from flock3d.core.state import FlockState
    from flock3d.flock import Flock
    from flock3d.io.trajectory import Trajectory
    from flock3d.scene import Scene

__all__ = [
    "Playback",
    "PlaybackError",
    "playback",
    "recorded_frames",
    "simulated_playback",
    "simulated_frames",
    "own_rate",
    "check_drawable",
    "recorded_frame",
    "check_recording",
    "check_scene",
    "MAX_DRAWN",
    "DRAWN_LENGTHS",
]

#: Largest size of a coordinate or velocity component that can be drawn. The renderer
#: works in float32 (at most 3.4e38) and multiplies lengths together (a camera framing a
#: flock of size L has near * far ~ L^2): beyond this they overflow.
MAX_DRAWN = 1e15
#: Lengths that place the camera (the arena's radius, view.camera_distance,
#: view.boid_size), world units: its near and far planes are the distance divided and
#: multiplied by 1000, and below this range their product underflows (a singular
#: projection), above it overflows float32.
DRAWN_LENGTHS = (1e-9, MAX_DRAWN)
#: How far from unit length a stored orientation may be: the renderer turns unit
#: quaternions into directions; any writer's rounding stays far below this.
UNIT_TOLERANCE = 1e-3


class PlaybackError(Flock3dError):
    """A playback that cannot be made: a start past the end, too many frames, a frame that
    cannot be drawn."""


class Playback(NamedTuple):
    """Video frames ``first``, ``first + 1``, ... show the recorded frames (or steps) ``indices``.

    ``indices``: (F,) int64 recorded frame of each video frame (:func:`playback`), or the
    step a simulation shows it at (:func:`simulated_playback`); ``first``: the video frame
    number of the first of them (0 for a video, more for a still); ``start``: simulated
    time of video frame 0; ``fps``: video frames per simulated second.
    """

    indices: np.ndarray
    first: int
    start: float
    fps: float

    @property
    def end(self) -> float:
        """Simulated time at which the frames shown end: ``start + (first + F) / fps``."""
        return self.start + (self.first + len(self.indices)) / self.fps


def own_rate(times: np.ndarray) -> float | None:
    """Recorded frames per simulated second, to 6 significant digits (as a video stores its
    rate; the times are sums of steps, 1.9999999999999998 s for 2), or None for fewer than
    two frames or no time between."""
    t = np.asarray(times, dtype=np.float64)
    if len(t) < 2:
        return None
    with np.errstate(over="ignore"):
        span = t[-1] - t[0]
    return float(f"{(len(t) - 1) / span:.6g}") if 0.0 < span < math.inf else None


def standing_still(times: np.ndarray) -> str | None:
    """Where a recording's time does not advance, in words (two frames at one time: an animation
    or a video cannot place them), or None where every frame comes after the one before."""
    t = np.asarray(times, dtype=np.float64)
    with np.errstate(over="ignore"):  # times 1e308 apart: their difference overflows to inf, and advances
        same = np.flatnonzero(np.diff(t) <= 0.0)
    if not len(same):
        return None
    k = int(same[0])
    return f"frames {k:,} and {k + 1:,} are both at t = {t[k + 1]:g} s; an animation needs times that advance"


def playback(
    times: np.ndarray,
    fps: float | None = None,
    start: float | None = None,
    frames: int | None = None,
    still: bool = False,
    max_frames: int = 100_000,
) -> Playback:
    """Schedule a video (or a still) of a recording whose frames were taken at ``times``.

    Args:
        times: (T,) simulated time of each recorded frame, T >= 1, finite and never decreasing.
        fps: video frames per simulated second; None: the recording's own rate
            (:func:`own_rate`) when it is 10 to 60, else 30.
        start: seconds after the first recorded frame at which the video begins, >= 0 (None: 0).
        frames: video frames wanted, at most those that fit in the recording (None: all).
        still: one frame alone (a PNG): video frame ``frames`` (1-based), from the one at
            ``start`` to the one of the recording's last frame; by default the frame at
            ``start`` when it is given, else the recording's last frame.
        max_frames: most video frames a playback may take.

    Raises:
        PlaybackError: ``start`` is past the end, more than ``max_frames`` frames would be
            needed to play the recording whole, a still's ``frames`` is past its last frame, or a
            video's recording has two frames at one time (:func:`standing_still`).
    """
    t = np.asarray(times, dtype=np.float64)
    if not still and (stands := standing_still(t)):
        raise PlaybackError(stands)
    if fps is None:
        rate = own_rate(t)
        fps = rate if rate is not None and 10.0 <= rate <= 60.0 else 30.0
    chosen, start = start is not None, start or 0.0
    t0 = float(t[0])
    with np.errstate(over="ignore"):
        length = float(t[-1] - t0)
    if start > length + 1e-9:
        raise PlaybackError(f"--start {start:g} is past the end of the recording ({length:g} s long)")
    # Video frames whose span [k / fps, (k + 1) / fps) lies within the recording (at least one).
    fitting = max(1, math.floor(min((length - start) * fps, max_frames + 1) + 1e-6))
    if still:  # any video frame from start's to the last recorded frame's (which a video leaves out)
        last = min(round(min((length - start) * fps, max_frames)), max_frames)
        if frames is None and not chosen:  # the recording's last frame, at its own frame number
            return Playback(np.array([len(t) - 1]), last, t0 + start, fps)
        first = 0 if frames is None else frames - 1
        if first > last:
            raise PlaybackError(
                f"--frames {frames}: a still of this recording is one of its frames 1 to {last + 1:,} "
                f"({fps:g} per simulated second from t = {t0 + start:g} s)"
            )
        count = 1
    else:
        if frames is None and fitting > max_frames:
            raise PlaybackError(
                f"the recording is {length:g} s long: {(length - start) * fps:,.0f} frames at {fps:g} fps, "
                f"more than the {max_frames:,} a render may take; choose --frames, a later --start "
                "or a lower --fps"
            )
        first, count = 0, min(frames or fitting, fitting)
    wanted = t0 + start + (first + np.arange(count)) / fps
    after = np.clip(np.searchsorted(t, wanted), 1, len(t) - 1) if len(t) > 1 else np.zeros(count, int)
    before = after - (len(t) > 1)
    nearer_before = np.abs(wanted - t[before]) <= np.abs(t[after] - wanted)
    return Playback(np.where(nearer_before, before, after).astype(np.int64), first, t0 + start, fps)


def recorded_frames(trajectory: Trajectory, plan: Playback) -> Iterator[tuple[FlockState, None]]:
    """The recorded frames of ``plan`` (:func:`playback`) in order, each as (state, None): a
    recording holds no acceleration."""
    for i in plan.indices:
        yield trajectory.frame(int(i)), None


def simulated_playback(
    dt: float,
    fps: float | None = None,
    start: float = 0.0,
    frames: int | None = None,
    still: bool = False,
    max_steps: int = 10_000_000,
) -> Playback:
    """Schedule a video (or a still) of a flock simulated as it is drawn, from step 0.

    Video frame k shows the flock at the step nearest ``start + k / fps``: with a step
    longer than a video frame, consecutive frames show the same step.

    Args:
        dt: the simulation's time step, s (``params.dt``).
        fps: video frames per simulated second (None: 30).
        start: simulated seconds before video frame 0, >= 0.
        frames: video frames (None: 300); with ``still``, the 1-based video frame shown
            alone (None: the first).
        still: one frame alone (a PNG).
        max_steps: most steps the last frame may be from the start.

    Raises:
        PlaybackError: the last frame is more than ``max_steps`` steps in.
    """
    fps = fps or 30.0
    total = frames or (1 if still else 300)
    first = total - 1 if still else 0
    last_time = start + (total - 1) / fps
    if last_time / dt > max_steps:
        raise PlaybackError(
            f"rendering to {last_time:g} simulated seconds at sim.dt = {dt:g} takes "
            f"{last_time / dt:,.0f} steps, more than the {max_steps:,} a render may take"
        )
    steps = np.round((start + np.arange(first, total) / fps) / dt).astype(np.int64)
    return Playback(steps, first, start, fps)


def simulated_frames(flock: Flock, plan: Playback) -> Iterator[tuple[FlockState, np.ndarray | None]]:
    """Step ``flock`` (from step 0) to each step of ``plan`` (:func:`simulated_playback`) in turn.

    Yields:
        (state, acceleration): the flock's state at that step and the boids' mean acceleration
        over the steps since the frame before, (N, 3) units/s^2 (the first frame's: its last
        step's; None before any step), which banks the boids into their turns, as the viewer's
        window does. The state is the flock's own: draw it before taking the next, and do not
        edit it (it is read within :meth:`~flock3d.core.state.FlockState.reading`: a GPU
        flock's state is not sent back).
    """
    change = FrameAcceleration()
    acceleration = None
    state = flock.state
    for step in plan.indices:
        due = int(step) - flock.step_count
        if not change.read_once:  # the first frame: its velocities a step before it, or at it
            if due > 1:
                flock.step(due - 1)
                due = 1
            with state.reading():
                change.read(state.velocities, state.time)
        if due > 0:
            flock.step(due)
            with state.reading():
                acceleration = change.read(state.velocities, state.time)
        with state.reading():
            yield state, acceleration


def check_scene(scene: Scene) -> None:
    """Raise :class:`PlaybackError` unless the lengths that place the camera are in
    :data:`DRAWN_LENGTHS`: the arena's radius (a camera frames the arena), the hinted camera
    distance, and the boid size (a camera following the flock frames a few boid lengths)."""
    low, high = DRAWN_LENGTHS
    lengths = [("view.camera_distance", scene.view.camera_distance), ("view.boid_size", scene.view.boid_size)]
    if scene.params.arena_shape != "none":
        lengths.insert(0, ("arena.radius", scene.params.arena_radius))
    for key, value in lengths:
        if value is not None and not low <= value <= high:
            raise PlaybackError(
                f"{key} = {value:g} cannot be drawn: the camera frames lengths from {low:g} to {high:g}"
            )


def check_recording(trajectory: Trajectory, indices: np.ndarray, source: str) -> None:
    """:func:`check_drawable` for the recorded frames ``indices`` (each once), before any is drawn."""
    wanted = np.unique(np.asarray(indices, dtype=np.int64))
    if len(wanted) == 0:
        return
    position = 0
    for i, state in enumerate(trajectory.frames(stop=int(wanted[-1]) + 1)):
        if i == wanted[position]:
            check_drawable(state, f"{source}: {recorded_frame(i, trajectory.n_frames, state.time)}")
            position += 1


def recorded_frame(k: int, n: int, time: float) -> str:
    """Recorded frame ``k`` (from 0) of ``n`` in words, counted from 1 as ``--frames`` and
    render's own line count: "recorded frame 5 of 7 (t = 0.4 s)"."""
    return f"recorded frame {k + 1:,} of {n:,} (t = {time:g} s)"


def check_drawable(state: FlockState, what: str) -> None:
    """Raise :class:`PlaybackError` naming ``what`` unless ``state`` can be drawn: every
    position and velocity finite and at most :data:`MAX_DRAWN` in size, every orientation
    a unit quaternion."""
    problems = []
    for name, values in (
        ("positions", (state.positions, state.predator_positions)),
        ("velocities", (state.velocities, state.predator_velocities)),
    ):
        if not all(np.all(np.abs(v) <= MAX_DRAWN) for v in values):  # NaN fails the comparison
            problems.append(f"{name} that are NaN, infinite or beyond {MAX_DRAWN:g}")
    for q in (state.orientations, state.predator_orientations):
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.linalg.norm(np.asarray(q, dtype=np.float64).reshape(-1, 4), axis=1)
        if not np.all(np.abs(norms - 1.0) <= UNIT_TOLERANCE):
            problems.append("orientations that are not unit quaternions")
            break
    if problems:
        raise PlaybackError(f"{what} cannot be drawn: it holds {' and '.join(problems)}")
