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

from flock3d import __version__
from flock3d.core import compiling
from flock3d.core.compiling import COMPILING, COMPILING_MEASUREMENTS
from flock3d.errors import Flock3dError
from flock3d.runner import FRAME_INTERVAL, MAX_STEPS, default_every, steps_for

EXIT_BAD_INPUT = 2


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:30]!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def _step_count(text: str, minimum: int = 0) -> int:
    value = _whole_number(text, minimum)
    if value > MAX_STEPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_STEPS:,} steps, got {text[:30]}")
    return value


def _positive_step_count(text: str) -> int:
    return _step_count(text, 1)


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


#: The extras of ``pip install flock3d[...]`` and the modules each brings, by import name.
EXTRAS: dict[str, tuple[str, ...]] = {
    "viewer": ("vispy", "OpenGL", "PySide6", "imageio", "imageio_ffmpeg"),
    "plot": ("matplotlib",),
    "sweep": ("dask", "distributed", "pandas", "pyarrow"),
}


def _require(extra: str, modules: Sequence[str] | None = None, option: str = "") -> None:
    """Stop with one line naming the extra to install when a module the command needs is missing.

    Checked before importing anything of the viewer or Dask, whose imports would fail
    with a traceback. ``modules``: the ones needed, if not all of the extra's;
    ``option``: the option that needs them, if not the command itself.
    """
    import importlib.util

    missing = [m for m in modules or EXTRAS[extra] if importlib.util.find_spec(m) is None]
    if missing:
        raise Flock3dError(
            f"{option + ' ' if option else ''}needs the {extra} extra (missing {', '.join(missing)}): "
            f"python -m pip install 'flock3d[{extra}]'"
        )


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
    mode.add_argument(
        "--profile",
        action="store_true",
        help="where one step's time goes at N = 100,000 (grid, candidates, pair loop, turn and move), "
        "candidates and neighbours per boid, pairs/ns per core; at the start and after --after seconds",
    )
    p.add_argument(
        "--after",
        type=_positive_float,
        default=60.0,
        help="with --profile: simulated seconds before the second profile (default 60)",
    )
    p.add_argument("--steps", type=_positive_int, default=20, help="steps per timed run (default 20)")
    p.add_argument("--threads", type=_positive_int, help="numba threads (default: all cores)")
    return p


def _run_bench(args: argparse.Namespace) -> int:
    import numba

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

    if args.viewer:
        _require("viewer", option="--viewer")
        from flock3d.viewer.app import check_display

        check_display()
        bench.run_viewer(large=args.large)
    elif args.variants:
        bench.run_variants(steps=args.steps)
    elif args.profile:
        bench.profile(after=args.after)
    else:
        bench.run(large=args.large, steps=args.steps)
    return 0


# -- scenes, check -----------------------------------------------------------------------


def _add_scenes(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "scenes",
        help="list the scenes shipped with flock3d",
        description="List the shipped scenes; any command taking a SCENE accepts these names.",
    )
    p.add_argument(
        "--template",
        action="store_true",
        help="print instead a scene file listing every key with its default and meaning",
    )
    return p


def _run_scenes(args: argparse.Namespace) -> int:
    from flock3d.scene import describe_arena, load_shipped, template

    if args.template:
        print(template(), end="")
        return 0

    loaded, missing = load_shipped()
    names, scenes = [name for name, _ in loaded], [scene for _, scene in loaded]
    arenas = [describe_arena(scene.params) for scene in scenes]
    width, arena_width = max(map(len, names + missing)), max(map(len, arenas))
    for name, scene, arena in zip(names, scenes, arenas, strict=True):
        print(f"{name:<{width}}  {scene.params.count:>8,} boids  {arena:<{arena_width}}  {scene.description}")
    for name in missing:
        print(f"{name:<{width}}  needs the world extra to read its meshes and images: "
              "python -m pip install 'flock3d[world]'")  # fmt: skip
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
        description="Validate scene files and print every problem found; exit 2 if there is any. "
        "A problem `flock3d run` would refuse a scene for is a problem here.",
    )
    _scene_argument(p, nargs="+")
    p.add_argument(
        "--rules",
        metavar="FILE.py",
        help="the rules and forces of yours the scenes will run with (as `run --rules`): rules.order may "
        "name them; without it, a name in rules.order that is no built-in stage is a problem",
    )
    return p


def _run_check(args: argparse.Namespace) -> int:
    from flock3d.scene import SceneError, describe_arena, resolve_scene

    rules, forces = _rules_from(args)
    if rules or forces:
        from flock3d.rules import check_rules

        check_rules(rules, forces)  # as a run would, before its first step
    failed = False
    for name in args.scene:
        try:
            scene = resolve_scene(name, rule_names=_rule_names(rules, forces))
        except SceneError as error:
            failed = True
            for problem in error.problems:
                print(problem, file=sys.stderr)
            continue
        p = scene.params
        print(f"{name}: ok ({scene.name!r}: {p.count:,} boids, {describe_arena(p)}, fov {p.fov:g})")
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
    p.add_argument("--out", metavar="TRAJ.h5", help="record the trajectory to this HDF5 file")
    _run_arguments(p)
    return p


def _run_arguments(p: argparse.ArgumentParser, scene_only: str = "") -> None:
    """The options of running a scene and recording it, as `flock3d run` takes them (``scene_only``
    starts each help where they apply to a scene argument alone, as in `export`)."""
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "--steps", type=_step_count, help=f"{scene_only}steps to run (default 600, at most {MAX_STEPS:,})"
    )
    length.add_argument("--seconds", type=_positive_float, help=f"{scene_only}simulated seconds to run")
    p.add_argument(
        "--every",
        type=_positive_step_count,
        metavar="K",
        help=f"{scene_only}record every K-th step (default: a frame every {FRAME_INTERVAL:g} s of simulated "
        "time, i.e. every 6 steps at the default dt of 1/60 s)",
    )
    p.add_argument("--seed", type=_seed, help=f"{scene_only}seed of the initial state (default: the scene's)")
    _set_argument(p)
    _rules_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bars")
    _engine_argument(p)


def _engine_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=["fast", "reference", "gpu"],
        default="fast",
        help="what steps the flock: fast (the CPU's cores, default), reference (readable and slow) or gpu "
        '(an NVIDIA GPU: pip install "flock3d[gpu]")',
    )


def _run_length(args: argparse.Namespace, dt: float) -> tuple[int, int]:
    """The steps to run and the recording's step interval from the options of
    :func:`_run_arguments`: ``--steps`` (600 unless told) or ``--seconds`` at ``dt``, and ``--every``
    or a frame every ``FRAME_INTERVAL`` s."""
    steps = args.steps if args.steps is not None else 600
    if args.seconds is not None:
        try:
            steps = steps_for(args.seconds, dt)
        except ValueError as error:
            raise Flock3dError(f"--seconds: {error}") from None
    return steps, args.every if args.every is not None else default_every(dt)


def _set_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scene key, e.g. --set perception.fov=120 (repeatable; validated like the file)",
    )


def _rules_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rules",
        metavar="FILE.py",
        help="your own rules and forces: every @flock3d.pair_rule and @flock3d.force this Python file "
        "defines is compiled into the step (see docs/rules.md)",
    )


def _rules_from(args: argparse.Namespace) -> tuple[tuple, tuple]:
    """The (rules, forces) of the --rules file, or none."""
    if getattr(args, "rules", None) is None:
        return (), ()
    from flock3d.rules import load_rules

    return load_rules(args.rules)


def _rule_names(rules, forces) -> list[str]:
    return [r.name for r in rules] + [f.name for f in forces]


def _rules_line(rules, forces) -> str:
    names = _rule_names(rules, forces)
    return f"rules: {', '.join(names)}" if names else ""


def _scene_from(args: argparse.Namespace, name: str | None, rules: tuple[tuple, tuple] | None = None):
    """The scene named on the command line, with its --set overrides and --seed applied.

    ``rules``: the (rules, forces) it will run with (:func:`_rules_from`), so that its
    rules.order is checked against their names here, in one line, rather than when the
    flock is made.
    """
    from flock3d.scene import resolve_scene

    names = None if rules is None else _rule_names(*rules)
    scene = resolve_scene(name, overrides=args.set, rule_names=names)
    return scene if args.seed is None else scene.replace(seed=args.seed)


def _outputs(args: argparse.Namespace, **suffixes: str) -> dict[str, Path | None]:
    """The files options ``--NAME=SUFFIX...`` write, checked before any work (None: not asked
    for); a plot needs the plot extra."""
    given = {name: getattr(args, name) for name in suffixes}
    outputs = {
        name: None if path is None else _output_path(path, (suffixes[name],), f"--{name}")
        for name, path in given.items()
    }
    if outputs.get("plot") is not None:
        _require("plot", option="--plot")
    return outputs


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

    rules, forces = _rules_from(args)
    scene = _scene_from(args, args.scene, (rules, forces))
    p = scene.params
    steps, every = _run_length(args, p.dt)
    out = _output_path(args.out, (".h5", ".hdf5"), "--out") if args.out is not None else None

    flock = Flock.from_scene(scene, rules=rules, forces=forces, engine=args.engine)
    progress = False if args.no_progress else None  # None: only on a terminal
    print(f"{scene.name}: {len(flock):,} boids, {steps:,} steps of {p.dt:g} s (seed {scene.seed})")
    if rules or forces:
        print(_rules_line(rules, forces))
    with stop_on_signals() as stop:
        if out is None:
            stats = run(flock, steps, progress=progress, stop=stop)
        else:
            with TrajectoryWriter(out, len(flock), scene, every, flock.state.n_predators) as writer:
                stats = run(flock, steps, writer=writer, every=every, progress=progress, stop=stop)

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
        print(f"wrote {stats.frames:,} frames to {out} (one every {every} steps)")
    if stats.interrupted:
        print(f"flock3d run: stopped by {stats.interrupted} after {stats.steps:,} steps", file=sys.stderr)
        return 130 if stats.interrupted == "SIGINT" else 143
    return 0


# -- metrics --------------------------------------------------------------------------


def _metrics_bound(name: str) -> Callable[[str], int]:
    """A whole number from 1 to the bound ``name`` of :mod:`flock3d.metrics` (imported when
    parsing, not to slow every command's start with numba)."""

    def parse(text: str) -> int:
        from flock3d import metrics

        value, high = _positive_int(text), getattr(metrics, name)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    return parse


def _add_metrics(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "metrics",
        help="measure a recorded trajectory: order, spacing, groups, shape, correlations",
        description="Compute polarization, milling, mean and nearest-neighbour distances, the number "
        "of groups (connected at the view distance, r_a for the couzin model), the flock's size L and "
        "its principal axes for every frame of a trajectory; optionally the velocity correlation "
        "functions and lengths (Cavagna et al. 2010) and the nearest neighbours' anisotropy "
        "(Ballerini et al. 2008). A periodic arena is measured through its faces (minimum image).",
    )
    p.add_argument("trajectory", metavar="TRAJ.h5", help="a file written by `flock3d run --out`")
    p.add_argument("--csv", metavar="OUT.csv", help="write the per-frame table as CSV")
    p.add_argument("--plot", metavar="OUT.png", help="plot the measurements against time")
    p.add_argument(
        "--correlation",
        metavar="OUT.csv",
        help="also compute C(r) of velocity, orientation and speed fluctuations per frame: write the "
        "curves here (one row per frame and bin) and add xi_velocity, xi_orientation, xi_speed to the table",
    )
    p.add_argument(
        "--bins",
        type=_metrics_bound("MAX_BINS"),
        default=50,
        help="distance bins of C(r), 0 to L (default 50)",
    )
    p.add_argument(
        "--anisotropy",
        metavar="OUT.csv",
        help="also compute the anisotropy gamma(n) of the n-th nearest neighbour per frame: write it "
        "here (one row per frame and rank) and add n_c to the table",
    )
    p.add_argument(
        "--neighbours",
        type=_metrics_bound("MAX_NEIGHBOURS"),
        default=20,
        help="largest rank n of --anisotropy (default 20)",
    )
    p.add_argument("--stride", type=_positive_int, default=1, metavar="K", help="measure every K-th frame")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_metrics(args: argparse.Namespace) -> int:
    import itertools
    import warnings

    from tqdm import tqdm

    from flock3d import metrics
    from flock3d.io import Trajectory, write_csv

    outputs = _outputs(args, csv=".csv", plot=".png", correlation=".csv", anisotropy=".csv")
    with Trajectory(args.trajectory) as traj:
        scene = _recorded_scene(traj, "metrics")
        if traj.n_frames == 0:
            raise Flock3dError(f"{args.trajectory}: the trajectory has no frames")
        period = metrics.periodic_box(scene.params)
        total = len(range(0, traj.n_frames, args.stride))

        def frames(what: str):
            bar = tqdm(total=total, unit="frame", desc=what, file=sys.stderr,
                       disable=True if args.no_progress else None)  # fmt: skip
            with bar:
                for state in itertools.islice(traj.frames(), 0, None, args.stride):
                    yield state
                    bar.update()

        with warnings.catch_warnings(record=True) as unmeasured:
            warnings.simplefilter("always", metrics.MeasurementWarning)
            columns = metrics.table(frames("metrics"), scene.params.perception_distance, period)
        print(
            f"{args.trajectory}: {traj.n_frames:,} frames of {traj.n_boids:,} boids, "
            f"t = {columns['time'][0]:g} to {columns['time'][-1]:g} s (scene {scene.name!r})"
            + (f", every {args.stride} frames measured" if args.stride > 1 else "")
        )
        extra = {}
        if outputs["correlation"]:
            lengths, curves = metrics.correlation_table(frames("correlation"), bins=args.bins, period=period)
            extra.update((k, lengths[k]) for k in ("xi_velocity", "xi_orientation", "xi_speed"))
            write_csv(outputs["correlation"], curves)
        if outputs["anisotropy"]:
            ranges, gammas = metrics.anisotropy_table(frames("anisotropy"), neighbours=args.neighbours,
                                                      period=period)  # fmt: skip
            extra["n_c"] = ranges["n_c"]
            write_csv(outputs["anisotropy"], gammas)
    columns.update(extra)
    for warning in unmeasured:
        print(f"flock3d metrics: warning: {warning.message}", file=sys.stderr)

    # Each row says what it measures: the largest distance (size) and the equivalent ellipsoid's
    # axes (thickness, width, length) are different lengths, and length may exceed size.
    meanings = {**metrics.COLUMNS, **metrics.EXTRA_COLUMNS}
    print(f"{'':<20}{'first':>10}{'last':>10}{'mean':>10}   what it is")
    for name in [*metrics.COLUMNS, *extra]:
        v = columns[name]
        mean = metrics.finite_mean(v)
        print(f"{name:<20}{v[0]:>10.3f}{v[-1]:>10.3f}{mean:>10.3f}   {meanings.get(name, '')}")
    if outputs["correlation"]:
        ratios = ", ".join(
            f"{k[3:]} {metrics.finite_mean(columns[k] / columns['size']):.3f}"
            for k in extra
            if k[:3] == "xi_"
        )
        print(f"xi / L (mean over frames): {ratios}")
        print(f"wrote {outputs['correlation']}")
    if outputs["anisotropy"]:
        average = metrics.mean_anisotropy(gammas, isotropic=1.0 / scene.params.dimensions)
        print(
            f"anisotropy averaged over frames: gamma(1) = {average.gamma[0]:.3f}, "
            f"isotropic {average.isotropic:.3f}, n_c = {average.n_c:.2f}"
        )
        print(f"wrote {outputs['anisotropy']}")
    if outputs["csv"]:
        write_csv(outputs["csv"], columns)
        print(f"wrote {outputs['csv']}")
    if outputs["plot"]:
        from flock3d.plots import plot_metrics

        plot_metrics(columns, outputs["plot"], title=f"{scene.name} ({args.trajectory})")
        print(f"wrote {outputs['plot']}")
    return 0


def _recorded_scene(traj, command: str):
    """The scene of a flock3d recording; one line naming the command that reads other files when
    ``traj`` is an H5MD file from another program."""
    if traj.scene is None:
        raise Flock3dError(
            f"{traj.path}: an H5MD file from another program (no flock3d scene): {command} reads "
            "flock3d recordings; `flock3d infer maxent` reads this one"
        )
    return traj.scene


# -- infer ------------------------------------------------------------------------------


def _frame_slice(text: str) -> slice:
    """FIRST:LAST[:STEP] as a slice of frame indices (each part optional, negative from the end)."""
    parts = text.split(":")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        first, last, *rest = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FIRST:LAST[:STEP] frame indices (a Python slice: 100: or ::10), got {text[:30]!r}"
        ) from None
    step = rest[0] if rest else None
    if step is not None and step < 1:
        raise argparse.ArgumentTypeError(f"STEP must be >= 1, got {step}")
    return slice(first, last, step)


def _add_infer(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "infer",
        help="infer interaction rules from a recording (H5MD, ours or another program's)",
        description="Fit a model of how the birds interact to the orientations of a recording.",
    )
    methods = p.add_subparsers(dest="method", metavar="METHOD")
    methods.required = True
    m = methods.add_parser(
        "maxent",
        help="the topological maximum-entropy model of Bialek et al. 2012: J, n_c and the predicted C(r)",
        description="Fit the topological maximum-entropy (Heisenberg) model of Bialek et al., PNAS 109:4786 "
        "(2012) to the flight directions of a recording, in the spin-wave approximation: for each "
        "snapshot the range n_c (each bird aligns with its n_c nearest) and the coupling J that maximize "
        "the likelihood, then their mean over snapshots; and the correlation function C(r) of the "
        "direction fluctuations that the fitted model predicts, against the measured one. Reads "
        "flock3d recordings and H5MD files of other programs (a particles group with position and "
        "velocity). Each snapshot of N boids takes dense N x N algebra: at most 5,000 boids.",
    )
    m.add_argument(
        "trajectory", metavar="TRAJ.h5", help="an H5MD file: `flock3d run --out`, or another program's"
    )
    m.add_argument(
        "--frames",
        type=_frame_slice,
        metavar="FIRST:LAST[:STEP]",
        help="the frames to fit, as a Python slice of frame indices, e.g. :: (all) or --frames=-5: "
        "(the last five; with '=' when it starts with '-'); default 10 frames spread evenly over the "
        "second half of the recording",
    )
    m.add_argument(
        "--n-max",
        type=_positive_int,
        metavar="K",
        help="try n_c from 1 to K (default 40, or N - 1 if smaller)",
    )
    m.add_argument("--group", metavar="NAME", help="the particles group of an H5MD file holding several")
    m.add_argument(
        "--bins",
        type=_metrics_bound("MAX_BINS"),
        default=50,
        help="distance bins of C(r), 0 to L (default 50)",
    )
    m.add_argument("--csv", metavar="OUT.csv", help="write C(r), measured and predicted, per bin")
    m.add_argument("--likelihood", metavar="OUT.csv", help="write the log-likelihood, J and C_int per n_c")
    m.add_argument("--plot", metavar="OUT.png", help="plot the likelihood against n_c and C(r)")
    m.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_infer(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from flock3d import inference
    from flock3d.io import Trajectory, write_csv

    outputs = _outputs(args, csv=".csv", likelihood=".csv", plot=".png")
    with Trajectory(args.trajectory, group=args.group) as traj:
        if traj.n_frames == 0:
            raise Flock3dError(f"{args.trajectory}: the trajectory has no frames")
        if args.frames is None:
            indices = inference.spread_frames(traj.n_frames)
        else:
            indices = range(traj.n_frames)[args.frames]
            if not len(indices):
                raise Flock3dError(f"--frames selects none of the {traj.n_frames:,} frames")
        if traj.n_boids < 3 or traj.n_boids > inference.MAX_BOIDS:
            raise Flock3dError(
                f"{args.trajectory}: {traj.n_boids:,} boids; the maximum-entropy fit takes 3 to "
                f"{inference.MAX_BOIDS:,} boids a snapshot"
            )
        n_max = min(inference.N_C_MAX, traj.n_boids - 1) if args.n_max is None else args.n_max
        if n_max > traj.n_boids - 1:
            raise Flock3dError(f"--n-max must be below the number of boids, {traj.n_boids:,} (got {n_max})")
        times = traj.times[indices]
        source = f"scene {traj.scene.name!r}" if traj.scene is not None else f"H5MD group {traj.group}"
        box = traj.period
        with tqdm(total=len(indices), unit="frame", desc="maxent", file=sys.stderr,
                  disable=True if args.no_progress else None) as bar:  # fmt: skip
            try:
                fit = inference.maxent_frames(
                    (traj.frame(int(i)) for i in indices),
                    n_c_range=range(1, n_max + 1),
                    period=box,
                    bins=args.bins,
                    progress=bar.update,
                )
            except ValueError as error:
                raise Flock3dError(f"{args.trajectory}: {error}") from None
    where = "periodic box " + " x ".join(f"{s:g}" for s in box[box > 0]) if box is not None else "open space"
    print(
        f"{args.trajectory}: {fit.frames:,} of {traj.n_frames:,} frames (t = {times[0]:g} to {times[-1]:g}), "
        f"{fit.boids:,} boids in {where} ({source})"
    )
    several = fit.frames > 1  # a mean over snapshots, with its standard error and spread
    spread = f" ± {fit.n_c_error:.2f} (per frame {fit.frame_n_c.min():g} to {fit.frame_n_c.max():g})"
    print(f"topological maximum-entropy model (Bialek et al. 2012, spin waves), n_c from 1 to {n_max}:")
    print(f"  n_c = {fit.n_c:.2f}{spread if several else ''}")
    j_error = f" ± {fit.J_error:.2g}" if several else ""
    print(f"  J = {fit.J:.3g}{j_error}, J n_c = {fit.J * fit.n_c:.3g}, C_int = {fit.alignment:.5f}")
    print(f"  polarization: measured {fit.polarization:.4f}, predicted {fit.predicted_polarization:.4f}")
    if not fit.polarized:
        print(
            f"flock3d infer: warning: the directions fluctuate by {fit.fluctuation:.2f} (mean square) "
            f"about their group's, over the {inference.MAX_FLUCTUATION:g} a spin-wave fit assumes: this "
            "flock is not polarized (a mill, a swarm?), and n_c and J describe no model of it",
            file=sys.stderr,
        )
    if fit.at_edge:
        print(f"  the likelihood still rises at n_c = {n_max}: try a larger --n-max")
    print("C(r) of the direction fluctuations, in units of their measured mean square:")
    print(f"{'r':>10}{'pairs':>12}{'measured':>11}{'predicted':>11}")
    shown = [b for b, pairs in enumerate(fit.pairs) if pairs > 0]
    for b in shown[:: max(1, math.ceil(len(shown) / 12))]:
        print(f"{fit.r[b]:>10.3g}{int(fit.pairs[b]):>12,}{fit.measured[b]:>11.3f}{fit.predicted[b]:>11.3f}")
    zero = lambda xi: f"{xi:.3g}" if math.isfinite(xi) else f"none below r = {fit.r_max:.3g}"  # noqa: E731
    print(f"first zero xi: measured {zero(fit.xi)}, predicted {zero(fit.predicted_xi)}")
    if outputs["csv"]:
        write_csv(outputs["csv"], fit.correlation_table())
        print(f"wrote {outputs['csv']}")
    if outputs["likelihood"]:
        write_csv(outputs["likelihood"], fit.likelihood_table())
        print(f"wrote {outputs['likelihood']}")
    if outputs["plot"]:
        from flock3d.plots import plot_maxent

        plot_maxent(fit, outputs["plot"], title=f"{args.trajectory} ({source})")
        print(f"wrote {outputs['plot']}")
    return 0


# -- experiment -----------------------------------------------------------------------


def _add_experiment(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from flock3d.experiments import EXPERIMENTS

    listing = "; ".join(f"{e.name}: {e.title} ({e.reference})" for e in EXPERIMENTS.values())
    p = sub.add_parser(
        "experiment",
        help="reproduce a classic experiment of collective-motion studies: a table, a plot, the numbers",
        description="Run an experiment, print its figure next to the paper's, and write NAME.csv and "
        f"NAME.png into --out. The experiments: {listing}.",
    )
    p.add_argument("name", metavar="NAME", choices=list(EXPERIMENTS), help=", ".join(EXPERIMENTS))
    p.add_argument(
        "--out", required=True, metavar="DIR", help="folder for NAME.csv and NAME.png (made if missing)"
    )
    p.add_argument("--quick", action="store_true", help="a small instance that runs in seconds")
    p.add_argument("--seed", type=_seed, default=0, help="base seed of the runs (default 0)")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_experiment(args: argparse.Namespace) -> int:
    from flock3d.experiments import EXPERIMENTS, run_experiment
    from flock3d.io import write_csv

    _require("plot")  # each experiment draws its figure
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise Flock3dError(f"{args.out}: exists and is not a folder")
    if not out.parent.is_dir():
        raise Flock3dError(f"{args.out}: folder {out.parent} does not exist")
    out.mkdir(exist_ok=True)
    e = EXPERIMENTS[args.name]
    print(f"{e.name}: {e.title}\n  reproducing {e.reference}" + (" (quick)" if args.quick else ""))
    result = run_experiment(args.name, quick=args.quick, seed=args.seed,
                            progress=False if args.no_progress else None)  # fmt: skip
    print("\n".join(result.lines))
    table, image = out / f"{e.name}.csv", out / f"{e.name}.png"
    write_csv(table, result.columns)
    result.plot(image)
    print(f"ran in {result.seconds:.1f} s; wrote {table} and {image}")
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
    _rules_argument(p)
    return p


def _run_view(args: argparse.Namespace) -> int:
    _require("viewer")
    from flock3d.viewer.app import check_display, run_viewer

    rules, forces = _rules_from(args)
    scene = _scene_from(args, args.scene, (rules, forces))
    if rules or forces:  # refused here, in one line, rather than in the window
        from flock3d.rules import check_rules

        check_rules(rules, forces)
    check_display()
    return run_viewer(scene, rules, forces)


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
    p.add_argument(
        "--steps", type=_positive_step_count, required=True, help=f"steps per run (at most {MAX_STEPS:,})"
    )
    p.add_argument("--discard", type=_non_negative_int, default=0, help="first steps left out of the means")
    p.add_argument("--out", required=True, metavar="RESULTS.parquet|.csv", help="the results table")
    p.add_argument("--plot", metavar="OUT.png", help="heatmaps over two parameters, or lines over one")
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="a dask.distributed scheduler, e.g. tcp://host:8786"
    )
    p.add_argument("--workers", type=_positive_int, help="workers of the local cluster (default: all cores)")
    p.add_argument("--seed", type=_seed, help="base seed the runs' seeds derive from (default: the scene's)")
    _set_argument(p)
    _rules_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_sweep(args: argparse.Namespace) -> int:
    from flock3d.sweep import over_repeats, parse_axis, plot_sweep, run_sweep, sweep_size

    out = _output_path(args.out, (".parquet", ".csv"), "--out")
    plot = _output_path(args.plot, (".png",), "--plot") if args.plot is not None else None
    parquet = out.suffix.lower() == ".parquet"
    _require("sweep", None if parquet else ("dask", "distributed", "pandas"))  # pyarrow: Parquet
    if plot is not None:
        _require("plot", option="--plot")
    rules, forces = _rules_from(args)  # refused here, before any worker starts, when broken
    scene = _scene_from(args, args.scene, (rules, forces))
    axes = [parse_axis(spec) for spec in args.param]
    if len({a.key for a in axes}) != len(axes):
        raise Flock3dError("each --param key may be swept once")
    if plot is not None and len(axes) > 2:
        raise Flock3dError(f"--plot draws one or two swept parameters (this sweep has {len(axes)})")
    n_runs = sweep_size(axes, args.repeats)
    if rules or forces:
        from flock3d.rules import check_rules

        check_rules(rules, forces)
    print(f"{scene.name}: {n_runs:,} runs of {args.steps:,} steps ({', '.join(a.key for a in axes)})")
    if rules or forces:
        print(_rules_line(rules, forces))
    table, stats = run_sweep(
        scene, axes, args.repeats, args.steps, args.discard, out,
        scheduler=args.scheduler, workers=args.workers, progress=False if args.no_progress else None,
        overrides=args.set, rules=args.rules,
    )  # fmt: skip
    print(f"computed {stats.computed:,} runs in {stats.seconds:.1f} s, {stats.skipped:,} already in {out}")
    means = over_repeats(table, axes)[[*(a.key for a in axes), "polarization_mean", "milling_mean"]]
    print(means.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
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
        default=None,
        metavar="SECONDS",
        help="begin this many simulated seconds in: a scene is simulated that long without drawing "
        "(film a mill or a murmuration once formed); a trajectory skips its frames before it "
        "(default: a scene's view.start, else 5 s for a still and 0 for a video; 0 for a trajectory)",
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
    _rules_argument(p)
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def _run_render(args: argparse.Namespace) -> int:
    """Render frames at simulated times start, start + 1/fps, start + 2/fps, ... (real speed)."""
    from flock3d.flock import Flock
    from flock3d.io import Trajectory
    from flock3d.io.playback import (
        check_recording,
        check_scene,
        playback,
        recorded_frames,
        simulated_frames,
        simulated_playback,
    )
    from flock3d.scene.schema import STILL_START

    out = _output_path(args.out, (".mp4", ".png"), "--out")
    is_png = out.suffix.lower() == ".png"
    _require("viewer", ("vispy", "OpenGL", "imageio", "imageio_ffmpeg"))  # not Qt: offscreen
    with contextlib.ExitStack() as stack:
        if Path(args.source).suffix.lower() in (".h5", ".hdf5"):
            if args.set or args.seed is not None or args.rules:
                raise Flock3dError("--set, --seed and --rules apply to scenes, not to recorded trajectories")
            traj = stack.enter_context(Trajectory(args.source))
            if traj.n_frames == 0:
                raise Flock3dError(f"{args.source}: the trajectory has no frames")
            scene = _recorded_scene(traj, "render")
            check_scene(scene)
            plan = playback(traj.times, args.fps, args.start or 0.0, args.frames, still=is_png,
                            max_frames=MAX_RENDER_FRAMES)  # fmt: skip
            check_recording(traj, plan.indices, args.source)  # before any frame is drawn
            frames = recorded_frames(traj, plan)
        else:
            rules, forces = _rules_from(args)
            scene = _scene_from(args, args.source, (rules, forces))
            check_scene(scene)
            start = args.start if args.start is not None else scene.view.start
            if start is None:
                start = STILL_START if is_png else 0.0
            plan = simulated_playback(scene.params.dt, args.fps, start, args.frames, still=is_png,
                                      max_steps=MAX_RENDER_STEPS)  # fmt: skip
            frames = simulated_frames(Flock.from_scene(scene, rules=rules, forces=forces), plan)
        return _render_frames(args, out, is_png, scene, frames, plan)


def _render_frames(args, out: Path, is_png: bool, scene, frames, plan) -> int:
    """Draw ``frames``, the (state, acceleration) pairs of ``plan``
    (:class:`flock3d.io.playback.Playback`): a PNG or an MP4."""
    from tqdm import tqdm

    from flock3d.core.atomic import atomic_write
    from flock3d.io.video import VideoWriter
    from flock3d.viewer.offscreen import OffscreenRenderer

    first, start, total, fps = plan.first, plan.start, len(plan.indices), plan.fps
    with OffscreenRenderer(scene, size=args.size, camera=args.camera, fps=fps) as renderer:
        renderer.frames_rendered = first  # the orbit's angle at that frame
        if is_png:
            import imageio.v3 as iio

            state, acceleration = next(iter(frames))
            png = iio.imwrite("<bytes>", renderer.render(state, acceleration), extension=".png")
            try:  # encoded in memory first: a full disk fails here, leaving an older image whole
                with atomic_write(out, "wb") as handle:
                    handle.write(png)
            except OSError as error:
                raise Flock3dError(f"{out}: cannot write the image ({error.strerror or error})") from None
            print(
                f"wrote {out} ({args.size[0]}x{args.size[1]}, frame {first + 1} of {scene.name!r}, "
                f"t = {state.time:.2f} s)"
            )
            return 0
        bar = tqdm(total=total, unit="frame", file=sys.stderr, disable=True if args.no_progress else None)
        with bar, VideoWriter(out, fps=fps) as video:
            for state, acceleration in frames:
                video.append(renderer.render(state, acceleration))
                bar.update()
        # Frame k shows the flock at start + k / fps: the video's clock is the flock's, and its
        # frames cover [start, start + frames / fps).
        seconds = video.frames / fps
        print(
            f"wrote {out}: {video.frames} frames, {args.size[0]}x{args.size[1]}, {seconds:.2f} s at "
            f"{fps:g} fps, showing simulated t = {start:.2f} to {start + seconds:.2f} s "
            f"({scene.name!r})"
        )
    return 0


# -- export -----------------------------------------------------------------------------


def _add_export(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export",
        help="export a recording (or a scene, run first) to USD, glTF or HTML",
        description="Write a recorded flock as a file Blender, Houdini, Unity or a browser opens: "
        ".usd/.usda/.usdc (a point instancer, any number of boids), .glb/.gltf (a node per boid, "
        "at most 5,000) or .html. A scene is run first (as `flock3d run`) into a temporary "
        "recording, removed afterwards. Needs the export extra.",
    )
    p.add_argument("source", metavar="TRAJ.h5|SCENE", help="a recording (`flock3d run --out`) or a scene")
    p.add_argument(
        "--out", required=True, metavar="FILE", help="the file to write; its suffix picks the format"
    )
    _run_arguments(p, scene_only="from a scene: ")
    return p


def _run_export(args: argparse.Namespace) -> int:
    from flock3d.io.export import check_size, export, export_flock, writer_for

    out = Path(args.out)
    writer = writer_for(out)  # an unknown suffix or a missing extra, before any work
    progress = False if args.no_progress else None
    if Path(args.source).suffix.lower() in (".h5", ".hdf5"):
        given = [f"--{name}" for name in ("steps", "seconds", "every", "seed", "rules")
                 if getattr(args, name) is not None] + (["--set"] if args.set else [])  # fmt: skip
        if given:
            raise Flock3dError(f"{', '.join(given)} apply to scenes, not to recorded trajectories")
        export(args.source, out, progress=progress)
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
        return 0
    from flock3d.flock import Flock
    from flock3d.runner import stop_on_signals

    rules, forces = _rules_from(args)
    scene = _scene_from(args, args.source, (rules, forces))
    check_size(out, scene.params.count, writer)  # before the run, not after it
    p = scene.params
    steps, every = _run_length(args, p.dt)
    flock = Flock.from_scene(scene, rules=rules, forces=forces, engine=args.engine)
    print(f"{scene.name}: {len(flock):,} boids, {steps:,} steps of {p.dt:g} s, a frame every {every} steps")
    with stop_on_signals() as stop:
        stats = export_flock(flock, out, steps, scene=scene, every=every, progress=progress, stop=stop)
    if stats.interrupted:
        print(f"flock3d export: stopped by {stats.interrupted}; nothing written", file=sys.stderr)
        return 130 if stats.interrupted == "SIGINT" else 143
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {stats.frames:,} frames)")
    return 0


# -- debug ------------------------------------------------------------------------------


def _add_debug(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "debug",
        help="show what runs: the generated source of a scene's step",
        description="Print the Python source that flock3d writes and numba compiles for a scene's fast "
        "step (the template of flock3d/core/step/template.py with the scene's terms, rules and "
        "neighbour kind filled in), followed by the values it reads from the value vector.",
    )
    p.add_argument("what", choices=["step"], help="what to show: step (the generated step's source)")
    _scene_argument(p)
    _set_argument(p)
    _rules_argument(p)
    _engine_argument(p)
    return p


def _run_debug(args: argparse.Namespace) -> int:
    from flock3d.core import assemble

    rules, forces = _rules_from(args)
    args.seed = None  # the step does not depend on it
    scene = _scene_from(args, args.scene, (rules, forces))
    if args.engine == "gpu":  # the CUDA kernel (flock3d.core.step.cuda_generate)
        from flock3d.gpu import kernel_source

        source, names = kernel_source(scene.params, rules, forces)
    else:
        source, names = assemble.generate(assemble.layout_of(scene.params, rules, forces))
    print(source, end="")
    print(f"\n# pv, the values it reads, in order: {', '.join(names)}")
    return 0


COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "view": (_add_view, _run_view),
    "scenes": (_add_scenes, _run_scenes),
    "check": (_add_check, _run_check),
    "run": (_add_run, _run_run),
    "metrics": (_add_metrics, _run_metrics),
    "render": (_add_render, _run_render),
    "export": (_add_export, _run_export),
    "sweep": (_add_sweep, _run_sweep),
    "experiment": (_add_experiment, _run_experiment),
    "infer": (_add_infer, _run_infer),
    "bench": (_add_bench, _run_bench),
    "debug": (_add_debug, _run_debug),
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other error."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a first try: show what there is to do
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        measures = args.command in ("metrics", "infer")
        with compiling.notices(COMPILING_MEASUREMENTS if measures else COMPILING):
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
