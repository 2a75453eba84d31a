"""Where a window's frame time goes: seconds spent in each phase of its frames (``flock3d bench
--viewer`` prints them as ms a frame)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PHASES", "PhaseTimes"]

#: The parts of a frame's time that :class:`PhaseTimes` adds up. The simulation's steps and the
#: copy of the state the window draws run on the session's worker thread, beside the frames; the
#: instance data (the boids' buffers: positions, orientations, banks, and colours in the modes
#: the CPU colours) and the draw (the canvas's draw event: the scene's draw calls and the upload
#: of the buffers that changed) on the window's thread. What the OpenGL driver does after the
#: draw event returns is in none of them.
PHASES = ("simulation", "copy", "instance data", "draw")


class PhaseTimes:
    """Seconds spent in each of :data:`PHASES` since it was made. Additions to one phase never
    overlap: each is made on one thread, or (the copy, which either thread may make) under the
    session's lock."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the time the ``with`` block takes to ``phase``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - start)

    def per_frame_ms(self, since: dict[str, float], frames: int) -> dict[str, float]:
        """ms a frame of each phase over ``frames`` frames, from the ``seconds`` copied at their start."""
        return {phase: 1e3 * (self.seconds[phase] - since[phase]) / max(frames, 1) for phase in PHASES}
