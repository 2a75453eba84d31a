"""Writing videos (MP4, H.264) from rendered frames, with the ffmpeg that imageio-ffmpeg bundles,
and still images (PNG).

The file is written with its index (the ``moov`` atom) at the front ("fast start"),
so that a player or a browser can start playing before it has the whole file.
ffmpeg's own messages are kept, not printed: a failure (an output that cannot be
written, a full disk) becomes one :class:`Flock3dError` naming the file and the cause.

ffmpeg writes a temporary file beside the video, renamed over it when the video is
finished (:class:`~flock3d.core.atomic.AtomicFile`): a recording that fails, or is
abandoned, leaves the file that was there before as it was; one its user stopped early is
put beside it (:meth:`VideoWriter.close_stopped`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from flock3d.core.atomic import AtomicFile, atomic_write
from flock3d.errors import Flock3dError

__all__ = ["MAX_VIDEO_BLOCKS", "VideoWriter", "Written", "check_video_size", "write_image", "write_video"]

MAX_VIDEO_BLOCKS = 139_264
"""The largest frame any H.264 level allows, in blocks of 16 x 16 pixels (level 6.2: 8192x4320
and the like). x264 encodes a larger one outside every level, and hardware decoders refuse it."""


def check_video_size(width: int, height: int, what: str) -> None:
    """Refuse a video frame of ``width`` x ``height`` pixels that players cannot show: odd sides
    (yuv420p, the pixel format every player reads, halves both) or more than
    :data:`MAX_VIDEO_BLOCKS`. ``what`` names the input in the message.

    Raises:
        Flock3dError: one line naming ``what``, the size and the limit.
    """
    size = f"{width}x{height}"
    if width % 2 or height % 2:
        raise Flock3dError(f"{what}: a video's width and height must be even (yuv420p), got {size}")
    if -(-width // 16) * -(-height // 16) > MAX_VIDEO_BLOCKS:
        raise Flock3dError(
            f"{what}: {size} is more than an H.264 video may hold (level 6.2: 8192x4320 pixels)"
        )


class VideoWriter:
    """Append (H, W, 3) uint8 frames to an MP4 file, played at ``fps`` frames per second.

    A frame with an odd side loses its last row or column (yuv420p, the pixel format every
    player reads, wants even sides); one larger than :data:`MAX_VIDEO_BLOCKS` is refused.
    The encoder starts with the first frame; :meth:`close` finishes the file and raises
    :class:`Flock3dError` if it could not be written. A video without frames is not written.
    """

    def __init__(self, path: str | Path, fps: float = 30.0, quality: int = 18) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.quality = quality
        self.frames = 0
        self.written_to: Path | None = None
        """Where :meth:`close` or :meth:`close_stopped` put the video (None: not written)."""
        self._shape: tuple[int, ...] | None = None
        self._process: subprocess.Popen | None = None
        try:  # fail now, not after rendering, if the file cannot be created
            self._file = AtomicFile(self.path)
        except OSError as error:
            raise Flock3dError(f"{self.path}: cannot write the video ({error.strerror or error})") from None
        self._log = tempfile.TemporaryFile()

    def _start(self, width: int, height: int) -> None:
        try:
            import imageio_ffmpeg

            ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
        except Exception as error:  # not installed, or no binary for this platform
            raise Flock3dError(f"{self.path}: no video encoder (imageio-ffmpeg): {error}") from None
        command = [
            ffmpeg, "-y", "-loglevel", "error",
            "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{width}x{height}", "-pix_fmt", "rgb24",
            "-r", f"{self.fps:.6g}", "-i", "-",
            "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-crf", str(self.quality),
            "-movflags", "+faststart", str(self._file.temp),
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log
        )

    def _failure(self, what: str, status: int) -> Flock3dError:
        """The error of an encoder that ended with exit ``status``; the temporary file is removed."""
        self._log.seek(0)
        text = self._log.read().decode(errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # ffmpeg's lines look like "[out#0/mp4 @ 0x...] Error opening output x.mp4: No space left on device".
        errors = [line.split("] ", 1)[-1] for line in lines if "rror" in line]
        cause = (errors[0] if errors else (lines[-1] if lines else "")).replace(
            str(self._file.temp), str(self.path)
        )
        if not cause and status < 0:  # killed, saying nothing: SIGXFSZ past ``ulimit -f``
            cause = f"ffmpeg: {signal.strsignal(-status) or -status}"
        self._file.discard()
        return Flock3dError(f"{self.path}: {what}" + (f" ({cause})" if cause else ""))

    def append(self, image: np.ndarray) -> None:
        """Add a frame; frames of another size than the first are cropped or padded to it
        (a window resized while recording must not corrupt the stream)."""
        image = np.asarray(image)[..., :3]
        if self._shape is None:
            height, width = image.shape[0] - image.shape[0] % 2, image.shape[1] - image.shape[1] % 2
            check_video_size(width, height, str(self.path))
            self._shape = (height, width, 3)
            self._start(width, height)
        if image.shape != self._shape:
            fitted = np.zeros(self._shape, dtype=image.dtype)
            h, w = min(image.shape[0], self._shape[0]), min(image.shape[1], self._shape[1])
            fitted[:h, :w] = image[:h, :w]
            image = fitted
        try:
            self._process.stdin.write(np.ascontiguousarray(image, dtype=np.uint8).tobytes())
        except (BrokenPipeError, OSError):
            status = self._process.wait()
            raise self._failure("the video encoder stopped", status) from None
        self.frames += 1

    def close(self) -> None:
        """Finish the file; raises :class:`Flock3dError` if it could not be written."""
        self._finish(self._file.commit)

    def close_stopped(self) -> None:
        """Finish the video of a render its user stopped early (Ctrl-C, a signal).

        A file that was at ``path`` is kept, the frames so far put beside it at
        ``STEM.stopped.mp4`` (or ``.stopped-2``, ...: :attr:`written_to`), so that a stop a
        second in never replaces a long video.
        """
        self._finish(lambda: self._file.commit_beside("stopped"))

    def _finish(self, commit) -> None:
        process, self._process = self._process, None
        if process is None:
            self._file.discard()
            return
        try:
            process.stdin.close()
        except OSError:
            pass
        status = process.wait()
        if status != 0:
            raise self._failure("writing the video failed", status)
        self._log.close()
        try:
            self.written_to = commit()
        except OSError as error:
            raise Flock3dError(f"{self.path}: cannot write the video ({error.strerror or error})") from None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: stop the encoder quietly, and keep the file that was there
            if self._process is not None:
                self._process.kill()
                self._process.wait()
                self._process = None
            self._file.discard()


class Written(NamedTuple):
    """What :func:`write_video` wrote."""

    frames: int
    path: Path | None
    """Where the video is (None: no frames, nothing written)."""


def write_video(
    path: str | Path,
    images: Iterable[np.ndarray],
    fps: float,
    *,
    total: int | None = None,
    progress: bool | None = None,
    stop=None,
) -> Written:
    """Write ``images``, (H, W, 3) uint8 frames, as an MP4 file played at ``fps`` [frames/s].

    Args:
        total: the number of images, for the progress bar.
        progress: a progress bar on stderr (None: only on a terminal).
        stop: a flag (:class:`flock3d.runner.StopFlag`): once it is set, no further image is
            taken, and the frames so far are closed as :meth:`VideoWriter.close_stopped` does.

    Returns:
        The frames written and where (:class:`Written`).

    Raises:
        Flock3dError: the file could not be written; the file that was there is kept.
    """
    from tqdm import tqdm

    bar = tqdm(total=total, unit="frame", file=sys.stderr, disable=None if progress is None else not progress)
    with bar, VideoWriter(path, fps=fps) as video:
        for image in images:
            video.append(image)
            bar.update()
            if stop:
                break
        if stop:
            video.close_stopped()
    return Written(video.frames, video.written_to)


def write_image(path: str | Path, image: np.ndarray) -> None:
    """Write ``image``, (H, W, 3) uint8, as a PNG file.

    Raises:
        Flock3dError: the file could not be written; the file that was there is kept.
    """
    import imageio.v3 as iio

    png = iio.imwrite("<bytes>", image, extension=".png")
    try:  # encoded in memory first: a full disk fails here, leaving an older image whole
        with atomic_write(path, "wb") as handle:
            handle.write(png)
    except OSError as error:
        raise Flock3dError(f"{path}: cannot write the image ({error.strerror or error})") from None
