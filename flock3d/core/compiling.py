"""Saying when numba compiles: the one line a wait of seconds gets, wherever it starts.

A first step of a layout, a colour mode's measurement or a user's rule compiles for seconds to
tens of seconds (once per machine: the disk cache serves later runs). Every such wait says so,
once, on stderr, from the library as from the command line::

    flock3d: compiling the simulation (first run only)...

The line goes through the logger ``flock3d.compiling`` at INFO; silence it with
``logging.getLogger("flock3d.compiling").setLevel(logging.WARNING)``. A window asks
:func:`compiling_since` each frame and shows the wait there.

Invariants: one line a *burst* (from the first compile that starts while none runs, in any
thread, to the last that ends; bursts within :data:`QUIET` s of one that spoke say
nothing), or one line a :func:`notices` block, however many functions a burst compiles;
loading a compiled function from the cache is not a compile and says nothing.

Within :func:`forbidden`, a thread compiles nothing: where numba would start a compile there, it
raises :class:`CompileNeeded` instead (a window's threads load from the cache and leave the
compile to a child process, :mod:`flock3d.core.elsewhere`). A child's compile counts as one here,
for its line and for :func:`compiling_since`, through :func:`child_started` and :func:`child_ended`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator

__all__ = [
    "COMPILING",
    "COMPILING_MEASUREMENTS",
    "CompileNeeded",
    "child_ended",
    "child_started",
    "compiling_since",
    "forbidden",
    "children_only",
    "compiles_here",
    "notices",
    "watch",
]

#: Said when the simulation's step compiles: the first run of a scene on a machine.
COMPILING = "flock3d: compiling the simulation (first run only)..."
#: Said when only measurements compile (`flock3d metrics`, `flock3d infer`, a colour mode).
COMPILING_MEASUREMENTS = "flock3d: compiling the measurements (first run only)..."
#: Said when what the viewer draws with compiles (the boids' banks).
COMPILING_DRAWING = "flock3d: compiling the drawing (first run only)..."

#: Outside a :func:`notices` block, a burst starting within this many seconds of the last one
#: that spoke says nothing: building a flock and compiling its step are one wait.
QUIET = 30.0

log = logging.getLogger("flock3d.compiling")


class _Stderr(logging.Handler):
    """Writes to whatever ``sys.stderr`` is when the line is said (a test's capture, a
    notebook's stream), as the message alone."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:  # a closed stream: the notice is not worth a failure
            self.handleError(record)


if not log.handlers:
    log.addHandler(_Stderr())
    log.setLevel(logging.INFO)
    log.propagate = False  # one line, not one more from the application's root handler


class _Watch:
    """The state of numba's compiles across threads: their depth, when the burst started, and
    whether it (or the current :func:`notices` block) has said its line."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.since: float | None = None
        self.said_in_burst = False
        self.said_at: float | None = None  # when the last burst outside a notices() block said it
        self.block: list[str | bool] | None = None  # [label, said] of the innermost notices()

    def start(self, line: str = COMPILING) -> None:
        with self.lock:
            self.depth += 1
            if self.depth == 1:
                self.since = time.monotonic()
                self.said_in_burst = False
            if self.block is not None:
                if self.block[1]:
                    return
                self.block[1] = True
                line = str(self.block[0])
            elif self.said_in_burst or (self.said_at is not None and self.since - self.said_at < QUIET):
                return  # one wait (a flock's build, then its step) says one line
            else:
                self.said_at = self.since
            self.said_in_burst = True
        log.info(line)

    def end(self) -> None:
        with self.lock:
            self.depth = max(0, self.depth - 1)
            if self.depth == 0:
                self.since = None


_watch = _Watch()
_installed = False


class CompileNeeded(BaseException):
    """Raised where numba would start a compile in a thread within :func:`forbidden`.

    A BaseException, as KeyboardInterrupt is: it passes the ``except Exception`` of the code that
    asked for the compiled function (which would otherwise report it as that code's own failure).
    """

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not compiled (numba's cache lacks it)")
        self.what = what


_thread = threading.local()  # forbidden: whether this thread may compile; aborted: its events' ids


def _aborted() -> set[int]:
    if not hasattr(_thread, "aborted"):
        _thread.aborted = set()
    return _thread.aborted


def watch() -> None:
    """Listen to numba's compiles (once a process; every engine calls it before it compiles)."""
    global _installed
    if _installed:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, e) -> None:
            if getattr(_thread, "forbidden", False):
                _aborted().add(id(e.data))  # its end event comes too, and is not a compile's
                dispatcher = (e.data or {}).get("dispatcher")
                name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "a numba function")
                raise CompileNeeded(name)
            _watch.start()

        def on_end(self, e) -> None:
            if id(e.data) in _aborted():
                _aborted().discard(id(e.data))
                return
            _watch.end()

    with _watch.lock:
        if not _installed:
            event.register("numba:compile", _Listener())
            _installed = True


@contextlib.contextmanager
def notices(line: str = COMPILING) -> Iterator[None]:
    """Within the block, the first compile says ``line``, and later ones nothing (a command
    says one line however many bursts it compiles)."""
    watch()
    with _watch.lock:
        outer, _watch.block = _watch.block, [line, False]
    try:
        yield
    finally:
        with _watch.lock:
            _watch.block = outer


@contextlib.contextmanager
def forbidden() -> Iterator[None]:
    """Within the block, this thread compiles nothing: a function numba's cache lacks raises
    :class:`CompileNeeded` where its compile would start (before anything of it is built, so the
    function can be asked for again later); loading one from the cache goes on as usual."""
    watch()
    before = getattr(_thread, "forbidden", False)
    _thread.forbidden = True
    try:
        yield
    finally:
        _thread.forbidden = before


_children_only = False  # set by a window's process: see children_only()


def children_only() -> None:
    """This process is a window's: library code that could compile here or leave the compile to
    a child leaves it to the child (it asks :func:`compiles_here`)."""
    global _children_only
    _children_only = True


def compiles_here() -> bool:
    """Whether this thread should compile what a child could compile instead: not within
    :func:`forbidden`, nor in a window's process (:func:`children_only`)."""
    return not (_children_only or getattr(_thread, "forbidden", False))


def child_started(line: str = COMPILING) -> None:
    """A child process started compiling for this one: it counts as a compile here (its line,
    once a burst, and :func:`compiling_since`) until :func:`child_ended`."""
    _watch.start(line)


def child_ended() -> None:
    """The child that :func:`child_started` announced ended."""
    _watch.end()


def compiling_since() -> float | None:
    """``time.monotonic()`` when the compiles now running started, or None when none runs."""
    return _watch.since
