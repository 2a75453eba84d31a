"""The ``flock3d`` command.

Each subcommand is a pair of functions here: one adds its arguments, one runs it.
Expected failures (bad input, missing files) raise :class:`flock3d.errors.Flock3dError`
and end as one line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from flock3d import __version__
from flock3d.errors import Flock3dError

EXIT_BAD_INPUT = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


# -- bench ------------------------------------------------------------------------------


def _add_bench(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "bench",
        help="measure the fast kernel's speed and memory at a fixed density",
        description="Print steps/s and ms/step for N = 1,000, 10,000 and 100,000 boids "
        "(1,000,000 with --large) at ~20 boids within view distance, the thread count, "
        "each size's peak memory, and the reference implementation at N = 1,000.",
    )
    p.add_argument("--large", action="store_true", help="also run N = 1,000,000")
    p.add_argument("--steps", type=_positive_int, default=20, help="steps per timed run (default 20)")
    p.add_argument("--threads", type=_positive_int, help="numba threads (default: all cores)")
    return p


def _run_bench(args: argparse.Namespace) -> int:
    import os

    if args.threads:
        # Inherited by the per-size processes, which set their thread pool from it.
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    from flock3d import bench

    bench.run(large=args.large, steps=args.steps)
    return 0


COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "bench": (_add_bench, _run_bench),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flock3d",
        description="3D flocking: watch, record, render and measure boids.",
    )
    parser.add_argument("--version", action="version", version=f"flock3d {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add, run in COMMANDS.values():
        add(sub).set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flock3d`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except Flock3dError as error:
        print(f"flock3d {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"flock3d {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
