"""Where a GPU step's time goes: each kernel launch of the GPU engine's step timed by CUDA events.

    python benchmarks/gpu_profile.py 1000000 [--steps 20] [--shape split+guard/72]

Runs ``flock3d bench``'s scene at N boids with ``engine="gpu"`` and prints, for a call of
``--steps`` steps after a warm-up, the wall time a step and each kernel's ms a step (the grid,
the sort by cell, the gather, the step's own kernels), their sum and the gaps between them
(launches from Python), and the registers a thread of the step's kernels hold. Needs a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's flock3d
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu import shape_of  # noqa: E402

from flock3d import Flock  # noqa: E402
from flock3d.bench import bench_params  # noqa: E402

#: The fixed kernels a step launches (flock3d.core.gpu.kernels).
FIXED = ("bounds_partial", "bounds_grid", "uncount", "count_cells", "scan_blocks", "scan_totals",
         "add_offsets", "scatter", "sort_cells", "gather", "hunting")  # fmt: skip


class Timed:
    """A kernel whose launches are bracketed by CUDA events, kept in ``events``."""

    def __init__(self, name: str, kernel, events: list) -> None:
        self.name, self.kernel, self.events = name, kernel, events

    def __getitem__(self, config):
        from numba import cuda

        launch = self.kernel[config]

        def run(*args):
            start, end = cuda.event(), cuda.event()
            start.record()
            launch(*args)
            end.record()
            self.events.append((self.name, start, end))

        return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="boids of the bench scene")
    parser.add_argument("--steps", type=int, default=20, help="steps of the timed call (default 20)")
    parser.add_argument("--shape", type=shape_of, help="the step's shape (default: the engine's)")
    args = parser.parse_args(argv)
    from flock3d.core.gpu.device import cuda, missing

    if missing():
        print(f"benchmarks/gpu_profile.py: {missing()}", file=sys.stderr)
        return 2
    from flock3d.core.gpu import engine, kernels

    if args.shape is not None:
        engine.SHAPE = args.shape
    flock = Flock(bench_params(args.n), seed=0, engine="gpu")
    flock.step(engine.REGRID_STEPS + 2)  # compiles every kernel a call launches
    events: list = []
    for name in FIXED:
        setattr(kernels, name, Timed(name, getattr(kernels, name), events))
    for stepper in engine._steppers.values():
        module = stepper.module
        for name in ("advance", "settle"):
            if hasattr(module, name):
                kernel = getattr(module, name)
                if hasattr(kernel, "get_regs_per_thread"):  # the simulator's kernels have none
                    print(f"{name}: {kernel.get_regs_per_thread()} registers a thread")
                setattr(module, name, Timed(f"step: {name}", kernel, events))
    flock.step(2)
    cuda.synchronize()
    events.clear()
    start = time.perf_counter()
    flock.step(args.steps)
    cuda.synchronize()
    wall = (time.perf_counter() - start) / args.steps * 1e3
    times, launches = defaultdict(float), defaultdict(int)
    for name, a, b in events:
        times[name] += a.elapsed_time(b) / args.steps
        launches[name] += 1
    print(f"N = {args.n:,}, shape {engine.SHAPE}: {wall:.3f} ms a step (wall, {args.steps} steps)")
    for name, ms in times.items():
        print(f"  {name:16s} {ms:7.3f} ms  ({launches[name] // args.steps} launches a step)")
    total = sum(times.values())
    print(f"  {'kernels':16s} {total:7.3f} ms; between them {wall - total:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
