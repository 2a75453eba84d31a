"""Writing videos (MP4, H.264) from rendered frames, with imageio's bundled ffmpeg."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flock3d.errors import Flock3dError

__all__ = ["VideoWriter"]


class VideoWriter:
    """Append (H, W, 3) uint8 frames to an MP4 file.

    Width and height must be even (yuv420p, the pixel format every player reads).
    """

    def __init__(self, path: str | Path, fps: float = 30.0) -> None:
        import imageio.v2 as imageio

        self.path = Path(path)
        self.frames = 0
        self._shape: tuple[int, ...] | None = None
        try:
            self._writer = imageio.get_writer(
                self.path,
                format="FFMPEG",
                fps=fps,
                codec="libx264",
                quality=7,
                pixelformat="yuv420p",
                macro_block_size=2,
                ffmpeg_log_level="error",
            )
        except Exception as error:
            raise Flock3dError(f"{self.path}: cannot start the video encoder ({error})") from None

    def append(self, image: np.ndarray) -> None:
        """Add a frame; frames of another size than the first are cropped or padded to it
        (a window resized while recording must not corrupt the stream)."""
        image = np.asarray(image)[..., :3]
        if self._shape is None:
            self._shape = image.shape
        elif image.shape != self._shape:
            fitted = np.zeros(self._shape, dtype=image.dtype)
            h, w = min(image.shape[0], self._shape[0]), min(image.shape[1], self._shape[1])
            fitted[:h, :w] = image[:h, :w]
            image = fitted
        self._writer.append_data(np.ascontiguousarray(image))
        self.frames += 1

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
