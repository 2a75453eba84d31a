"""Picking with the mouse, and what the focus on a boid shows.

A click (button 1 released where it was pressed, give or take :data:`CLICK_SLOP_PX`;
a longer drag orbits the camera) picks what is drawn nearest the camera under it
(:func:`thing_under`): an object met by the ray through the pixel, or an attractor, a
predator or a boid drawn within :data:`PICK_RADIUS_PX`. The focus on a boid then singles
out that boid and the boids it
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
    "ray_through",
    "thing_under",
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


def ray_through(transform, pos, eye=None) -> tuple[np.ndarray, np.ndarray]:
    """The ray through canvas pixel ``pos`` into the world, for the scene-to-canvas
    ``transform``: (origin (3,), unit direction). It starts at the camera's ``eye`` when
    there is one (a perspective camera), else on the near plane."""
    mapped = transform.imap(np.array([[pos[0], pos[1], 0.0, 1.0], [pos[0], pos[1], 0.5, 1.0]]))
    near, far = mapped[:, :3] / mapped[:, 3:4]
    direction = (far - near) / np.linalg.norm(far - near)
    return (near if eye is None else np.asarray(eye, np.float64)), direction


def thing_under(
    ray, pos, transform, scenery, state: FlockState, params: Params, framed, boids: bool = True
) -> tuple:
    """What is drawn under canvas pixel ``pos``, nearest the camera, and where: (a
    :class:`~flock3d.viewer.editing.Selection` (an object, attractor or predator), a boid
    ``("boid", index)`` or None; the world point there; whether it lies on a surface).
    With ``boids`` False, boids are looked through, as though they were not drawn.

    Objects are met by ``ray`` (origin, direction: :func:`ray_through`) through the drawn
    triangles (``scenery.pick``); attractors, predators and boids within
    :data:`PICK_RADIUS_PX` of ``pos`` on the screen, a boid only where no attractor or predator
    is. Over nothing, the point is where the
    ray meets the level plane through the middle of the view (``framed``: its centre and
    radius), or, when that lies outside what is framed (the arena) or behind, the ray's point
    nearest that centre: within it wherever the ray crosses it, as what is added there should be."""
    from flock3d.core.space import up_axis
    from flock3d.viewer.editing import Selection, ray_plane

    origin, direction = ray
    candidates = []  # (depth along the ray, thing, point, on a surface)
    k, s = scenery.pick(origin, direction)
    if k >= 0:
        candidates.append((s, Selection("object", k), origin + s * direction, True))
    points = {
        "attractor": np.array([a.position for a in params.attractors], np.float64).reshape(-1, 3),
        "predator": state.predator_positions,
    }
    marked = False  # an attractor or predator picked: the boids around it are looked through
    for kind, positions in points.items():
        index = pick(screen_positions(transform, positions), pos) if len(positions) else None
        if index is not None:
            depth = float((positions[index] - origin) @ direction)
            candidates.append((depth, Selection(kind, index), positions[index], False))
            marked = True
    # A boid, one of hundreds, is picked only where no predator or attractor is: a boid a little
    # nearer the camera took the click meant for the hawk among the flock.
    if boids and not marked and len(state.positions):
        index = pick(screen_positions(transform, state.positions), pos)
        if index is not None:
            depth = float((state.positions[index] - origin) @ direction)
            candidates.append((depth, ("boid", index), state.positions[index], False))
    if candidates:
        _, thing, point, surface = min(candidates, key=lambda c: c[0])
        return thing, np.asarray(point, np.float64), surface
    centre, radius = framed
    point = ray_plane(origin, direction, centre, np.asarray(up_axis(params), np.float64))
    if point is None or np.linalg.norm(point - centre) > radius:
        point = origin + float((centre - origin) @ direction) * direction
    return None, point, False


def seen_by(state: FlockState, params: Params, index: int) -> np.ndarray:
    """The boids boid ``index`` interacts with, as the step decides (its view distance or
    adaptive radius, its cone, its species' choice, the k nearest with topological
    neighbours): sorted indices, (K,) int."""
    from flock3d.core.space import neighbours

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
