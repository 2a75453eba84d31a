"""Picking a boid with the mouse, and what the focus on it shows.

A click (button 1 released where it was pressed, give or take :data:`CLICK_SLOP_PX`;
a longer drag orbits the camera) picks the boid drawn nearest to it, within
:data:`PICK_RADIUS_PX`. The focus then singles out that boid and the boids it
interacts with (:func:`seen_by`, coloured by :func:`focus_colors`), fades the
others, and outlines its view sphere and field-of-view cone (:class:`FocusVisuals`).

Everything but :class:`FocusVisuals` works on plain arrays and a transform, without a
window.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flock3d.core import quaternion
from flock3d.core.params import Params

if TYPE_CHECKING:
    from vispy import scene

    from flock3d.core.state import FlockState

__all__ = [
    "Clicks",
    "screen_positions",
    "pick",
    "seen_by",
    "focus_colors",
    "cone_lines",
    "FocusVisuals",
    "CLICK_SLOP_PX",
    "PICK_RADIUS_PX",
]

#: How far (pixels) the mouse may move between press and release for a click, not a drag.
CLICK_SLOP_PX = 3.0
#: How far (pixels) from a boid's drawn centre a click still picks it.
PICK_RADIUS_PX = 14.0

FOCUS_COLOR = (0.35, 0.95, 1.0, 0.9)
NEIGHBOUR_COLOR = (1.0, 0.95, 0.35, 1.0)
FOCUSED_BOID_COLOR = (1.0, 1.0, 1.0, 1.0)
OTHER_BOID_COLOR = (0.55, 0.6, 0.72)
"""What the boids that the focused one does not see fade to."""


class Clicks:
    """Tells clicks from drags: :meth:`press`, then :meth:`release` says whether the pair was
    a click (of button 1 by default)."""

    def __init__(self) -> None:
        self._pressed: np.ndarray | None = None

    def press(self, pos) -> None:
        """The mouse went down at canvas pixel ``pos`` (x, y)."""
        self._pressed = np.asarray(pos[:2], dtype=float)

    def release(self, pos, button: int, buttons: tuple[int, ...] = (1,)) -> bool:
        """The mouse's ``button`` came up at ``pos``: True for a click of one of ``buttons``
        (another button's release leaves the press waiting)."""
        pressed = self._pressed
        if pressed is None or button not in buttons:
            return False
        self._pressed = None
        return bool(np.linalg.norm(np.asarray(pos[:2], dtype=float) - pressed) <= CLICK_SLOP_PX)


def screen_positions(transform, positions: np.ndarray) -> np.ndarray:
    """Where points are drawn: (N, 2) canvas pixels of ``positions`` (N, 3), NaN for a
    point behind the camera.

    Args:
        transform: maps world points to homogeneous canvas coordinates, (N, 3) ->
            (N, 4), as vispy's ``view.scene.node_transform(canvas.scene)`` does.
        positions: (N, 3) world units.
    """
    mapped = transform.map(np.asarray(positions, dtype=float))
    w = mapped[:, 3:4]
    return mapped[:, :2] / np.where(w > 0, w, np.nan)


def pick(screen: np.ndarray, pos, radius_px: float = PICK_RADIUS_PX) -> int | None:
    """The index of the boid drawn nearest canvas pixel ``pos``, if within ``radius_px``.

    Args:
        screen: (N, 2) where the boids are drawn (:func:`screen_positions`), NaN for
            boids behind the camera, which cannot be picked.
        pos: (x, y) canvas pixels.
    """
    if not len(screen):
        return None
    d = np.linalg.norm(np.asarray(screen, dtype=float) - np.asarray(pos[:2], dtype=float), axis=1)
    if np.all(np.isnan(d)):
        return None
    i = int(np.nanargmin(d))
    return i if d[i] <= radius_px else None


def seen_by(state: FlockState, params: Params, index: int) -> np.ndarray:
    """The boids boid ``index`` interacts with, as the step decides (its view distance or
    adaptive radius, its cone, its species' choice, the k nearest with topological
    neighbours): sorted indices, (K,) int."""
    from flock3d.core.reference import neighbours

    forward = quaternion.forward(state.orientations[index : index + 1])[0]
    radius = state.radii[index] if params.adaptive else None
    species = int(params.species_of_boids[index])
    return np.flatnonzero(
        neighbours(state.positions[index], forward, state.positions, params, species, radius)
    )


def focus_colors(base: np.ndarray, focused: int, neighbours: np.ndarray) -> np.ndarray:
    """Colours that single out one boid and the boids it sees; the rest turn a quiet grey-blue
    (still clearly visible against the sky, but without colour).

    Args:
        base: (N, 4) float32 RGBA, the colours of the current colour mode.
        focused: the focused boid.
        neighbours: (K,) the boids it sees (:func:`seen_by`).
    """
    colors = base.copy()
    grey = colors[:, :3] @ np.array([0.2126, 0.7152, 0.0722], np.float32)
    colors[:, :3] = 0.35 * grey[:, None] + 0.65 * np.asarray(OTHER_BOID_COLOR, dtype=np.float32)
    colors[neighbours] = NEIGHBOUR_COLOR
    colors[focused] = FOCUSED_BOID_COLOR
    return colors


def cone_lines(
    apex: np.ndarray, forward: np.ndarray, up: np.ndarray, params: Params, rays: int = 16
) -> np.ndarray:
    """Segments (2K, 3) outlining what a boid sees: its view sphere and field-of-view cone.

    The rim circle lies where the cone meets the sphere of the perception distance;
    rays join the boid to the rim. With fov > 180 the cone drawn is the blind
    cone behind, whose outside is what the boid sees.
    """
    r = params.perception_distance
    if not math.isfinite(r):  # global perception: draw the cone at a readable size
        r = 10.0 * params.separation_distance
    half = math.radians(min(params.fov, 359.9) / 2.0)
    f = forward / np.linalg.norm(forward)
    u = up - (up @ f) * f
    u /= np.linalg.norm(u)
    s = np.cross(u, f)
    t = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False)
    rim = apex + r * (np.cos(half) * f + np.sin(half) * (np.outer(np.cos(t), u) + np.outer(np.sin(t), s)))
    segments = [np.stack([rim, np.roll(rim, -1, axis=0)], axis=1).reshape(-1, 3)]
    for k in range(0, 64, 64 // rays):
        segments.append(np.stack([apex, rim[k]]))
    # Three great circles of the view sphere: its horizontal and two vertical outlines.
    for a, b in ((f, s), (f, u), (u, s)):
        ring = apex + r * (np.outer(np.cos(t), a) + np.outer(np.sin(t), b))
        segments.append(np.stack([ring, np.roll(ring, -1, axis=0)], axis=1).reshape(-1, 3))
    return np.vstack(segments).astype(np.float32)


class FocusVisuals:
    """The focused boid's field-of-view cone and view sphere."""

    def __init__(self, view: scene.ViewBox) -> None:
        from vispy import scene

        self.lines = scene.visuals.Line(
            np.zeros((2, 3), np.float32), color=FOCUS_COLOR, connect="segments", parent=view.scene
        )
        self.lines.set_gl_state("translucent", depth_test=True)
        self.lines.visible = False

    def show(self, position: np.ndarray, orientation: np.ndarray, params: Params) -> None:
        q = orientation[None]
        self.lines.set_data(pos=cone_lines(position, quaternion.forward(q)[0], quaternion.up(q)[0], params))
        self.lines.visible = True

    def hide(self) -> None:
        self.lines.visible = False
