"""Each frame of a :class:`~flock3d.viewer.app.ViewerWindow`: the timer's tick runs the steps due
(without the worker thread), draws the latest snapshot of the flock (the focus view, the
selection, the follow camera, the compile notice) and, a few times a second, the HUD's numbers.
A frame never waits for a step: it draws the last snapshot the session published."""

from __future__ import annotations

import time

from flock3d.core.compiling import compiling_since

__all__ = ["FrameLoop", "START_HINT"]

#: The status bar's first words: how to get going (the timing of the first frame is bench's).
START_HINT = "drag to orbit · scroll to zoom · right-click to add things · h for every key"


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

    def tick(self) -> None:
        """One frame: (without the worker: run the steps due), draw the latest snapshot, update the HUD."""
        w = self.w
        now = time.perf_counter()
        if not w.threaded:
            w.session.advance(now - self._last_tick)
        self._last_tick = now
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
            w.view.camera.center = tuple(w.follow_target()[0])
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
        rates = self.meter.measure(now, snap, s.time_scale)
        w.hud.set_status(
            status_text(
                snap,
                rates,
                paused=s.paused,
                first_step_done=s.first_step_done,
                recording=w.recorder.recording,
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
            w.status.showMessage(START_HINT, 8000)
