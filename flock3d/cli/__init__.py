"""The ``flock3d`` command.

Each subcommand is a pair of functions in the module of its family: one adds its arguments,
one runs it by calling the library. Expected failures (bad input, missing files) raise
:class:`flock3d.errors.Flock3dError` and end as one line on stderr with exit status 2, never
a traceback (:mod:`flock3d.cli.errors`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from flock3d import _command
from flock3d._version import __version__
from flock3d.cli import bench, experiment, infer, metrics, render, run, scenes, sweep
from flock3d.cli.errors import EXIT_BAD_INPUT, Parser, reported, terminated_as_interrupted
from flock3d.core import compiling
from flock3d.core.compiling import COMPILING, COMPILING_MEASUREMENTS

__all__ = ["COMMANDS", "COMPILING", "COMPILING_MEASUREMENTS", "EXIT_BAD_INPUT", "build_parser", "main"]

#: Each command's (add its parser, run it), in the order ``flock3d --help`` lists them.
COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "view": (render.add_view, render.run_view),
    "scenes": (scenes.add_scenes, scenes.run_scenes),
    "check": (scenes.add_check, scenes.run_check),
    "run": (run.add_run, run.run_run),
    "metrics": (metrics.add_metrics, metrics.run_metrics),
    "render": (render.add_render, render.run_render),
    "export": (run.add_export, run.run_export),
    "sweep": (sweep.add_sweep, sweep.run_sweep_command),
    "experiment": (experiment.add_experiment, experiment.run_experiment_command),
    "infer": (infer.add_infer, infer.run_infer),
    "bench": (bench.add_bench, bench.run_bench),
    "debug": (scenes.add_debug, scenes.run_debug),
}

#: The commands whose first compile is the measurements', not the step's.
MEASURING = ("metrics", "infer")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="flock3d",
        description="3D flocking: watch, record, render and measure boids.",
    )
    parser.add_argument("--version", action="version", version=f"flock3d {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add, run_command in COMMANDS.values():
        add(sub).set_defaults(run=run_command)
    parser.commands = sub.choices  # each command's parser, which says what it does not know
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flock3d`` console script; returns the exit status."""
    _command.loaded()  # from here a Ctrl-C is the command's own one line (reported)
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a first try: show what there is to do
        parser.print_help()
        return 0
    if argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        parser.error(f"unrecognized option {argv[0]}: a COMMAND comes first")
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's own parser, which points to its own help
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")

    # SIGTERM unwinds a command as Ctrl-C does, except in a window: Qt's loop would take the
    # exception raised in one of its slots as that slot's error and go on.
    windowed = args.command == "view" or getattr(args, "viewer", False)

    def run_command() -> int:
        with (
            nullcontext() if windowed else terminated_as_interrupted(),
            compiling.notices(COMPILING_MEASUREMENTS if args.command in MEASURING else COMPILING),
        ):
            return args.run(args)

    return reported(args.command, run_command)
