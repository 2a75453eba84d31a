"""Headless runs: step a flock, show progress, record frames, stop cleanly on a signal."""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flock3d.core.fields import checked_count

if TYPE_CHECKING:
    from flock3d.flock import Flock
    from flock3d.io.trajectory import TrajectoryWriter

__all__ = [
    "RunStats",
    "run",
    "stop_on_signals",
    "stopping_signals",
    "StopFlag",
    "steps_for",
    "default_every",
    "FRAME_INTERVAL",
    "MAX_STEPS",
]

#: Most steps one run (or one sweep run) may take: about 3 hours for a handful of boids at
#: the kernel's fastest, days for the default 500. More is a typo, or a run that never ends.
MAX_STEPS = 10**9

#: Simulated seconds between recorded frames unless a run says otherwise. Ten frames a
#: second resolve the boids' turns and play back smoothly, and keep a recording a sixth
#: of the size a frame every step makes at the default dt of 1/60 s.
FRAME_INTERVAL = 0.1


def default_every(dt: float) -> int:
    """Steps between recorded frames: one frame per :data:`FRAME_INTERVAL` of simulated
    time, from 1 to :data:`MAX_STEPS` (however small ``dt`` is)."""
    return max(1, round(min(FRAME_INTERVAL / dt, MAX_STEPS)))  # a dt of 1e-320 gives inf


def steps_for(seconds: float, dt: float) -> int:
    """The fewest steps of ``dt`` that cover ``seconds`` of simulated time.

    A span that is a whole number of steps but for rounding (1 s at 1/60 s) is that
    many steps, not one more.

    Raises:
        ValueError: that is more than :data:`MAX_STEPS` steps.
    """
    wanted = seconds / dt
    if not wanted <= MAX_STEPS:
        raise ValueError(
            f"{seconds:g} s at sim.dt = {dt:g} is more than the {MAX_STEPS:,} steps a run may take "
            f"({wanted:.3g} steps)"
        )
    return math.ceil(wanted - 1e-9)


#: Steps between progress updates are chosen to take about this long.
_UPDATE_SECONDS = 0.1


class StopFlag:
    """Set by a signal handler; the run loop checks it between steps, and the flock it runs is
    asked to end its call under way (:meth:`~flock3d.Flock.interrupt`)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name: str | None = None
        self._listeners: list = []

    def set(self, signal_name: str = "stop") -> None:
        self.signal_name = signal_name
        self._event.set()
        for listener in self._listeners:
            listener()

    def listen(self, callback) -> None:
        """Call ``callback()`` when the flag is set (at once if it is)."""
        self._listeners.append(callback)
        if self:
            callback()

    def __bool__(self) -> bool:
        return self._event.is_set()


def stopping_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a run cleanly: SIGINT (Ctrl-C), SIGTERM, and SIGHUP (the terminal
    closed) where the platform has it and nobody ignores it: under ``nohup`` a run goes on."""
    hang_up = getattr(signal, "SIGHUP", None)
    kept = hang_up is not None and signal.getsignal(hang_up) != signal.SIG_IGN
    return (signal.SIGINT, signal.SIGTERM, *((hang_up,) if kept else ()))


@contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """Within the block, SIGINT (Ctrl-C), SIGTERM and SIGHUP (:func:`stopping_signals`) set a flag
    instead of killing the process.

    The run loop then ends the step under way (a fraction of a second; a step that never
    ends, such as a rule stuck in a loop, is given up after a grace period), the trajectory
    file is closed with every frame written so far, and the caller reports the interruption.
    A second signal is not caught. Outside the main thread (where handlers cannot be
    installed) it only yields a flag.
    """
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = {}

    def handle(num, frame):
        flag.set(signal.Signals(num).name)
        # A second Ctrl-C (or SIGTERM) acts at once: the handler from before the block takes it
        # (Python's KeyboardInterrupt, or the command's Terminated), and the run unwinds.
        signal.signal(num, previous[num])

    for sig in stopping_signals():
        previous[sig] = signal.signal(sig, handle)
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class RunStats:
    steps: int
    """Steps actually taken."""
    seconds: float
    """Wall-clock time spent stepping (and recording)."""
    frames: int = 0
    """Frames written to the trajectory, if any."""
    interrupted: str | None = None
    """The signal that stopped the run early, or None."""

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else float("inf")


def run(
    flock: Flock,
    steps: int,
    *,
    writer: TrajectoryWriter | None = None,
    every: int = 1,
    progress: bool | None = None,
    stop: StopFlag | None = None,
) -> RunStats:
    """Advance ``flock`` by ``steps`` steps.

    Args:
        writer: if given, the starting state and then every ``every``-th step are appended.
        every: steps between recorded frames.
        progress: show a progress bar on stderr (None: only when stderr is a terminal).
        stop: a :class:`StopFlag`; when it becomes set, the run ends after the current steps.

    Raises:
        TypeError, ValueError: ``steps`` or ``every`` is no whole number, or out of range.
    """
    from tqdm import tqdm

    steps, every = checked_count(steps, "steps", most=MAX_STEPS), checked_count(every, "every", least=1)
    if writer is not None and writer.frames == 0:
        with flock.state.reading():  # a GPU flock's state is copied back, and not sent again
            writer.append(flock.state)
    if stop is not None:
        stop.listen(flock.interrupt)
    done = since_frame = 0
    chunk = 1
    # tqdm's disable=None means "only on a terminal".
    bar = tqdm(total=steps, unit="step", file=sys.stderr, disable=None if progress is None else not progress)
    start = time.perf_counter()
    try:
        while done < steps and not stop:
            # Grow the chunk so that each call takes about _UPDATE_SECONDS, never past a frame.
            n = min(chunk, steps - done, every - since_frame if writer is not None else chunk)
            t, before = time.perf_counter(), flock.step_count
            flock.step(n)
            elapsed = time.perf_counter() - t
            n = flock.step_count - before  # fewer when a signal ended the call
            if elapsed < _UPDATE_SECONDS / 2:
                chunk *= 2
            elif elapsed > _UPDATE_SECONDS * 2 and chunk > 1:
                chunk //= 2
            done += n
            since_frame += n
            if writer is not None and since_frame == every:
                with flock.state.reading():  # frames evenly spaced; a shorter tail is not recorded
                    writer.append(flock.state)
                since_frame = 0
            bar.update(n)
    finally:
        bar.close()
        seconds = time.perf_counter() - start
        if writer is not None:
            writer.flush()
    return RunStats(
        steps=done,
        seconds=seconds,
        frames=writer.frames if writer is not None else 0,
        interrupted=stop.signal_name if stop else None,
    )
