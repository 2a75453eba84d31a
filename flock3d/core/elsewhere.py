"""Compiling in a child process, so that a window's process loads compiled code and never compiles.

numba's compile is Python for most of its seconds and holds the GIL: a compile on any thread of
a window's process kept its event loop waiting up to 0.4 s between turns (a quiet machine, 2
cores). So a window's threads ask for compiled code within :func:`flock3d.core.compiling.forbidden`,
which loads it from numba's disk cache (milliseconds, no compile) and raises
:class:`~flock3d.core.compiling.CompileNeeded` where the cache lacks it; :func:`load_or_compile`
then has a child process (:data:`CHILD`) call the same code, which compiles it into the cache, and
loads it again.

The child calls ``target(*args)``, its job pickled on its stdin (``target`` is ``"module:name"``):
no file is written, so a parent killed mid-compile leaves nothing behind. Where that is safe (a
process compiling for itself, with no other thread: :mod:`flock3d.core.forked`), the child is
this process forked, which has imported flock3d and set up numba's compiler already; elsewhere
a fresh interpreter. It says ``compiling`` on stdout when its first compile starts, and the
parent shows the wait as its own (:func:`~flock3d.core.compiling.child_started`: the stderr
line, a window's notice). It ends with its parent (its stdin closes), and on a failure with one
line on stderr and status 1, which the parent raises as a one-line :class:`CompileFailed`. A
child the parent no longer wants (``cancelled``), or one that runs past its timeout, is killed
and waited for: none is left behind.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flock3d.core import compiling, forked

__all__ = [
    "CompileFailed", "Loading", "start", "wait_for", "compile_in_child", "load_or_compile", "cancel_all"
]  # fmt: skip

_log = logging.getLogger("flock3d")

#: Seconds a child may compile: the largest layout takes about a minute on 2 busy cores.
TIMEOUT = 600.0
#: Seconds between looks at whether the child ended or is still wanted.
POLL = 0.05
#: What the child says on stdout when its first compile starts.
SAID = b"compiling"
#: The child's niceness. On 2 cores a child at 0 took the CPU the window draws with (software
#: OpenGL rasterises on the CPU): frames up to 0.18 s at load 5; at 10 the window's own frames
#: starved the compile (a scene's open 2.5 times as long); at 5, frames up to 0.12 s and the open
#: 1.5 times as long (benchmarks/NOTES.md).
NICENESS = 5


class CompileFailed(RuntimeError):
    """A child process could not compile (it failed, was killed or ran past its timeout): one line."""


#: The child's command line after the interpreter, its niceness following. Not ``-m`` this module:
#: the package has imported it first, and runpy warns on the child's stderr that it had.
CHILD = ("-P", "-c", "from flock3d.core.elsewhere import _main; _main()")

_children: set[subprocess.Popen] = set()  # running, so that cancel_all() can end them
_children_lock = threading.Lock()
_cancelled_all = threading.Event()


def cancel_all() -> None:
    """End every child compiling for this process (a window closing); their callers return as
    cancelled."""
    _cancelled_all.set()
    with _children_lock:
        running = list(_children)
    for child in running:
        _kill(child)
    with _children_lock:  # ended: a child nothing waits for (a warm-up's) is not left in the set
        _children.difference_update(running)


def _kill(child: subprocess.Popen) -> None:
    try:
        child.kill()
    except OSError:
        pass
    child.wait()


def child_environment() -> dict[str, str]:
    """A compiling child's environment (run with ``python -P``): the same flock3d as this
    process's, first on the path (with ``-P``, the current directory, where another checkout may
    lie, is not); the shared driver compiled by the child itself, not by a grandchild that a kill
    would leave running."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "FLOCK3D_NO_WARM_UP": "1", "PYTHONPATH": path}


def start(target: str, args: tuple = (), *, niceness: int = NICENESS) -> subprocess.Popen | forked.Forked:
    """A child process calling ``target(*args)`` (``"module:name"``, the arguments picklable) at
    ``niceness``, its job written: this process forked where :func:`flock3d.core.forked.safe`
    allows it, a fresh interpreter (:data:`CHILD`) otherwise. :func:`wait_for` waits for it (and
    ends it); :func:`cancel_all` ends it too.

    Every child a first open needs starts before the threads that wait for them: a process with
    a second thread is never forked.
    """
    if _cancelled_all.is_set():
        _cancelled_all.clear()  # a new window: children are wanted again
    job = pickle.dumps((target, args), protocol=pickle.HIGHEST_PROTOCOL)
    if forked.safe():
        child: subprocess.Popen | forked.Forked = forked.Forked(functools.partial(_forked_child, niceness))
    else:
        child = subprocess.Popen(
            [sys.executable, *CHILD, str(niceness)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_environment(),
        )  # fmt: skip
    with _children_lock:
        _children.add(child)
    try:  # the job, on the child's stdin; the pipe stays open, the child's lifeline
        child.stdin.write(len(job).to_bytes(8, "little") + job)
        child.stdin.flush()
    except BrokenPipeError:
        pass  # the child ended before it read its job: its status says why
    return child


def compile_in_child(
    target: str,
    args: tuple = (),
    *,
    line: str = compiling.COMPILING,
    cancelled: Callable[[], bool] = lambda: False,
    timeout: float = TIMEOUT,
    announce: bool = True,
    niceness: int = NICENESS,
) -> bool:
    """Call ``target(*args)`` (``"module:name"``, the arguments picklable) in a child process at
    ``niceness`` and wait for it: :func:`start`, then :func:`wait_for` (which says what the
    other arguments do, and what it returns and raises)."""
    child = start(target, args, niceness=niceness)
    return wait_for(child, target, line=line, cancelled=cancelled, timeout=timeout, announce=announce)


def wait_for(
    child: subprocess.Popen | forked.Forked,
    target: str,
    *,
    line: str = compiling.COMPILING,
    cancelled: Callable[[], bool] = lambda: False,
    timeout: float = TIMEOUT,
    announce: bool = True,
) -> bool:
    """Wait for ``child`` (:func:`start`ed for ``target``); what it compiles lands in numba's
    cache (and flock3d's step cache). With ``announce``, its compile is shown as this process's
    (``line``). The child is ended and reaped however this returns.

    Returns:
        True when the child ended well; False when ``cancelled()`` became true first, or
        :func:`cancel_all` ended it (the child is killed).

    Raises:
        CompileFailed: the child failed, was killed or ran past ``timeout`` [s]; one line.
    """
    announced = threading.Event()
    said: collections.deque[bytes] = collections.deque(maxlen=20)  # the end of the child's stderr

    def relay() -> None:  # the child's word that it compiles: the wait is shown here
        for out in child.stdout:
            if announce and out.strip() == SAID and not announced.is_set():
                announced.set()
                compiling.child_started(line)

    readers = [
        threading.Thread(target=relay, name="flock3d-compile-relay", daemon=True),
        threading.Thread(target=said.extend, args=(child.stderr,), name="flock3d-compile-said", daemon=True),
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    code: int | None = None
    try:
        while code is None:
            try:
                code = child.wait(POLL)
            except subprocess.TimeoutExpired:
                if cancelled() or _cancelled_all.is_set():
                    return False
                if time.monotonic() > deadline:
                    raise CompileFailed(
                        f"compiling {target} in a child process took over {timeout:g} s; it was stopped"
                    ) from None
    finally:
        if child.poll() is None:
            _kill(child)
        with _children_lock:
            _children.discard(child)
        try:
            child.stdin.close()
        except BrokenPipeError:
            pass
        for reader in readers:
            reader.join()  # the child's stdout and stderr end with it
        child.stdout.close()
        child.stderr.close()
        if announced.is_set():
            compiling.child_ended()
    if code == 0:
        return True
    if _cancelled_all.is_set():
        return False
    lines = b"".join(said).decode(errors="replace").strip().splitlines()
    if code < 0:
        how = f"it was killed (signal {-code})"
    else:
        how = lines[-1].strip() if lines else f"status {code}"
    raise CompileFailed(f"compiling {target} in a child process failed: {how}")


def load_or_compile(
    load: Callable[[], object],
    target: str,
    args: tuple = (),
    *,
    line: str = compiling.COMPILING,
    cancelled: Callable[[], bool] = lambda: False,
    niceness: int = NICENESS,
    child: subprocess.Popen | forked.Forked | None = None,
) -> bool:
    """Run ``load()`` with no compile in this process: what it would compile is compiled first by
    a child calling ``target(*args)`` at ``niceness``, which should compile the same (see
    :func:`compile_in_child`); or by ``child``, already :func:`start`ed for it where ``load()``
    could not run (:meth:`Loading.begin`).

    Returns True once ``load()`` ran, False when the child was cancelled first. Where the child's
    compile did not reach the cache (one that cannot be written), ``load()`` compiles here after all.

    Raises:
        CompileFailed: the child failed; one line.
    """
    if child is None:
        try:
            _without_compiling(load)
            return True
        except compiling.CompileNeeded:
            child = start(target, args, niceness=niceness)  # nothing of it was compiled here
    if not wait_for(child, target, line=line, cancelled=cancelled):
        return False
    try:
        _without_compiling(load)
        return True
    except compiling.CompileNeeded as needed:
        _log.debug("flock3d: %s compiled in a child did not reach numba's cache; compiling it here",
                   needed.what)  # fmt: skip
    load()
    return True


def _without_compiling(load: Callable[[], object]) -> None:
    """``load()``, compiling nothing here.

    Raises:
        flock3d.core.compiling.CompileNeeded: it would have compiled.
    """
    with compiling.forbidden():
        load()


class Loading(threading.Thread):
    """A thread that makes the numba ``function`` ready to call in this process for arguments
    like ``example`` (picklable), compiling nothing here: it loads it from numba's cache, after a
    child at ``niceness`` compiled it there where the cache lacks it (:func:`load_or_compile`; the
    wait shown as ``line``). Started by the caller, who calls the function once it ended, or
    cancels it (:meth:`cancel`) and compiles the function itself.

    Attributes:
        loaded: whether it loaded the function (False while it runs, and after a child that
            was cancelled or failed).
        failed: the child's failure, logged in one line; None otherwise.
    """

    def __init__(
        self, function, example: tuple, *, line: str = compiling.COMPILING, niceness: int = NICENESS
    ) -> None:
        # The function itself where NUMBA_DISABLE_JIT is set.
        self._py_func = getattr(function, "py_func", function)
        super().__init__(name=f"flock3d-load {self._py_func.__qualname__}", daemon=True)
        self.function, self.example, self.line, self.niceness = function, example, line, niceness
        self.target = f"{self._py_func.__module__}:{self._py_func.__qualname__}"
        self.loaded = False
        self.failed: CompileFailed | None = None
        self._unwanted = threading.Event()
        self._child: subprocess.Popen | forked.Forked | None = None

    def begin(self) -> None:
        """Load the function now, on the caller's thread, or start the child that compiles it;
        :meth:`start` then waits for that child. A caller that starts other children next
        begins this one first: a child is this process forked only while it has no other
        thread (:func:`start`)."""
        try:
            _without_compiling(lambda: self.function(*self.example))
            self.loaded = True
        except compiling.CompileNeeded:
            self._child = start(self.target, self.example, niceness=self.niceness)

    def cancel(self) -> None:
        """Stop the child if it still compiles (it is killed and waited for); :attr:`loaded`
        stays False."""
        self._unwanted.set()
        if self.ident is None and self._child is not None:  # begun, never started: ended here
            with contextlib.suppress(CompileFailed):  # one that failed first: unwanted all the same
                wait_for(self._child, self.target, cancelled=lambda: True)

    def run(self) -> None:
        if self.loaded or self._unwanted.is_set():
            return
        try:
            self.loaded = load_or_compile(
                lambda: self.function(*self.example),
                self.target,
                self.example,
                line=self.line,
                cancelled=self._unwanted.is_set,
                niceness=self.niceness,
                child=self._child,
            )
        except CompileFailed as error:
            self.failed = error
            _log.warning("flock3d: %s", error)


# -- the child ----------------------------------------------------------------------------------


def _end_with_parent() -> None:
    """Exit when stdin closes: the parent ended, or no longer waits."""
    sys.stdin.buffer.read()
    os._exit(3)


def _read_job() -> tuple[str, tuple]:
    """The job the parent writes first on stdin: its length (8 bytes) and its pickle."""
    size = int.from_bytes(sys.stdin.buffer.read(8), "little")
    return pickle.loads(sys.stdin.buffer.read(size))


def _resolve(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _child(niceness: int) -> int:
    try:
        target, args = _read_job()
    except Exception as error:  # noqa: BLE001 - a parent gone before it wrote the job
        print(f"no job on stdin: {type(error).__name__}", file=sys.stderr, flush=True)
        return 1
    threading.Thread(target=_end_with_parent, daemon=True).start()
    if hasattr(os, "nice"):
        os.nice(niceness)
    logging.getLogger("flock3d.compiling").setLevel(logging.WARNING)  # the parent says it
    from numba.core import event

    class _Tell(event.Listener):
        said = False

        def on_start(self, e) -> None:
            if not self.said:
                self.said = True
                sys.stdout.buffer.write(SAID + b"\n")
                sys.stdout.flush()

        def on_end(self, e) -> None:
            pass

    event.register("numba:compile", _Tell())
    try:
        _resolve(target)(*args)
    except BaseException as error:  # noqa: BLE001 - said in one line, for the parent to raise
        text = " ".join(str(error).split()) or type(error).__name__
        print(f"{type(error).__name__}: {text[:300]}", file=sys.stderr, flush=True)
        return 1
    return 0


def _forked_child(niceness: int) -> int:
    """A forked child's :func:`_child` (:func:`start`), with the environment a fresh one gets."""
    os.environ["FLOCK3D_NO_WARM_UP"] = "1"
    return _child(niceness)


def _main() -> None:
    """The child's entry (:data:`CHILD`): ``sys.argv[1]`` is its niceness, its job on stdin."""
    status = _child(int(sys.argv[1]))
    sys.stdout.flush()
    # Not sys.exit: at shutdown the thread blocked reading stdin would abort the interpreter.
    os._exit(status)
