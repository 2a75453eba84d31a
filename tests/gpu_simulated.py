"""The GPU engine's scenes against the reference engine, run under numba's CUDA simulator.

Run as a script, in a process of its own, because the simulator must be chosen before numba is
imported (``NUMBA_ENABLE_CUDASIM=1``) and runs flock3d's numba components as Python
(``NUMBA_DISABLE_JIT=1``), neither of which the test processes may have. For each case it
names it prints one JSON line: the largest differences from the reference engine after its
steps, whether a second GPU run was bit for bit the same, and the seconds it took.

    NUMBA_ENABLE_CUDASIM=1 NUMBA_DISABLE_JIT=1 python tests/gpu_simulated.py defaults box ...
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from dataclasses import replace

import numpy as np

import flock3d
from flock3d import Flock, Params
from flock3d.core.objects import Motion
from flock3d.core.params import Attractor, Object, Species
from flock3d.errors import Flock3dError

SMALL = dict(count=60, arena_radius=6.0)
#: The fast engine's agreement scenes (tests/test_kernel.py's AGREEMENT_CASES), as they are.
AGREEMENT = {
    "defaults": Params(**SMALL),
    "narrow fov, slow turns": Params(**SMALL, fov=60.0, max_turn_rate=30.0),
    "360 fov, unlimited turns": Params(**SMALL, fov=360.0, max_turn_rate=float("inf")),
    "min_speed 0, strong rules": Params(**SMALL, min_speed=0.0, separation=80.0, alignment=9.0, cohesion=4.0),
    "global perception": Params(**SMALL, view_distance=float("inf"), separation_distance=2.0),
    "offset arena, tight confinement": Params(
        **SMALL, arena_center=(5.0, -3.0, 2.0), confinement=40.0, confinement_start=0.3
    ),
}
#: Each arena, term and option the GPU engine runs, at a density where boids see several others.
CASES = {
    **AGREEMENT,
    "box, containment": Params(**SMALL, arena_shape="box", containment=40.0),
    "sphere, containment": Params(**SMALL, containment=40.0, confinement_start=0.5),
    "periodic": Params(count=120, arena_radius=8.0, arena_shape="periodic"),
    "periodic, 2 cells a side": Params(count=60, arena_radius=3.0, view_distance=2.5, arena_shape="periodic"),
    "periodic 2D": Params(count=60, arena_radius=6.0, arena_shape="periodic", dimensions=2),
    "wrap": Params(count=60, arena_radius=5.0, arena_shape="wrap"),
    "open space": Params(**SMALL, arena_shape="none"),
    "wander": Params(**SMALL, wander=10.0),
    "chain": Params(**SMALL, combine="chain"),
    "falloff, mean forms": Params(
        **SMALL, separation_falloff="quadratic", alignment_form="mean", empty_mean="zero"
    ),
    "own neighbourhoods": Params(**SMALL, separation_fov=120.0, alignment_distance=3.0, cohesion_fov=200.0),
    "mesh turn limit": Params(**SMALL, turn_limit="mesh"),
    "roost": Params(**SMALL, roost=(1.0, 0.0, 2.0), roost_radius=2.0, roost_weight=5.0, roost_altitude=0.5),
    "predators": Params(**SMALL, predator_count=2),
    "attractors, one moving": Params(
        **SMALL,
        attractors=[
            Attractor((2.0, 0.0, 0.0), 2.0, radius=4.0),
            Attractor(
                weight=3.0,
                motion=Motion(
                    ((0.0, -3.0, 0.0), (0.0, 3.0, 0.0), (0.0, -3.0, 0.0)), (0.0, 0.2, 0.4), loop=True
                ),
            ),
        ],
    ),
    "species": Params(
        arena_radius=6.0,
        species=[
            Species("a", 30, separation=60.0, max_speed=5.0, sees=("a",)),
            Species("b", 30, alignment=8.0, fov=180.0, coheres=("a", "b")),
        ],
    ),
}


@flock3d.pair_rule(radius=3.0, fov=200.0)
def apart(p_i, v_i, p_j, v_j):
    """A pair rule of its own radius and cone, written as a device function can run it: away from
    each neighbour, by the inverse of its distance."""
    dx, dy, dz = p_i[0] - p_j[0], p_i[1] - p_j[1], p_i[2] - p_j[2]
    d2 = dx * dx + dy * dy + dz * dz
    return dx / d2, dy / d2, dz / d2


@flock3d.pair_rule(average=False, weight=0.2)
def follow(p_i, v_i, p_j, v_j):
    """A summed pair rule of the view's neighbourhood: toward each neighbour's velocity."""
    return v_j[0] - v_i[0], v_j[1] - v_i[1], v_j[2] - v_i[2]


@flock3d.force(weight=2.0)
def breeze(position, velocity, time):
    """A force of the place, the velocity and the time."""
    return 0.5 * math.sin(0.3 * time + position[0]), 0.1 * math.cos(position[1]), -0.1 * velocity[2]


@flock3d.force
def hole(position, velocity, time):
    """A force that fails (non-finite) for the boids beyond x = 1: their step fails."""
    return (math.inf if position[0] > 1.0 else 0.0), 0.0, 0.0


#: Cases with your own rules and forces: (params, rules, forces).
RULE_CASES = {
    "rules: a pair rule and a force": (Params(**SMALL), [apart], [breeze]),
    "rules, chain, periodic": (
        Params(count=60, arena_radius=6.0, arena_shape="periodic", combine="chain"),
        [apart, follow],
        [breeze],
    ),
    "rules: a force fails": (Params(**SMALL), [apart], [hole]),
    "rules, topological, adaptive": (Params(**SMALL, neighbours=5, adaptive=True), [apart, follow], []),
    "rules, species": (
        Params(arena_radius=6.0, species=[Species("a", 30, sees=("a",)), Species("b", 30, fov=180.0)]),
        [apart],
        [],
    ),
}
CASES.update({name: params for name, (params, _, _) in RULE_CASES.items()})
CASES.update({
    "topological, sphere": Params(**SMALL, neighbours=7),
    "topological, periodic": Params(count=60, arena_radius=6.0, arena_shape="periodic", neighbours=7),
    "topological, species": Params(
        arena_radius=6.0, neighbours=5,
        species=[Species("a", 30, sees=("a",)), Species("b", 30, fov=180.0)],
    ),
})  # fmt: skip
#: Per-boid carried state (a perching timer, the adaptive radius, a spin) and the other models.
#: Perching: the boids below 0.5 land at once, rest 1.5 steps and take off on the third; the wind
#: brings others down to land later.
CASES.update({
    "perching": Params(count=40, arena_radius=6.0, dt=0.1, objects=[Object("plane", position=(0, -3.0, 0))],
                       perching_height=3.5, perching_duration=0.15, perching_cooldown=0.1,
                       wind=(0.0, -30.0, 0.0)),
    "adaptive radius": Params(**SMALL, neighbours=7, adaptive=True),
    "vicsek 2D": Params(model="vicsek", count=60, arena_radius=3.0, dimensions=2, speed=0.1,
                        view_distance=1.0, noise_eta=1.0, dt=1.0),
    "vicsek 3D, old positions, adaptive": Params(model="vicsek", count=50, arena_radius=3.0, speed=0.1,
                                                 view_distance=1.4, noise_eta=0.5, dt=1.0, neighbours=5,
                                                 adaptive=True, position_update="old"),
    "ism, topological": Params(model="ism", count=60, arena_radius=2.5, neighbours=6, view_distance=2.0,
                               dt=0.05, ism_temperature=0.5),
    "couzin": Params(model="couzin", count=50, init_radius=3.0),
    "cucker-smale": Params(model="cucker-smale", count=40, init_radius=5.0),
    "escape": Params(**SMALL, neighbours=7, predator_count=1, dt=0.1, escape_distance=2.0,
                     escape_reaction=0.1, escape_duration=0.3, escape_copy=0.7, escape_looks=3),  # fmt: skip
    "aerodynamic, roost, perching": Params(
        count=40, arena_radius=6.0, flight="aerodynamic", roost=(0.0, 0.0, 0.0), roost_weight=2.0, dt=0.1,
        objects=[Object("plane", position=(0, -3.0, 0))], perching_height=3.5, perching_duration=0.15,
        perching_cooldown=0.1, wind=(0.0, -30.0, 0.0),
    ),
})  # fmt: skip
#: Cases run again with the step split in two kernels and the guard (what a boid keeps if it
#: moves passes from the first to the second): the split case's name -> the case.
_SPLIT_CASES = ("perching", "vicsek 3D, old positions, adaptive", "ism, topological", "couzin",
                "aerodynamic, roost, perching")  # fmt: skip
SPLIT = {f"{case} (split+guard)": case for case in _SPLIT_CASES}
CASES.update({name: CASES[case] for name, case in SPLIT.items()})
#: Cases run again with the grid's cells whole along x (Shape.x_cells = 1; the engine cuts them
#: in 3, and a boid's candidates lie within 3 cells of its own along x): the case's name -> the case.
XCUT = {f"{case} (x1)": case for case in ("defaults", "box, containment", "topological, sphere", "species")}
CASES.update({name: CASES[case] for name, case in XCUT.items()})
#: Periodic cases whose boids start spread over the whole box (not in its middle, as spawned).
SPREAD = (
    "rules, chain, periodic",
    "topological, periodic",
    "ism, topological",
    "ism, topological (split+guard)",
)
#: Shipped scenes whose worlds the GPU engine runs, at 60 boids: (scene, its overrides).
SCENE_CASES = {
    "obstacles": ("features/obstacles", []),
    "wind": ("features/wind", []),
    "path": ("features/path", []),
    "city (a path, boxes)": ("worlds/city", []),
    "forest (primitives, keep-out)": ("worlds/forest", []),
    "cave (a mesh's grid, a capsule)": ("worlds/cave", ["attractors = []"]),
}
STEPS = 3
#: The cases whose GPU run is run twice, to be compared bit for bit.
REPEATED = ("defaults", "periodic", "species", "topological, periodic")
#: Cases of what a caller does between steps, each run by both engines (see :func:`scripted`).
SCRIPTED = (
    "edited between steps",
    "blow-up",
    "an object moved between steps",
    "carried state edited, retuned",
    "perching, call after call",
    "moved out of the grid",
    "a predator in a wall",
)


def scripted(name: str, engine: str) -> tuple[Flock, str]:
    """A flock of ``engine`` taken through case ``name``, and the error its last step raised ("")."""
    flock = Flock(CASES["perching" if name.startswith("perching") else "defaults"], seed=7, engine=engine)
    try:
        if name == "an object moved between steps":  # the device's world follows the params' objects
            box = Object("box", position=(4.5, 0.0, 0.0), size=(1.0, 4.0, 4.0))
            flock.params = flock.params.replace(objects=[box])
            flock.step(1)
            flock.params = flock.params.replace(objects=[box._replace(position=(0.0, 0.0, 0.0))])
            flock.step(2)
        elif name == "carried state edited, retuned":  # the device's carried arrays follow the host's
            flock.params = flock.params.replace(neighbours=7, adaptive=True)
            flock.step(1)
            flock.state.radii[2] = 1.0  # read (copied back), edited, and stepped from there
            flock.step(1)
            flock.params = flock.params.replace(adaptive=False)  # no radii ride: they wait on the host
            flock.step(1)
        elif name == "a predator in a wall":  # the world holds the predators as it holds the boids
            wall = Object("box", position=(-2.25, 0.0, 0.0), size=(0.5, 12.0, 12.0))
            flock.params = flock.params.replace(objects=[wall], predator_count=1, predator_speed=20.0)
            flock.state.predator_positions[0] = (-2.3, 0.5, 0.0)  # the keep-out projects it out
            flock.step(3)
        elif name == "perching, call after call":  # the timers stay on the device, nothing read between
            for _ in range(3):
                flock.step(1)
        elif name == "moved out of the grid":  # the device's grid, sized at step 0, no longer holds them
            flock.step(1)
            flock.positions[: len(flock.positions) // 2] += (30.0, -20.0, 10.0)  # two flocks, far apart
            flock.step(2)
        elif name == "edited between steps":  # what a caller writes into the public arrays is stepped
            flock.step(1)
            flock.positions[3] += 0.5
            flock.velocities[5] *= 0.5
            flock.step(2)
        else:  # a boid set to a non-finite place: its step fails, the others move
            flock.step(1)
            flock.positions[4] = np.nan
            flock.step(2)
    except Exception as error:  # noqa: BLE001 - the message is what is compared
        return flock, f"{type(error).__name__}: {error}"
    return flock, ""


def scene_flocks(name: str, engines: tuple[str, ...]) -> list[Flock]:
    """A flock of scene case ``name`` (:data:`SCENE_CASES`), of 60 boids, for each of ``engines``.

    The scene is resolved once: here numba runs nothing compiled, so its validation's start
    check (a clearance at thousands of points) runs in Python, for seconds a resolve."""
    from flock3d.scene import resolve_scene

    source, overrides = SCENE_CASES[name]
    scene = resolve_scene(source, overrides=[*overrides, "flock.count = 60"])
    return [Flock.from_scene(scene, seed=7, engine=engine) for engine in engines]


def stepped(flock: Flock, calls: tuple[int, ...] = (STEPS,)) -> str:
    """Step ``flock`` in ``calls`` (steps a call, STEPS in all); the error a call raised ("": none)."""
    try:
        for n in calls:
            flock.step(n)
    except Flock3dError as error:  # the message is what is compared
        return f"{type(error).__name__}: {error}"
    return ""


def run(name: str) -> dict:
    """Case ``name``: the GPU engine's run (twice for REPEATED) and the reference engine's."""
    from flock3d.core.gpu import engine
    from flock3d.core.step.cuda_generate import DEFAULT_SHAPE, Shape

    start = time.perf_counter()
    engine.SHAPE = (
        Shape(max_registers=64, split=True, guard=True)
        if name in SPLIT
        else replace(DEFAULT_SHAPE, x_cells=1)
        if name in XCUT
        else DEFAULT_SHAPE
    )
    if name in SCENE_CASES:
        (gpu, ref), again = scene_flocks(name, ("gpu", "reference")), None
        gpu.step(STEPS)
        ref.step(STEPS)
        gpu_error = ref_error = ""
    elif name in SCRIPTED:
        (gpu, gpu_error), (ref, ref_error) = scripted(name, "gpu"), scripted(name, "reference")
        again = None
    else:
        _, rules, forces = RULE_CASES.get(name, (None, (), ()))
        engines = ("gpu", "reference", "gpu") if name in REPEATED else ("gpu", "reference")
        flocks = [Flock(CASES[name], seed=7, engine=e, rules=rules, forces=forces) for e in engines]
        if name in SPREAD:  # boids all over the box, each seeing others through its faces
            r = CASES[name].arena_radius
            spread = np.random.default_rng(3).uniform(-r, r, (CASES[name].count, 3))
            for flock in flocks:
                flock.positions[...] = spread
        # the repeated run takes its steps in two calls: the same, bit for bit (the device's grid
        # is sized by the flock's step count, not the call's)
        calls = ((STEPS,), (STEPS,), (1, STEPS - 1))
        gpu_error, ref_error, *_ = (stepped(flock, c) for flock, c in zip(flocks, calls, strict=False))
        gpu, ref, again = (*flocks, None)[:3]
    dots = np.abs(np.sum(gpu.orientations * ref.orientations, axis=1))
    return {
        "case": name,
        "positions": float(np.nan_to_num(np.abs(gpu.positions - ref.positions)).max(initial=0.0)),
        "same non-finite": bool(np.array_equal(np.isfinite(gpu.positions), np.isfinite(ref.positions))),
        "velocities": float(np.abs(gpu.velocities - ref.velocities).max(initial=0.0)),
        "orientations": float(np.abs(dots - 1.0).max(initial=0.0)),
        "predators": float(np.abs(gpu.predator_positions - ref.predator_positions).max(initial=0.0)),
        "carried": float(
            max(
                (np.abs(a - ref.state.carried[key]).max(initial=0.0) for key, a in gpu.state.carried.items()),
                default=0.0,
            )
        ),  # fmt: skip
        "escaped": [int(np.sum(gpu.state.escapes[:, 0] > -1.0)), int(np.sum(gpu.state.escapes[:, 1] > 0.0))],
        "perched": [int(np.sum(gpu.state.perches > 0.0)), int(np.sum(gpu.state.perches < 0.0))],  # rest, off
        "same waypoints": bool(np.array_equal(gpu.state.waypoints, ref.state.waypoints)),
        "clock": [gpu.time == ref.time, gpu.step_count == ref.step_count],
        "steps": gpu.step_count,
        "errors": [gpu_error, ref_error],
        "repeatable": None
        if again is None
        else bool(
            np.array_equal(gpu.positions, again.positions)
            and np.array_equal(gpu.velocities, again.velocities)
            and np.array_equal(gpu.orientations, again.orientations)
        ),  # fmt: skip
        "seconds": time.perf_counter() - start,
    }


#: float32 against float64 (``--float32``): the defaults, dense enough that each boid sees several.
FLOAT32 = Params(count=40, arena_radius=5.0)
FLOAT32_STEPS = 10


def float32_run(seed: int) -> dict:
    """A float32 and a float64 GPU run of FLOAT32 from ``seed``, step by step: what every step of
    the float32 run keeps (its state's type, speeds, turns, the arena) and both runs' statistics
    (polarization, mean nearest-neighbour distance) every 5 steps."""
    from flock3d import metrics
    from flock3d.core.quaternion import forward

    runs = {precision: Flock(FLOAT32.replace(precision=precision), seed=seed, engine="gpu")
            for precision in ("float32", "float64")}  # fmt: skip
    p, f32 = FLOAT32, runs["float32"]
    worst_speed_over = worst_speed_under = worst_turn_over = farthest = 0.0
    stats: dict[str, list] = {precision: [] for precision in runs}
    max_turn = np.radians(p.max_turn_rate) * p.dt
    for step in range(1, FLOAT32_STEPS + 1):
        before = forward(f32.orientations)
        for flock in runs.values():
            flock.step(1)
        speeds = np.linalg.norm(f32.velocities, axis=1)
        worst_speed_over = max(worst_speed_over, float((speeds / p.max_speed - 1.0).max()))
        worst_speed_under = max(worst_speed_under, float((1.0 - speeds / p.min_speed).max()))
        after = forward(f32.orientations)
        turned = np.arctan2(np.linalg.norm(np.cross(before, after), axis=1), np.sum(before * after, axis=1))
        worst_turn_over = max(worst_turn_over, float((turned - max_turn).max()))
        farthest = max(farthest, float(np.linalg.norm(f32.positions - p.arena_center, axis=1).max()))
        if step % 5 == 0:
            for precision, flock in runs.items():
                nn = metrics.nearest_neighbour_stats(flock.positions)
                stats[precision].append([metrics.polarization(flock.velocities), nn.mean])
    exact = all(
        np.array_equal(a, a.astype(np.float32))
        for a in (f32.positions, f32.velocities, f32.orientations)
    )  # fmt: skip
    return {
        "seed": seed,
        "float32 values": exact,
        "speed over max (relative)": worst_speed_over,
        "speed under min (relative)": worst_speed_under,
        "turn over the limit (rad)": worst_turn_over,
        "farthest from the centre": farthest,
        "arena radius": p.arena_radius,
        "stats": stats,
    }


def sizings(calls: list[int], every: int = 2) -> list[int]:
    """How many times the device sizes its grid in each of ``calls`` (steps a call) of one flock,
    the grid sized every ``every`` steps (engine.REGRID_STEPS)."""
    from flock3d.core.gpu import engine, kernels

    kept, engine.REGRID_STEPS = engine.REGRID_STEPS, every
    sized = []
    real = kernels.bounds_grid

    class Counted:  # bounds_grid[blocks, threads](...), counted
        def __getitem__(self, launch):
            sized[-1] += 1
            return real[launch]

    flock = Flock(Params(count=20), seed=7, engine="gpu")
    engine.K.bounds_grid = Counted()
    try:
        for n in calls:
            sized.append(0)
            flock.step(n)
    finally:
        engine.K.bounds_grid, engine.REGRID_STEPS = real, kept
    return sized


def scans(grids: list[tuple[int, int, int]], n: int = 3000) -> list[bool]:
    """For each grid (cells along x, y, z) of a device flock of ``n`` boids: whether the
    device's scan of random counts in the grid's cells (the rest of the counts' capacity left
    at zero, as the step leaves it) starts each of them, and the end of the last, where numpy's
    cumulative sum does. The scan spans blocks, then one block scans their totals a span at a
    time, and it stops at the grid's cells."""
    from flock3d.core.gpu import engine
    from flock3d.core.gpu.device import cuda

    rng, flock, same = np.random.default_rng(5), engine.DeviceFlock(n), []
    capacity = flock._grid(Params(count=n), 1.0)
    for grid in grids:
        assert np.prod(grid) <= capacity
        used = int(np.prod(grid))
        counts = np.zeros(capacity + 1, dtype=np.int64)
        counts[:used] = rng.integers(0, 9, used)
        flock.counts.copy_to_device(counts)
        flock.start.copy_to_device(np.full(capacity + 1, -1, dtype=np.int64))
        flock.gi.copy_to_device(np.array([*grid, 1], dtype=np.int64))
        flock._scan(flock.counts, flock.start, capacity + 1)
        cuda.synchronize()
        expected = np.concatenate([[0], np.cumsum(counts[:used])])
        same.append(bool(np.array_equal(flock.start.copy_to_host()[: used + 1], expected)))
    return same


def totals(n: int) -> bool:
    """Whether the one block that scans the blocks' totals (kernels.scan_totals) scans ``n``
    random totals, more than a span holds (at 1,000,000 boids: a few hundred), as numpy does."""
    from flock3d.core.gpu import kernels
    from flock3d.core.gpu.device import cuda

    values = np.random.default_rng(6).integers(0, 1000, n)
    out = cuda.to_device(np.full(n, -1, dtype=np.int64))
    grid = cuda.to_device(np.array([n * kernels.SPAN, 1, 1, 1], dtype=np.int64))  # uses all n
    kernels.scan_totals[1, kernels.TPB](cuda.to_device(values), out, n, grid, 1)
    return bool(np.array_equal(out.copy_to_host(), np.concatenate([[0], np.cumsum(values)[:-1]])))


def split_shared_arrays(rounds: int) -> int:
    """In how many of ``rounds`` a block's 32 threads, asking for its shared array at once with
    the interpreter switching threads as often as it can, got more than one array (numba-cuda's
    simulator: :func:`flock3d.core.gpu.device._quicker_simulator`)."""
    import threading

    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    sys.setswitchinterval(1e-5)
    split = 0
    for _ in range(rounds):
        shared, start, got = FakeCUDAShared(0), threading.Barrier(32), [None] * 32

        def thread(k: int, shared=shared, start=start, got=got) -> None:
            start.wait()
            got[k] = shared.array(32, np.int64)

        threads = [threading.Thread(target=thread, args=(k,)) for k in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        split += len({id(a) for a in got}) > 1
    return split


def session_transfers(frames: int) -> dict:
    """The whole-state uploads and downloads of a GPU flock's run recording every 2nd of 6 steps,
    of the 3 frames of a video drawn as it is simulated (2 steps a frame), and of a viewer session
    stepping it ``frames`` times and copying each frame's state (what the window draws), with the
    acceleration the session derives checked against the velocities it copied."""
    import tempfile
    from pathlib import Path

    from flock3d.core.gpu.engine import DeviceFlock
    from flock3d.io import TrajectoryWriter
    from flock3d.io.playback import simulated_frames, simulated_playback
    from flock3d.runner import run as run_steps
    from flock3d.scene import Scene
    from flock3d.viewer.session import Session

    counts = {"upload": 0, "download": 0}

    def counting(name: str):
        real = getattr(DeviceFlock, name)

        def counted(self, *args, **kwargs):
            counts[name] += 1
            return real(self, *args, **kwargs)

        return counted

    for name in counts:
        setattr(DeviceFlock, name, counting(name))
    out = {}
    # A run recording every 2nd step, and the frames of a video drawn as it is simulated.
    with tempfile.TemporaryDirectory() as folder:
        flock = Flock(Params(**SMALL), engine="gpu")
        with TrajectoryWriter(Path(folder) / "t.h5", len(flock), Scene(flock.params), 2) as writer:
            run_steps(flock, 6, writer=writer, every=2, progress=False)
        out["run"] = dict(counts, frames=writer.frames)
    counts.update(upload=0, download=0)
    flock = Flock(Params(**SMALL, dt=0.05), engine="gpu")
    drawn = [
        float(state.positions.sum())
        for state, _ in simulated_frames(flock, simulated_playback(0.05, 10.0, 0.0, 3))
    ]
    out["render"] = dict(counts, frames=len(drawn))
    counts.update(upload=0, download=0)
    session = Session(Scene(Params(**SMALL)), engine="gpu")
    session.paused = True
    session.single_step()  # the first upload; the velocities the next frame's acceleration is from
    # Without its worker thread a session's snapshot is the live state: copied here as a window's is.
    before = session.snapshot().state.copy()
    counts.update(upload=0, download=0)
    worst = 0.0
    for _ in range(frames):
        session.single_step()
        snap = session.snapshot()
        state = snap.state.copy()
        expected = (state.velocities - before.velocities) / (state.time - before.time)
        worst = max(worst, float(np.abs(snap.acceleration - expected).max()))
        before = state
    return {**out, "session": dict(counts), "acceleration_error": worst}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--shared"]:
        import flock3d.core.gpu.device  # noqa: F401 - what it does to the simulator is tested

        print(split_shared_arrays(int(sys.argv[2])))
        sys.exit(0)
    if sys.argv[1:2] == ["--transfers"]:
        warnings.simplefilter("ignore", RuntimeWarning)
        print(json.dumps(session_transfers(int(sys.argv[2]))))
        sys.exit(0)
    if sys.argv[1:2] == ["--sizings"]:
        warnings.simplefilter("ignore", RuntimeWarning)
        print(json.dumps({"split": sizings([1, 2, 3]), "whole": sizings([6])}))
        sys.exit(0)
    if sys.argv[1:2] == ["--scan"]:
        grids = [(1, 1, 1), (7, 5, 3), (255, 1, 1), (16, 16, 1), (11, 37, 14)]
        print(json.dumps([*scans(grids), totals(600)]))
        sys.exit(0)
    if sys.argv[1:2] == ["--float32"]:
        warnings.simplefilter("ignore", RuntimeWarning)
        for seed in sys.argv[2:]:
            print(json.dumps(float32_run(int(seed))), flush=True)
        sys.exit(0)
    # The branch-free pair loop divides by a boid's zero distance to itself and drops the result:
    # compiled code says nothing, Python warns.
    warnings.simplefilter("ignore", RuntimeWarning)
    for case in sys.argv[1:]:
        print(json.dumps(run(case)), flush=True)
