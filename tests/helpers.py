"""Running the flock3d command as a user would, and what tests of its files and processes share."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: Code that, run first in an interpreter, makes ``import scipy`` fail, as in a plain ``pip install
#: .`` (which has no scipy): numba then has no linear algebra (np.dot does not compile).
WITHOUT_SCIPY = "import sys; sys.modules['scipy'] = None; "

#: The commands that never run in the test's process: vispy binds one backend per process (EGL for
#: render, Qt for view), and the window tests use Qt in the test's process. ``render`` runs in the
#: test process's offscreen process (:class:`OffscreenProcess`), ``view`` in a process of its own.
OWN_PROCESS = ("render", "view")

HERE = Path(__file__).parent

#: Code that runs the flock3d command as ``python -m flock3d.cli`` does, its arguments after ``-c CODE``.
RUN_FLOCK3D = "runpy.run_module('flock3d.cli', run_name='__main__', alter_sys=True)"


def flock3d(
    *args: str,
    env: dict | None = None,
    cwd=None,
    process: bool = False,
    without_scipy: bool = False,
    file_size: int | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run ``flock3d ARGS`` as a user would; returns its exit status and what it wrote.

    It runs in this process (:func:`flock3d.cli.main`, with ``env`` set and ``cwd`` current
    for the call), where what other tests compiled is not compiled again; ``render`` in this
    process's offscreen process (:class:`OffscreenProcess`), as long as the environment is the
    one that process started in. A test that needs an interpreter of its own asks for
    ``process``: a hang that must be ended (``timeout`` [s], which allows for a cold numba
    compile under load), a compile notice or a log line that a process shows once, environment
    variables read at import; so do ``without_scipy`` (as if scipy were not installed) and
    ``file_size`` (a disk that is full after that many bytes of any file:
    :func:`file_size_limit`), and ``view``.
    """
    args = tuple(map(str, args))
    command_name = args[0] if args else None
    own = process or without_scipy or file_size is not None
    if not own and command_name == "render":
        done = OFFSCREEN.run(args, process_env(env), cwd, timeout)
        if done is not None:
            return done
    if not (own or command_name in OWN_PROCESS):
        return _in_this_process(args, env or {}, cwd)
    command = ["-m", "flock3d.cli"]
    if without_scipy:
        command = ["-c", WITHOUT_SCIPY + "import runpy; " + RUN_FLOCK3D]
    return subprocess.run(
        [sys.executable, *command, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=process_env(env),
        cwd=cwd,
        preexec_fn=None if file_size is None else file_size_limit(file_size),
    )


def process_env(env: dict | None = None) -> dict:
    """The environment of a process a test starts: this one's, with the flock3d these tests import
    first on the path (not another checkout's that an install or the current folder would give),
    and ``env``."""
    import flock3d as package

    root = str(Path(package.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(env or {})}


class OffscreenProcess:
    """A process of the test process's own that runs ``flock3d render`` commands one after
    another (``offscreen_commands.py``): vispy binds EGL there once and each compiled step is
    loaded once, where a process of each command's own spent most of its CPU starting. It
    starts with the environment a process of the command's own would have had, and again for a
    command in another (a test's own cache, ``env``). A
    command that outlives ``timeout`` ends it; one that ends it (a crash) runs again in a
    process of its own (``run`` returns None).
    """

    SCRIPT = HERE / "offscreen_commands.py"

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.env: dict = {}

    def run(
        self, args: tuple[str, ...], env: dict, cwd, timeout: float
    ) -> subprocess.CompletedProcess | None:
        """``flock3d ARGS`` run there, in the environment ``env``, or None where it ended."""
        if self.process is not None and (self.process.poll() is not None or _differs(env, self.env)):
            self.close()
        if self.process is None:
            self.env = env
            self.process = subprocess.Popen(
                [sys.executable, str(self.SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                text=True, env=env, cwd=HERE,
            )  # fmt: skip
        try:
            self.process.stdin.write(json.dumps([args, str(cwd or os.getcwd())]) + "\n")
            self.process.stdin.flush()
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            if not ready:
                self.close()
                raise subprocess.TimeoutExpired(["flock3d", *args], timeout)
            reply = self.process.stdout.readline()
        except BrokenPipeError:
            reply = ""
        if not reply:
            self.close()
            return None
        code, out, err = json.loads(reply)
        return subprocess.CompletedProcess(["flock3d", *args], code, out, err)

    def pid(self) -> int | None:
        """The process's id, while it runs."""
        return None if self.process is None else self.process.pid

    def close(self) -> None:
        """End the process (its commands have all replied: nothing is lost)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None


def _differs(env: dict, started: dict) -> bool:
    """Whether a command's environment is not the one the offscreen process started in (pytest's
    name of the current test aside)."""

    def kept(variables: dict) -> dict:
        return {k: v for k, v in variables.items() if k != "PYTEST_CURRENT_TEST"}

    return kept(env) != kept(started)


OFFSCREEN = OffscreenProcess()
atexit.register(OFFSCREEN.close)


def await_compiles() -> None:
    """Wait for every child compiling for this process: the warm-up child of a flock built and
    never stepped, which nothing else waits for, and a world's step child, whose thread waits
    for it (at most 300 s: a cold compile under load)."""
    from flock3d.core import assemble, elsewhere

    assemble._await_warm_up()
    for layout in list(assemble._steps_elsewhere):
        assemble._await_step_elsewhere(layout)
    deadline = time.monotonic() + 300
    while elsewhere._children and time.monotonic() < deadline:  # one its own thread still waits for
        time.sleep(0.05)


def _in_this_process(args: tuple[str, ...], env: dict, cwd) -> subprocess.CompletedProcess:
    """:func:`call_main` in the test's process, which must not have rendered offscreen."""
    done = call_main(args, env, cwd)
    offscreen = sys.modules.get("flock3d.viewer.offscreen")
    # vispy binds one backend a process, and the window tests use Qt in the test processes: a
    # command that rendered offscreen here would fail whichever window test came after it
    assert offscreen is None or not offscreen._selected, (
        f"flock3d {' '.join(args)} rendered offscreen in the test process: give it process=True"
    )
    return done


def call_main(args: tuple[str, ...], env: dict, cwd) -> subprocess.CompletedProcess:
    """``flock3d.cli.main(args)`` with stdout and stderr captured, as the interpreter would run it.

    A ``SystemExit`` (argparse's errors, --help) is its status; an uncaught exception exits 1
    with its traceback on stderr. Warnings and log records reach stderr as in a fresh
    interpreter (pytest would otherwise collect them), so a test that counts stderr's lines
    counts them too. What the call may change in this process (the environment, the current
    folder, numba's thread count) is restored after it.
    """
    import io
    import traceback

    from flock3d.cli import main

    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="") for _ in range(2))
    with contextlib.ExitStack() as stack:
        stack.enter_context(_environment(env))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(_numba_threads_kept())
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(_warnings_and_logs_on_stderr())
        try:
            code = main(list(args))
        except SystemExit as exit:
            code = exit.code
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - what the interpreter does with it
            traceback.print_exc()
            code = 1
    texts = []
    for stream in (out, err):
        stream.flush()
        text = stream.buffer.getvalue().decode("utf-8")
        texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))  # as text=True reads a pipe
    return subprocess.CompletedProcess(["flock3d", *args], 0 if code is None else code, *texts)


@contextlib.contextmanager
def _environment(env: dict):
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update({name: str(value) for name, value in env.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _numba_threads_kept():
    import numba

    threads = numba.get_num_threads()
    try:
        yield
    finally:
        numba.set_num_threads(threads)


@contextlib.contextmanager
def _warnings_and_logs_on_stderr():
    """Warnings filtered as by a fresh interpreter and printed on ``sys.stderr``; log records with
    no handler but logging's last resort, which prints them there."""
    import logging
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    root = logging.getLogger()
    handlers = root.handlers[:]
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = show
        root.handlers = []
        try:
            yield
        finally:
            root.handlers = handlers


def file_size_limit(limit: int):
    """A ``preexec_fn`` for a disk that is full after ``limit`` bytes of any file."""

    def apply():  # in the child: writes past `limit` bytes fail with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def assert_clean_failure(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, no traceback, and the message fragments on stderr."""
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    for fragment in fragments:
        assert fragment in out.stderr, (fragment, out.stderr)


def small_recording(path, count: int = 20, frames: int = 4, every: int = 2, **params):
    """Record ``frames`` frames of a flock of ``count`` boids (Params ``params``) to ``path``."""
    from flock3d import Flock, Params
    from flock3d.io import TrajectoryWriter
    from flock3d.scene import Scene

    scene = Scene(Params(count=count, **params), seed=1)
    flock = Flock.from_scene(scene)
    with TrajectoryWriter(path, count, scene, every=every) as writer:
        for _ in range(frames):
            writer.append(flock.state)
            flock.step(every)
    return path


def altered_copy(source, path, change):
    """A copy of the recording ``source`` at ``path``, changed by ``change(h5py.File)``."""
    import shutil

    import h5py

    shutil.copy(source, path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def assert_one_line_failure(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, no traceback, and exactly one line on stderr holding the fragments (besides
    the notice that a first run compiles the simulation)."""
    from flock3d.cli import COMPILING

    assert_clean_failure(out, *fragments)
    assert len([line for line in out.stderr.strip().splitlines() if line != COMPILING]) == 1, out.stderr


def sky(image: np.ndarray) -> np.ndarray:
    """(H, 1, 3) int: the renderer's sky behind each row of ``image``, 0-255."""
    from flock3d.look.colors import sky_rows

    return np.round(sky_rows(image.shape[0]) * 255).astype(int)[:, None, :]


def foreground_mask(image: np.ndarray, tolerance: int = 12) -> np.ndarray:
    """Pixels that differ from the sky behind them (a vertical gradient)."""
    return np.abs(image[..., :3].astype(int) - sky(image)).max(axis=-1) > tolerance


def once_per_run(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The file ``name`` that ``make(path)`` writes, made once for the whole test run.

    pytest-xdist runs a module's tests in several processes, each of which would make a module
    fixture of its own: the first makes the file under a lock and the others wait for it and read
    it. Without xdist the file lives in this run's own temporary folder.
    """
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this run's folder, which its workers share
    path = root / name
    with FileLock(f"{path}.lock"):
        if not path.exists():
            make(path)
    return path


@contextlib.contextmanager
def read_only(folder):
    """``folder`` read-only for this process: a read-only bind mount for root (whom file modes do
    not stop), else its mode."""
    if os.geteuid() == 0 and sys.platform == "linux":
        if subprocess.run(["mount", "--bind", folder, folder]).returncode != 0:
            import pytest  # here: the offscreen process imports this module without pytest

            pytest.skip("cannot bind-mount here")
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
            yield
        finally:
            subprocess.run(["umount", folder], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
