"""Where the boids were and where they are heading: fading trails (the last seconds of each path)
and the debug lines (each boid's velocity and its last step's steering)."""

from __future__ import annotations

import math

import numpy as np
from vispy import scene

from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.viewer.guides import segments
from flock3d.viewer.visuals import Trails

__all__ = ["Tracks", "TRAIL_SLOTS"]

TRAIL_COLOR = (0.8, 0.88, 1.0, 0.55)
VELOCITY_COLOR = (0.45, 0.95, 1.0, 0.9)
STEERING_COLOR = (1.0, 0.55, 0.2, 0.9)
TRAIL_SLOTS = 16
"""Samples per trail; half as many above TRAIL_FINE_BOIDS boids (each sample is 2N vertices a frame)."""
TRAIL_FINE_BOIDS = 5_000
VELOCITY_SECONDS = 0.4
"""A velocity line shows where the boid will be in this many seconds."""
STEERING_SECONDS2 = 0.05
"""A steering line is the acceleration times this (s^2): 20 units/s^2 draws one unit."""


class Tracks:
    """The trails and debug lines of a :class:`~flock3d.viewer.renderer.FlockVisuals`.

    Args:
        view: the ViewBox to draw in.
        pixel_scale: canvas pixels per pixel of the final picture (line widths scale with it).
        trail_seconds: how many simulated seconds of each path the trails show (0: none).
        show_vectors: whether the velocity and steering lines are drawn.
    """

    def __init__(
        self, view: scene.ViewBox, pixel_scale: float, trail_seconds: float, show_vectors: bool
    ) -> None:
        self.trail_seconds = trail_seconds
        self.show_vectors = show_vectors
        self._trail: dict | None = None
        self.trails = Trails(TRAIL_SLOTS, TRAIL_COLOR, width=pixel_scale, parent=view.scene)
        self.trails.order = 5  # after the boids: trails do not hide them
        self.trails.visible = False
        self.vectors = segments(view, pixel_scale)

    def set_trails(self, seconds: float) -> None:
        """Trails of the last ``seconds`` of each path (0: none)."""
        self.trail_seconds = max(float(seconds), 0.0)
        self._trail = None  # start afresh
        self.trails.visible = False

    def update(self, state: FlockState, acceleration: np.ndarray | None, params: Params) -> None:
        """Follow ``state``: its positions join the trails, and the lines show its velocities and
        the ``acceleration`` (N, 3) [units/s^2] of the last steps (None: velocities only)."""
        self._update_trails(state.positions, state.time, params)
        self._update_vectors(state, acceleration)

    def _update_trails(self, positions: np.ndarray, time: float, params: Params) -> None:
        if self.trail_seconds <= 0 or len(positions) == 0:
            self.trails.visible = False
            self._trail = None
            return
        slots = TRAIL_SLOTS if len(positions) <= TRAIL_FINE_BOIDS else TRAIL_SLOTS // 2
        interval = self.trail_seconds / slots
        p = np.asarray(positions, np.float32)
        # A boid moving further than this between samples went through a periodic wall.
        jump = params.arena_radius if params.arena_shape == "periodic" else np.inf
        trail = self._trail
        if trail is None or trail["n"] != len(p) or time < trail["time"]:
            self.trails.reset(p, slots)
            self._trail = trail = {"n": len(p), "time": time, "newest": p.copy()}
        elif time - trail["time"] >= interval:
            start = _unwrapped(trail["newest"], p, jump)
            self.trails.add_sample(start, p)
            trail["newest"] = p.copy()
            trail["time"] += interval * math.floor((time - trail["time"]) / interval)
        frac = min((time - trail["time"]) / interval, 1.0)
        self.trails.set_live(_unwrapped(trail["newest"], p, jump), p, frac)
        self.trails.visible = True

    def _update_vectors(self, state: FlockState, acceleration: np.ndarray | None) -> None:
        if not self.show_vectors or len(state) == 0:
            self.vectors.visible = False
            return
        p = state.positions
        ends = [p + VELOCITY_SECONDS * state.velocities]
        colors = [VELOCITY_COLOR]
        if acceleration is not None and len(acceleration) == len(p):
            ends.append(p + STEERING_SECONDS2 * acceleration)
            colors.append(STEERING_COLOR)
        points = np.empty((len(ends), len(p), 2, 3), np.float32)
        rgba = np.empty((len(ends), len(p), 2, 4), np.float32)
        for k, (end, color) in enumerate(zip(ends, colors, strict=True)):
            points[k, :, 0], points[k, :, 1] = p, end
            rgba[k] = color
        self.vectors.set_segments(points.reshape(-1, 3), rgba.reshape(-1, 4))


def _unwrapped(start: np.ndarray, end: np.ndarray, jump: float) -> np.ndarray:
    """``start`` with the points that jumped further than ``jump`` moved onto ``end`` (no segment)."""
    if not math.isfinite(jump):
        return start
    far = np.any(np.abs(end - start) > jump, axis=1)
    if not far.any():
        return start
    start = start.copy()
    start[far] = end[far]
    return start
