"""The ``flock3d`` command.

Each subcommand is a pair of functions here: one adds its arguments, one runs it.
Expected failures (bad input, missing files) raise :class:`flock3d.errors.Flock3dError`
and end as one line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from flock3d import __version__
from flock3d.errors import Flock3dError

EXIT_BAD_INPUT = 2


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _whole_number(text, 1)


def _non_negative_int(text: str) -> int:
    return _whole_number(text, 0)


def _seed(text: str) -> int:
    value = _whole_number(text, 0)
    if value >= 2**63:
        raise argparse.ArgumentTypeError(f"seed must be from 0 to 2**63 - 1, got {text[:30]}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
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
    p.add_argument("--steps", type=_positive_int, default=20, help="steps per timed run (default 20)")
    p.add_argument("--threads", type=_positive_int, help="numba threads (default: all cores)")
    return p


def _run_bench(args: argparse.Namespace) -> int:
    import os

    if args.threads:
        # Inherited by the per-size processes, which set their thread pool from it.
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    from flock3d import bench

    if args.viewer:
        from flock3d.viewer.app import check_display

        check_display()
        bench.run_viewer(large=args.large)
    elif args.variants:
        bench.run_variants(steps=args.steps)
    else:
        bench.run(large=args.large, steps=args.steps)
    return 0


# -- scenes, check -----------------------------------------------------------------------


def _add_scenes(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return sub.add_parser(
        "scenes",
        help="list the scenes shipped with flock3d",
        description="List the shipped scenes; any command taking a SCENE accepts these names.",
    )


def _run_scenes(args: argparse.Namespace) -> int:
    from flock3d.scene import resolve_scene, shipped_scenes

    names = shipped_scenes()
    width = max(map(len, names))
    for name in names:
        scene = resolve_scene(name)
        p = scene.params
        print(f"{name:<{width}}  {p.count:>8,} boids  R={p.arena_radius:<6g} {scene.description}")
    return 0


def _scene_argument(p: argparse.ArgumentParser, nargs: str | None = None) -> None:
    p.add_argument(
        "scene",
        metavar="SCENE",
        nargs=nargs,
        help="a scene file (.toml) or the name of a shipped scene (see `flock3d scenes`)",
    )


def _add_check(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check",
        help="validate scene files",
        description="Validate scene files and print every problem found; exit 2 if there is any.",
    )
    _scene_argument(p, nargs="+")
    return p


def _run_check(args: argparse.Namespace) -> int:
    from flock3d.scene import SceneError, resolve_scene

    failed = False
    for name in args.scene:
        try:
            scene = resolve_scene(name)
        except SceneError as error:
            failed = True
            for problem in error.problems:
                print(problem, file=sys.stderr)
            continue
        p = scene.params
        print(
            f"{name}: ok ({scene.name!r}: {p.count:,} boids, arena radius {p.arena_radius:g}, fov {p.fov:g})"
        )
    return EXIT_BAD_INPUT if failed else 0


# -- run ------------------------------------------------------------------------------


def _add_run(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "run",
        help="run a scene headless, optionally recording the trajectory",
        description="Run a scene without a window. With --out, frames are streamed to an HDF5 "
        "file (H5MD layout); Ctrl-C or SIGTERM stops the run and keeps every frame written.",
    )
    _scene_argument(p)
    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=_non_negative_int, help="steps to run (default 600)")
    length.add_argument("--seconds", type=_positive_float, help="simulated seconds to run")
    p.add_argument("--out", metavar="TRAJ.h5", help="record the trajectory to this HDF5 file")
    p.add_argument(
        "--every", type=_positive_int, default=1, metavar="K", help="record every K-th step (default 1)"
    )
    p.add_argument("--seed", type=_seed, help="seed of the initial state (default: the scene's)")
    _set_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _set_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scene key, e.g. --set perception.fov=120 (repeatable; validated like the file)",
    )


def _scene_from(args: argparse.Namespace, name: str | None):
    """The scene named on the command line, with its --set overrides and --seed applied."""
    from flock3d.scene import resolve_scene

    scene = resolve_scene(name, overrides=args.set)
    return scene if args.seed is None else scene.replace(seed=args.seed)


#: More steps than anyone runs: a guard against --seconds with an absurd dt.
MAX_STEPS = 10**12


def _output_path(path: str, suffixes: tuple[str, ...], what: str) -> Path:
    """Check an output path before any work is done: right suffix, existing folder."""
    if not path.strip():
        raise Flock3dError(f"{what} needs a file name")
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise Flock3dError(f"{path}: {what} must end in {' or '.join(suffixes)}")
    if not out.parent.is_dir():
        raise Flock3dError(f"{path}: folder {out.parent} does not exist")
    if out.is_dir():
        raise Flock3dError(f"{path}: is a directory")
    return out


def _run_run(args: argparse.Namespace) -> int:
    from flock3d import metrics
    from flock3d.flock import Flock
    from flock3d.io import TrajectoryWriter
    from flock3d.runner import run, stop_on_signals

    scene = _scene_from(args, args.scene)
    p = scene.params
    steps = args.steps if args.steps is not None else 600
    if args.seconds is not None:
        wanted = args.seconds / p.dt
        if not wanted <= MAX_STEPS:
            raise Flock3dError(
                f"--seconds {args.seconds:g} at sim.dt = {p.dt:g} is more than {MAX_STEPS:.0e} steps"
            )
        steps = math.ceil(wanted - 1e-9)
    out = _output_path(args.out, (".h5", ".hdf5"), "--out") if args.out is not None else None

    flock = Flock.from_scene(scene)
    progress = False if args.no_progress else None  # None: only on a terminal
    print(f"{scene.name}: {len(flock):,} boids, {steps:,} steps of {p.dt:g} s (seed {scene.seed})")
    with stop_on_signals() as stop:
        if out is None:
            stats = run(flock, steps, progress=progress, stop=stop)
        else:
            with TrajectoryWriter(out, len(flock), scene, args.every, flock.state.n_predators) as writer:
                stats = run(flock, steps, writer=writer, every=args.every, progress=progress, stop=stop)

    nn = metrics.nearest_neighbour_stats(flock.positions)
    print(
        f"ran {stats.steps:,} steps ({flock.time:.2f} s simulated) in {stats.seconds:.2f} s: "
        f"{stats.steps_per_second:,.0f} steps/s"
    )
    print(
        f"final: polarization {metrics.polarization(flock.velocities):.3f}, "
        f"milling {metrics.milling(flock.positions, flock.velocities):.3f}, "
        f"nearest-neighbour distance {nn.mean:.3f} (min {nn.min:.3f})"
    )
    if out is not None:
        print(f"wrote {stats.frames:,} frames to {out}")
    if stats.interrupted:
        print(f"flock3d run: stopped by {stats.interrupted} after {stats.steps:,} steps", file=sys.stderr)
        return 130 if stats.interrupted == "SIGINT" else 143
    return 0


# -- metrics --------------------------------------------------------------------------


def _add_metrics(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "metrics",
        help="measure a recorded trajectory: order, spacing, groups",
        description="Compute polarization, milling, mean and nearest-neighbour distances and the "
        "number of groups (connected at the view distance, r_a for the couzin model) for every "
        "frame of a trajectory.",
    )
    p.add_argument("trajectory", metavar="TRAJ.h5", help="a file written by `flock3d run --out`")
    p.add_argument("--csv", metavar="OUT.csv", help="write the per-frame table as CSV")
    p.add_argument("--plot", metavar="OUT.png", help="plot the measurements against time")
    return p


def _run_metrics(args: argparse.Namespace) -> int:
    import csv

    from flock3d import metrics
    from flock3d.io import Trajectory

    csv_path = _output_path(args.csv, (".csv",), "--csv") if args.csv is not None else None
    plot_path = _output_path(args.plot, (".png",), "--plot") if args.plot is not None else None
    with Trajectory(args.trajectory) as traj:
        scene = traj.scene
        if traj.n_frames == 0:
            raise Flock3dError(f"{args.trajectory}: the trajectory has no frames")
        columns = metrics.table(traj.frames(), scene.params.perception_distance)
        print(
            f"{args.trajectory}: {traj.n_frames:,} frames of {traj.n_boids:,} boids, "
            f"t = {columns['time'][0]:g} to {columns['time'][-1]:g} s (scene {scene.name!r})"
        )
    print(f"{'':<20}{'first':>10}{'last':>10}{'mean':>10}")
    for name in metrics.COLUMNS:
        v = columns[name]
        mean = np.mean(v[~np.isnan(v)]) if np.any(~np.isnan(v)) else np.nan  # NaN: undefined (N < 2)
        print(f"{name:<20}{v[0]:>10.3f}{v[-1]:>10.3f}{mean:>10.3f}")
    if csv_path:
        with csv_path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(list(columns))
            for row in zip(*columns.values(), strict=True):
                writer.writerow([int(x) if i == 0 else repr(float(x)) for i, x in enumerate(row)])
        print(f"wrote {csv_path}")
    if plot_path:
        from flock3d.plots import plot_metrics

        plot_metrics(columns, plot_path, title=f"{scene.name} ({args.trajectory})")
        print(f"wrote {plot_path}")
    return 0


# -- view -------------------------------------------------------------------------------


def _add_view(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "view",
        help="watch a scene in the interactive 3D viewer (the default scene if none is given)",
        description="Open the viewer: orbit the flock, tweak its parameters live, load and save "
        "scenes, take screenshots and record videos. Press h in the window for the shortcuts.",
    )
    _scene_argument(p, nargs="?")
    p.add_argument("--seed", type=_seed, help="seed of the initial state (default: the scene's)")
    _set_argument(p)
    return p


def _run_view(args: argparse.Namespace) -> int:
    from flock3d.viewer.app import check_display, run_viewer

    scene = _scene_from(args, args.scene)
    check_display()
    return run_viewer(scene)


# -- sweep ------------------------------------------------------------------------------


def _add_sweep(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sweep",
        help="sweep scene parameters over many runs on Dask (a local cluster or a scheduler)",
        description="Run every combination of the swept values, --repeats times each with its own seed, "
        "as tasks on Dask, and write one row per run. Re-running with the same --out skips finished runs.",
    )
    _scene_argument(p)
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="KEY=VALUES",
        help="a swept key: start:stop:count (both ends included) or v1,v2,... "
        "e.g. zones.orientation_width=0:15:16 (repeatable)",
    )
    p.add_argument("--repeats", type=_positive_int, default=1, help="runs per combination (default 1)")
    p.add_argument("--steps", type=_positive_int, required=True, help="steps per run")
    p.add_argument("--discard", type=_non_negative_int, default=0, help="first steps left out of the means")
    p.add_argument("--out", required=True, metavar="RESULTS.parquet|.csv", help="the results table")
    p.add_argument("--plot", metavar="OUT.png", help="heatmaps over two parameters, or lines over one")
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="a dask.distributed scheduler, e.g. tcp://host:8786"
    )
    p.add_argument("--workers", type=_positive_int, help="workers of the local cluster (default: all cores)")
    p.add_argument("--seed", type=_seed, help="base seed the runs' seeds derive from (default: the scene's)")
    _set_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_sweep(args: argparse.Namespace) -> int:
    from flock3d.sweep import parse_axis, plot_sweep, run_sweep

    out = _output_path(args.out, (".parquet", ".csv"), "--out")
    plot = _output_path(args.plot, (".png",), "--plot") if args.plot is not None else None
    scene = _scene_from(args, args.scene)
    axes = [parse_axis(spec) for spec in args.param]
    if len({a.key for a in axes}) != len(axes):
        raise Flock3dError("each --param key may be swept once")
    if plot is not None and len(axes) > 2:
        raise Flock3dError(f"--plot draws one or two swept parameters (this sweep has {len(axes)})")
    n_runs = math.prod(len(a.values) for a in axes) * args.repeats
    print(f"{scene.name}: {n_runs:,} runs of {args.steps:,} steps ({', '.join(a.key for a in axes)})")
    table, stats = run_sweep(
        scene, axes, args.repeats, args.steps, args.discard, out,
        scheduler=args.scheduler, workers=args.workers, progress=False if args.no_progress else None,
        overrides=args.set,
    )  # fmt: skip
    print(f"computed {stats.computed:,} runs in {stats.seconds:.1f} s, {stats.skipped:,} already in {out}")
    keys = [a.key for a in axes]
    summary = table.groupby(keys)[["polarization_mean", "milling_mean"]].mean().reset_index()
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if plot is not None:
        plot_sweep(table, axes, plot, title=scene.name)
        print(f"wrote {plot}")
    return 0


# -- render ---------------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    width, sep, height = text.lower().partition("x")
    try:
        w, h = int(width), int(height)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 800x600, got {text!r}") from None
    if not sep or w < 16 or h < 16 or w > 8192 or h > 8192 or w % 2 or h % 2:
        raise argparse.ArgumentTypeError(
            f"width and height must be even numbers from 16 to 8192, got {text!r}"
        )
    return w, h


#: Bounds of `flock3d render`, so that a mistyped number cannot run for ever.
MAX_RENDER_FRAMES = 100_000
"""About 55 minutes of video at 30 frames/s."""
MAX_RENDER_STEPS = 10_000_000
"""Simulation steps a render of a scene may take (--start and the frames together)."""
RENDER_FPS_RANGE = (1.0, 240.0)


def _fps(text: str) -> float:
    value = _positive_float(text)
    low, high = RENDER_FPS_RANGE
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g} frames per second, got {text}")
    return value


def _frames(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_RENDER_FRAMES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_RENDER_FRAMES:,} frames (about 55 minutes at 30 fps), got {value:,}"
        )
    return value


def _start(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text}")
    return value


def _add_render(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from flock3d.viewer.offscreen import CAMERAS

    p = sub.add_parser(
        "render",
        help="render a scene or a recorded trajectory to an MP4 video or a PNG image",
        description="Render offscreen (EGL), with the viewer's look. From a scene, the flock is "
        "simulated as it renders; from a trajectory (.h5), its recorded frames are drawn. "
        "Videos play at the simulation's pace: one second of video is one simulated second.",
    )
    p.add_argument("source", metavar="SCENE|TRAJ.h5", help="a scene (file or shipped name) or a trajectory")
    p.add_argument(
        "--out", required=True, metavar="OUT.mp4|OUT.png", help="video (.mp4) or image (.png) to write"
    )
    p.add_argument(
        "--frames",
        type=_frames,
        help=f"frames to render, at most {MAX_RENDER_FRAMES:,} (default: 300 from a scene, the whole "
        "recording from a trajectory); a PNG shows frame N alone (default: the first frame of a scene, "
        "the last of a trajectory)",
    )
    p.add_argument(
        "--start",
        type=_start,
        default=0.0,
        metavar="SECONDS",
        help="begin this many simulated seconds in: a scene is simulated that long without drawing "
        "(film a mill or a murmuration once formed); a trajectory skips its frames before it",
    )
    p.add_argument(
        "--size", type=_size, default=(800, 600), metavar="WxH", help="image size (default 800x600)"
    )
    p.add_argument(
        "--camera",
        choices=CAMERAS,
        help="camera motion (default: the scene's view.camera when it is follow or fixed, else orbit)",
    )
    p.add_argument(
        "--fps",
        type=_fps,
        help="video frames per second, 1 to 240 (default 30, or a trajectory's own rate when it is "
        "10 to 60); the video shows the flock at real speed whatever the rate",
    )
    p.add_argument("--seed", type=_seed, help="seed, when rendering a scene")
    _set_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_render(args: argparse.Namespace) -> int:
    """Render frames at simulated times start, start + 1/fps, start + 2/fps, ... (real speed)."""
    from flock3d.flock import Flock
    from flock3d.io import Trajectory

    out = _output_path(args.out, (".mp4", ".png"), "--out")
    is_png = out.suffix.lower() == ".png"
    with contextlib.ExitStack() as stack:
        if Path(args.source).suffix.lower() in (".h5", ".hdf5"):
            if args.set or args.seed is not None:
                raise Flock3dError("--set and --seed apply to scenes, not to recorded trajectories")
            traj = stack.enter_context(Trajectory(args.source))
            if traj.n_frames == 0:
                raise Flock3dError(f"{args.source}: the trajectory has no frames")
            scene = traj.scene
            interval = traj.every * scene.params.dt  # simulated seconds between recorded frames
            if args.fps is None:  # the recording's own rate when it is a usual one: frame for frame
                rate = 1.0 / interval
                args.fps = rate if 10.0 <= rate <= 60.0 else 30.0
            first = traj.frame(0).time
            end = first + (traj.n_frames - 1) * interval
            if first + args.start > end + 1e-9:
                raise Flock3dError(
                    f"--start {args.start:g} is past the end of the recording ({end - first:g} s long)"
                )
            available = math.floor((end - first - args.start) * args.fps + 1e-6) + 1
            total = min(args.frames or available, available)
            if is_png and args.frames is None:
                total = available  # the last frame

            def recorded(k: int) -> int:
                """The recorded frame nearest to output frame k's time."""
                return min(round((args.start + k / args.fps) / interval), traj.n_frames - 1)

            def play(first_frame: int):
                for k in range(first_frame, total):
                    yield traj.frame(recorded(k)), None

            frames = play(total - 1 if is_png else 0)
        else:
            scene = _scene_from(args, args.source)
            args.fps = args.fps or 30.0
            total = args.frames or (1 if is_png else 300)
            dt = scene.params.dt
            last_time = args.start + (total - 1) / args.fps
            if last_time / dt > MAX_RENDER_STEPS:
                raise Flock3dError(
                    f"rendering to {last_time:g} simulated seconds at sim.dt = {dt:g} takes "
                    f"{last_time / dt:,.0f} steps, more than the {MAX_RENDER_STEPS:,} a render may take"
                )
            flock = Flock.from_scene(scene)

            def simulate(first_frame: int):
                """The flock at each output frame's time, and its last step's acceleration."""
                acceleration = None
                for k in range(first_frame, total):
                    due = round((args.start + k / args.fps) / dt) - flock.step_count
                    if due > 0:
                        if due > 1:
                            flock.step(due - 1)
                        before = flock.velocities.copy()
                        flock.step(1)
                        acceleration = (flock.velocities - before) / dt
                    yield flock.state, acceleration

            frames = simulate(total - 1 if is_png else 0)
        return _render_frames(args, out, is_png, scene, total, frames)


def _render_frames(args, out: Path, is_png: bool, scene, total: int, frames) -> int:
    from tqdm import tqdm

    from flock3d.io.video import VideoWriter
    from flock3d.viewer.offscreen import OffscreenRenderer

    camera = args.camera or (scene.view.camera if scene.view.camera in ("follow", "fixed") else "orbit")
    with OffscreenRenderer(scene, size=args.size, camera=camera, fps=args.fps) as renderer:
        if is_png:
            import imageio.v3 as iio

            renderer.frames_rendered = total - 1  # the orbit's angle at that frame
            state, acceleration = next(iter(frames))
            png = iio.imwrite("<bytes>", renderer.render(state, acceleration), extension=".png")
            try:
                out.write_bytes(png)  # encoded in memory first: a full disk fails here, cleanly
            except OSError as error:
                raise Flock3dError(f"{out}: cannot write the image ({error.strerror or error})") from None
            print(
                f"wrote {out} ({args.size[0]}x{args.size[1]}, frame {total} of {scene.name!r}, "
                f"t = {state.time:.2f} s)"
            )
            return 0
        bar = tqdm(total=total, unit="frame", file=sys.stderr, disable=True if args.no_progress else None)
        with bar, VideoWriter(out, fps=args.fps) as video:
            for state, acceleration in frames:
                video.append(renderer.render(state, acceleration))
                bar.update()
        # Frame k shows the flock at start + k / fps (the nearest step): the video's clock is the flock's.
        seconds = video.frames / args.fps
        print(
            f"wrote {out}: {video.frames} frames, {args.size[0]}x{args.size[1]}, {seconds:.2f} s at "
            f"{args.fps:g} fps, showing simulated t = {args.start:.2f} to {args.start + seconds:.2f} s "
            f"({scene.name!r})"
        )
    return 0


COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "view": (_add_view, _run_view),
    "scenes": (_add_scenes, _run_scenes),
    "check": (_add_check, _run_check),
    "run": (_add_run, _run_run),
    "metrics": (_add_metrics, _run_metrics),
    "render": (_add_render, _run_render),
    "sweep": (_add_sweep, _run_sweep),
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
    except OSError as error:  # an output that cannot be written: a full disk, no permission
        where = f"{error.filename}: " if error.filename else ""
        print(f"flock3d {args.command}: {where}{error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print(f"flock3d {args.command}: out of memory (fewer boids?)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"flock3d {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
