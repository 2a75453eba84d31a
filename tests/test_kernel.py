"""The fast kernel against the reference, and the invariants the spec promises."""

import json
import math
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from helpers import flock3d

from flock3d import Flock, Params
from flock3d.cli import COMPILING
from flock3d.core import quaternion
from flock3d.core.assemble import stepper_for
from flock3d.core.kernel import COLUMNS, Workspace
from flock3d.core.params import Object
from flock3d.io.trajectory import Trajectory

from conftest import angle_between, free_params, hand_flock

SMALL = dict(count=60, arena_radius=6.0)

AGREEMENT_CASES = {
    "defaults": Params(**SMALL),
    "narrow fov, slow turns": Params(**SMALL, fov=60.0, max_turn_rate=30.0),
    "360 fov, unlimited turns": Params(**SMALL, fov=360.0, max_turn_rate=math.inf),
    "min_speed 0, strong rules": Params(**SMALL, min_speed=0.0, separation=80.0, alignment=9.0, cohesion=4.0),
    "global perception": Params(**SMALL, view_distance=math.inf, separation_distance=2.0),
    "offset arena, tight confinement": Params(
        **SMALL, arena_center=(5.0, -3.0, 2.0), confinement=40.0, confinement_start=0.3
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT_CASES))
def test_fast_kernel_equals_reference_after_100_steps(name):
    params = AGREEMENT_CASES[name]
    fast = Flock(params, seed=7)
    ref = Flock(params, seed=7, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)
    # Orientations agree as rotations (a quaternion and its negative are the same).
    dots = np.abs(np.sum(fast.orientations * ref.orientations, axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-9)
    assert fast.time == ref.time and fast.step_count == ref.step_count == 100


@pytest.mark.slow
def test_agreement_across_many_chunks_and_a_spread_out_grid():
    # 700 boids span several chunks of cells; a tiny view distance in a wide flock makes
    # the grid coarsen its cells (its cap on cells per boid).
    cases = [
        (Params(count=700, arena_radius=14.0), 8),
        (Params(count=300, view_distance=0.3, separation_distance=0.2, arena_radius=400.0), 20),
    ]
    for params, steps in cases:
        fast, ref = Flock(params, seed=8), Flock(params, seed=8, engine="reference")
        fast.step(steps)
        ref.step(steps)
        np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)


def test_agreement_on_an_exactly_opposite_turn_of_a_rolled_boid():
    from pyquaternion import Quaternion

    params = free_params(max_turn_rate=30.0, min_speed=1.0, max_speed=1.0, dt=1 / 60)
    roll = Quaternion(axis=[0, 0, 1], angle=0.7)
    up = np.array(roll.rotate([0, 1, 0]))
    for engine in ("fast", "reference"):
        flock = Flock(params, positions=[[0.0, 0, 0]], velocities=[[0, 0, 1.0]], orientations=[roll.elements],
                      engine=engine)  # fmt: skip
        flock.velocities[0] = [0, 0, -1.0]  # wants exactly the opposite heading; orientation untouched
        flock.step()
        # The heading turned by the limit (0.5 degrees) about the boid's own, rolled, up axis.
        assert np.dot(flock.boids[0].forward, up) == pytest.approx(0.0, abs=1e-12)
        assert math.degrees(math.acos(flock.boids[0].forward[2])) == pytest.approx(0.5, abs=1e-9)


def test_agreement_with_coincident_boids():
    params = Params(count=0, arena_radius=5.0)
    rng = np.random.default_rng(3)
    p = rng.uniform(-2, 2, (30, 3))
    p[10:20] = p[0]  # eleven boids at one point
    v = rng.normal(size=(30, 3))
    fast = Flock(params, positions=p, velocities=v)
    ref = Flock(params, positions=p, velocities=v, engine="reference")
    fast.step(50)
    ref.step(50)
    assert np.all(np.isfinite(fast.positions))
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)


def test_same_seed_same_trajectory_bit_for_bit():
    a, b = Flock(Params(count=400), seed=11), Flock(Params(count=400), seed=11)
    a.step(200)
    b.step(200)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.orientations, b.orientations)
    c = Flock(Params(count=400), seed=12)
    assert not np.array_equal(a.positions[:5], c.positions[:5])


def test_result_does_not_depend_on_thread_count():
    params = Params(count=3000, arena_radius=20.0)
    results = []
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            flock = Flock(params, seed=5)
            flock.step(50)
            results.append(flock.positions.copy())
    finally:
        numba.set_num_threads(before)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_n_steps_equal_n_single_steps():
    a, b = Flock(Params(count=500), seed=2), Flock(Params(count=500), seed=2)
    a.step(37)
    for _ in range(37):
        b.step()
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.velocities, b.velocities)
    assert a.time == pytest.approx(b.time, rel=1e-12)


@pytest.mark.slow
def test_a_run_that_compiles_its_step_equals_one_that_loads_it(tmp_path):
    """Bit for bit: the process that compiles a scene's step and one that loads the compiled
    step from the cache (a fast-math function called from the step could run as its own
    compiled code in the first and as the step's re-optimised copy in the second)."""
    env = {"FLOCK3D_CACHE_DIR": str(tmp_path / "steps")}  # this scene's step: not compiled yet
    frames = []
    for name in ("compiled", "loaded"):
        out = tmp_path / f"{name}.h5"
        args = ("run", "default", "--steps", "30", "--every", "30", "--seed", "3", "--set", "flock.count=300")
        result = flock3d(*args, "--out", out, env=env, process=True)  # a process each: compiled, then loaded
        assert result.returncode == 0, result.stderr
        assert (COMPILING in result.stderr) == (name == "compiled"), result.stderr
        with Trajectory(out) as trajectory:
            frames.append(trajectory.frame(-1))
    np.testing.assert_array_equal(frames[0].positions, frames[1].positions)
    np.testing.assert_array_equal(frames[0].velocities, frames[1].velocities)
    np.testing.assert_array_equal(frames[0].orientations, frames[1].orientations)


_TYPED_AT_STEP = """
import json, sys
import numpy as np
from flock3d import Flock, Params
from flock3d.core.assemble import stepper_for
from flock3d.core.params import Object
from flock3d.core.terms.objects import KEEP_OUT
params = Params(count=60, objects=[Object("sphere", radius=3.0, position=(5.0, 0.0, 0.0))])
flock = Flock(params, seed=2)
stepper_for(params)  # the chunk compiles here: this layout is in no cache
typed = len(KEEP_OUT.fn.overloads)
flock.step(5)
after = len(KEEP_OUT.fn.overloads)
print(json.dumps({"typed": typed, "after": after, "positions": flock.positions.tolist()}))
"""


@pytest.mark.slow
def test_a_world_step_compiles_without_compiling_its_keep_out(tmp_path):
    # The chunk calls the keep-out at its address: its compile types it by its signature alone,
    # so the keep-out's chain (5-6 s from an empty cache) can compile in another process meanwhile.
    env = {**os.environ, "FLOCK3D_CACHE_DIR": str(tmp_path / "steps"), "FLOCK3D_NO_WARM_UP": "1"}
    out = subprocess.run([sys.executable, "-c", _TYPED_AT_STEP], env=env, capture_output=True, text=True,
                         timeout=600, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["typed"], result["after"]) == (0, 1)  # looked up when the step first ran, not before
    params = Params(count=60, objects=[Object("sphere", radius=3.0, position=(5.0, 0.0, 0.0))])
    flock = Flock(params, seed=2, engine="reference")
    flock.step(5)
    np.testing.assert_allclose(result["positions"], flock.positions, rtol=0, atol=1e-9)


def test_preparing_a_world_step_looks_its_called_functions_up_before_another_thread_runs_it(monkeypatch):
    # Stepping hands a long call to another thread after prepare(): what that thread runs must be
    # compiled by then, the functions called at their addresses as the driver.
    from flock3d.core.terms.objects import AVOIDANCE, KEEP_OUT

    params = Params(count=30, objects=[Object("sphere", radius=2.0, position=(5.0, 0.0, 0.0))])
    stepper = stepper_for(params)
    assert stepper.module.CALLED == ("avoidance", "turn_rows", "move_rows", "keep_out")  # in the order used
    for called in (AVOIDANCE, KEEP_OUT):
        monkeypatch.setattr(called, "_address", None)
    monkeypatch.setattr(stepper, "_called_at", None)  # as a stepper that never ran (another test's may have)
    stepper.prepare(Flock(params, seed=1).state)
    assert KEEP_OUT._address is not None and AVOIDANCE._address is not None


def test_a_flock_stepping_never_waits_for_a_warm_up_child_started_for_another(monkeypatch):
    # A viewer opening a world starts a warm-up child while the shown flock steps under its
    # session's lock: a step that waited for that child froze the window for seconds.
    from flock3d.core import assemble

    flock = Flock(Params(count=20), seed=1)
    flock.step(1)  # its driver loaded

    class Compiling:  # a child compiling for a flock just built, which this one must not wait for
        def wait(self, timeout=None):
            raise AssertionError("the step waited for another flock's warm-up child")

    monkeypatch.setattr(assemble, "_warm_up", Compiling())
    flock.step(2)
    assert flock.state.step_count == 3


def test_a_worlds_first_open_starts_its_warm_up_child_before_placing_the_boids(monkeypatch):
    # From empty caches this process compiles the turn and the keep-out (and with it the distances
    # that placing the boids needs), the step's child the chunk alone, and the warm-up child the
    # driver, the move and then the avoidance: none of that waits for the distances here, so the
    # warm-up child starts before the placement (it used to start after it, and end last).
    from flock3d import flock as flock_module
    from flock3d.core import assemble, compiling, elsewhere
    from flock3d.core.terms.objects import KEEP_OUT

    def not_cached(params):
        raise compiling.CompileNeeded("the step")

    events = []

    def start(target, args, **options):
        events.append(("child", target.partition(":")[2], args))

    placing = flock_module._initial_state
    monkeypatch.setattr(
        flock_module, "_initial_state", lambda *a: (events.append(("placement",)), placing(*a))[1]
    )
    monkeypatch.setattr(elsewhere, "start", start)
    monkeypatch.setattr(elsewhere, "wait_for", lambda child, target, **options: True)
    monkeypatch.setattr(assemble, "_warm_up", None)
    monkeypatch.setattr(assemble, "clearances_cached", lambda: False)
    monkeypatch.setattr(assemble, "driver_is_cached", lambda *options: False)
    monkeypatch.setattr(type(KEEP_OUT), "cached", lambda self: False)
    monkeypatch.setattr(type(KEEP_OUT), "address", lambda self: events.append(("here", self.name)))
    monkeypatch.setattr(assemble, "stepper_for", not_cached)
    monkeypatch.setattr(assemble, "_steppers", {})  # none assembled by another test of this process
    monkeypatch.setattr(compiling, "_children_only", False)
    monkeypatch.delenv("FLOCK3D_NO_WARM_UP", raising=False)
    world = Params(count=50, objects=[Object("sphere", radius=1.0, position=(5.0, 0.0, 0.0))])
    Flock(world, seed=1)
    assemble._await_step_elsewhere(assemble.layout_of(world))
    # Both children start before this process compiles anything, and before any thread that
    # waits for them (so that both can be this process forked).
    assert events == [
        ("child", "_compile_shared", ((False, False), True, ("move_rows", "avoidance"))),
        ("child", "_compile_step", (world,)),
        ("here", "turn_rows"),
        ("here", "keep_out"),
        ("placement",),
    ]


@pytest.mark.slow  # the child compiles the keep-out's chain from an empty cache: 6-8 s
def test_a_world_keep_out_missing_from_the_cache_is_compiled_by_the_warm_up_child(monkeypatch, tmp_path):
    # A first run of a world compiles the keep-out in the background child, into numba's cache,
    # where this process's step then finds it.
    from flock3d.core import assemble, elsewhere
    from flock3d.core.terms.objects import KEEP_OUT

    launched = []

    def start(target, args, **options):
        launched.append((target, args))
        return "the child"

    monkeypatch.setattr(assemble, "_warm_up", None)
    monkeypatch.setattr(assemble, "driver_is_cached", lambda *options: True)
    from flock3d.core.kernel import MOVE_ROWS, TURN_ROWS

    monkeypatch.setattr(type(KEEP_OUT), "cached", lambda self: self in (TURN_ROWS, MOVE_ROWS))
    monkeypatch.delenv("FLOCK3D_NO_WARM_UP", raising=False)
    monkeypatch.setattr(elsewhere, "start", start)
    monkeypatch.setattr(assemble, "compile_step_beside_placement", lambda params: None)  # another test's
    assemble.warm_up_in_background(Params())  # no objects, the batch's turn and move cached: nothing
    assert launched == []
    assemble.warm_up_in_background(Params(objects=[Object("sphere", radius=1.0, position=(5.0, 0.0, 0.0))]))
    shared = "flock3d.core.assemble:_compile_shared"
    compiles = (shared, ((False, False), False, ("avoidance", "keep_out")))
    assert launched == [compiles]
    # After placing a world's boids compiled the distances, this process compiles the keep-out
    # itself while the child compiles the rest (warm_up_in_background's `placed`); a window's
    # process (a window test may have run in this one) leaves it all to the child.
    from flock3d.core import compiling

    world = Params(objects=[Object("sphere", radius=1.0)])
    monkeypatch.setattr(compiling, "_children_only", True)
    monkeypatch.setattr(assemble, "_warm_up", None)
    assemble.warm_up_in_background(world, placed=True)
    assert launched[1:] == [compiles]
    monkeypatch.setattr(compiling, "_children_only", False)
    monkeypatch.setattr(assemble, "_warm_up", None)
    assemble.warm_up_in_background(world, placed=True)
    assert launched[2:] == [(shared, ((False, False), False, ("avoidance",)))]
    # While the child compiles the driver (the longest) and then the move, this process compiles
    # the turn.
    monkeypatch.setattr(assemble, "_warm_up", None)
    monkeypatch.setattr(assemble, "driver_is_cached", lambda *options: False)
    monkeypatch.setattr(type(KEEP_OUT), "cached", lambda self: self not in (TURN_ROWS, MOVE_ROWS))
    for called in (TURN_ROWS, MOVE_ROWS):  # not looked up yet in this process
        monkeypatch.setattr(called, "_address", None)
    assemble.warm_up_in_background(Params())
    assert launched[3:] == [(shared, ((False, False), True, ("move_rows",)))]
    assert TURN_ROWS._address is not None and MOVE_ROWS._address is None
    monkeypatch.undo()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "FLOCK3D_NO_WARM_UP": "1"}
    check = "from flock3d.core.terms.objects import KEEP_OUT; print(KEEP_OUT.cached())"
    before = subprocess.run(
        [sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120
    )
    job = f"from flock3d.core.assemble import _compile_shared; _compile_shared{launched[0][1]!r}"
    child = subprocess.run([sys.executable, "-c", job], env=env, capture_output=True, text=True, timeout=600)
    after = subprocess.run(
        [sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert (before.stdout.strip(), after.stdout.strip()) == ("False", "True"), before.stderr + after.stderr


def test_a_step_does_not_read_what_its_workspace_held():
    # A flock keeps the driver's working arrays between calls: a step must write them before
    # it reads them, so what an earlier call (or anything else) left there cannot matter.
    params = Params(count=500)
    a, b = Flock(params, seed=3), Flock(params, seed=3)
    a.step(3)
    a.step(4)
    work = Workspace()
    for array in work.arrays(len(b)):
        array.fill(7 if array.dtype.kind == "i" else np.nan)
    assert stepper_for(params).advance(b.state, params, 7, b.noise_seed, work).ok
    for name in ("positions", "velocities", "orientations"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name))
    kept = work.arrays(500)
    assert all(x is y for x, y in zip(work.arrays(500), kept, strict=True))  # not reallocated
    assert [x.shape for x in work.arrays(20)][:3] == [(20, COLUMNS), (3, 20), (20,)]  # resized for another


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_permuting_boids_permutes_the_result(engine):
    params = Params(count=80, arena_radius=7.0)
    flock = Flock(params, seed=4, engine=engine)
    perm = np.random.default_rng(0).permutation(80)
    shuffled = Flock(
        params,
        positions=flock.positions[perm],
        velocities=flock.velocities[perm],
        orientations=flock.orientations[perm],
        engine=engine,
    )
    flock.step(30)
    shuffled.step(30)
    np.testing.assert_allclose(shuffled.positions, flock.positions[perm], atol=1e-10)
    np.testing.assert_allclose(shuffled.velocities, flock.velocities[perm], atol=1e-10)


def test_every_turn_respects_the_limit_and_speeds_stay_in_range():
    params = Params(count=1500, max_turn_rate=90.0, min_speed=2.0, max_speed=4.0, alignment=20.0)
    flock = Flock(params, seed=9)
    limit = math.radians(90.0) * params.dt
    for _ in range(120):
        before = flock.orientations.copy()
        flock.step()
        turned = angle_between(quaternion.forward(before), quaternion.forward(flock.orientations))
        assert turned.max() <= limit + 1e-12
        speeds = np.linalg.norm(flock.velocities, axis=1)
        assert speeds.min() >= 2.0 - 1e-12 and speeds.max() <= 4.0 + 1e-12


def test_velocity_stays_along_forward():
    flock = Flock(Params(count=800, min_speed=0.0), seed=1)
    flock.step(100)
    speeds = np.linalg.norm(flock.velocities, axis=1)
    np.testing.assert_allclose(
        flock.velocities, quaternion.forward(flock.orientations) * speeds[:, None], atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.norm(flock.orientations, axis=1), 1.0, atol=1e-14)


def test_lone_boid_flies_straight_at_constant_speed():
    flock = hand_flock(Params(arena_radius=1000.0), [[1, 2, 3]], [[0.6, 0, 0.8]])
    flock.velocities[0] *= 4.0  # speed 4, within [3, 6]
    flock.step(600)
    np.testing.assert_allclose(flock.velocities[0], [2.4, 0, 3.2], atol=1e-12)
    np.testing.assert_allclose(
        flock.positions[0], np.array([1, 2, 3]) + 10.0 * np.array([2.4, 0, 3.2]), atol=1e-9
    )


def test_parallel_flock_keeps_its_velocity():
    # Same velocity for all, only alignment: nothing changes (spec consequence).
    rng = np.random.default_rng(0)
    p = rng.uniform(-5, 5, (200, 3))
    v = np.tile([1.0, -2.0, 0.5], (200, 1))
    flock = hand_flock(free_params(alignment=3.0, view_distance=4.0, fov=270.0), p, v)
    flock.step(100)
    np.testing.assert_allclose(flock.velocities, v, atol=1e-12)


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_empty_and_single_boid_flocks(engine):
    empty = Flock(Params(count=0), engine=engine)
    empty.step(10)
    assert len(empty) == 0 and empty.positions.shape == (0, 3) and empty.step_count == 10
    one = Flock(Params(count=1), engine=engine)
    one.step(10)
    assert np.all(np.isfinite(one.positions))


def test_infinite_view_distance_sees_everyone():
    p = [[0, 0, 0], [500, 0, 0], [0, -900, 0]]
    v = [[0, 0, 1], [0, 0, 1], [0, 0, 1]]
    params = free_params(view_distance=math.inf, cohesion=1.0)
    flock = hand_flock(params, p, v)
    v0 = flock.velocities.copy()
    flock.step()
    a = (flock.velocities - v0) / params.dt
    np.testing.assert_allclose(a[0], [250, -450, 0], rtol=1e-9, atol=1e-9)


def test_long_run_stays_finite_and_inside_the_arena():
    params = Params(count=400)
    flock = Flock(params, seed=3)
    worst = 0.0
    for _ in range(100):
        flock.step(100)
        assert np.all(np.isfinite(flock.positions))
        worst = max(worst, np.linalg.norm(flock.positions, axis=1).max() / params.arena_radius)
    assert flock.step_count == 10_000
    assert worst <= 1.02


@pytest.mark.slow
def test_agreement_whether_candidates_are_gathered_by_rows_or_by_cells():
    # A flock of ~5 boids a cell gathers its candidates row by row, a crowded one cell by cell.
    from flock3d.bench import bench_params
    from flock3d.core import kernel
    from flock3d.core.neighbors import build_grid

    for params, crowded in ((bench_params(400), False), (Params(count=400, arena_radius=6.0), True)):
        fast, ref = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
        assert kernel.crowded(build_grid(fast.positions, params.view_distance).cell_start) == crowded
        fast.step(10)
        ref.step(10)
        np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
        np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "periodic, n, side", [(False, 400, 10.0), (True, 400, 10.0), (True, 50, 2.5), (False, 1, 1.0)]
)
def test_candidate_buffers_are_sized_for_every_boid_they_may_take(periodic, n, side):
    # The buffers are written past their counts' end unchecked (numba does no bounds checks):
    # with an unlimited reach every boid (and image) of the cells scanned is taken, so the
    # fill counts must equal the sizes the buffers were made with, cell by cell and row by row.
    from flock3d.core import kernel
    from flock3d.core.neighbors import build_grid, build_periodic_grid

    # Called from Python, each through its twin (flock3d.core.no_entry).
    count_candidates, fill_candidates, candidate_buffer = (
        kernel.count_candidates,
        kernel.fill_candidates,
        kernel.candidate_buffer,
    )
    row_span, fill_row = kernel.row_span, kernel.fill_row
    rng = np.random.default_rng(n)
    pos = rng.uniform(-side / 2, side / 2, (n, 3))
    if periodic:
        grid = build_periodic_grid(pos, np.zeros(3), np.full(3, side / 2), 1.0, False)
    else:
        grid = build_grid(pos, 1.0)
    ordered = pos[grid.order]
    cols = np.zeros((n, kernel.COLUMNS))
    cols[:, :3] = ordered
    sides = np.full(3, side)
    n_cells = grid.nx * grid.ny * grid.nz
    assert n_cells > 1 or n == 1
    for c in range(n_cells):
        need = count_candidates(c, grid, periodic)
        buf = tuple(np.empty(need + 8) for _ in range(6))
        assert fill_candidates(c, grid, cols, math.inf, buf, periodic, sides) == need
        if grid.cell_start[c + 1] > grid.cell_start[c]:  # a step fills occupied cells only
            b, _ = candidate_buffer(c, c + 1, grid, 6, periodic, True)
            assert b.shape[1] - 8 == need
    for row in range(grid.ny * grid.nz):
        cy, cz = row % grid.ny, row // grid.ny
        xa, xb = row_span(0, grid.nx - 1, grid.nx, periodic)
        b, xoff = candidate_buffer(row * grid.nx, (row + 1) * grid.nx, grid, 6, periodic, False)
        buf = tuple(b[k] for k in range(6))
        assert fill_row(cy, cz, xa, xb, grid, cols, math.inf, buf, xoff, periodic, sides) == b.shape[1] - 8
