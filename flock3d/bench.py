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

import numpy as np

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
    return {
        "n": n,
        "engine": engine,
        "steps": steps,
        "runs": runs,
        "ms_per_step": per_step * 1e3,
        "steps_per_s": 1.0 / per_step,
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


def _measure_in_subprocess(n: int, steps: int, min_seconds: float, engine: str = "fast") -> dict:
    cmd = [sys.executable, "-m", "flock3d.bench", str(n), str(steps), str(min_seconds), engine]
    launched = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
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
        "from flock3d.bench import bench_params, variant_params\n"
        "from flock3d.flock import Flock\n"
        f"p = variant_params({n})[{variant!r}] if {variant!r} else bench_params({n})\n"
        "Flock(p, seed=0).step(1)\n"
        "print(time.time())\n"
    )
    with tempfile.TemporaryDirectory(prefix="flock3d-cold-") as folder:
        env = {**os.environ, "FLOCK3D_CACHE_DIR": folder, "NUMBA_CACHE_DIR": os.path.join(folder, "numba")}
        launched = time.time()
        cmd = [sys.executable, "-c", code]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"cold start of N={n} {variant or ''} failed:\n{out.stderr.strip()}")
    return float(out.stdout.strip().splitlines()[-1]) - launched


def run(large: bool = False, steps: int = 20, min_seconds: float = 2.0, out=sys.stdout) -> list[dict]:
    """Run the benchmark table and print it; returns the rows."""
    import numba

    sizes = [1_000, 10_000, 100_000] + ([1_000_000] if large else [])
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
    columns = ("N", "steps/s", "ms/step", "neighbours start->end", "peak RSS", "start", "cold")
    print("{:>10} {:>10} {:>10} {:>22} {:>10} {:>8} {:>8}".format(*columns), file=out)
    rows = []
    for n in sizes:
        row = _measure_in_subprocess(n, steps, min_seconds)
        row["cold_start_s"] = cold_start_seconds(n)
        rows.append(row)
        print(
            f"{n:>10,} {row['steps_per_s']:>10,.1f} {row['ms_per_step']:>10.3f} "
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
        f"({ref['ms_per_step']:.0f} ms/step); the fast kernel is {speedup:,.0f}x faster",
        file=out,
    )
    print(
        "start: seconds from a fresh process to the end of its first step (numba loads its cached compile); "
        "cold: the same with empty compile caches (a first run on a new machine)",
        file=out,
    )
    return rows


def variant_params(n: int) -> dict:
    """The fixed-density scene of :func:`bench_params` with each option of the model turned on."""
    from flock3d.core.params import VICSEK_DEFAULTS, Attractor, Obstacle, Params, Species, WaypointPath

    base = bench_params(n)
    ball = base.initial_radius
    disc = VIEW_DISTANCE * (n / NEIGHBOURS) ** 0.5  # a planar flock at the same neighbour count
    angles = np.linspace(0, 2 * np.pi, 6, endpoint=False)
    ring = [(ball * 0.6 * np.cos(a), ball * 0.6 * np.sin(a), 0.0) for a in angles]
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
        "3 attractors": base.replace(attractors=[Attractor(p, 1.0) for p in ring[:3]]),
        "waypoint path (6 points)": base.replace(path=WaypointPath(tuple(ring), 1.0, 3.0)),
        "5 obstacles": base.replace(obstacles=[Obstacle(p, 3.0) for p in ring[:5]]),
        "3 predators": base.replace(predator_count=3),
        "wind (uniform + gradient)": base.replace(
            wind=(1.0, 0.0, 0.0), wind_gradient=((0, 0, -0.1), (0, 0, 0), (0.1, 0, 0))
        ),
        "sim.update = sequential": base.replace(update="sequential"),
        "rules.combine = chain": base.replace(combine="chain"),
        "flock.turn_limit = mesh": base.replace(turn_limit="mesh"),
        "arena.containment = 40": base.replace(containment=40.0),
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
    }


def run_variants(
    n: int = 10_000, steps: int = 20, min_seconds: float = 1.5, out=sys.stdout, cold_starts: bool = True
) -> list[dict]:
    """steps/s with each option of the model on, relative to the spec's configuration."""
    from flock3d.flock import Flock

    print(
        f"flock3d bench --variants: N = {n:,} at ~{NEIGHBOURS} boids within view distance, "
        f"the same {steps} steps from the same start, median of repeated runs",
        file=out,
    )
    columns = ("option", "steps/s", "ms/step", "vs spec", "cold")
    print("{:<32} {:>10} {:>10} {:>12} {:>8}".format(*columns), file=out)
    rows, baseline = [], None
    for name, params in variant_params(n).items():
        flock = Flock(params, seed=0)
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


def run_viewer(large: bool = False, seconds: float = 8.0, out=sys.stdout) -> list[dict]:
    """Frames/s of the viewer in a real window at several sizes (needs a display).

    The simulation runs on its worker thread in real time meanwhile; "real time" is
    simulated seconds per wall-clock second (1.00x: the flock keeps real time).
    """
    sizes = [1_000, 10_000, 50_000] + ([100_000] if large else [])
    print(
        f"flock3d bench --viewer: the viewer in its default window, default scene at its density, "
        f"{seconds:g} s per size after warm-up; each size in a fresh process",
        file=out,
    )
    columns = ("N", "mesh", "frames/s", "steps/s", "real time", "first frame")
    print("{:>10} {:>6} {:>10} {:>10} {:>10} {:>12}".format(*columns), file=out)
    rows = []
    for n in sizes:
        for mesh in ("bird", "dart"):
            cmd = [sys.executable, "-m", "flock3d.viewer.measure", str(n), str(seconds), mesh]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                last = (result.stderr.strip().splitlines() or ["failed"])[-1]
                raise RuntimeError(f"viewer measurement at N={n} failed: {last}")
            row = json.loads(result.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{n:>10,} {mesh:>6} {row['fps']:>10.1f} {row['steps_per_s']:>10.0f} "
                f"{row['real_time_factor']:>9.2f}x {row['first_frame_s']:>11.2f}s",
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
    return rows


if __name__ == "__main__":
    size, n_steps, seconds, eng = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    print(json.dumps(measure(size, n_steps, seconds, eng)))
