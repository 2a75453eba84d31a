"""The threads behind a :class:`~flock3d.viewer.session.Session`: the worker that steps its flock
in real time while the window draws, compiling each new layout of its step in a child process
first, and the background compile of the shipped scenes' steps.

A compile holds the GIL for most of its seconds, which held the window's event loop up to 0.4 s
a turn: this process only loads a step from numba's cache, and a child compiles what the cache
lacks (:mod:`flock3d.core.elsewhere`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flock3d.core import assemble, elsewhere
from flock3d.core.atomic import atomic_write
from flock3d.core.step.cache import cache_dir, core_fingerprint
from flock3d.flock import Flock

if TYPE_CHECKING:
    from flock3d.viewer.session import Session

__all__ = ["Worker", "PRECOMPILE_AFTER", "shipped_mark"]

_log = logging.getLogger("flock3d")

#: Seconds a window's flock steps before the other shipped scenes' steps compile in the background:
#: the first minute's CPU is the scene's own.
PRECOMPILE_AFTER = 60.0


class Worker:
    """Steps ``session``'s flock on a thread of its own (see the session's module for the locking).

    It works with the session's lock, clock and publishing; the session's ``_warm_up`` (this
    :meth:`warm_up`) compiles each new layout before the lock is taken to step it.

    Attributes:
        thread: the stepping thread, or None when none runs.
        stopped: set when :meth:`stop` is called; every wait of the threads ends on it.
    """

    #: Seconds of stepping per batch: how long an edit may wait for the lock.
    BATCH_SECONDS = 0.04

    def __init__(self, session: Session) -> None:
        self.session = session
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()
        self._warmed: set = set()  # the layouts compiled (warm_up) outside the lock
        self._precompiler: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the thread is stepping the flock."""
        return self.thread is not None and self.thread.is_alive()

    def start(self) -> None:
        """Step the flock on the thread from now on (real time, at the session's ``time_scale``)."""
        if self.thread is not None:
            return
        self.stopped.clear()
        self.thread = threading.Thread(target=self._work, name="flock3d-simulation", daemon=True)
        with self.session.lock:
            self.session._publish()
        self.thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the thread (after the batch of steps it is running) and the background compile;
        False when none was running."""
        thread = self.thread
        if thread is None:
            return False
        self.stopped.set()
        # The window closes: its children end (the neighbour counts' too; a session still running
        # elsewhere in this process starts its own again).
        elsewhere.cancel_all()
        thread.join(timeout)
        if self._precompiler is not None:
            self._precompiler.join(timeout)  # its child is killed within a poll
            self._precompiler = None
        self.thread = None
        return True

    def layout(self) -> Any:
        """What the running flock's step is compiled for (its layout, rules and forces)."""
        flock = self.session.flock
        return (
            flock.engine,
            assemble.layout_of(flock.params, flock.rules, flock.forces),
            tuple(id(r.fn) for r in flock.rules),
            tuple(id(f.fn) for f in flock.forces),
        )

    def warm_up(self, step_job: str) -> bool:
        """Compile the kernel on a throwaway copy, without holding the lock, in a child process
        that runs ``step_job`` ("module:function" of the flock's arrays) where the cache lacks it.

        The first step of a layout compiles it (tens of seconds on a fresh install: a scene
        opened, a term switched on); done here, the window stays responsive and its edits (an
        open, a reset) are not held up meanwhile. Stepping under the lock then finds it compiled.
        The user's own rules, which a child cannot be handed, compile here. Returns False when the
        flock changed layout (a scene opened) or the session stopped before the child was done.

        Raises:
            CompileFailed: the child failed or was killed (one line, shown by the viewer).
        """
        session = self.session
        with session.lock:
            flock, state = session.flock, session.flock.state
            layout = self.layout()
            arrays = (state.positions.copy(), state.velocities.copy(), state.orientations.copy())
            job = (flock.params, flock.seed, *arrays, flock.fields)
            twin = Flock(
                flock.params, flock.seed, positions=arrays[0].copy(), velocities=arrays[1].copy(),
                orientations=arrays[2].copy(), rules=flock.rules, forces=flock.forces, fields=flock.fields,
                engine=flock.engine,
            )  # fmt: skip
        if flock.rules or flock.forces or flock.engine != "fast":
            twin.step(1)
        elif not elsewhere.load_or_compile(
            lambda: twin.step(1), step_job, job, cancelled=lambda: self._moved_on(layout)
        ):
            return False
        self._warmed.add(layout)
        session._first_step_done.set()
        return True

    def _moved_on(self, layout: Any) -> bool:
        """Whether a compile of ``layout`` is no longer wanted: the session stopped or moved on."""
        if self.stopped.is_set():
            return True
        with self.session.lock:
            return self.layout() != layout

    def _work(self) -> None:
        import numba

        session = self.session
        try:
            # All cores but one: the one left draws (software OpenGL rasterises on the CPU,
            # and the window's own work is Python). The setting holds for this thread only.
            numba.set_num_threads(max(1, numba.get_num_threads() - 1))
            last = time.perf_counter()
            while not self.stopped.is_set():
                with session.lock:
                    layout = self.layout()
                if layout not in self._warmed:
                    session._warm_up()  # when it moved on, the next turn warms the new layout up
                    last = time.perf_counter()  # the compile's seconds are not owed as steps
                    continue
                now = time.perf_counter()
                with session.lock:
                    session.clock.budget = self.BATCH_SECONDS
                    steps = session.advance(now - last)
                    wait = (
                        0.02
                        if session.paused
                        else session.clock.seconds_to_next_step(session.params.dt, session.time_scale)
                    )
                last = now
                if steps and session.clock.behind:
                    # Cannot keep real time: step no more than half the time, so that a flock
                    # too large for the machine slows down rather than freezing the window.
                    self.stopped.wait(time.perf_counter() - now)
                elif steps == 0:
                    # Nothing was due: sleep until the next step is (short naps, so that
                    # pausing, a new time scale or stop() are seen at once).
                    self.stopped.wait(min(max(wait, 0.0005), 0.02))
        except BaseException as error:  # shown by the viewer; the window stays open
            session.error = error
            session._first_step_done.set()

    # -- the shipped scenes' steps ----------------------------------------------------------

    def precompile_shipped(self, after: float = PRECOMPILE_AFTER, names: tuple[str, ...] | None = None):
        """Once the flock has stepped for ``after`` s, compile the steps of the shipped scenes
        (or those ``names``) in a child process at the lowest priority, so that opening one later
        loads its step instead of compiling it (10-30 s each on a fresh install, 2 cores).

        Nothing runs where the cache holds them all (a mark in the step cache says so), with
        ``FLOCK3D_NO_WARM_UP`` set, or after :meth:`stop`, which ends the child.
        """
        if self._precompiler is not None or os.environ.get("FLOCK3D_NO_WARM_UP"):
            return
        self._precompiler = threading.Thread(
            target=self._precompile, args=(after, names), name="flock3d-precompile", daemon=True
        )
        self._precompiler.start()

    def _precompile(self, after: float, names: tuple[str, ...] | None) -> None:
        while not self.session._first_step_done.is_set():
            if self.stopped.wait(0.1):
                return
        if self.stopped.wait(after) or self.session.error is not None or shipped_mark(names).exists():
            return
        try:
            job = f"{__name__}:_compile_shipped"
            stopped = self.stopped.is_set
            elsewhere.compile_in_child(job, (names,), cancelled=stopped, announce=False, niceness=19)
        except elsewhere.CompileFailed as error:  # the scenes then compile when opened, as before
            _log.debug("flock3d: %s", error)


def shipped_mark(names: tuple[str, ...] | None = None) -> Path:
    """The file whose presence says that the shipped scenes' steps (or those ``names``') are compiled
    in the cache, for this flock3d's compiled code."""
    key = hashlib.sha256(repr((core_fingerprint(), names)).encode()).hexdigest()[:16]
    return cache_dir() / f"shipped-{key}.done"


def _compile_shipped(names: tuple[str, ...] | None) -> None:
    """A child's job (:meth:`Worker.precompile_shipped`): step each scene once, compiling the
    steps the cache lacks; then mark them done. A scene that cannot be opened here (an extra not
    installed) is left to compile when it is opened."""
    from flock3d.scene import resolve_scene, shipped_scenes

    for name in shipped_scenes() if names is None else names:
        try:
            Flock.from_scene(resolve_scene(name)).step(1)
        except Exception as error:  # noqa: BLE001 - one scene's problem is said when it is opened
            _log.debug("flock3d: could not compile %s: %s", name, error)
    with atomic_write(shipped_mark(names)) as handle:
        handle.write("")
