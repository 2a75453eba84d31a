"""Waiting with Qt's event loop turning: the window draws and takes input while a test, a
measurement or a long job waits. Qt's own loop, never ``processEvents`` polled from Python."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_event_loop", "run_beside_event_loop", "Beside", "TURN"]

T = TypeVar("T")

#: Seconds of a timer that lets the event loop turn once: it fires after the timers and input
#: already due. (Qt delivers posted events, a zero timer's among them, before any timer: a
#: zero timer lets nothing in between.)
TURN = 0.001


def run_event_loop(seconds: float) -> None:
    """Let Qt's event loop run for ``seconds`` (drawing, timers, input), then return.

    For measurements and tests. Qt's own loop, not ``processEvents`` polled from Python,
    so that waiting makes no Qt call per poll: PySide6 6.12.0 leaks a reference to None on
    each such call (pyproject excludes that version on Python 3.11, where the leak aborts
    Python; a window test counts None's references).
    """
    from PySide6 import QtCore

    loop = QtCore.QEventLoop()
    QtCore.QTimer.singleShot(max(int(seconds * 1000), 0), loop.quit)
    loop.exec()


def run_beside_event_loop(job: Callable[[], T]) -> T:
    """Call ``job()`` on a thread of its own while Qt's event loop turns (the window draws and
    takes input), and return what it returned, or raise what it raised, here.

    For waits of seconds that a window must not freeze for: reading a scene's meshes, a child
    compiling what placing its boids needs. The loop is Qt's own (see :func:`run_event_loop`),
    looking at the thread every 15 ms.
    """
    from PySide6 import QtCore

    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, job()))
        except BaseException as error:  # raised again on the caller's thread
            outcome.append((False, error))

    thread = threading.Thread(target=run, name="flock3d-beside-the-window", daemon=True)
    thread.start()
    loop = QtCore.QEventLoop()
    timer = QtCore.QTimer()
    timer.timeout.connect(lambda: None if thread.is_alive() else loop.quit())
    timer.start(15)
    if thread.is_alive():
        loop.exec()
    timer.stop()
    thread.join()
    done, value = outcome[0]
    if not done:
        raise value
    return value


class Beside:
    """A window's jobs beside its event loop (:func:`run_beside_event_loop`), one at a time: a
    scene opening and a rescaled grid read would otherwise nest their loops, each acting on the
    world the other left.

    Attributes:
        running: what runs now, as the status bar says it ("opening worlds/cave"), or None.
    """

    def __init__(self) -> None:
        self.running: str | None = None

    def turn(self, what: str) -> None:
        """Let the event loop turn once (:data:`TURN`), as part of ``what``: a job asked for
        meanwhile is refused as during :meth:`run`."""
        self.running = what
        try:
            run_event_loop(TURN)
        finally:
            self.running = None

    def run(self, what: str, job: Callable[[], T]) -> T:
        """``job()`` beside the event loop, ``what`` it does said in :attr:`running` meanwhile.
        The caller refuses a second job while one runs (``running`` is not None)."""
        self.running = what
        try:
            return run_beside_event_loop(job)
        finally:
            self.running = None
