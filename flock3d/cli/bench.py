"""``flock3d bench``: the fast kernel's speed and memory, the viewer's frame rate, a step's profile."""

from __future__ import annotations

import argparse

from flock3d.cli.inputs import require
from flock3d.cli.options import check_engine, positive_float, positive_int
from flock3d.errors import Flock3dError


def add_bench(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "bench",
        help="measure the fast kernel's speed and memory at a fixed density",
        description="Print steps/s and ms/step for N = 1,000, 10,000 and 100,000 boids "
        "(1,000,000 with --large) at ~20 boids within view distance, the thread count, "
        "each size's peak memory, and the reference implementation at N = 1,000.",
    )
    p.add_argument("--large", action="store_true", help="also run N = 1,000,000 (with --viewer: 100,000)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--viewer",
        action="store_true",
        help="measure the viewer's frames/s in a real window instead (needs a display)",
    )
    mode.add_argument(
        "--variants",
        action="store_true",
        help="measure each option of the model (arenas, 2D, rules, world features) at N = 10,000",
    )
    mode.add_argument(
        "--profile",
        action="store_true",
        help="where one step's time goes at N = 100,000 (grid, candidates, pair loop, turn and move), "
        "candidates and neighbours per boid, pairs/ns per core; at the start and after --after seconds",
    )
    p.add_argument(
        "--after",
        type=positive_float,
        help="with --profile: simulated seconds before the second profile (default 60)",
    )
    p.add_argument("--steps", type=positive_int, default=20, help="steps per timed run (default 20)")
    p.add_argument(
        "--engine",
        choices=["fast", "gpu"],
        default="fast",
        help="the engine of the steps/s table, and with --viewer of the window's flock: fast (the CPU's "
        'cores, default) or gpu (an NVIDIA GPU: pip install "flock3d[gpu]")',
    )
    p.add_argument("--threads", type=positive_int, help="numba threads (default: all cores)")
    return p


def run_bench(args: argparse.Namespace) -> int:
    import numba

    if args.after is not None and not args.profile:
        raise Flock3dError("--after sets when --profile's second profile is taken; give --profile too")

    if args.threads is not None:
        # numba is loaded (flock3d imports it), so its thread pool is sized: at most its
        # NUMBA_NUM_THREADS threads (one per core unless that variable said more). The bench's
        # own processes start with as many threads as this one runs.
        most = numba.config.NUMBA_NUM_THREADS
        if args.threads > most:
            raise Flock3dError(
                f"--threads {args.threads}: numba runs at most {most} threads here (one per core; "
                "set NUMBA_NUM_THREADS to allow more)"
            )
        numba.set_num_threads(args.threads)
    from flock3d import bench

    if args.engine == "gpu":
        if args.variants or args.profile:
            raise Flock3dError(
                "--engine gpu measures the steps/s table and the viewer; --variants and --profile measure "
                "the fast engine"
            )
        check_engine("gpu", bench.bench_params(1_000))
    if args.viewer:
        require("viewer", option="--viewer")
        from flock3d.viewer.app import check_display

        check_display()
        bench.run_viewer(large=args.large, engine=args.engine)
    elif args.variants:
        bench.run_variants(steps=args.steps)
    elif args.profile:
        bench.profile(after=60.0 if args.after is None else args.after)
    else:
        bench.run(large=args.large, steps=args.steps, engine=args.engine)
    return 0
