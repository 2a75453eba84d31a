"""Things drawn over the flock: the HUD, the help text, and the focus on one boid."""

from __future__ import annotations

import math

import numpy as np
from vispy import scene

from flock3d.core import quaternion
from flock3d.core.params import Params

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
t       trails on / off       d    velocity and steering lines
p       screenshot (PNG)      m    record / stop video (MP4)
a       arena   x  axes       h ?  this help      ctrl+q  quit
fly camera: arrows move, page up/down rise and sink, drag or i j k l to look,
            q e roll"""

FOCUS_COLOR = (0.35, 0.95, 1.0, 0.9)
NEIGHBOUR_COLOR = (1.0, 0.95, 0.35, 1.0)
FOCUSED_BOID_COLOR = (1.0, 1.0, 1.0, 1.0)
OTHER_BOID_COLOR = (0.55, 0.6, 0.72)
"""What the boids that the focused one does not see fade to."""


class Hud:
    """Text over the canvas: a status line top-left, the help below it, and a notice in
    the middle (e.g. while the simulation compiles).

    Qt labels laid over the canvas widget rather than vispy text: they are redrawn only
    when their text changes (vispy's text visual re-uploads a texture every frame, 6 ms
    in software OpenGL), and screenshots and recordings of the 3D view leave them out.

    Args:
        parent: the canvas's Qt widget.
    """

    def __init__(self, parent) -> None:
        from PySide6 import QtCore, QtGui, QtWidgets

        def label(style: str) -> QtWidgets.QLabel:
            widget = QtWidgets.QLabel(parent)
            widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
            widget.setStyleSheet(
                "QLabel { background: rgba(6, 10, 20, 150); color: #dce5f7; border-radius: 3px;"
                f" padding: 3px 7px; {style} }}"
            )
            return widget

        self.parent = parent
        self.status = label("font-weight: bold;")
        self.status.move(6, 6)
        self.help = label("")
        self.help.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.help.setText(HELP_TEXT)
        self.help.adjustSize()
        self.help.move(6, 34)
        self.help.hide()
        self.notice = label("font-size: 14pt; font-weight: bold; color: #ffeec0; padding: 8px 14px;")
        self.notice.hide()

    def set_status(self, text: str) -> None:
        self.status.setText(text)
        self.status.adjustSize()

    def set_notice(self, text: str) -> None:
        """Show ``text`` in the middle of the canvas ("" hides it)."""
        if text != self.notice.text():
            self.notice.setText(text)
            self.notice.adjustSize()
        if text:
            size = self.notice.size()
            self.notice.move(
                (self.parent.width() - size.width()) // 2, (self.parent.height() - size.height()) // 2
            )
        self.notice.setVisible(bool(text))

    def toggle_help(self) -> bool:
        self.help.setVisible(not self.help.isVisible())
        return self.help.isVisible()


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
    """Colours that single out one boid and the boids it sees; the rest turn a quiet grey-blue
    (still clearly visible against the sky, but without colour)."""
    colors = base.copy()
    grey = colors[:, :3] @ np.array([0.2126, 0.7152, 0.0722], np.float32)
    colors[:, :3] = 0.35 * grey[:, None] + 0.65 * np.asarray(OTHER_BOID_COLOR, dtype=np.float32)
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
