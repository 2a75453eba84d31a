"""``flock3d sweep``: scene parameters swept over many runs on Dask."""

from __future__ import annotations

import argparse

from flock3d.cli.inputs import check_rules, output_path, require, rules_from, rules_line, scene_from
from flock3d.cli.options import (
    check_engine,
    engine_argument,
    engine_of,
    non_negative_int,
    positive_int,
    positive_step_count,
    rules_argument,
    scene_argument,
    seed,
    set_argument,
)
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError
from flock3d.runner import MAX_STEPS


def add_sweep(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sweep",
        help="sweep scene parameters over many runs on Dask (a local cluster or a scheduler)",
        description="Run every combination of the swept values, --repeats times each with its own seed, "
        "as tasks on Dask, and write one row per run. Re-running with the same --out skips finished runs.",
    )
    scene_argument(p)
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="KEY=VALUES",
        help="a swept key: start:stop:count (both ends included) or v1,v2,... "
        "e.g. zones.orientation_width=0:15:16 (repeatable)",
    )
    p.add_argument("--repeats", type=positive_int, default=1, help="runs per combination (default 1)")
    p.add_argument(
        "--steps", type=positive_step_count, required=True, help=f"steps per run (at most {MAX_STEPS:,})"
    )
    p.add_argument("--discard", type=non_negative_int, default=0, help="first steps left out of the means")
    p.add_argument("--out", required=True, metavar="RESULTS.parquet|.csv", help="the results table")
    p.add_argument("--plot", metavar="OUT.png", help="heatmaps over two parameters, or lines over one")
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="a dask.distributed scheduler, e.g. tcp://host:8786"
    )
    p.add_argument("--workers", type=positive_int, help="workers of the local cluster (default: all cores)")
    p.add_argument("--seed", type=seed, help="base seed the runs' seeds derive from (default: the scene's)")
    set_argument(p)
    rules_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    engine_argument(p)
    return p


def _swept_scene(args: argparse.Namespace, axes: list, rules: tuple) -> tuple:
    """The scene the sweep's runs start from and the ``--set`` values that made it. Each run is that
    scene with its swept values applied: the scene with ``--set`` alone need not be valid (a periodic
    arena too small for the scene's own attraction zone, which every run sweeps), so where it is
    not, the first combination's values join the ``--set`` ones. Every combination is judged
    before any run (:func:`flock3d.sweep.run_sweep`)."""
    from flock3d.scene import SceneError
    from flock3d.sweep import first_values

    try:
        return scene_from(args, args.scene, rules), list(args.set)
    except SceneError as error:
        if not axes:
            raise
        problem = error
    overrides = [*args.set, *first_values(axes)]
    try:
        return scene_from(
            argparse.Namespace(**{**vars(args), "set": overrides}), args.scene, rules
        ), overrides
    except SceneError:  # not the swept keys' doing: what is wrong with the scene itself
        raise problem from None


def run_sweep_command(args: argparse.Namespace) -> int:
    from flock3d.sweep import over_repeats, parse_axis, plot_sweep, run_sweep, sweep_size

    out = output_path(args.out, (".parquet", ".csv"), "--out")
    plot = output_path(args.plot, (".png",), "--plot") if args.plot is not None else None
    parquet = out.suffix.lower() == ".parquet"
    require("sweep", None if parquet else ("dask", "distributed", "pandas"))  # pyarrow: Parquet
    if plot is not None:
        require("plot", option="--plot")
    rules, forces = rules_from(args)  # refused here, before any worker starts, when broken
    axes = [parse_axis(spec) for spec in args.param]
    scene, overrides = _swept_scene(args, axes, (rules, forces))
    if len({a.key for a in axes}) != len(axes):
        raise Flock3dError("each --param key may be swept once")
    if plot is not None and len(axes) > 2:
        raise Flock3dError(f"--plot draws one or two swept parameters (this sweep has {len(axes)})")
    n_runs = sweep_size(axes, args.repeats)
    check_rules(rules, forces)
    check_engine(engine_of(args, scene), scene.params, rules, forces)
    swept = ", ".join(a.key for a in axes)
    print(f"{scene.name}: {counted(n_runs, 'run')} of {counted(args.steps, 'step')} ({swept})")
    if rules or forces:
        print(rules_line(rules, forces))
    table, stats = run_sweep(
        scene, axes, args.repeats, args.steps, args.discard, out,
        scheduler=args.scheduler, workers=args.workers, progress=False if args.no_progress else None,
        overrides=overrides, rules=args.rules, engine=engine_of(args, scene),
    )  # fmt: skip
    done = counted(stats.computed, "run")
    print(f"computed {done} in {stats.seconds:.1f} s, {stats.skipped:,} already in {out}")
    means = over_repeats(table, axes)[[*(a.key for a in axes), "polarization_mean", "milling_mean"]]
    print(means.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if plot is not None:
        plot_sweep(table, axes, plot, title=scene.name)
        print(f"wrote {plot}")
    return 0
