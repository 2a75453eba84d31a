"""Each frame of a :class:`~flock3d.viewer.app.ViewerWindow`: the timer's tick runs the steps due
(without the worker thread), draws the latest snapshot of the flock (the focus view, the
selection, the follow camera, the compile notice) and, a few times a second, the HUD's numbers.
A frame never waits for a step: it draws the last snapshot the session published."""

from __future__ import annotations

import math
import time

from flock3d.core.compiling import compiling_since

__all__ = ["FrameLoop", "START_HINT", "watch_input"]

#: The status bar's first words: how to get going (the timing of the first frame is bench's).
START_HINT = "drag to orbit · scroll to zoom · right-click to add things · h for every key"

#: Seconds between the frames of a window whose flock has not moved since its last frame and
#: that took no input meanwhile (paused, or waiting for a compile). What a program changes
#: (a colour mode set from Python, a compile that ended) shows within it; a paused window drew
#: 35 identical frames a second, 1.4 cores of software OpenGL.
IDLE_REDRAW = 0.25
#: Seconds after a key, a click, a drag or a wheel in the window for which every tick draws.
INPUT_WAKE = 1.0


class FrameLoop:
    """The frames of a window: it keeps the window's ``snapshot``, ``frames_drawn`` and
    ``first_frame_seconds`` up to date.

    Args:
        window: the :class:`~flock3d.viewer.app.ViewerWindow` it draws.
    """

    def __init__(self, window) -> None:
        from flock3d.viewer.hud import HudMeter

        self.w = window
        self._last_tick = time.perf_counter()
        self._draw_began: float | None = None
        self.meter = HudMeter(time.perf_counter(), window.snapshot)
        self._pushed: tuple[object, float] | None = None
        """The snapshot last drawn and ``time.perf_counter()`` then."""
        self.input_at = -math.inf
        """``time.perf_counter()`` at the window's last input (:func:`watch_input`)."""

    def tick(self) -> None:
        """One frame: (without the worker: run the steps due), draw the latest snapshot unless the
        window is idle (:data:`IDLE_REDRAW`), update the HUD."""
        w = self.w
        now = time.perf_counter()
        if not w.threaded:
            w.session.advance(now - self._last_tick)
        self._last_tick = now
        pushed = self._pushed
        idle = (
            pushed is not None
            and pushed[0] is w.session.snapshot()  # a new object each step (or edit) published
            and now - pushed[1] < IDLE_REDRAW
            and now - self.input_at > INPUT_WAKE
        )
        if not idle:
            self.push_state()
        if self.meter.due(now):
            self._update_hud(now)
        if w.recorder.recording:
            w.records.record()

    def push_state(self) -> None:
        """Draw the session's latest snapshot."""
        from flock3d.viewer.hud import notice_text
        from flock3d.viewer.picking import focus_colors, seen_by

        w = self.w
        snap = w.snapshot = w.session.snapshot()
        self._pushed = snap, time.perf_counter()
        state, params = snap.state, snap.params
        colors = None
        if w.focused is not None and w.focused < len(state):
            i = w.focused
            colors = focus_colors(w.visuals.colors_for(state).colors, i, seen_by(state, params, i))
            species = int(params.species_of_boids[i])
            w.focus.show(state.positions[i], state.orientations[i], params.of_species(species))
        elif w.focused is not None:
            w.set_focus(None)
        with w.session.times.timed("instance data"):
            w.visuals.update(state, colors, acceleration=snap.acceleration)
        editor = w.editing.editor
        w.visuals.show_selection(editor.valid(editor.selection))
        if w.camera_kind == "follow" and len(state):
            w.visuals.framing.follow(w.view.camera, *w.follow_target())
        # Any compile of over a second says so, whatever started it (a scene, a colour mode).
        since = compiling_since()
        compiling = w.threaded and (
            not w.session.first_step_done or (since is not None and time.monotonic() - since > 1.0)
        )
        w.hud.set_notice(notice_text(w.session.error, compiling))
        w.canvas.update()

    def _update_hud(self, now: float) -> None:
        from PySide6 import QtWidgets

        from flock3d.viewer.hud import status_text

        w = self.w
        s, snap = w.session, w.snapshot
        if w.editing.editor.selection is not None and not w.world_panel.isAncestorOf(
            QtWidgets.QApplication.focusWidget()
        ):
            w.editing.show_selected()  # a predator or a moving object moves on: its fields follow
        w.window.setWindowModified(w.scenes.unsaved())  # the title's * says what quitting would lose
        rates = self.meter.measure(now, snap, s.time_scale)
        w.hud.set_status(
            status_text(
                snap,
                rates,
                paused=s.paused,
                first_step_done=s.first_step_done,
                recording=w.recorder.recording,
                compiling=compiling_since() is not None,  # the step waits on it: not too slow
            )
        )

    def draw_begins(self, event=None) -> None:
        """The canvas's draw event begins (the first of its handlers)."""
        self._draw_began = time.perf_counter()

    def drawn(self, event=None) -> None:
        """The canvas drew a frame (the last of its draw event's handlers): count it and time it;
        the first one times the start and shows the hint."""
        w = self.w
        if self._draw_began is not None:
            w.session.times.add("draw", time.perf_counter() - self._draw_began)
            self._draw_began = None
        self.meter.frame_drawn()
        w.frames_drawn += 1
        if w.first_frame_seconds is None:
            w.first_frame_seconds = time.perf_counter() - w.started
            w.visuals.scenery.unprime()
            w.status.showMessage(START_HINT, 8000)


def watch_input(loop: FrameLoop):
    """A Qt event filter (a ``QObject``) that tells ``loop`` when the application takes input
    (keys, the mouse): install it on the application, remove it when the window closes. Not
    resizes: the HUD's labels resize as their text changes."""
    from PySide6 import QtCore

    kinds = {
        QtCore.QEvent.Type.KeyPress, QtCore.QEvent.Type.KeyRelease, QtCore.QEvent.Type.MouseButtonPress,
        QtCore.QEvent.Type.MouseButtonRelease, QtCore.QEvent.Type.MouseMove, QtCore.QEvent.Type.Wheel,
    }  # fmt: skip

    class Watch(QtCore.QObject):
        def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
            if event.type() in kinds:
                loop.input_at = time.perf_counter()
            return False

    return Watch()
