"""Screenshots and video recordings of the viewer's 3D view.

A recording plays at the simulation's pace: frame k shows the flock at simulated time
``t0 + k / VIDEO_FPS``, whatever frame rate the window reached (:class:`VideoClock`:
a slow frame is repeated, frames faster than the video are skipped, and while the
flock is paused nothing is added). Files go into an output folder, named after the
scene and the time they were taken (:func:`output_path`).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

__all__ = ["Recorder", "VideoClock", "output_path", "slug", "frame_image", "VIDEO_FPS"]

VIDEO_FPS = 30.0
"""Frames per second of recordings; frame k shows the flock at simulated time t0 + k / VIDEO_FPS."""
#: Simulated times this close count as equal (sums of steps differ in their last bits).
_TIME_TOLERANCE = 1e-9


def slug(name: str) -> str:
    """A scene's name as a file name part: lower case, runs of anything else than a-z
    and 0-9 as one ``-`` ("scene" when nothing is left)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "scene"


def output_path(folder: str | Path, scene_name: str, suffix: str) -> Path:
    """``folder/flock3d-SLUG-YYYYmmdd-HHMMSS{suffix}``: where a screenshot or a recording
    of the scene ``scene_name`` taken now goes; ``...-HHMMSS-2{suffix}``, ``-3``, ... after
    the first of the same second, so that none replaces another."""
    stem = Path(folder) / f"flock3d-{slug(scene_name)}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, k = stem.with_name(stem.name + suffix), 1
    while path.exists():
        k += 1
        path = stem.with_name(f"{stem.name}-{k}{suffix}")
    return path


class VideoClock:
    """Which video frames fall due as simulated time goes on.

    Frame k is due once the flock has reached ``t0 + k / fps``. A flock whose time went
    back (a reset, a new scene) goes on from its new time.

    Args:
        t0: simulated time of the first frame, s.
        fps: video frames per simulated second.
    """

    def __init__(self, t0: float, fps: float = VIDEO_FPS) -> None:
        self.fps = fps
        self.next = t0
        """Simulated time of the next frame due."""

    def due(self, t: float) -> int:
        """How many frames fall due by simulated time ``t`` (each shows the flock at ``t``)."""
        if t + _TIME_TOLERANCE < self.next - 1.0 / self.fps:
            self.next = t  # the flock was reset: go on from its new time
        count = 0
        while self.next <= t + _TIME_TOLERANCE:
            count += 1
            self.next += 1.0 / self.fps
        return count


def frame_image(canvas) -> np.ndarray:
    """The 3D view of a vispy ``canvas`` as shown (anti-aliased where the window is),
    (H, W, 3) uint8."""
    image = None
    grab = getattr(canvas.native, "grabFramebuffer", None)
    if grab is not None:
        image = _qimage_to_array(grab())
    if image is None or image.size == 0:
        image = canvas.render(alpha=False)
    return image[..., :3]


def _qimage_to_array(image) -> np.ndarray | None:
    """(H, W, 3) uint8 RGB from a QImage (None if it is empty)."""
    from PySide6 import QtGui

    if image.isNull():
        return None
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    buffer = np.frombuffer(image.constBits(), np.uint8, count=stride * h).reshape(h, stride)
    return buffer[:, : 3 * w].reshape(h, w, 3).copy()


class Recorder:
    """Screenshots (PNG) and recordings (MP4 at :data:`VIDEO_FPS`) of a canvas's 3D view.

    Failures raise; the window says them. ``video`` is the recording under way, or None.

    Args:
        canvas: the vispy canvas drawn.
        output_dir: the folder files go into unless a path is given.
    """

    def __init__(self, canvas, output_dir: str | Path = ".") -> None:
        self.canvas = canvas
        self.output_dir = Path(output_dir)
        self.video = None
        self._clock: VideoClock | None = None

    @property
    def recording(self) -> bool:
        return self.video is not None

    def path_for(self, scene_name: str, suffix: str) -> Path:
        """Where a file of the scene ``scene_name`` taken now goes in the output folder."""
        return output_path(self.output_dir, scene_name, suffix)

    def screenshot(self, path: str | Path) -> Path:
        """Save the 3D view as a PNG at ``path`` (:func:`flock3d.io.video.write_image`); returns it.

        Raises:
            Flock3dError: the file cannot be written (one line; a file that was there is kept).
        """
        from flock3d.io.video import write_image

        path = Path(path)
        write_image(path, frame_image(self.canvas))
        return path

    def start(self, scene_name: str, t0: float) -> Path:
        """Start recording, its first frame at simulated time ``t0``; returns the video's path.

        Raises:
            Flock3dError: the file cannot be created.
        """
        from flock3d.io.video import VideoWriter

        self.video = VideoWriter(self.path_for(scene_name, ".mp4"), fps=VIDEO_FPS)
        self._clock = VideoClock(t0, VIDEO_FPS)
        return self.video.path

    def stop(self):
        """Finish the recording; returns its :class:`~flock3d.io.video.VideoWriter` (``path``,
        ``frames``), or None when none was under way.

        Raises:
            Flock3dError: the video could not be written (the recording has stopped).
        """
        video, self.video, self._clock = self.video, None, None
        if video is not None:
            video.close()
        return video

    def record(self, t: float) -> None:
        """Add the frames of the video that fall due by the simulated time ``t`` shown now.

        Raises:
            Flock3dError: the encoder failed (the recording is still under way: stop it).
        """
        due = self._clock.due(t)
        if due:
            image = frame_image(self.canvas)
            for _ in range(due):
                self.video.append(image)
