"""Shared helpers for the tests: hand-built flocks, step-by-step comparison, and processes that
end with their test."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

import numpy as np
import psutil
import pytest
from helpers import OFFSCREEN, RUN_FLOCK3D, process_env

from flock3d import Flock, Params

ENGINES = ["fast", "reference"]
#: ``@pytest.mark.parametrize("engine", FAST_IS_SLOW)`` on a test of one feature whose fast case
#: compiles a step layout no other quick test uses (2-4 s on 2 cores, where a quick run from empty
#: caches spends a third of its time compiling layouts): the fast case runs with the slow tests, the
#: reference case stays quick. The slow snapshot tests hold every layout's fast step to the reference.
FAST_IS_SLOW = [pytest.param("fast", marks=pytest.mark.slow), "reference"]


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """Run a test against both implementations of the step."""
    return request.param


def free_params(**overrides) -> Params:
    """Parameters under which one step is easy to predict by hand.

    No turn limit, no speed clamp that could bind, no confinement: then
    ``v' = v + dt * (S + A + C)`` exactly, so a rule's closed form can be read
    off a single step of either engine.
    """
    base = dict(
        arena_radius=1e6,
        confinement=0.0,
        view_distance=10.0,
        fov=360.0,
        separation_distance=2.0,
        separation=0.0,
        alignment=0.0,
        cohesion=0.0,
        min_speed=0.0,
        max_speed=1e6,
        max_turn_rate=float("inf"),
        dt=0.01,
    )
    base.update(overrides)
    return Params(**base)


def hand_flock(params: Params, positions, velocities, engine: str = "fast") -> Flock:
    return Flock(
        params,
        positions=np.asarray(positions, dtype=float),
        velocities=np.asarray(velocities, dtype=float),
        engine=engine,
    )


def acceleration(flock: Flock) -> np.ndarray:
    """(N, 3) acceleration read back from one step: (v' - v) / dt (exact under free_params)."""
    v0 = flock.velocities.copy()
    flock.step()
    return (flock.velocities - v0) / flock.params.dt


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise angle (radians) between two (N, 3) arrays of vectors."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    cross = np.linalg.norm(np.cross(a, b), axis=-1)
    return np.arctan2(cross, np.sum(a * b, axis=-1))


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache of the test's own for grids and compiled steps (``FLOCK3D_CACHE_DIR``): what it
    caches is neither read from nor left for another test."""
    monkeypatch.setenv("FLOCK3D_CACHE_DIR", str(tmp_path / "cache"))


# -- processes ---------------------------------------------------------------------------------

#: Run first in a child that a test signals: Ctrl-C raises KeyboardInterrupt and SIGTERM ends it,
#: as in a terminal. A shell's background job ignores SIGINT, a child inherits an ignored signal,
#: and Python then leaves Ctrl-C ignored.
USUAL_SIGNALS = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.SIG_DFL); signal.signal(signal.SIGHUP, signal.SIG_DFL); "
)


@pytest.fixture
def child():
    """Start a process for the test to signal: ``child(*args)`` runs ``flock3d ARGS``,
    ``child(script=path)`` a Python file; each with the signals as in a terminal
    (:data:`USUAL_SIGNALS`), stdout and stderr piped as text, and a process group of its own,
    which is killed when the test ends, whatever the test left running in it."""
    started: list[subprocess.Popen] = []

    def start(*args, script=None, cwd=None, env: dict | None = None) -> subprocess.Popen:
        if script is None:
            run = RUN_FLOCK3D
        else:
            run = f"runpy.run_path({str(script)!r}, run_name='__main__')"
        process = subprocess.Popen(
            [sys.executable, "-c", USUAL_SIGNALS + "import runpy; " + run, *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=process_env(env),
            start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group outlives a child that has ended
        except ProcessLookupError:
            pass
        process.wait()
        for pipe in (process.stdout, process.stderr):
            pipe.close()


def first_line(process: subprocess.Popen, timeout: float = 300) -> str:
    """The first line ``process`` writes on stdout, waiting at most ``timeout`` [s] (a cold
    compile under load) for it to start."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no line from the process in {timeout:g} s"
    return process.stdout.readline()


#: multiprocessing's servers of the process that starts them, which end with it.
HELPERS = ("resource_tracker", "forkserver")


def _counts(process: psutil.Process) -> bool:
    """Whether a process left behind is the test's doing: not a zombie (ended, waiting to be
    reaped), nor multiprocessing's helpers (its resource tracker, its fork server), which
    serve this process until it ends, nor the offscreen process of the render commands (ended
    with this process; its own children end before it replies: tests/offscreen_commands.py),
    nor the library's background compiles of the shared driver and of a world's step
    (flock3d.core.assemble, waited for by the next step)."""
    from flock3d.core import assemble, elsewhere

    try:
        if process.status() == psutil.STATUS_ZOMBIE or process.pid == OFFSCREEN.pid():
            return False
        command = process.cmdline()
        if any(f"multiprocessing.{helper}" in part for part in command for helper in HELPERS):
            return False
        with elsewhere._children_lock:  # a fresh interpreter's command line, or a fork's pid
            compiling = any("flock3d.core.elsewhere" in part for part in command) or process.pid in {
                child.pid for child in elsewhere._children
            }
        if assemble._steps_elsewhere and compiling:
            return False
    except psutil.NoSuchProcess:
        return False
    warm_up = assemble._warm_up
    return warm_up is None or process.pid != warm_up.pid


@pytest.fixture(autouse=True)
def no_process_left():
    """No test leaves a process running (a child left spinning loads the machine for the rest
    of the run): one still there a few seconds after the test is killed, and the test errors."""
    me = psutil.Process()
    before = {process.pid for process in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before and _counts(p)]
    if not left:
        return
    _, alive = psutil.wait_procs(left, timeout=5)  # one that is ending: a closed cluster's worker
    alive = [p for p in alive if _counts(p)]
    described = []
    for process in alive:
        try:
            described.append(f"{process.pid} {' '.join(process.cmdline())[:200]}")
            process.kill()
        except psutil.NoSuchProcess:
            pass
    if described:
        pytest.fail("the test left processes running (killed now):\n" + "\n".join(described))
