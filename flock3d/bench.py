"""``flock3d bench``: speed and memory of the fast kernel at a fixed density.

Setup, the same for every size: default parameters, view distance r_v = 5,
boids uniform in a ball sized so that a boid has on average 20 others within
r_v (ball radius r_v * (N / 20)^(1/3)), arena radius = ball radius / f_b so
that confinement does not squeeze the start. Each size times the same
``--steps`` steps from the same seeded start, several times, and reports the
median. Every size runs in a fresh process, so that its peak memory is its own
and its start-up (numba loading its compile cache) can be timed.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time

import numba
import numpy as np

from flock3d.core import kernel
from flock3d.core.neighbors import axis_span

NEIGHBOURS = 20
VIEW_DISTANCE = 5.0


def bench_params(n: int):
    """The fixed-density scene for ``n`` boids (see the module docstring)."""
    from flock3d.core.params import Params

    ball = VIEW_DISTANCE * (max(n, 1) / NEIGHBOURS) ** (1.0 / 3.0)
    defaults = Params()
    return Params(
        count=n,
        view_distance=VIEW_DISTANCE,
        init_radius=ball,
        arena_radius=ball / defaults.confinement_start,
    )


def neighbours_within_view(positions: np.ndarray) -> float:
    """Mean number of other boids within view distance."""
    from flock3d.core.neighbors import count_within

    return float(count_within(positions, VIEW_DISTANCE).mean())


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(n: int, steps: int, min_seconds: float, engine: str = "fast") -> dict:
    """Time ``steps`` steps at size ``n`` in this process; returns the figures as a dict."""
    from flock3d.core import kernel
    from flock3d.flock import Flock

    params = bench_params(n)
    flock = Flock(params, seed=0, engine=engine)
    start = flock.state.copy()
    flock.step(1)  # loads the compiled kernel (from numba's cache after the first launch)
    first_step_done = time.time()
    per_step, runs = _time_steps(flock, start, steps, min_seconds, min_runs=3 if min_seconds else 1)
    per_call, _ = _time_steps(flock, start, 1, min_seconds / 4, min_runs=5 if min_seconds else 1)
    return {
        "n": n,
        "engine": engine,
        "steps": steps,
        "runs": runs,
        "ms_per_step": per_step * 1e3,
        "steps_per_s": 1.0 / per_step,
        "ms_per_call": per_call * 1e3,
        "neighbours_start": neighbours_within_view(start.positions),
        "neighbours_end": neighbours_within_view(flock.positions),
        "threads": kernel.threads(),
        "peak_rss_mb": _peak_rss_mb(),
        "first_step_done": first_step_done,
    }


def _time_steps(flock, start, steps: int, min_seconds: float, min_runs: int = 3) -> tuple[float, int]:
    """Median seconds per step over runs of ``steps`` steps, each from the state ``start``.

    Runs until at least ``min_seconds`` have been timed and ``min_runs`` runs made.
    Returns ``(seconds per step, runs)``.
    """
    times: list[float] = []
    while sum(times) < min_seconds or len(times) < min_runs:
        flock.state.assign(start)
        t = time.perf_counter()
        flock.step(steps)
        times.append(time.perf_counter() - t)
    return float(np.median(times)) / steps, len(times)


def _child_env(**extra: str) -> dict[str, str]:
    """The environment of a process the bench starts: this one's, and as many numba threads as
    this process runs (``flock3d bench --threads``)."""
    return {**os.environ, "NUMBA_NUM_THREADS": str(numba.get_num_threads()), **extra}


def _measure_in_subprocess(n: int, steps: int, min_seconds: float, engine: str = "fast") -> dict:
    cmd = [sys.executable, "-m", "flock3d.bench", str(n), str(steps), str(min_seconds), engine]
    launched = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(), check=False)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark of N={n} failed:\n{out.stderr.strip()}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["start_to_first_step_s"] = row.pop("first_step_done") - launched
    return row


def cold_start_seconds(n: int, variant: str | None = None) -> float:
    """Seconds from a fresh process to the end of its first step with empty compile caches.

    The scene is :func:`bench_params` (``n`` boids), or the row ``variant`` of
    :func:`variant_params`. The process gets new, empty ``FLOCK3D_CACHE_DIR`` and
    ``NUMBA_CACHE_DIR``: everything it steps with is compiled, as on a new machine.
    """
    import tempfile

    code = (
        "import time, sys\n"
        "from flock3d.bench import bench_params, variant_flock, variant_params\n"
        f"p = variant_params({n})[{variant!r}] if {variant!r} else bench_params({n})\n"
        "variant_flock(p).step(1)\n"
        "print(time.time())\n"
    )
    with tempfile.TemporaryDirectory(prefix="flock3d-cold-") as folder:
        env = _child_env(FLOCK3D_CACHE_DIR=folder, NUMBA_CACHE_DIR=os.path.join(folder, "numba"))
        launched = time.time()
        cmd = [sys.executable, "-c", code]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"cold start of N={n} {variant or ''} failed:\n{out.stderr.strip()}")
    return float(out.stdout.strip().splitlines()[-1]) - launched


def run(
    large: bool = False, steps: int = 20, min_seconds: float = 2.0, out=sys.stdout, engine: str = "fast"
) -> list[dict]:
    """Run the benchmark table of ``engine`` ("fast" or "gpu") and print it; returns the rows."""
    import numba

    sizes = [1_000, 10_000, 100_000] + ([1_000_000] if large else [])
    if engine == "gpu":
        from flock3d.core.gpu.device import cuda

        name = cuda.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else name
        print(f"flock3d bench: the GPU engine on {name}, float64", file=out)
    else:
        layer_env = os.environ.get("NUMBA_THREADING_LAYER", "default")
        print(
            f"flock3d bench: numba {numba.__version__}, float64, threads {numba.get_num_threads()} "
            f"(layer {layer_env}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'PASSIVE')})",
            file=out,
        )
    print(
        f"density: ~{NEIGHBOURS} boids within view distance {VIEW_DISTANCE:g} (uniform ball, default rules); "
        f"the same {steps} steps from the same start, median of repeated runs; each size in a fresh process",
        file=out,
    )
    columns = ("N", "steps/s", "ms/step", "step() ms", "neighbours start->end", "peak RSS", "start", "cold")
    print("{:>10} {:>10} {:>10} {:>10} {:>22} {:>10} {:>8} {:>8}".format(*columns), file=out)
    rows = []
    for n in sizes:
        row = _measure_in_subprocess(n, steps, min_seconds, engine)
        # a cold start is the CPU step's compile from empty caches; the GPU's kernel compiles every run
        row["cold_start_s"] = cold_start_seconds(n) if engine == "fast" else row["start_to_first_step_s"]
        rows.append(row)
        print(
            f"{n:>10,} {row['steps_per_s']:>10,.1f} {row['ms_per_step']:>10.3f} {row['ms_per_call']:>10.3f} "
            f"{row['neighbours_start']:>10.1f} -> {row['neighbours_end']:<9.1f} "
            f"{row['peak_rss_mb']:>7.0f} MB {row['start_to_first_step_s']:>7.2f}s "
            f"{row['cold_start_s']:>7.2f}s",
            file=out,
            flush=True,
        )
    ref = _measure_in_subprocess(1_000, 2, 0.0, engine="reference")
    speedup = rows[0]["steps_per_s"] / ref["steps_per_s"]
    print(
        f"reference (readable per-boid Python) at N=1,000: {ref['steps_per_s']:.2f} steps/s "
        f"({ref['ms_per_step']:.0f} ms/step); the {'GPU engine' if engine == 'gpu' else 'fast kernel'} "
        f"is {speedup:,.0f}x faster",
        file=out,
    )
    print(
        "step() ms: one call of Flock.step() for one step, as a viewer frame or a Python loop makes it; "
        "start: seconds from a fresh process to the end of its first step (numba loads its cached compile); "
        "cold: the same with empty compile caches (a first run on a new machine)",
        file=out,
    )
    return rows


def variant_params(n: int) -> dict:
    """The fixed-density scene of :func:`bench_params` with each option of the model turned on."""
    from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
    from flock3d.core.params import TERMS, Params, Species

    base = bench_params(n)
    ball = base.initial_radius
    disc = VIEW_DISTANCE * (n / NEIGHBOURS) ** 0.5  # a planar flock at the same neighbour count
    return {
        "spec (all options off)": base,
        "arena.shape = box": base.replace(arena_shape="box"),
        "arena.shape = periodic": base.replace(arena_shape="periodic", arena_radius=ball),
        "arena.shape = none": base.replace(arena_shape="none"),
        "sim.dimensions = 2": base.replace(dimensions=2, init_radius=disc, arena_radius=disc / 0.8),
        "separation_falloff = linear": base.replace(separation_falloff="linear", separation=1.0),
        "per-rule radii and cones": base.replace(
            alignment_distance=3.5, cohesion_distance=5.0, separation_fov=300.0, alignment_fov=180.0
        ),
        # each term of the world: its module says how it is measured (Term.example)
        **{term.label: term.example(base) for term in TERMS if term.label and term.example(base) is not None},
        "sim.update = sequential": base.replace(update="sequential"),
        "rules.combine = chain": base.replace(combine="chain"),
        "flock.turn_limit = mesh": base.replace(turn_limit="mesh"),
        "perception.neighbours = 7": base.replace(neighbours=7),
        "two species (own alignment)": base.replace(
            species=[
                Species("a", n // 2, aligns=("a",)),
                Species("b", n - n // 2, aligns=("b",), max_speed=7.0),
            ]
        ),
        "model = vicsek (2D, density 4)": Params(
            **{**VICSEK_DEFAULTS, "count": n, "arena_radius": 0.5 * (n / 4.0) ** 0.5}
        ),
        **mesh_objects(base),
    }


def mesh_objects(base) -> dict:
    """The row of 5 mesh objects (issue 26: at least 0.7x the speed of the same scene without
    them, the first row): the shipped rock (scenes/worlds/assets/rock.obj, 1,280 triangles, its
    grid 128 nodes a side) scaled to a radius of about 5, five times around the ring of the other
    features' rows; none without the world extra, which reads and samples meshes."""
    from importlib import resources

    from flock3d.core.params import Object
    from flock3d.core.terms.attractors import ring
    from flock3d.io.meshes import world_extra_installed

    if not world_extra_installed():
        return {}
    rock = str(resources.files("flock3d.scenes") / "worlds" / "assets" / "rock.obj")
    turns = [(0.0, 0.0, 0.0), (40.0, 10.0, 0.0), (80.0, 0.0, 20.0), (120.0, 30.0, 0.0), (160.0, 0.0, 45.0)]
    places = zip(ring(base)[:5], turns, strict=True)
    objects = [Object("mesh", file=rock, scale=5.0, position=p, rotation=r) for p, r in places]
    return {"5 mesh objects": base.replace(objects=objects)}


def variant_flock(params, engine: str = "fast"):
    """A Flock of a :func:`variant_params` row, with its objects' grids where it has meshes."""
    from flock3d.core.objects import needs_field
    from flock3d.flock import Flock

    fields = None
    if any(needs_field(o) for o in params.objects):
        from flock3d.io.meshes import object_fields

        fields = object_fields(params)
    return Flock(params, seed=0, fields=fields, engine=engine)


def run_variants(
    n: int = 10_000, steps: int = 20, min_seconds: float = 1.5, out=sys.stdout, cold_starts: bool = True
) -> list[dict]:
    """steps/s with each option of the model on, relative to the spec's configuration."""
    print(
        f"flock3d bench --variants: N = {n:,} at ~{NEIGHBOURS} boids within view distance, "
        f"the same {steps} steps from the same start, median of repeated runs",
        file=out,
    )
    columns = ("option", "steps/s", "ms/step", "vs spec", "cold")
    print("{:<32} {:>10} {:>10} {:>12} {:>8}".format(*columns), file=out)
    rows, baseline = [], None
    for name, params in variant_params(n).items():
        flock = variant_flock(params)
        start = flock.state.copy()
        flock.step(1)  # compile or load the kernel
        per_step, _ = _time_steps(flock, start, steps, min_seconds)
        baseline = baseline or per_step
        cold = cold_start_seconds(n, name) if cold_starts else math.nan
        speed, ratio = 1.0 / per_step, baseline / per_step
        rows.append({"option": name, "steps_per_s": speed, "ms_per_step": per_step * 1e3, "cold_s": cold})
        line = f"{name:<32} {speed:>10,.1f} {per_step * 1e3:>10.3f} {ratio:>11.2f}x {cold:>7.2f}s"
        print(line, file=out, flush=True)
    print("cold: seconds from a fresh process to its first step, with empty compile caches", file=out)
    return rows


def run_viewer(large: bool = False, seconds: float = 8.0, out=sys.stdout, engine: str = "fast") -> list[dict]:
    """Frames/s of the viewer in a real window at several sizes (needs a display), then in each
    shipped world (scenes/worlds/, as shipped: objects, ground and shadows drawn) when the world
    extra is installed; the window's flock stepped by ``engine`` (``gpu``: with ``large``, 1,000,000
    boids too).

    The simulation runs on its worker thread in real time meanwhile; "real time" is
    simulated seconds per wall-clock second (1.00x: the flock keeps real time). Each row also
    splits a frame's time into its phases (:mod:`flock3d.viewer.phases`), as ms a frame.
    """
    from flock3d.io.meshes import world_extra_installed
    from flock3d.scene import shipped_scenes

    sizes = (
        [1_000, 10_000, 50_000]
        + ([100_000] if large else [])
        + ([1_000_000] if large and engine == "gpu" else [])
    )
    cases = [("default", n, mesh) for n in sizes for mesh in ("bird", "dart")]
    if world_extra_installed():
        cases += [(name, 0, "bird") for name in shipped_scenes() if name.startswith("worlds/")]
    else:
        print(
            "(the worlds are not measured: they need the world extra, pip install 'flock3d[world]')", file=out
        )
    print(
        f"flock3d bench --viewer: the viewer in its default window, default scene at its density, then "
        f"each world as shipped, stepped by the {engine} engine; {seconds:g} s per row after warm-up, "
        "each in a fresh process",
        file=out,
    )
    columns = ("scene", "N", "mesh", "frames/s", "steps/s", "real time", "first frame")
    rows = []
    for scene, n, mesh in cases:
        cmd = [sys.executable, "-m", "flock3d.viewer.measure", str(n), str(seconds), mesh, scene, engine]
        result = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(), check=False)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["failed"])[-1]
            raise RuntimeError(f"viewer measurement of {scene} at N={n} failed: {last}")
        row = json.loads(result.stdout.strip().splitlines()[-1])
        split = row["frame_ms"]  # the window's phases, in their order (flock3d.viewer.phases)
        if not rows:
            print("{:<16} {:>8} {:>6} {:>10} {:>10} {:>10} {:>12}".format(*columns),
                  *(f"{phase + ' ms':>16}" for phase in split), file=out)  # fmt: skip
        rows.append(row)
        print(
            f"{scene:<16} {row['n']:>8,} {mesh:>6} {row['fps']:>10.1f} {row['steps_per_s']:>10.0f} "
            f"{row['real_time_factor']:>9.2f}x {row['first_frame_s']:>11.2f}s",
            *(f"{ms:>16.2f}" for ms in split.values()),
            file=out,
            flush=True,
        )
    last = rows[-1]
    print(
        f"window {last['window'][0]}x{last['window'][1]} (canvas {last['canvas'][0]}x{last['canvas'][1]}), "
        f"OpenGL: {last['renderer'] or 'unknown'}, multisampling {last['samples'] or 'off'}",
        file=out,
    )
    print("first frame: seconds from the process start to the window's first drawn frame", file=out)
    print(
        "ms a frame: the simulation and the copy of the state drawn on the simulation's thread, beside "
        "the frames; the instance data (the boids' buffers the GPU draws from) and the draw on the window's",
        file=out,
    )
    return rows


# -- the profile of one step ------------------------------------------------------------------


def profile(n: int = 100_000, after: float = 60.0, repeats: int = 7, out=sys.stdout) -> list[dict]:
    """Where the time of one step of the bench scene goes, at the start and after ``after``
    seconds of simulated time; prints it and returns one dict per moment.

    The whole step is timed through ``Flock.step(5)`` (a fifth of it); each phase is then
    re-run alone on the same state, stored in cell order as the step keeps it: the cell grid,
    and the driver's own phases run by its own loop over chunks
    (:func:`flock3d.core.kernel.phase_runner`): gathering the state in cell order, and the
    walk of the step's template over its row segments with each cell's candidates filled as
    the step fills them and nothing done per boid (:mod:`flock3d.core.step.walk`), which also
    counts what it walks. The turn and move of every boid are timed by the runtime functions
    the step calls (``turn_rows``, ``move_rows``). The pair loop is the step's time less those
    phases. Medians of ``repeats`` runs.
    """
    from flock3d.flock import Flock

    params = bench_params(n)
    flock = Flock(params, seed=0)
    flock.step(1)  # compile or load
    rows = []
    print(
        f"flock3d bench --profile: one step of N = {n:,} (the bench scene), threads {kernel.threads()}, "
        f"median of {repeats} runs",
        file=out,
    )
    for moment in ("start", f"after {after:g} s"):
        if moment != "start":
            flock.step(round(after / params.dt) - 1)
        row = _profile_state(flock, repeats)
        row["moment"] = moment
        rows.append(row)
        _print_profile(row, out)
    return rows


class _Phases:
    """One step's phases, run alone as the synchronous driver runs them, on a flock's state."""

    def __init__(self, flock) -> None:
        from flock3d.core import assemble
        from flock3d.core.step.cache import load_module
        from flock3d.core.step.values import offsets
        from flock3d.core.step.walk import walk

        params, n = flock.params, len(flock.state)
        self.layout = layout = assemble.layout_of(params)
        self.walks = {}  # count -> the walk's chunk, as the driver takes it
        for count in (False, True):
            source, names = walk(layout, count)
            module = load_module(source, {})
            self.walks[count] = kernel.chunk_pointer(module.chunk)
        stepper = assemble.Stepper(layout, source, names, module)
        pv = stepper.values(params)
        self.reach = float(pv[offsets(layout, names)["reach"]])
        self.n, self.n_chunks = n, max(1, (n + kernel.BOIDS_PER_CHUNK - 1) // kernel.BOIDS_PER_CHUNK)
        self.box = np.array([*params.arena_center, *params.half_extents])
        world, world_at = stepper.world(params, flock.fields)
        self.status = np.zeros((self.n_chunks, 3), dtype=np.int64)
        hunters = np.empty((0, 3))
        self.inputs = (
            pv,
            layout.flags(),
            self.box,
            2.0 * self.box[3:],
            world,
            world_at,
            hunters,
            self.status,
        )
        self.gathered = (np.empty((n, kernel.COLUMNS)), np.empty((3, n)))
        self.run = kernel.phase_runner()

    def rows(self) -> tuple[np.ndarray, ...]:
        """A set of state arrays for the flock: ids, positions, velocities, orientations, waypoints."""
        n = self.n
        return (np.empty(n, dtype=np.int64), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 4)),
                np.empty(n, dtype=np.int64))  # fmt: skip

    def grid(self, pos: np.ndarray):
        """The cell grid of positions ``pos`` (N, 3), and the driver's (bounds, grid floats, grid
        ints, order, cell_start) of it, as a step builds them."""
        from flock3d.core.neighbors import build_grid, build_periodic_grid

        if self.layout.periodic:
            cells = build_periodic_grid(pos, self.box[:3], self.box[3:], self.reach, self.layout.planar)
        else:
            cells = build_grid(pos, self.reach)
        gf = np.array([cells.origin_x, cells.origin_y, cells.origin_z, cells.cell_size, cells.cell_size_y,
                       cells.cell_size_z])  # fmt: skip
        crowded = kernel.crowded(cells.cell_start)
        gi = np.array([cells.nx, cells.ny, cells.nz, 1 if crowded else 0], dtype=np.int64)
        bounds = kernel.chunk_cells(cells.cell_start, self.n, self.n_chunks)
        return cells, (bounds, gf, gi, cells.order, cells.cell_start)

    def gather(self, grid, rows, rows_to) -> None:
        """The step's gather: ``rows`` into cell order in ``rows_to`` and the gathered columns
        (the phase calls no chunk: the walk's stands for the step's)."""
        self.run(kernel.GATHER, self.n_chunks, self.walks[False], grid, self.gathered, rows, rows_to,
                 self.inputs, 0.0, 0, 0)  # fmt: skip

    def walk(self, grid, rows, rows_to, count: bool) -> np.ndarray:
        """The step's walk over the cells of ``grid``; returns the counts of :mod:`flock3d.core.step.walk`
        summed over the chunks (with ``count``; zeros otherwise)."""
        self.status[:] = 0
        self.run(kernel.ADVANCE, self.n_chunks, self.walks[count], grid, self.gathered, rows, rows_to,
                 self.inputs, 0.0, 0, 0)  # fmt: skip
        return self.status.sum(axis=0)


def _profile_state(flock, repeats: int) -> dict:
    """Phase times (ms) and candidate counts of one step from ``flock``'s current state."""
    state, params = flock.state, flock.params
    start = state.copy()
    n = len(state)

    def timed(fn, *args) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
        return float(np.median(times)) * 1e3

    steps = 5

    def some_steps():
        flock.state.assign(start)
        flock.step(steps)

    step_ms = timed(some_steps) / steps
    flock.state.assign(start)
    phases = _Phases(flock)
    # Between steps the step keeps the boids stored in cell order: put them so once, then
    # time each phase on rows stored as they are in the middle of a run.
    public = (np.arange(n), state.positions, state.velocities, state.orientations, state.waypoints)
    stored = phases.rows()
    phases.gather(phases.grid(state.positions)[1], public, stored)
    grid_ms = timed(phases.grid, stored[1])
    cells, grid = phases.grid(stored[1])
    gathered = phases.rows()
    gather_ms = timed(phases.gather, grid, stored, gathered)
    candidates_ms = timed(phases.walk, grid, stored, gathered, False)
    counts = phases.walk(grid, stored, gathered, True)
    cols, heads = phases.gathered
    turn = np.array([params.dt, params.min_speed, params.max_speed,
                     *kernel_turn_limit(params)])  # fmt: skip
    _, pos, vel, quat, _ = gathered
    moved = (pos.copy(), vel.copy(), quat.copy())
    turn_ms = timed(_turn_pass, pos, vel, quat, heads, turn, phases.box, moved, phases.n_chunks)
    seen = _seen_pairs(pos, heads, cells, cols, phases.reach, kernel.cone_threshold(params.fov))
    within = neighbours_within_view(pos) * n
    pair_ms = max(step_ms - grid_ms - gather_ms - candidates_ms - turn_ms, 0.0)
    threads = kernel.threads()
    return {
        "n": n,
        "threads": threads,
        "step_ms": step_ms,
        "steps_per_s": 1e3 / step_ms,
        "grid_ms": grid_ms,
        "gather_ms": gather_ms,
        "candidates_ms": candidates_ms,
        "pair_ms": pair_ms,
        "turn_ms": turn_ms,
        "scanned_per_boid": counts[0] / n,
        "candidates_per_boid": counts[1] / n,
        "copied_per_boid": counts[2] / n,
        "within_per_boid": within / n,
        "seen_per_boid": seen / n,
        "pairs_per_ns_core": within / (step_ms * 1e6 * threads),
        "pair_loop_pairs_per_ns_core": within / (pair_ms * 1e6 * threads) if pair_ms > 0 else math.nan,
    }


def kernel_turn_limit(params) -> tuple[float, float, float]:
    """The cosines and sine of a boid's turn limit in one step (as the assembled step gets them)."""
    from flock3d.core.quaternion import turn_limit

    return tuple(turn_limit(math.radians(params.max_turn_rate) * params.dt))


def _print_profile(row: dict, out) -> None:
    step = row["step_ms"]
    print(f"  {row['moment']}: {row['steps_per_s']:,.1f} steps/s ({step:.2f} ms/step)", file=out)
    for name, key in (("cell grid", "grid_ms"), ("gather in cell order", "gather_ms"),
                      ("candidates", "candidates_ms"), ("pair loop (the rest)", "pair_ms"),
                      ("turn and move", "turn_ms")):  # fmt: skip
        print(f"    {name:<22} {row[key]:>8.2f} ms {100 * row[key] / step:>5.0f}%", file=out)
    print(
        f"    per boid: {row['scanned_per_boid']:.1f} boids in the 27 cells around, "
        f"{row['copied_per_boid']:.1f} copied to candidate buffers, "
        f"{row['candidates_per_boid']:.1f} candidates in the pair loop, "
        f"{row['within_per_boid']:.1f} within view distance, {row['seen_per_boid']:.1f} seen",
        file=out,
    )
    print(
        f"    pairs within view distance per ns per core: {row['pairs_per_ns_core']:.3f} over the step, "
        f"{row['pair_loop_pairs_per_ns_core']:.3f} in the pair loop",
        file=out,
        flush=True,
    )


# Not cached: they compile in the kernel's functions, and numba would not see those change.
@numba.njit(parallel=True, fastmath=kernel.FAST)
def _turn_pass(pos, vel, quat, heads, turn, box, moved, n_chunks):
    """Every boid's turn towards a desired velocity, move and settle, as a step's chunks do
    them (a batch a chunk): the boids of rows ``pos``.. written to ``moved`` (pos, vel, quat)."""
    n = pos.shape[0]
    dt = turn[0]
    to_pos, to_vel, to_quat = moved
    ids = np.arange(n)
    status = np.zeros((n_chunks, 3), dtype=np.int64)
    for t in numba.prange(n_chunks):
        k0, k1 = n * t // n_chunks, n * (t + 1) // n_chunks
        staged, turned = np.empty((kernel.STAGED, k1 - k0)), np.empty((7, k1 - k0))
        failed = np.zeros(k1 - k0, dtype=np.bool_)
        for k in range(k0, k1):  # rows in cell order, as the step stores them
            r = k - k0
            for a in range(4):
                staged[kernel.Q_W + a, r] = quat[k, a]
            for a in range(3):
                # A desired velocity off the current one, so that the turn does its full work.
                staged[kernel.U_X + a, r] = vel[k, a] + (0.3, -0.2, 0.1)[a]
                staged[kernel.F_X + a, r] = heads[a, k]
                staged[kernel.P_X + a, r] = pos[k, a]
                staged[kernel.LIMIT + a, r] = turn[3 + a]
            staged[kernel.S_MIN, r], staged[kernel.S_MAX, r] = turn[1], turn[2]
        kernel.turn_rows(k1 - k0, staged, turned)
        kernel.move_rows(k0, k1 - k0, staged, turned, failed, dt, box, False, False, to_quat, to_vel, to_pos,
                         ids, status, t)  # fmt: skip


@numba.njit(parallel=True)
def _seen_pairs(pos, heads, grid, cols, reach, cone):
    """Pairs (i, j) with j within ``reach`` of i and inside i's cone (``cone``: the cone test's threshold)."""
    n = pos.shape[0]
    seen = np.zeros(n, dtype=np.int64)
    start, nx, ny, nz = grid.cell_start, grid.nx, grid.ny, grid.nz
    inv = 1.0 / grid.cell_size
    r2 = reach * reach
    for k in numba.prange(n):
        px, py, pz = cols[k, 0], cols[k, 1], cols[k, 2]
        fx, fy, fz = heads[0, k], heads[1, k], heads[2, k]
        x0, x1 = axis_span(px, reach, grid.origin_x, inv, nx)
        y0, y1 = axis_span(py, reach, grid.origin_y, inv, ny)
        z0, z1 = axis_span(pz, reach, grid.origin_z, inv, nz)
        s = 0
        for z in range(z0, z1 + 1):
            for y in range(y0, y1 + 1):
                row = (z * ny + y) * nx
                for q in range(start[row + x0], start[row + x1 + 1]):
                    dx, dy, dz = cols[q, 0] - px, cols[q, 1] - py, cols[q, 2] - pz
                    d2 = dx * dx + dy * dy + dz * dz
                    dot = fx * dx + fy * dy + fz * dz
                    if 0.0 < d2 < r2 and dot * abs(dot) >= cone * d2:
                        s += 1
        seen[k] = s
    return seen.sum()


if __name__ == "__main__":
    size, n_steps, seconds, eng = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    print(json.dumps(measure(size, n_steps, seconds, eng)))
