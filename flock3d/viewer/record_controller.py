"""What the screenshot and record controls do in a :class:`~flock3d.viewer.app.ViewerWindow`:
the files go through its :class:`~flock3d.viewer.recording.Recorder`, and each start, end or
failure is said in the status bar (and the record button follows)."""

from __future__ import annotations

from pathlib import Path

from flock3d.errors import Flock3dError

__all__ = ["RecordController"]


class RecordController:
    """Screenshots and recordings of a window's 3D view.

    Args:
        window: the :class:`~flock3d.viewer.app.ViewerWindow` whose recorder, panel and status bar it uses.
    """

    def __init__(self, window) -> None:
        self.w = window

    def screenshot(self, path: str | Path | None = None) -> Path:
        """Save the 3D view as a PNG (in the output folder unless ``path`` is given)."""
        w = self.w
        path = Path(path) if path else w.recorder.path_for(w.session.scene.name, ".png")
        try:
            w.recorder.screenshot(path)
        except Flock3dError as error:
            w.warn("Screenshot not saved", str(error))
            return path
        w.status.showMessage(f"saved screenshot {path}", 5000)
        return path

    def set_recording(self, on: bool) -> None:
        """Start or stop recording the 3D view to an MP4 in the output folder, at the
        simulation's pace (:mod:`flock3d.viewer.recording`)."""
        from flock3d.viewer.recording import VIDEO_FPS

        w = self.w
        recorder, button = w.recorder, w.panel.buttons["record"]
        if on and not recorder.recording:
            try:
                path = recorder.start(w.session.scene.name, w.snapshot.time)
            except Flock3dError as error:
                w.warn("Cannot record", str(error))
                w.panel.quietly(button, lambda: button.setChecked(False))
                return
            w.status.showMessage(f"recording to {path}")
        elif not on and recorder.recording:
            try:
                video = recorder.stop()
            except Flock3dError as error:
                w.warn("Recording failed", str(error))
            else:
                w.status.showMessage(
                    f"saved {video.frames} frames ({video.frames / VIDEO_FPS:.1f} s) to {video.path}", 8000
                )
        button.setText("Stop recording" if recorder.recording else "Record")

    def record(self) -> None:
        """Add the frames of the video that fall due by the simulated time shown now."""
        try:
            self.w.recorder.record(self.w.snapshot.time)
        except Flock3dError as error:
            self.w.warn("Recording failed", str(error))
            self.w.panel.buttons["record"].setChecked(False)
