"""``flock3d metrics``: the measurements of a recorded trajectory, as a table and files."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from flock3d.cli.inputs import outputs, recorded_scene
from flock3d.cli.options import metrics_bound, positive_int
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError


def add_metrics(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
        type=metrics_bound("MAX_BINS"),
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
        type=metrics_bound("MAX_NEIGHBOURS"),
        help="largest rank n of --anisotropy, below the number of boids (default 20, or N - 1 if smaller)",
    )
    p.add_argument("--stride", type=positive_int, default=1, metavar="K", help="measure every K-th frame")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def run_metrics(args: argparse.Namespace) -> int:
    from flock3d import metrics
    from flock3d.io import Trajectory, write_csv
    from flock3d.io.measure import measure_recording

    files = outputs(args, csv=".csv", plot=".png", correlation=".csv", anisotropy=".csv")
    with Trajectory(args.trajectory) as traj:
        scene = recorded_scene(traj, "metrics")
        if traj.n_frames == 0:
            raise Flock3dError(f"{args.trajectory}: the trajectory has no frames")
        neighbours = args.neighbours or max(1, min(20, traj.n_boids - 1))  # a boid has N - 1 neighbours
        if files["anisotropy"] and args.neighbours is not None and neighbours >= traj.n_boids:
            raise Flock3dError(
                f"--neighbours must be below the number of boids, {traj.n_boids:,} (got {neighbours})"
            )
        measured = measure_recording(
            traj,
            stride=args.stride,
            bins=args.bins if files["correlation"] else None,
            neighbours=neighbours if files["anisotropy"] else None,
            progress=False if args.no_progress else None,
        )
    columns, extra = measured.columns, measured.extra
    if all(np.isnan(columns[name]).all() for name in metrics.COLUMNS):  # nothing written over
        why = f" ({measured.warnings[0]})" if measured.warnings else ""
        raise Flock3dError(f"{args.trajectory}: no frame could be measured{why}")
    print(
        f"{args.trajectory}: {counted(traj.n_frames, 'frame')} of {counted(traj.n_boids, 'boid')}, "
        f"t = {columns['time'][0]:g} to {columns['time'][-1]:g} s (scene {scene.name!r})"
        + (f", every {args.stride} frames measured" if args.stride > 1 else "")
    )
    if files["correlation"]:
        write_csv(files["correlation"], measured.correlation)
    if files["anisotropy"]:
        write_csv(files["anisotropy"], measured.anisotropy)
    for message in measured.warnings:
        print(f"flock3d metrics: warning: {message}", file=sys.stderr)

    # Each row says what it measures: the largest distance (size) and the equivalent ellipsoid's
    # axes (thickness, width, length) are different lengths, and length may exceed size.
    meanings = {**metrics.COLUMNS, **metrics.EXTRA_COLUMNS}
    print(f"{'':<20}{'first':>10}{'last':>10}{'mean':>10}   what it is")
    for name in [*metrics.COLUMNS, *extra]:
        v = columns[name]
        mean = metrics.finite_mean(v)
        print(f"{name:<20}{v[0]:>10.3f}{v[-1]:>10.3f}{mean:>10.3f}   {meanings.get(name, '')}")
    for note in _nan_notes(scene.params, columns, extra):
        print(f"note: {note}")
    if files["correlation"]:
        ratios = ", ".join(
            f"{k[3:]} {metrics.finite_mean(columns[k] / columns['size']):.3f}"
            for k in extra
            if k[:3] == "xi_"
        )
        print(f"xi / L (mean over frames): {ratios}")
        print(f"wrote {files['correlation']}")
    if files["anisotropy"]:
        average = metrics.mean_anisotropy(measured.anisotropy, isotropic=1.0 / scene.params.dimensions)
        noise = "" if average.resolved else " (the neighbours are alike in every direction: no range to read)"
        print(
            f"anisotropy averaged over frames: gamma(1) = {average.gamma[0]:.3f}, "
            f"isotropic {average.isotropic:.3f}, n_c = {average.n_c:.2f}{noise}"
        )
        print(f"wrote {files['anisotropy']}")
    if files["csv"]:
        write_csv(files["csv"], columns)
        print(f"wrote {files['csv']}")
    if files["plot"]:
        from flock3d.plots import plot_metrics

        plot_metrics(columns, files["plot"], title=f"{scene.name} ({args.trajectory})")
        print(f"wrote {files['plot']}")
    return 0


def _nan_notes(params, columns, extra) -> list[str]:
    """Why whole columns are NaN where the flock, not a damaged frame, is why: a table of nan
    says nothing of its reason."""
    from flock3d.metrics import periodic_box

    notes = []
    if periodic_box(params) is not None and np.isnan(columns["size"]).all():
        xi = " (and xi / L)" if any(k[:3] == "xi_" for k in extra) else ""
        notes.append(f"size, thickness, width and length{xi} are NaN in a periodic box: a flock spread "
                     "through it has no outline")  # fmt: skip
    measured = not np.isnan(columns.get("xi_velocity", np.nan)).all()
    if "xi_speed" in extra and np.isnan(columns["xi_speed"]).all() and measured:
        notes.append("xi_speed is NaN: the speeds do not fluctuate (the model flies at one speed)")
    return notes
