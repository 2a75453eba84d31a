"""The GPU engine against the CPU engine and a naive CUDA kernel, side by side on one machine.

    python benchmarks/gpu.py                         # flock3d bench's scene at 1M, 4M, 16M; circles at 1M
    python benchmarks/gpu.py --anchor PATH/gpu_anchor.py   # and the naive kernel's figures beside them
    python benchmarks/gpu.py --meshes 1000000        # and the bench scene with 5 mesh objects at 1M
    NUMBA_ENABLE_CUDASIM=1 NUMBA_DISABLE_JIT=1 python benchmarks/gpu.py --tiny 300   # a dry run, no GPU

Scenes: ``flock3d bench``'s (:func:`flock3d.bench.bench_params`: 20 others within r_v = 5 on
average, fov 270, the default rules) and a circles-like one (FLAME GPU 2's "circles": density
1, view distance 2, fov 360). With ``--meshes``, the bench scene with ``flock3d bench``'s 5 mesh
objects too (:func:`flock3d.bench.mesh_objects`: the shipped rock around the ring the other
variant rows' features lie on), each size's GPU time set against the bench row's of the same size
(the issue's target: at least 0.7x the scene without them); the naive kernel has no objects.
Each starts from the same seeded state for every engine.

First a check at small N: the GPU engine against the fast engine after a few steps (they
agree to 1e-9 or the table is not worth printing). Then for each size: ms a step and steps a
second of the CPU engine (``engine="fast"``, all cores), of the GPU engine (``engine="gpu"``:
one ``step(n)`` call, which reads back one flag, so the time includes finishing the steps on
the device) and, with ``--anchor``, of the naive kernel that file holds (its ``GpuFlock``:
one thread a boid, CuPy's sort every step, given the same parameters and start), each the
median of ``--runs`` runs after a warm-up that compiles. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import math
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's flock3d

from flock3d import Flock, Params  # noqa: E402
from flock3d.bench import bench_params, mesh_objects  # noqa: E402


def circles_params(n: int) -> Params:
    """FLAME GPU 2's circles, as near as the model goes: density 1 (a ball of volume n), view
    distance 2, fov 360, the arena's soft wall beyond the ball."""
    ball = (3.0 * n / (4.0 * math.pi)) ** (1.0 / 3.0)
    return Params(count=n, view_distance=2.0, separation_distance=1.0, fov=360.0, init_radius=ball,
                  arena_radius=ball / Params().confinement_start)  # fmt: skip


def meshes_params(n: int) -> Params:
    """The bench scene with ``flock3d bench``'s 5 mesh objects (needs the world extra)."""
    return mesh_objects(bench_params(n))["5 mesh objects"]


SCENES = {"bench": bench_params, "circles": circles_params, "5 mesh objects": meshes_params}


def synchronize() -> None:
    from numba import cuda

    cuda.synchronize()


def timed(step, steps: int, runs: int) -> float:
    """Median seconds a step over ``runs`` runs of ``steps`` steps (``step(k)`` runs k of them)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        step(steps)
        times.append((time.perf_counter() - t) / steps)
    return statistics.median(times)


_starts: dict[Params, dict[str, np.ndarray]] = {}


@functools.cache
def fields_of(params: Params):
    """The grids a scene's mesh objects read, sampled once (None without objects)."""
    if not params.objects:
        return None
    from flock3d.io.meshes import object_fields

    return object_fields(params)


def start_of(params: Params) -> dict[str, np.ndarray]:
    """Copies of the seeded start of a flock of ``params``, drawn once (16M boids take seconds):
    every engine starts from it."""
    if params not in _starts:
        _starts.clear()  # one size at a time: 16M boids' arrays are 1.2 GB
        state = Flock(params, seed=0, engine="reference", fields=fields_of(params)).state
        names = ("positions", "velocities", "orientations")
        _starts[params] = {name: getattr(state, name).copy() for name in names}
    return {name: array.copy() for name, array in _starts[params].items()}


class Column(NamedTuple):
    """A GPU engine's column: the shape of its step, and the state's precision."""

    shape: Any
    precision: str = "float64"

    def __str__(self) -> str:
        return f"{self.shape}" + ("" if self.precision == "float64" else f" {self.precision}")


def shape_of(text: str):
    """A GPU step's shape from its name: ``fused`` or ``split``, ``+guard`` for the reach guard,
    ``+xK`` for cells cut in K along x, ``/R`` for a cap of R registers a thread
    (``split+guard+x2/72``)."""
    from flock3d.core.step.cuda_generate import Shape

    kind, _, cap = text.partition("/")
    parts = kind.split("+")
    cuts = [p for p in parts[1:] if p[:1] == "x" and p[1:].isdigit() and int(p[1:]) >= 1]
    if parts[0] not in ("fused", "split") or set(parts[1:]) - {"guard", *cuts} or len(cuts) > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a shape is fused or split, then +guard, +xK, then /R")
    return Shape(max_registers=int(cap) if cap else None, split=parts[0] == "split", guard="guard" in parts,
                 x_cells=int(cuts[0][1:]) if cuts else 1)  # fmt: skip


def column_of(text: str) -> Column:
    """A column from its name: a shape (:func:`shape_of`), then ``@float32`` for that precision."""
    shape, _, precision = text.partition("@")
    if precision not in ("", "float64", "float32"):
        raise argparse.ArgumentTypeError(f"{text!r}: the precision is float64 or float32")
    return Column(shape_of(shape), precision or "float64")


def engine_row(params: Params, engine: str, steps: int, runs: int, column: Column | None = None) -> float:
    start = start_of(params)
    if column is not None:
        from flock3d.core.gpu import engine as gpu_engine

        gpu_engine.SHAPE = column.shape  # read when the step's kernel is made
        params = params.replace(precision=column.precision)
    flock = Flock(params, seed=0, engine=engine, fields=fields_of(params), **start)
    flock.step(10)  # compiles (or loads) the step, and every kernel a call launches (a grid sized again)
    return timed(flock.step, steps, runs)


def anchor_row(anchor, params: Params, steps: int, runs: int) -> float:
    start = start_of(params)
    arrays = (start["positions"], start["velocities"], start["orientations"])
    flock = anchor.GpuFlock(params, *arrays, np.float64)

    def step(k: int) -> None:
        flock.step(k)
        synchronize()

    step(2)
    return timed(step, steps, runs)


def check(n: int, cpu: str, columns: list[Column], steps: int = 3) -> dict[str, float]:
    """The largest difference between the GPU engine and the ``cpu`` engine after ``steps`` steps
    of the bench scene at ``n`` boids, by precision, over ``columns``."""
    from flock3d.core.gpu import engine as gpu_engine

    params = bench_params(n)
    fast = Flock(params, seed=1, engine=cpu)
    fast.step(steps)
    worst = dict.fromkeys((column.precision for column in columns), 0.0)
    for column in columns:
        gpu_engine.SHAPE = column.shape
        gpu = Flock(params.replace(precision=column.precision), seed=1, engine="gpu")
        gpu.step(steps)
        worst[column.precision] = max(worst[column.precision], np.abs(gpu.positions - fast.positions).max(),
                                      np.abs(gpu.velocities - fast.velocities).max())  # fmt: skip
    return worst


def cell(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms ({1.0 / seconds:,.1f}/s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000, 16_000_000],
                        help="boids of the bench scene (default 1M 4M 16M)")  # fmt: skip
    parser.add_argument(
        "--circles", type=int, nargs="*", default=[1_000_000], help="boids of circles (default 1M)"
    )
    parser.add_argument("--steps", type=int, default=50, help="steps a timed run (default 50; CPU: a fifth)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs, median reported (default 3)")
    parser.add_argument("--anchor", type=Path, help="a naive kernel's file (gpu_anchor.py) to time beside")
    parser.add_argument("--no-cpu", action="store_true", help="leave out the CPU engine")
    parser.add_argument("--check", type=int, default=2_000, help="boids of the agreement check (0: none)")
    parser.add_argument("--shapes", type=column_of, nargs="+", default=None, metavar="SHAPE",
                        help="GPU steps cut and compiled so, a column each: fused or split, +guard, "
                        "+xK for cells cut in K along x, /R for a cap of R registers, @float32 for that "
                        "precision (default: fused, uncapped, and the engine's own)")  # fmt: skip
    parser.add_argument("--meshes", type=int, nargs="*", default=[],
                        help="boids of the bench scene with 5 mesh objects (default none)")  # fmt: skip
    parser.add_argument("--tiny", type=int, help="a dry run: every scene at this N, 2 steps, 1 run")
    args = parser.parse_args(argv)
    if args.tiny:
        args.sizes, args.circles, args.steps, args.runs = [args.tiny], [args.tiny], 2, 1
        args.meshes = [args.tiny] if args.meshes else []
        args.check = min(args.check, args.tiny)

    from flock3d.core.gpu.device import cuda, missing, simulated

    # The simulator runs numba's code as Python (NUMBA_DISABLE_JIT): the CPU's is then the reference's.
    cpu_engine = "reference" if simulated() else "fast"
    if simulated():  # Python warns of what compiled code computes and drops (a boid's 1 / 0 to itself)
        warnings.simplefilter("ignore", RuntimeWarning)
    why = missing()
    if why:
        print(f"benchmarks/gpu.py: {why}", file=sys.stderr)
        return 2
    device = "numba's CUDA simulator (times mean nothing)" if simulated() else cuda.get_current_device().name
    print(f"device: {device if isinstance(device, str) else device.decode()}")
    anchor = None
    if args.anchor:
        spec = importlib.util.spec_from_file_location("gpu_anchor", args.anchor)
        anchor = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(anchor)
    from flock3d.core.step.cuda_generate import DEFAULT_SHAPE

    columns = args.shapes or [column_of("fused"), Column(DEFAULT_SHAPE)]
    if args.check:
        worst = check(args.check, cpu_engine, columns)
        names = ", ".join(map(str, columns))
        print(
            f"check: GPU ({names}) - {cpu_engine} engine, bench scene, {args.check:,} boids, 3 steps: "
            + ", ".join(f"{value:.2e} ({precision})" for precision, value in worst.items())
        )
        # float32 rounds each step's state: 3 steps stay within 1e-4 of float64 where nothing is broken
        if not worst.get("float64", 0.0) < 1e-9 or not worst.get("float32", 0.0) < 1e-4:
            print("benchmarks/gpu.py: the engines disagree; no table", file=sys.stderr)
            return 1
    caps = [f"GPU {column}" for column in columns]
    print(
        f"\n| scene | N | CPU engine ({cpu_engine}) | {' | '.join(caps)} | naive kernel "
        "| naive / best float64 |"
    )
    print("|---|---|---|" + "---|" * len(caps) + "---|---|")
    best = {}  # the bench row's best float64 GPU time, by N: what the mesh row is set against
    for scene, sizes in (("bench", args.sizes), ("circles", args.circles), ("5 mesh objects", args.meshes)):
        for n in sizes:
            params = SCENES[scene](n)
            gpus = [engine_row(params, "gpu", args.steps, args.runs, column) for column in columns]
            meshes = scene == "5 mesh objects"  # the naive kernel has no objects
            naive = None if anchor is None or meshes else anchor_row(anchor, params, args.steps, args.runs)
            cpu = None if args.no_cpu else engine_row(params, cpu_engine, max(1, args.steps // 5), args.runs)
            # the naive kernel runs float64: it is set beside the float64 columns only
            float64 = [t for t, column in zip(gpus, columns, strict=True) if column.precision == "float64"]
            ratio = "-" if naive is None or not float64 else f"{naive / min(float64):.2f}x"
            if scene == "bench" and float64:
                best[n] = min(float64)
            row = [scene, f"{n:,}", cell(cpu), *map(cell, gpus), cell(naive), ratio]
            print(f"| {' | '.join(row)} |", flush=True)
            if meshes and float64 and n in best:
                print(f"(5 mesh objects, {n:,} boids: {best[n] / min(float64):.2f}x the bench scene's "
                      "steps/s without them, best float64 GPU column each; target >= 0.7x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
