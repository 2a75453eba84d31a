"""A compiling child made by forking this process, handled as a :class:`subprocess.Popen` is.

A fresh interpreter (:data:`flock3d.core.elsewhere.CHILD`) imports flock3d and numba and sets up
numba's compiler before its first compile, a fixed cost that each child of a scene's first open
pays on the cores its compiles keep busy. A forked child starts with all of that done.

Forking is safe only where no other thread can hold a lock the child will need (numba's compiler
lock, a stream's, one of flock3d's own). :func:`safe` allows it on Linux, in a process that
compiles for itself (a window's toolkit runs threads Python does not see), has no thread but the
calling one, and has not started numba's worker threads. Anywhere else a child is a fresh
interpreter. A forked child never returns into the caller's code: it ends with :func:`os._exit`,
so the parent's exit handlers and buffered output stay the parent's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

from flock3d.core import compiling

__all__ = ["Forked", "safe"]


def safe() -> bool:
    """Whether a compiling child may be this process forked (see the module's notes)."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    threads_started = parallel is not None and getattr(parallel, "_is_initialized", True)
    return (
        sys.platform == "linux"
        and compiling.compiles_here()
        and threading.active_count() == 1
        and not threads_started
    )


def _compiler_ready() -> None:
    """Set up numba's CPU compiler here (its registries, the target), once, so that no forked
    child does it again."""
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


class Forked:
    """This process forked, the child calling ``main()`` (its exit status) with its standard
    input, output and error on pipes to this process.

    Holds what :mod:`flock3d.core.elsewhere` uses of a :class:`subprocess.Popen`: ``pid``,
    ``stdin`` (written), ``stdout`` and ``stderr`` (read), :meth:`poll`, :meth:`wait`,
    :meth:`kill` and ``returncode``. Call only where :func:`safe` says so.
    """

    #: The longest sleep between two looks at a child :meth:`wait` waits for with a timeout [s].
    POLL = 0.01

    def __init__(self, main: Callable[[], int]) -> None:
        _compiler_ready()
        pipes = [os.pipe() for _ in range(3)]  # (read, write): stdin, stdout, stderr
        for stream in (sys.stdout, sys.stderr):  # what the child would otherwise write again
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        self.returncode: int | None = None
        try:
            self.pid = os.fork()
        except OSError:  # no process to be had: nothing left open
            for fd in (fd for pipe in pipes for fd in pipe):
                os.close(fd)
            raise
        if self.pid == 0:
            _child(main, pipes)
        (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.stdin: BinaryIO = os.fdopen(in_w, "wb")
        self.stdout: BinaryIO = os.fdopen(out_r, "rb")
        self.stderr: BinaryIO = os.fdopen(err_r, "rb")

    def poll(self) -> int | None:
        """The child's exit status (negative: the signal that ended it), or None while it runs."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end; its exit status.

        Raises:
            subprocess.TimeoutExpired: it still runs after ``timeout`` [s].
        """
        if timeout is None:
            if self.returncode is None:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            return self.returncode
        deadline, pause = time.monotonic() + timeout, 0.0005
        while self.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout)
            time.sleep(min(pause, left))
            pause = min(2 * pause, self.POLL)
        return self.returncode

    def kill(self) -> None:
        """End the child at once (SIGKILL), unless it has ended and been waited for."""
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _child(main: Callable[[], int], pipes: list[tuple[int, int]]) -> None:
    """The forked child: its standard streams on ``pipes``, Ctrl-C and SIGTERM as a fresh
    interpreter has them (unless ignored), then ``main()``; it never returns."""
    status = 1
    try:
        (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        # New stream objects: the parent's may have been locked by nobody left to unlock them.
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own, for its life
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        fresh = ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))
        for number, handler in fresh:
            if signal.getsignal(number) != signal.SIG_IGN:
                signal.signal(number, handler)
        status = main()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
