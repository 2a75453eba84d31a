"""The HUD: the status line over the canvas, the help below it, and a notice in the middle.

What the status line says is worked out here from the latest snapshot, without a
window: :class:`HudMeter` measures frames/s, steps/s and the real-time factor over
each :data:`HUD_INTERVAL_S`, :func:`status_text` writes the line (rates, simulated
time, N, field of view, turn rate, polarization, recording), :func:`notice_text` the
notice. :class:`Hud` only shows them, as Qt labels over the canvas.
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING, NamedTuple

from flock3d.scene.schema import COLOR_MODES

if TYPE_CHECKING:
    from flock3d.viewer.session import Snapshot

__all__ = [
    "Hud",
    "HudMeter",
    "Rates",
    "status_text",
    "notice_text",
    "HELP_TEXT",
    "HUD_INTERVAL_S",
    "COMPILING_TEXT",
]

#: Seconds between rewrites of the status line: its rates are measured over this span.
HUD_INTERVAL_S = 0.25
#: Steps/s is measured over the latest spans that hold this many steps (:class:`HudMeter`) ...
STEPS_COUNTED = 10
#: ... or over this many seconds when fewer steps are taken.
STEPS_WINDOW_S = 4.0
#: Below this real-time factor a running flock is said not to keep up.
SLOW_FACTOR = 0.95
#: Steps at least this long come in bursts longer than the HUD's span, so that one span's
#: real-time factor says nothing about keeping up; the HUD does not judge them.
BURST_DT = 0.25
COMPILING_TEXT = "compiling the simulation (first run only)…"
#: Pixels between the HUD's labels and the canvas's edges.
MARGIN_PX = 6

HELP_TEXT = f"""\
mouse   drag: orbit   wheel: zoom   shift+drag: pan   click a boid: focus on it
world   click an object, attractor or predator: select   drag it: move (ctrl: up/down)
        right-click: add here, delete   del: delete   ctrl+z: undo   (World tab)
space   pause / play          .   one step
r       reset (same seed)     n   reseed
[ ]     field of view -/+ 10 deg
- =     max turn rate / x 1.25
c       cycle camera (orbit, arcball, fly, follow)
v       cycle colours ({", ".join(COLOR_MODES)})
f       focus on boid 0       esc  clear focus, hide help
t       trails on / off       d    velocity and steering lines
p       screenshot (PNG)      m    record / stop video (MP4)
a       arena   x  axes       g    guides (path, waypoints, attractors)
h ?     this help             ctrl+q  quit
fly camera: arrows move, page up/down rise and sink, drag or i j k l to look,
            q e roll"""


class Rates(NamedTuple):
    """What one span of the HUD measured: frames drawn and steps taken per wall-clock
    second, and simulated seconds per wall-clock second over the time scale (1: the
    flock keeps up)."""

    fps: float
    steps_per_second: float
    real_time_factor: float


class HudMeter:
    """Counts frames and measures the rates of each span of :data:`HUD_INTERVAL_S`.

    Args:
        now: wall-clock time, s (``time.perf_counter()``), when the first span starts.
        snapshot: the flock then (its simulated time and step count).
    """

    def __init__(self, now: float, snapshot: Snapshot) -> None:
        self._since = now
        self._sim = (snapshot.time, snapshot.step_count)
        self._frames = 0
        self._marks = collections.deque([(now, snapshot.step_count)])  # spans' ends, STEPS_WINDOW_S back

    def frame_drawn(self) -> None:
        self._frames += 1

    def due(self, now: float) -> bool:
        """Whether the span has lasted :data:`HUD_INTERVAL_S` by ``now``."""
        return now - self._since >= HUD_INTERVAL_S

    def measure(self, now: float, snapshot: Snapshot, time_scale: float) -> Rates:
        """The rates since the span began, which ends it and begins the next at ``now``.

        Simulated time that went back (a reset, a new scene) counts as none passed; a
        time scale of 0 counts as keeping up.
        """
        span = now - self._since
        sim_time, steps = self._sim
        simulated = max(snapshot.time - sim_time, 0.0)
        rates = Rates(
            fps=self._frames / span,
            steps_per_second=self._steps_per_second(now, snapshot.step_count),
            real_time_factor=simulated / (span * time_scale) if time_scale > 0 else 1.0,
        )
        self._since, self._sim, self._frames = now, (snapshot.time, snapshot.step_count), 0
        return rates

    def _steps_per_second(self, now: float, count: int) -> float:
        """Steps/s over the latest spans that hold :data:`STEPS_COUNTED` steps, at most
        :data:`STEPS_WINDOW_S` back: a fast flock's rate follows each span, and one of a step a
        second (dt = 1) reads 1, not 0 and 4 by turns as a quarter second's count would."""
        marks = self._marks
        if count < marks[-1][1]:  # a reset: counted from this span's start
            marks.clear()
            marks.append((self._since, 0))
        marks.append((now, count))
        while len(marks) > 2 and now - marks[1][0] >= STEPS_WINDOW_S:
            marks.popleft()
        for since, counted in reversed(marks):
            if since < now and (count - counted >= STEPS_COUNTED or since == marks[0][0]):
                return (count - counted) / (now - since)
        return 0.0


def status_text(
    snapshot: Snapshot,
    rates: Rates,
    *,
    paused: bool,
    first_step_done: bool,
    recording: bool,
    compiling: bool = False,
) -> str:
    """The status line: frames/s, steps/s (or paused, and a warning when the flock falls
    behind real time, unless it waits on a compile, which the notice tells), simulated time, N,
    field of view, turn rate, polarization, and whether a video is being recorded."""
    from flock3d.metrics import polarization
    from flock3d.viewer.panel import UNLIMITED_TEXT

    p, state = snapshot.params, snapshot.state
    pol = f"{polarization(state.velocities):.2f}" if len(state) else "–"  # no boids: no order to tell
    slow = (
        rates.real_time_factor < SLOW_FACTOR
        and first_step_done
        and not paused
        and not compiling
        and snapshot.step_count > 0
        and p.dt < BURST_DT
    )
    lag = f"  (x{rates.real_time_factor:.2f} real time: cannot keep up)" if slow else ""
    rate = rates.steps_per_second
    running = "paused" if paused else f"{rate:.1f} steps/s" if 0.0 < rate < 9.95 else f"{rate:,.0f} steps/s"
    # Whole degrees a second, as the panel's control shows them (the = key multiplies by 1.25).
    turn = UNLIMITED_TEXT if math.isinf(p.max_turn_rate) else f"{p.max_turn_rate:.0f}"
    rec = "   ● REC" if recording else ""
    return (
        f"{rates.fps:.0f} fps   {running}{lag}   t {snapshot.time:.1f} s   N {len(state):,}   "
        f"FOV {p.fov:g}°   turn {turn}°/s   P {pol}{rec}   [h: help]"
    )


def notice_text(error: BaseException | None, compiling: bool) -> str:
    """The message in the middle of the canvas: a simulation that stopped (``error``), or
    the first compile under way; "" for none."""
    if error is not None:
        return f"the simulation stopped: {error}"
    return COMPILING_TEXT if compiling else ""


class Hud:
    """Text over the canvas: a status line top-left, the help below it, and a notice in
    the middle (e.g. while the simulation compiles).

    Qt labels laid over the canvas widget rather than vispy text: they are redrawn only
    when their text changes, where vispy's text visual uploads a texture every frame,
    and screenshots and recordings of the 3D view leave them out.

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
        self.status.move(MARGIN_PX, MARGIN_PX)
        self.help = label("")
        self._help_font = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.help.setFont(self._help_font)
        self._help_style = self.help.styleSheet()
        self.help.setText(HELP_TEXT)
        self.help.adjustSize()
        self.help.hide()
        self.notice = label("font-size: 14pt; font-weight: bold; color: #ffeec0; padding: 8px 14px;")
        self.notice.hide()

    def set_status(self, text: str) -> None:
        room = max(60, self.parent.width() - 2 * MARGIN_PX)
        self.status.setText(text)
        self.status.setWordWrap(False)
        self.status.adjustSize()  # one line, as wide as it is
        if self.status.width() > room:  # a narrow canvas: wrapped within it rather than cut off
            self.status.setWordWrap(True)
            self.status.resize(room, self.status.heightForWidth(room))
        if self.help.isVisible():
            self._fit_help()

    def _fit_help(self) -> None:
        """The help below the status line, its columns kept: its font made smaller, down to 6 pt,
        where the canvas is narrower than the text (the label's style sheet rules its font, so the
        size is set there: setFont is overruled by it)."""
        room, points = self.parent.width() - 2 * MARGIN_PX, self._help_font.pointSizeF()
        for _ in range(3):  # text widths do not scale exactly with the size: measured again
            size = f"QLabel {{ font-size: {points:.1f}pt; }}"
            if not self.help.styleSheet().endswith(size):
                self.help.setStyleSheet(self._help_style + size)
            self.help.adjustSize()
            if self.help.width() <= room or points <= 6.0:
                break
            points = max(6.0, points * room / self.help.width() - 0.1)
        self.help.move(MARGIN_PX, self.status.geometry().bottom() + MARGIN_PX)

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
        if self.help.isVisible():
            self._fit_help()
        return self.help.isVisible()
