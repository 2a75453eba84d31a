"""Things drawn over the flock: the HUD, the help text, and the focus on one boid."""

from __future__ import annotations

import math

import numpy as np
from vispy import scene

from flock3d.core import quaternion
from flock3d.core.params import Params
from flock3d.viewer.colors import BACKGROUND

__all__ = ["Hud", "HELP_TEXT", "FocusVisuals", "focus_colors", "cone_lines"]

HELP_TEXT = """\
mouse   drag: orbit   wheel: zoom   shift+drag: pan   click a boid: focus on it
space   pause / play          .   one step
r       reset (same seed)     n   reseed
[ ]     field of view -/+ 10 deg
- =     max turn rate / x 1.25
c       cycle camera (orbit, arcball, fly, follow)
v       cycle colours (heading, speed, neighbours, uniform)
f       focus on boid 0       esc  clear focus
p       screenshot (PNG)      m    record / stop video (MP4)
a       arena   x  axes       h ?  this help"""

FOCUS_COLOR = (0.35, 0.95, 1.0, 0.9)
NEIGHBOUR_COLOR = (1.0, 0.95, 0.35, 1.0)
FOCUSED_BOID_COLOR = (1.0, 0.25, 0.3, 1.0)


class Hud:
    """Two text blocks in canvas pixels: a status line top-left, help text below it."""

    def __init__(self, canvas: scene.SceneCanvas) -> None:
        # Canvas pixels run downwards, so a block hangs below its position with anchor "bottom".
        style = dict(
            color=(0.85, 0.9, 1.0, 0.95), font_size=9, anchor_x="left", anchor_y="bottom", parent=canvas.scene
        )
        self.status = scene.visuals.Text("", pos=(10, 8), bold=True, **style)
        self.help = scene.visuals.Text(HELP_TEXT, pos=(10, 34), **style)
        self.help.visible = False

    def set_status(self, text: str) -> None:
        self.status.text = text

    def toggle_help(self) -> bool:
        self.help.visible = not self.help.visible
        return self.help.visible


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


def focus_colors(base: np.ndarray, focused: int, neighbours: np.ndarray) -> np.ndarray:
    """Colours that single out one boid and the boids it sees; the rest are dimmed."""
    colors = base.copy()
    colors[:, :3] = colors[:, :3] * 0.3 + np.asarray(BACKGROUND[:3], dtype=np.float32) * 0.7
    colors[neighbours] = NEIGHBOUR_COLOR
    colors[focused] = FOCUSED_BOID_COLOR
    return colors


class FocusVisuals:
    """The focused boid's field-of-view cone and view sphere."""

    def __init__(self, view: scene.ViewBox) -> None:
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
