"""A window's process compiles nothing: what numba's cache lacks is compiled by a child process,
and the process loads it; a child that fails, is killed or is no longer wanted ends with one
line, never a hang, and leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numba
import pytest
from helpers import await_compiles

from flock3d.core import compiling, elsewhere
from flock3d.core.compiling import COMPILING
from flock3d.core.no_entry import from_python, no_entry

MODULE = """
import time

import numba


@numba.njit(cache=True)
def twice(x):
    return 2.0 * x


def broken(x):
    raise ValueError("no such thing:\\n  a second line")


@numba.njit(cache=True)
def untypable(x):
    return x.no_such_attribute


@numba.njit(cache=True)
def thrice(x):
    return 3.0 * x


def hang():
    time.sleep(600)
"""


@pytest.fixture(autouse=True)
def no_child_before():
    """Each test starts with no child compiling for this process: another test's are waited for
    first (the warm-up child of a flock built and never stepped, which nothing else waits for; a
    world's step child, whose thread waits for it)."""
    await_compiles()
    assert not elsewhere._children


@pytest.fixture
def jitted(tmp_path, monkeypatch):
    """A module of numba functions cached beside it, importable here and in a child (by the path)."""
    name = f"flock3d_elsewhere_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    module = __import__(name)
    yield module
    sys.modules.pop(name, None)


class _Compiles:
    """numba's compiles that ran to their end in this process (aborted ones are not compiles)."""

    def __init__(self) -> None:
        from numba.core import event

        self.done: list[str] = []
        outer = self

        class Listener(event.Listener):
            def on_start(self, e) -> None:
                pass

            def on_end(self, e) -> None:
                if e._exc_details is None:
                    outer.done.append(e.data["dispatcher"].py_func.__qualname__)

        self.listener = Listener()
        event.register("numba:compile", self.listener)

    def close(self) -> None:
        from numba.core import event

        event.unregister("numba:compile", self.listener)


@pytest.fixture
def fresh_steps(own_cache, monkeypatch):
    """No step compiled yet, in this process (another test may have stepped the same layout) or
    in the step cache."""
    from flock3d.core import assemble

    monkeypatch.setattr(assemble, "_steppers", {})
    for name in [name for name in sys.modules if name.startswith("flock3d_step_")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def compiles():
    watching = _Compiles()
    yield watching.done
    watching.close()


def _fresh(fn):
    """A new dispatcher of the no-entry function ``fn`` (nothing compiled or loaded in it yet),
    that reads and writes the same entries of numba's cache."""
    options = {k: v for k, v in fn.targetoptions.items() if k not in ("nopython", "no_cpython_wrapper",
                                                                       "no_cfunc_wrapper")}  # fmt: skip
    return no_entry(cache=True, **options)(fn.py_func)


def test_what_the_cache_lacks_is_compiled_by_a_child_and_only_loaded_here(
    jitted, compiles, monkeypatch, capsys
):
    monkeypatch.setattr(compiling._watch, "said_at", None)  # as if no compile had spoken lately
    seen: list[float] = []
    done = threading.Event()

    def look() -> None:  # as a window asks each frame
        while not done.is_set():
            since = compiling.compiling_since()
            if since is not None:
                seen.append(since)
            time.sleep(0.01)

    looking = threading.Thread(target=look)
    looking.start()
    try:
        assert elsewhere.load_or_compile(lambda: jitted.twice(1.0), f"{jitted.__name__}:twice", (1.0,))
    finally:
        done.set()
        looking.join()
    assert jitted.twice(1.5) == 3.0
    assert compiles == []  # the child compiled, this process loaded
    assert sum(jitted.twice.stats.cache_hits.values()) == 1  # (its miss: the aborted first try)
    assert seen and compiling.compiling_since() is None  # the child's wait was shown, and is over
    assert capsys.readouterr().err.splitlines() == [COMPILING]


def test_a_cached_function_starts_no_child(jitted, compiles, monkeypatch):
    jitted.twice(1.0)  # compiled here (and cached)
    compiles.clear()
    started = []
    monkeypatch.setattr(elsewhere, "compile_in_child", lambda *a, **k: started.append(a))
    twin = numba.njit(cache=True)(jitted.twice.py_func)  # a new dispatcher: loads
    assert elsewhere.load_or_compile(lambda: twin(2.0), "unused:name") and started == [] and compiles == []


def test_a_function_loading_beside_is_compiled_by_a_child_and_a_failure_is_kept(jitted, compiles, caplog):
    # As `flock3d run` has its closing summary's function compiled while it steps, and a window
    # the functions of its colour modes.
    loading = elsewhere.Loading(jitted.twice, (1.0,), niceness=19)
    loading.start()
    loading.join(timeout=300)
    assert loading.loaded and loading.failed is None
    assert jitted.twice.signatures and compiles == []  # the child compiled, this process loaded
    failing = elsewhere.Loading(jitted.untypable, (1.0,))
    failing.start()
    failing.join(timeout=300)
    assert not failing.loaded and "no_such_attribute" in str(failing.failed)
    assert "no_such_attribute" in caplog.text and not jitted.untypable.signatures
    # Not waited for (the run's steps are done first): its child is ended, nothing is loaded.
    unwanted = elsewhere.Loading(jitted.thrice, (1.0,))
    unwanted.start()
    unwanted.cancel()
    unwanted.join(timeout=60)
    assert not unwanted.is_alive() and not unwanted.loaded and unwanted.failed is None
    assert not jitted.thrice.signatures and compiles == []


def test_a_loading_begun_on_the_callers_thread_is_waited_for_by_its_own(jitted, compiles):
    # `flock3d run` begins its summary's child before the flock's children start, and starts the
    # thread that waits for it after them (a process with a thread is never forked).
    begun = elsewhere.Loading(jitted.thrice, (1.0,))
    begun.begin()
    assert begun._child is not None and begun.ident is None and not begun.loaded
    begun.start()
    begun.join(timeout=300)
    assert begun.loaded and jitted.thrice(2.0) == 6.0 and compiles == []
    again = elsewhere.Loading(jitted.thrice, (1.0,))
    again.begin()  # cached now: loaded here and then, no child
    assert again.loaded and again._child is None
    # Begun, then given up before its thread started (the flock could not be built): its child is
    # ended there and then, and its thread, started or not, does nothing.
    given_up = elsewhere.Loading(jitted.untypable, (1.0,))
    given_up.begin()
    child = given_up._child
    given_up.cancel()
    assert child.poll() is not None and child not in elsewhere._children
    given_up.start()
    given_up.join(timeout=60)
    assert not given_up.loaded and given_up.failed is None and not jitted.untypable.signatures


def test_a_forbidden_compile_is_not_a_compile_and_can_be_asked_for_again(jitted, compiles):
    with compiling.forbidden(), pytest.raises(compiling.CompileNeeded, match="twice"):
        jitted.twice(1.0)
    assert compiles == [] and compiling.compiling_since() is None
    assert jitted.twice(1.0) == 2.0 and compiles == ["twice"]  # outside the block it compiles


def test_a_failed_child_says_one_line(jitted):
    with pytest.raises(elsewhere.CompileFailed) as failed:
        elsewhere.compile_in_child(f"{jitted.__name__}:broken", (1.0,))
    message = str(failed.value)
    assert "\n" not in message and "ValueError: no such thing: a second line" in message, message


def test_a_killed_child_says_so_and_a_cancelled_one_is_ended(jitted):
    def kill_when_started():
        deadline = time.monotonic() + 60
        while not elsewhere._children and time.monotonic() < deadline:
            time.sleep(0.02)
        for child in list(elsewhere._children):
            child.kill()

    threading.Thread(target=kill_when_started, daemon=True).start()
    with pytest.raises(
        elsewhere.CompileFailed, match=r"hang in a child process failed: it was killed \(signal 9\)$"
    ):
        elsewhere.compile_in_child(f"{jitted.__name__}:hang")
    began = time.monotonic()
    assert not elsewhere.compile_in_child(
        f"{jitted.__name__}:hang", cancelled=lambda: time.monotonic() > began + 1
    )
    assert time.monotonic() - began < 30 and not elsewhere._children
    with pytest.raises(elsewhere.CompileFailed, match="took over 0.5 s; it was stopped"):
        elsewhere.compile_in_child(f"{jitted.__name__}:hang", timeout=0.5)


def test_a_parent_killed_mid_compile_leaves_no_file_and_no_child(jitted, tmp_path):
    # A window killed (SIGKILL: no cleanup runs) while its child compiles.
    script = textwrap.dedent(f"""
        import os, threading, time
        from flock3d.core import elsewhere
        job = ("{jitted.__name__}:hang",)
        threading.Thread(target=elsewhere.compile_in_child, args=job, daemon=True).start()
        deadline = time.monotonic() + 60
        while not elsewhere._children and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.0)  # the child has its job
        print(*(child.pid for child in elsewhere._children), flush=True)
        os.kill(os.getpid(), 9)
    """)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    command = [sys.executable, "-c", script]
    killed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert killed.returncode == -9 and len(killed.stdout.split()) == 1, killed.stdout + killed.stderr
    child = int(killed.stdout)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        time.sleep(0.05)  # it ends with its parent: its stdin closed
    assert not Path(f"/proc/{child}").exists()
    assert list(temp.iterdir()) == []


def test_a_session_whose_child_fails_stops_with_one_line(fresh_steps, monkeypatch):
    from flock3d.scene import resolve_scene
    from flock3d.viewer import session as session_module
    from flock3d.viewer.hud import notice_text

    # The child cannot find the step's compile (an empty step cache: the step is not compiled).
    monkeypatch.setattr(session_module, "__name__", "flock3d_no_such_module")
    session = session_module.Session(resolve_scene("default", overrides=["flock.count=50"]))
    session.start()
    try:
        deadline = time.monotonic() + 120
        while not session.first_step_done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert isinstance(session.error, elsewhere.CompileFailed)
        text = notice_text(session.error, False)
        assert "\n" not in text and "No module named 'flock3d_no_such_module'" in text, text
    finally:
        session.stop()
    assert not elsewhere._children


@pytest.mark.slow
def test_a_session_steps_a_new_layout_compiled_by_a_child(fresh_steps, compiles):
    from flock3d.scene import resolve_scene
    from flock3d.viewer.session import Session

    session = Session(resolve_scene("default", overrides=["flock.count=50"]))
    compiles.clear()  # building the flock (here, on the caller's thread) may compile its helpers
    session.start()
    try:
        deadline = time.monotonic() + 300
        while session.snapshot().step_count < 10 and session.error is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert session.error is None and session.snapshot().step_count >= 10
    finally:
        session.stop()
    assert compiles == []  # its step (a new one: an empty step cache) compiled in a child


def _first_steps(session, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while session.snapshot().step_count < 3 and session.error is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.error is None and session.snapshot().step_count >= 3


@pytest.mark.slow
def test_the_background_compile_of_shipped_scenes_ends_with_the_session(fresh_steps):
    from flock3d.scene import resolve_scene
    from flock3d.viewer.session import Session, shipped_mark

    session = Session(resolve_scene("default", overrides=["flock.count=50"]))
    session.start()
    session.precompile_shipped(after=0.0, names=("worlds/canyon",))
    try:
        _first_steps(session)
        deadline = time.monotonic() + 60
        while not elsewhere._children and time.monotonic() < deadline:
            time.sleep(0.05)
        assert elsewhere._children  # compiling the canyon's step, at the lowest priority
    finally:
        session.stop()
    assert not elsewhere._children and not shipped_mark(("worlds/canyon",)).exists()


@pytest.mark.slow
def test_a_shipped_scene_compiled_in_the_background_opens_without_a_compile(fresh_steps, monkeypatch):
    from flock3d.scene import resolve_scene
    from flock3d.viewer.session import Session, shipped_mark

    names = ("couzin/torus",)
    session = Session(resolve_scene("default", overrides=["flock.count=50"]))
    session.start()
    session.precompile_shipped(after=0.0, names=names)
    try:
        deadline = time.monotonic() + 300
        while not shipped_mark(names).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert shipped_mark(names).exists()
        monkeypatch.setattr(elsewhere, "compile_in_child", lambda *a, **k: pytest.fail("compiled on opening"))
        session.load(resolve_scene("couzin/torus"))
        _first_steps(session, 30)
    finally:
        session.stop()


@pytest.mark.slow  # a child compiles a world's step from an empty step cache: 4-6 s
def test_a_worlds_step_compiles_in_a_child_while_its_boids_are_placed(fresh_steps, compiles, monkeypatch):
    # On a fresh install, placing a world's boids compiles the objects' distances in this process
    # first: the step compiles meanwhile in a child, and the first step only loads it.
    import numpy as np

    from flock3d import Flock, Params
    from flock3d.core import assemble
    from flock3d.core.objects import Object

    monkeypatch.delenv("FLOCK3D_NO_WARM_UP", raising=False)
    params = Params(count=50, objects=[Object("sphere", radius=1.0, position=(5.0, 0.0, 0.0))])
    monkeypatch.setattr(assemble, "clearances_cached", lambda: True)
    Flock(params, seed=1)  # the distances are cached: the step compiles here, when it is first taken
    assert assemble._steps_elsewhere == {}
    monkeypatch.setattr(assemble, "clearances_cached", lambda: False)  # as on a fresh install
    flock = Flock(params, seed=1)
    assert list(assemble._steps_elsewhere) == [assemble.layout_of(params)]
    flock.step(2)
    assert "chunk" not in compiles and assemble._steps_elsewhere == {}
    reference = Flock(params, seed=1, engine="reference")
    reference.step(2)
    np.testing.assert_allclose(flock.positions, reference.positions, atol=1e-9)


@pytest.mark.slow  # a child compiles the objects' distances from an empty numba cache: 5-7 s
def test_a_windows_process_places_a_worlds_boids_with_distances_a_child_compiled(
    compiles, monkeypatch, tmp_path
):
    # On a fresh install, placing a world's boids needs the compiled distances: a window's process
    # has a child compile them into numba's cache, and only loads them.

    from flock3d import Flock, Params
    from flock3d.core import objects
    from flock3d.core.objects import Object, distance, oracle

    # An empty numba cache of the test's own, for a fresh dispatcher here and for the child.
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    fresh = _fresh(distance.clearances)
    monkeypatch.setattr(distance, "clearances", fresh)
    monkeypatch.setattr(objects, "clearances", fresh)
    assert not objects.clearances_cached()
    monkeypatch.setattr(compiling, "_children_only", True)  # as ViewerWindow marks its process
    sphere = Object("sphere", radius=2.0, position=(1.0, 0.0, 0.0))
    params = Params(count=200, init_radius=3.0, objects=[sphere])
    flock = Flock(params, seed=3, engine="reference")
    assert from_python(fresh).signatures and "clearances" not in compiles  # compiled by a child, loaded here
    room = [oracle.bodies(params.objects)[0].clearance(0.0, p)[0] for p in flock.positions]
    assert min(room) >= params.avoidance_margin


@pytest.mark.slow  # a child compiles the distances and the keep-out from an empty numba cache: 8-12 s
def test_a_windows_process_has_one_child_compile_what_placing_a_worlds_boids_needs(
    compiles, monkeypatch, tmp_path
):
    # The fast engine's world: the distances, then the keep-out and the avoidance that the step
    # calls, compiled by one child (the chain typed once), and only loaded here.
    import copy

    from flock3d import Flock, Params
    from flock3d.core import assemble, objects
    from flock3d.core.kernel.calls import REGISTRY
    from flock3d.core.objects import Object, distance

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("FLOCK3D_NO_WARM_UP", "1")  # no warm-up child: the placement's is the one
    fresh = _fresh(distance.clearances)
    monkeypatch.setattr(distance, "clearances", fresh)
    monkeypatch.setattr(objects, "clearances", fresh)
    for name in ("keep_out", "avoidance"):
        called = copy.copy(REGISTRY[name])
        called.fn = _fresh(called.fn)
        called._address, called._lock = None, threading.Lock()
        monkeypatch.setitem(REGISTRY, name, called)
    monkeypatch.setattr(compiling, "_children_only", True)  # as ViewerWindow marks its process
    # As on a fresh install (the step's own child is another test's).
    monkeypatch.setattr(assemble, "placing_compiles", lambda params: True)
    monkeypatch.setattr(assemble, "compile_step_beside_placement", lambda params: None)
    sphere = Object("sphere", radius=2.0, position=(1.0, 0.0, 0.0))
    flock = Flock(Params(count=200, init_radius=3.0, objects=[sphere]), seed=3)
    assert not {"clearances", "keep_out", "avoidance"} & set(compiles)
    assert from_python(fresh).signatures
    assert all(REGISTRY[name]._address for name in ("keep_out", "avoidance"))
    packed = objects.pack_objects(flock.params.objects, None)
    assert (fresh(*packed, flock.positions, 0.0) >= flock.params.avoidance_margin).all()
