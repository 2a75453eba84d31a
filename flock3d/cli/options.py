"""The options several commands share: their value types and their declarations.

A type turns one option's text into its value or raises :class:`argparse.ArgumentTypeError`,
which the parser reports as a one-line usage error.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from flock3d.errors import Flock3dError
from flock3d.runner import FRAME_INTERVAL, MAX_STEPS, default_every, steps_for


def whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:30]!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def step_count(text: str, minimum: int = 0) -> int:
    value = whole_number(text, minimum)
    if value > MAX_STEPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_STEPS:,} steps, got {text[:30]}")
    return value


def positive_step_count(text: str) -> int:
    return step_count(text, 1)


def positive_int(text: str) -> int:
    return whole_number(text, 1)


def non_negative_int(text: str) -> int:
    return whole_number(text, 0)


def seed(text: str) -> int:
    value = whole_number(text, 0)
    if value >= 2**63:
        raise argparse.ArgumentTypeError(f"seed must be from 0 to 2**63 - 1, got {text[:30]}")
    return value


def positive_float(text: str) -> float:
    return _float_from(text, 0.0, ">")


def non_negative_float(text: str) -> float:
    return _float_from(text, 0.0, ">=")


def _float_from(text: str, least: float, relation: str) -> float:
    """``text`` as a finite float ``> least`` or ``>= least`` (``relation``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and (value > least or (relation == ">=" and value == least))):
        raise argparse.ArgumentTypeError(f"must be a finite number {relation} {least:g}, got {text}")
    return value


def metrics_bound(name: str) -> Callable[[str], int]:
    """A whole number from 1 to the bound ``name`` of :mod:`flock3d.metrics` (imported when
    parsing, not to slow every command's start with numba)."""

    def parse(text: str) -> int:
        from flock3d import metrics

        value, high = positive_int(text), getattr(metrics, name)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    return parse


def scene_argument(p: argparse.ArgumentParser, nargs: str | None = None) -> None:
    p.add_argument(
        "scene",
        metavar="SCENE",
        nargs=nargs,
        help="a scene file (.toml) or the name of a shipped scene (see `flock3d scenes`)",
    )


def run_arguments(p: argparse.ArgumentParser, scene_only: str = "") -> None:
    """The options of running a scene and recording it, as `flock3d run` takes them (``scene_only``
    starts each help where they apply to a scene argument alone, as in `export`)."""
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "--steps", type=step_count, help=f"{scene_only}steps to run (default 600, at most {MAX_STEPS:,})"
    )
    # 0 steps or 0 seconds run nothing: a recording of the start alone
    length.add_argument("--seconds", type=non_negative_float, help=f"{scene_only}simulated seconds to run")
    p.add_argument(
        "--every",
        type=positive_step_count,
        metavar="K",
        help=f"{scene_only}record every K-th step (default: a frame every {FRAME_INTERVAL:g} s of simulated "
        "time, i.e. every 6 steps at the default dt of 1/60 s)",
    )
    p.add_argument("--seed", type=seed, help=f"{scene_only}seed of the initial state (default: the scene's)")
    set_argument(p)
    rules_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bars")
    engine_argument(p)


def engine_argument(p: argparse.ArgumentParser, scene_only: str = "", scenes: bool = True) -> None:
    """``--engine``: which engine steps the flock (``Flock``'s ``engine``); None when not given, so
    that a scene's own ``sim.engine`` applies (:func:`engine_of`); ``scenes``: whether the command
    takes a scene at all."""
    default = "the scene's sim.engine, else fast" if scenes else "fast"
    p.add_argument(
        "--engine",
        choices=["fast", "reference", "gpu"],
        help=f"{scene_only}what steps the flock: fast (the CPU's cores), reference (readable and slow) or "
        f'gpu (an NVIDIA GPU: pip install "flock3d[gpu]"); default: {default}',
    )


def refuse_scene_options(args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """Refuse, in one line naming them in ``names``' order, the options among ``names`` that were
    given (not None, not an empty list) when the source is a recording: they make a scene's run."""
    given = [f"--{name}" for name in names if getattr(args, name) not in (None, [])]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise Flock3dError(f"{', '.join(given)} {verb} to scenes, not to recorded trajectories")


def engine_of(args: argparse.Namespace, scene=None) -> str:
    """The engine a command steps with: ``--engine``, else the scene's ``sim.engine``, else fast."""
    return args.engine or (scene.engine if scene is not None else "fast")


def check_engine(engine: str, params, rules=(), forces=()) -> None:
    """Refuse, in one line and before any work, a flock ``engine`` cannot step: the GPU engine's
    missing driver, device or numba-cuda, or what of the flock it does not run yet."""
    if engine == "gpu":
        from flock3d.gpu import check_runs

        check_runs(params, rules, forces)


def run_length(args: argparse.Namespace, dt: float) -> tuple[int, int]:
    """The steps to run and the recording's step interval from the options of
    :func:`run_arguments`: ``--steps`` (600 unless told) or ``--seconds`` at ``dt``, and ``--every``
    or a frame every ``FRAME_INTERVAL`` s."""
    steps = args.steps if args.steps is not None else 600
    if args.seconds is not None:
        try:
            steps = steps_for(args.seconds, dt)
        except ValueError as error:
            raise Flock3dError(f"--seconds: {error}") from None
    return steps, args.every if args.every is not None else default_every(dt)


def set_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scene key, e.g. --set perception.fov=120 (repeatable; validated like the file)",
    )


def rules_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rules",
        metavar="FILE.py",
        help="your own rules and forces: every @flock3d.pair_rule and @flock3d.force this Python file "
        "defines is compiled into the step (see docs/rules.md)",
    )
