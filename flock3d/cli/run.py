"""``flock3d run`` (a scene headless, optionally recorded) and ``flock3d export`` (a recording,
or a scene run first, to USD, glTF or HTML)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flock3d.cli.errors import signal_status
from flock3d.cli.inputs import is_recording, output_path, rules_from, rules_line, scene_from
from flock3d.cli.options import refuse_scene_options, run_arguments, run_length, scene_argument
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError

if TYPE_CHECKING:
    import numpy as np

    from flock3d.flock import Flock


def add_run(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "run",
        help="run a scene headless, optionally recording the trajectory",
        description="Run a scene without a window. With --out, frames are streamed to an HDF5 "
        "file (H5MD layout); Ctrl-C, SIGTERM or SIGHUP stops the run and keeps every frame written "
        "(beside a recording already at --out, never over it: NAME.stopped.h5).",
    )
    scene_argument(p)
    p.add_argument("--out", metavar="TRAJ.h5", help="record the trajectory to this HDF5 file")
    run_arguments(p)
    return p


#: The niceness of the child compiling the closing summary's nearest neighbours on a first run:
#: it takes what the simulation's compiles leave of the cores, not a share of them.
SUMMARY_NICENESS = 19
#: Seconds the summary waits for that child once the steps are done (the cores then free, it
#: ends soon) before it ends it and compiles here: about what compiling it here takes.
SUMMARY_WAIT = 3.0


def run_run(args: argparse.Namespace) -> int:
    from flock3d import metrics
    from flock3d.core.elsewhere import Loading
    from flock3d.flock import Flock
    from flock3d.io import TrajectoryWriter
    from flock3d.metrics import spacing
    from flock3d.runner import run, stop_on_signals

    rules, forces = rules_from(args)
    scene = scene_from(args, args.scene, (rules, forces))
    p = scene.params
    steps, every = run_length(args, p.dt)
    out = output_path(args.out, (".h5", ".hdf5"), "--out") if args.out is not None else None

    # On a first run the summary's compile (1-2 s) came after the steps, one core idle; a
    # child compiles it meanwhile on what the simulation's compiles leave (a cached one just
    # loads). It starts before the flock is built: a world's first build keeps both cores busy
    # to its end, and a child started after it compiled alone. On cores kept busy (a sweep
    # beside) it could take minutes: one not done SUMMARY_WAIT after the steps is ended, and the
    # summary compiles here as before.
    search, example = spacing.nearest_search(p.count)
    summary = Loading(search, example, niceness=SUMMARY_NICENESS)
    summary.begin()  # its child starts before the flock's, its thread after: so each can be a fork
    try:
        flock = Flock.from_scene(scene, rules=rules, forces=forces, engine=args.engine)
    except BaseException:
        summary.cancel()  # its child ended now, not left to compile for a summary never printed
        raise
    summary.start()
    # It measures as the metrics do: by the minimum image in a periodic box.
    period = metrics.periodic_box(flock.params)
    progress = False if args.no_progress else None  # None: only on a terminal
    boids, stepped = counted(len(flock), "boid"), counted(steps, "step")
    print(f"{scene.name}: {boids}, {stepped} of {p.dt:g} s (seed {scene.seed})")
    if rules or forces:
        print(rules_line(rules, forces))
    writer = None
    try:
        with stop_on_signals() as stop:
            if out is None:
                stats = run(flock, steps, progress=progress, stop=stop)
            else:
                with TrajectoryWriter(out, len(flock), scene, every, flock.state.n_predators) as writer:
                    stats = run(flock, steps, writer=writer, every=every, progress=progress, stop=stop)
                    if stats.interrupted:
                        writer.close_stopped()  # never over a recording there before
    except Flock3dError as error:
        summary.cancel()
        if writer is None:
            raise
        n = writer.frames_written
        kept = (
            f"{out} kept as it was, without this run's frames"
            if writer.kept_previous
            else f"the {counted(n, 'frame')} before it {'are' if n != 1 else 'is'} in {out}"
        )
        raise Flock3dError(f"{error}; {kept}") from error
    except BaseException:
        summary.cancel()  # its child ended now, not left to compile for a summary never printed
        raise

    summary.join(SUMMARY_WAIT)
    summary.cancel()
    summary.join()  # loaded, or else compiled here by the first call
    print(
        f"ran {counted(stats.steps, 'step')} ({flock.time:.2f} s simulated) in {stats.seconds:.2f} s: "
        f"{stats.steps_per_second:,.0f} steps/s"
    )
    print(f"final: {_measures(flock, period)}")
    if out is not None:
        tail = stats.steps % every  # frames stay evenly spaced: a shorter tail is not recorded
        verb = "is" if tail == 1 else "are"
        last = f"; the last {counted(tail, 'step')}, short of a frame, {verb} not recorded" if tail else ""
        written = writer.written_to
        kept = f"; {out}, there before the run was stopped, is kept as it was" if written != out else ""
        spacing_of = f"one every {counted(every, 'step')}{last}"
        print(f"wrote {counted(stats.frames, 'frame')} to {written} ({spacing_of}){kept}")
    if stats.interrupted:
        print(f"flock3d run: stopped by {stats.interrupted} after {stats.steps:,} steps", file=sys.stderr)
        return signal_status(stats.interrupted)
    return 0


def _measures(flock: Flock, period: np.ndarray | None) -> str:
    """The closing summary's measures of ``flock`` (``period``: :func:`flock3d.metrics.periodic_box`'s):
    those it has boids enough for (a measure of no boids, or one boid's nearest neighbour, would
    print nan)."""
    from flock3d import metrics

    if len(flock) == 0:
        return "no boids to measure"
    line = (
        f"polarization {metrics.polarization(flock.velocities):.3f}, "
        f"milling {metrics.milling(flock.positions, flock.velocities):.3f}, "
    )
    if len(flock) == 1:
        return line + "no nearest neighbour (one boid)"
    nn = metrics.nearest_neighbour_stats(flock.positions, period)
    return line + f"nearest-neighbour distance {nn.mean:.3f} (min {nn.min:.3f})"


def add_export(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export",
        help="export a recording (or a scene, run first) to USD, glTF or HTML",
        description="Write a recorded flock as a file Blender, Houdini, Unity or a browser opens: "
        ".usd/.usda/.usdc (a point instancer, any number of boids), .glb/.gltf (a node per boid, "
        "at most 5,000) or .html. A scene is run first (as `flock3d run`) into a temporary "
        "recording, removed afterwards. USD and glTF need the export extra; a web page needs none.",
    )
    p.add_argument("source", metavar="TRAJ.h5|SCENE", help="a recording (`flock3d run --out`) or a scene")
    p.add_argument(
        "--out", required=True, metavar="FILE", help="the file to write; its suffix picks the format"
    )
    run_arguments(p, scene_only="from a scene: ")
    return p


def run_export(args: argparse.Namespace) -> int:
    from flock3d.io import Trajectory
    from flock3d.io.export import check_run, export, export_flock, writer_for

    out = Path(args.out)
    writer = writer_for(out)  # an unknown suffix or a missing extra, before any work
    progress = False if args.no_progress else None
    if is_recording(args.source):
        refuse_scene_options(args, ("steps", "seconds", "every", "seed", "rules", "engine", "set"))
        export(args.source, out, progress=progress)
        with Trajectory(args.source) as trajectory:
            frames = trajectory.n_frames
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {counted(frames, 'frame')})")
        return 0
    from flock3d.flock import Flock
    from flock3d.runner import stop_on_signals

    rules, forces = rules_from(args)
    scene = scene_from(args, args.source, (rules, forces))
    p = scene.params
    steps, every = run_length(args, p.dt)
    check_run(out, p, steps, every, writer)  # before the run, not after it
    flock = Flock.from_scene(scene, rules=rules, forces=forces, engine=args.engine)
    boids, stepped = counted(len(flock), "boid"), counted(steps, "step")
    print(f"{scene.name}: {boids}, {stepped} of {p.dt:g} s, a frame every {counted(every, 'step')}")
    with stop_on_signals() as stop:
        stats = export_flock(flock, out, steps, scene=scene, every=every, progress=progress, stop=stop)
    if stats.interrupted:
        print(f"flock3d export: stopped by {stats.interrupted}; nothing written", file=sys.stderr)
        return signal_status(stats.interrupted)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {counted(stats.frames, 'frame')})")
    return 0
